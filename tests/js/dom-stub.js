// Runs the inline script of a schedlab HTML report under node with a
// minimal DOM/canvas stub; any exception fails (exit 1). Used by
// tests/html.rs where no browser is installed.
"use strict";
const fs = require("fs");
const html = fs.readFileSync(process.argv[2], "utf8");
const m = html.match(/<script>([\s\S]*)<\/script>/);
if (!m) { console.error("no inline script"); process.exit(1); }
let calls = 0;
const ctx = new Proxy({
  measureText: (s) => ({ width: 6 * String(s).length }),
  createImageData: (w, h) => ({ data: new Uint8ClampedArray(w * h * 4) }),
}, {
  get: (t, k) => (k in t ? t[k] : () => { calls++; }),
  set: (t, k, v) => { t[k] = v; return true; },
});
const el = () => {
  const e = {
    width: 1200, height: 200, style: {}, dataset: {}, textContent: "", innerHTML: "", value: "",
    getContext: () => ctx, addEventListener: () => {}, lastChild: null,
    getBoundingClientRect: () => ({ left: 0, top: 0, width: 1200, height: 200 }),
    insertRow: () => ({ insertCell: () => ({}), appendChild: () => {} }),
    appendChild: (c) => { e.lastChild = c; return c; },
  };
  return e;
};
const els = {};
global.document = {
  getElementById: (id) => (els[id] = els[id] || el()),
  createElement: el,
  createTextNode: (t) => ({ textContent: t }),
  body: { dataset: {} },
};
global.window = { addEventListener: () => {} };
global.location = { hash: "" };
try {
  new Function(m[1])();
} catch (e) {
  console.error("script error: " + e.stack);
  process.exit(1);
}
if (document.body.dataset.rendered !== "yes") {
  console.error("the script did not run to its end");
  process.exit(1);
}
console.log("ok " + calls + " canvas calls");
