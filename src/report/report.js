// schedlab report charts, shared by the run page (report.html) and the
// compare page (compare.html). A run's data D: {title, end, ncpus, tasks,
// slices, cut_at, cdfs, cpu_series, task_series, busy, counters}; see
// src/report/html.rs.
const COLORS = ["#1f77b4","#ff7f0e","#2ca02c","#d62728","#9467bd","#8c564b","#e377c2","#7f7f7f","#bcbd22","#17becf"];
const taskColor = (t) => `hsl(${(t * 137.5) % 360},55%,55%)`;
const fmt = (ns) => ns >= 1e9 ? (ns / 1e9).toFixed(3) + " s" : ns >= 1e6 ? (ns / 1e6).toFixed(3) + " ms"
  : ns >= 1e3 ? (ns / 1e3).toFixed(1) + " µs" : ns.toFixed(0) + " ns";
const $ = (id) => document.getElementById(id);

// A zoomable, pannable per-CPU timeline of D's slices on canvas `tl`;
// `range` shows the visible span and `tip` the slice under the mouse.
function timeline(tl, D, range, tip) {
  const ROW = Math.max(8, Math.min(28, Math.floor(600 / D.ncpus)));
  tl.height = D.ncpus * ROW + 20;
  const LEFT = 60, END = Math.max(1, D.end);
  let v0 = 0, v1 = END, drag = null;
  function draw() {
    const c = tl.getContext("2d"), W = tl.width - LEFT;
    c.clearRect(0, 0, tl.width, tl.height);
    c.font = "11px sans-serif";
    c.fillStyle = "#333";
    for (let cpu = 0; cpu < D.ncpus; cpu++) {
      if (ROW >= 11 || cpu % Math.ceil(11 / ROW) === 0) c.fillText("CPU " + cpu, 4, cpu * ROW + ROW / 2 + 4);
    }
    const scale = W / (v1 - v0);
    for (const s of D.slices) {
      if (s[2] < v0 || s[1] > v1) continue;
      const x0 = LEFT + Math.max(0, (s[1] - v0) * scale), x1 = LEFT + Math.min(W, (s[2] - v0) * scale);
      c.fillStyle = taskColor(s[3]);
      c.fillRect(x0, s[0] * ROW + 1, Math.max(0.5, x1 - x0), ROW - 2);
      if (x1 - x0 > 50 && ROW >= 12) {
        c.fillStyle = "#000";
        c.fillText(D.tasks[s[3]][0], x0 + 2, s[0] * ROW + ROW / 2 + 4, x1 - x0 - 4);
      }
    }
    c.fillStyle = "#333";
    for (let i = 0; i <= 5; i++) {
      const t = v0 + (v1 - v0) * i / 5, w = c.measureText(fmt(t)).width || 0;
      c.fillText(fmt(t), LEFT + W * i / 5 - (i === 5 ? w : i === 0 ? 0 : w / 2), tl.height - 4);
    }
    range.textContent = "Showing " + fmt(v0) + " .. " + fmt(v1) + ".";
  }
  tl.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = tl.getBoundingClientRect(), W = tl.width - LEFT;
    const x = Math.min(Math.max(0, (e.clientX - r.left) * tl.width / r.width - LEFT), W);
    const t = v0 + (v1 - v0) * x / W, f = e.deltaY < 0 ? 0.8 : 1.25;
    v0 = Math.max(0, t - (t - v0) * f);
    v1 = Math.min(END, t + (v1 - t) * f);
    if (v1 - v0 < 100) v1 = v0 + 100;
    draw();
  }, { passive: false });
  tl.addEventListener("mousedown", (e) => { drag = { x: e.clientX, a: v0, b: v1 }; });
  window.addEventListener("mouseup", () => { drag = null; });
  tl.addEventListener("dblclick", () => { v0 = 0; v1 = END; draw(); });
  tl.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  tl.addEventListener("mousemove", (e) => {
    const r = tl.getBoundingClientRect(), W = tl.width - LEFT;
    if (drag) {
      const dt = (e.clientX - drag.x) * tl.width / r.width / W * (drag.b - drag.a);
      v0 = drag.a - dt; v1 = drag.b - dt;
      if (v0 < 0) { v1 -= v0; v0 = 0; }
      draw();
    }
    const x = (e.clientX - r.left) * tl.width / r.width - LEFT, y = (e.clientY - r.top) * tl.height / r.height;
    const cpu = Math.floor(y / ROW), t = v0 + (v1 - v0) * x / W;
    const s = D.slices.find((s) => s[0] === cpu && s[1] <= t && t <= s[2]);
    if (s && x >= 0) {
      tip.style.display = "block"; tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px";
      tip.textContent = D.tasks[s[3]][0] + "-" + D.tasks[s[3]][1] + " on CPU " + cpu + ": " + fmt(s[1]) + " .. " + fmt(s[2]) + " (" + fmt(s[2] - s[1]) + ")";
    } else tip.style.display = "none";
  });
  draw();
}

// Line plot of series [{name, pts: [[x, y], ...]}] on canvas `cv`; x is
// in ns. `ymax` fixes the y range (so two sides share a scale).
function plot(cv, series, opt) {
  const c = cv.getContext("2d");
  const legend = Math.min(160, cv.width / 5);
  const L = 50, B = 32, W = cv.width - L - legend, H = cv.height - B - 10;
  const xs = [], ys = [];
  for (const s of series) for (const p of s.pts) { xs.push(p[0]); ys.push(p[1]); }
  c.clearRect(0, 0, cv.width, cv.height);
  c.font = "11px sans-serif";
  c.fillStyle = "#333";
  if (xs.length === 0) { c.fillText("no data", L, 20); return; }
  const tx = (x) => opt.xlog ? Math.log10(Math.max(x, 1)) : x;
  let x0 = tx(opt.xmin !== undefined ? opt.xmin : xs.reduce((a, b) => Math.min(a, b)));
  let x1 = tx(opt.xmax !== undefined ? opt.xmax : xs.reduce((a, b) => Math.max(a, b)));
  const y1 = opt.ymax || Math.max(1, ys.reduce((a, b) => Math.max(a, b)));
  if (x1 <= x0) x1 = x0 + 1;
  const X = (x) => L + (tx(x) - x0) / (x1 - x0) * W, Y = (y) => 10 + H - y / y1 * H;
  c.strokeStyle = "#999"; c.strokeRect(L, 10, W, H);
  for (let i = 0; i <= 5; i++) {
    const xv = x0 + (x1 - x0) * i / 5, label = fmt(opt.xlog ? Math.pow(10, xv) : xv);
    const w = c.measureText(label).width || 0;
    c.fillText(label, L + W * i / 5 - (i === 5 ? w : i === 0 ? 0 : w / 2), 10 + H + 14);
    const yl = String(Math.round(y1 * i / 5 * 100) / 100);
    c.fillText(yl, L - 4 - (c.measureText(yl).width || 0), Y(y1 * i / 5) + 4);
  }
  c.fillText(opt.xlab, L + W / 2 - 30, cv.height - 2);
  c.save(); c.translate(10, 10 + H / 2 + 20); c.rotate(-Math.PI / 2); c.fillText(opt.ylab, 0, 0); c.restore();
  series.forEach((s, i) => {
    const color = s.color || COLORS[i % COLORS.length];
    c.strokeStyle = color; c.beginPath();
    s.pts.forEach((p, j) => {
      if (j === 0) c.moveTo(X(p[0]), Y(p[1]));
      else { if (opt.step) c.lineTo(X(p[0]), Y(s.pts[j - 1][1])); c.lineTo(X(p[0]), Y(p[1])); }
    });
    c.stroke();
    // As many legend lines as fit; the last says how many are left out.
    const fit = Math.floor(H / 14);
    if (i < fit) {
      c.fillStyle = i < fit - 1 || series.length === fit ? color : "#333";
      const more = "+" + (series.length - i) + " more";
      c.fillText(i < fit - 1 || series.length === fit ? s.name : more, L + W + 8, 20 + i * 14, legend - 10);
    }
  });
}

const cdfSeries = (D) => D.cdfs.filter((g) => g.q.length).map((g) => ({ name: g.name, pts: g.q.map((v, i) => [v, i / 100]) }));
const cpuSeries = (D, k) => D.cpu_series.map((s, i) => ({ name: "cpu" + i, pts: s.map((p) => [p[0], p[k]]) }));
const seriesMax = (D, k) => Math.max(1, ...D.cpu_series.map((s) => s.reduce((m, p) => Math.max(m, p[k]), 0)));
const latencyRange = (Ds) => {
  const q = Ds.flatMap((D) => D.cdfs.flatMap((g) => g.q));
  return q.length ? [q.reduce((a, b) => Math.min(a, b)), q.reduce((a, b) => Math.max(a, b))] : [undefined, undefined];
};

// One run's charts into the elements whose ids start with `p`; `shared`
// fixes the axes two side-by-side runs share.
function runCharts(D, p, shared) {
  const end = shared ? shared.end : D.end;
  $(p + "title").textContent = D.title;
  if (D.cut_at !== null) $(p + "cut").textContent = "(timeline kept up to " + fmt(D.cut_at) + ")";
  timeline($(p + "tl"), D, $(p + "range"), $("tip"));
  const [lo, hi] = shared ? shared.latency : latencyRange([D]);
  plot($(p + "cdf"), cdfSeries(D), { xlab: "sched_waking → running latency (log)", ylab: "fraction", xlog: true, xmin: lo, xmax: hi });
  plot($(p + "util"), cpuSeries(D, 1), { xlab: "time", ylab: "util_avg", step: true, xmin: 0, xmax: end, ymax: shared ? shared.util : seriesMax(D, 1) });
  plot($(p + "nr"), cpuSeries(D, 2), { xlab: "time", ylab: "nr_running", step: true, xmin: 0, xmax: end, ymax: shared ? shared.nr : seriesMax(D, 2) });
  if (D.task_series.length) {
    $(p + "pelt").innerHTML = "<h2>PELT of selected tasks (--trace-pelt): util_avg</h2><canvas id='" + p + "tpelt' width='" + $(p + "util").width + "' height='220'></canvas>";
    plot($(p + "tpelt"), D.task_series.map((t) => ({ name: t.name, pts: t.s.map((q) => [q[0], q[1]]) })), { xlab: "time", ylab: "util_avg", step: true, xmin: 0, xmax: end });
  }
  const tab = $(p + "counters");
  const row = (n, v) => {
    const tr = tab.insertRow();
    tr.insertCell().textContent = n;
    const td = tr.insertCell(); td.className = "n"; td.textContent = v;
  };
  for (const [n, v] of D.counters) row(n, String(v));
  D.busy.forEach((b, i) => row("cpu" + i + " busy", (b * 100).toFixed(1) + " %"));
}

// Uncaught errors and console errors are also written into the page (the
// headless browser test reads them from the DOM).
const pageError = (msg) => {
  const el = $("errors");
  if (el) { el.style.display = "block"; el.textContent += msg + "\n"; }
};
window.addEventListener("error", (e) => pageError("error: " + e.message));
if (typeof console !== "undefined") {
  const consoleError = console.error;
  console.error = (...a) => { pageError("console.error: " + a.join(" ")); consoleError.apply(console, a); };
}
