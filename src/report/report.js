// schedlab report charts, shared by the run page (report.html) and the
// compare page (compare.html). A run's data D: {title, header, meta, start,
// end, ncpus, groups, capacity, tasks, slices, wakeups, cut_at, cdfs,
// cpu_series, bins, task_series, pelt_warning, busy, counters, lanes}; see
// src/report/html.rs, bins.rs and lanes.rs.
const COLORS = ["#1f77b4","#ff7f0e","#2ca02c","#d62728","#9467bd","#8c564b","#e377c2","#7f7f7f","#bcbd22","#17becf"];
const $ = (id) => document.getElementById(id);
const HEATMAP_ABOVE = 16;

// Round ticks: about n steps of 1, 2 or 5 × 10^k over [lo, hi].
function ticks(lo, hi, n) {
  const raw = (hi - lo) / Math.max(1, n);
  if (!(raw > 0)) return { step: 1, list: [lo] };
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
  const list = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) list.push(Math.round(v / step) * step);
  return { step: step, list: list };
}
// A time in ns with the unit its tick step calls for ("120 ms", "1.5 s").
function fmtTime(ns, step) {
  const s = step || Math.abs(ns) || 1;
  const [div, unit] = s >= 1e8 ? [1e9, "s"] : s >= 1e5 ? [1e6, "ms"] : s >= 1e2 ? [1e3, "µs"] : [1, "ns"];
  const dec = Math.max(0, Math.min(3, -Math.floor(Math.log10(s / div) + 1e-9)));
  return (ns / div).toFixed(dec) + " " + unit;
}
const fmt = (ns) => fmtTime(ns, Math.abs(ns) / 10 || 1);
const fmtNum = (v, step) => {
  const dec = step >= 1 ? 0 : Math.min(3, -Math.floor(Math.log10(step) + 1e-9));
  return v.toFixed(dec);
};
const grouped = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

// The flat arrays of the data back into records.
function decode(D) {
  if (D.decoded) return;
  const s = [], f = D.slices;
  let t = 0;
  for (let i = 0; i + 3 < f.length; i += 4) { t += f[i + 1]; s.push([f[i], t, t + f[i + 2], f[i + 3]]); }
  const w = [], g = D.wakeups;
  t = 0;
  for (let i = 0; i + 2 < g.length; i += 3) { t += g[i]; w.push([t, g[i + 1], g[i + 2]]); }
  D.slices = s; D.wakeups = w; D.decoded = true;
  // Comms by time on CPU: colours and the legend.
  const time = new Map();
  for (const x of s) { const c = D.tasks[x[3]][0]; time.set(c, (time.get(c) || 0) + x[2] - x[1]); }
  D.comms = [...time.entries()].sort((a, b) => b[1] - a[1]).map((e) => e[0]);
  D.commIndex = new Map(D.comms.map((c, i) => [c, i]));
}
function taskColor(D, t, alpha) {
  const i = D.commIndex.get(D.tasks[t][0]) || 0;
  return `hsla(${(i * 137.5 + 200) % 360},${60 - (t % 3) * 8}%,${48 + (t % 4) * 5}%,${alpha})`;
}
const commColor = (i) => `hsl(${(i * 137.5 + 200) % 360},60%,50%)`;

// Heat colour for x in [0, 1] (light yellow → orange → dark purple).
const RAMP = [[255, 255, 217], [254, 196, 79], [236, 112, 20], [153, 52, 4], [60, 10, 70]];
function heat(x) {
  x = Math.max(0, Math.min(1, x)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x)), f = x - i, a = RAMP[i], b = RAMP[i + 1];
  return [0, 1, 2].map((j) => Math.round(a[j] + (b[j] - a[j]) * f));
}

// A time axis shared by the timelines of a page: zoom and pan move all.
function timeView(t0, t1) {
  return { t0: t0, t1: Math.max(t1, t0 + 1), v0: t0, v1: Math.max(t1, t0 + 1), draws: [],
    set(a, b) { this.v0 = a; this.v1 = b; this.draws.forEach((d) => d()); } };
}

// The timeline's rows: per group a header row (when there is more than
// one group) and, when the group is open, one row per CPU.
function layout(D, open) {
  const rows = [];
  const many = D.groups.length > 1;
  D.groups.forEach((g, gi) => {
    if (many) rows.push({ group: gi });
    if (!many || open[gi]) for (const cpu of g.cpus) rows.push({ cpu: cpu, group: gi });
  });
  const ncpu = rows.filter((r) => r.cpu !== undefined).length;
  const ROW = Math.max(6, Math.min(24, Math.floor(600 / Math.max(1, ncpu))));
  let y = 0;
  for (const r of rows) { r.y = y; r.h = r.cpu !== undefined ? ROW : open[r.group] ? 16 : 24; y += r.h; }
  return { rows: rows, height: y, rowOf: new Map(rows.filter((r) => r.cpu !== undefined).map((r) => [r.cpu, r])) };
}

// The matching tasks of the search box: a pid, or part of a comm or comm-pid.
function matchTasks(D, q) {
  q = q.trim();
  if (!q) return null;
  const set = new Set();
  D.tasks.forEach((t, i) => {
    if (String(t[1]) === q || t[0].includes(q) || (t[0] + "-" + t[1]) === q) set.add(i);
  });
  return set;
}

// A zoomable, pannable per-CPU timeline of D's slices on canvas `tl`.
function timeline(tl, D, view, els) {
  const LEFT = 120, AXIS = 22;
  const open = D.groups.map(() => D.ncpus <= 32);
  let L = layout(D, open), drag = null, found = null;
  const B = D.bins;
  const cutAt = D.cut_at === null ? Infinity : D.cut_at;
  function overview(c, cpus, y, h, v0, v1, W, from) {
    // The binned busy fraction of `cpus` from `from` on, as a grey band.
    const n = B.busy[0] ? B.busy[0].length : 0;
    for (let i = 0; i < n; i++) {
      const a = Math.max(from, B.start + i * B.width), b = B.start + (i + 1) * B.width;
      if (b < v0 || a > v1 || a >= b) continue;
      let sum = 0;
      for (const cpu of cpus) sum += B.busy[cpu][i];
      const frac = sum / cpus.length / 100;
      if (frac <= 0) continue;
      const x0 = LEFT + Math.max(0, (a - v0) / (v1 - v0) * W), x1 = LEFT + Math.min(W, (b - v0) / (v1 - v0) * W);
      c.fillStyle = `rgba(60,60,90,${0.15 + 0.75 * frac})`;
      c.fillRect(x0, y + 1, Math.max(0.5, x1 - x0), h - 2);
    }
  }
  function draw() {
    tl.height = L.height + AXIS;
    const c = tl.getContext("2d"), W = tl.width - LEFT, v0 = view.v0, v1 = view.v1;
    c.clearRect(0, 0, tl.width, tl.height);
    c.font = "11px sans-serif";
    for (const r of L.rows) {
      const g = D.groups[r.group];
      if (r.cpu === undefined) {
        c.fillStyle = "#eef"; c.fillRect(0, r.y, tl.width, r.h);
        c.fillStyle = "#223";
        c.fillText((open[r.group] ? "▾ " : "▸ ") + g.short, 4, r.y + 12, LEFT - 8);
        if (!open[r.group]) overview(c, g.cpus, r.y, r.h, v0, v1, W, 0);
      } else if (r.h >= 11 || r.cpu === g.cpus[0] || g.cpus.indexOf(r.cpu) % Math.ceil(11 / r.h) === 0) {
        c.fillStyle = "#333"; c.fillText("CPU " + r.cpu, 14, r.y + r.h / 2 + 4);
      }
    }
    const scale = W / (v1 - v0);
    for (const s of D.slices) {
      if (s[2] < v0 || s[1] > v1) continue;
      const r = L.rowOf.get(s[0]), hit = found && found.has(s[3]);
      if (!r && !hit) continue;
      const x0 = LEFT + Math.max(0, (s[1] - v0) * scale), x1 = LEFT + Math.min(W, (s[2] - v0) * scale);
      if (!r) {
        // A found task's slice inside a closed group: a mark on its row.
        const gr = L.rows.find((q) => q.cpu === undefined && D.groups[q.group].cpus.includes(s[0]));
        c.fillStyle = taskColor(D, s[3], 1); c.fillRect(x0, gr.y + 3, Math.max(1, x1 - x0), gr.h - 6);
        continue;
      }
      c.fillStyle = taskColor(D, s[3], found && !hit ? 0.15 : 1);
      c.fillRect(x0, r.y + 1, Math.max(0.5, x1 - x0), r.h - 2);
      if (hit) { c.strokeStyle = "#000"; c.strokeRect(x0, r.y + 0.5, Math.max(1, x1 - x0), r.h - 1); }
      if (x1 - x0 > 50 && r.h >= 12) {
        c.fillStyle = "#000";
        c.fillText(D.tasks[s[3]][0], x0 + 2, r.y + r.h / 2 + 4, x1 - x0 - 4);
      }
    }
    if (found) {
      c.fillStyle = "#000";
      for (const w of D.wakeups) {
        if (!found.has(w[2]) || w[0] < v0 || w[0] > v1) continue;
        const r = L.rowOf.get(w[1]);
        if (!r) continue;
        const x = LEFT + (w[0] - v0) * scale;
        c.beginPath(); c.moveTo(x - 4, r.y); c.lineTo(x + 4, r.y); c.lineTo(x, r.y + Math.min(8, r.h)); c.fill();
      }
    }
    if (cutAt < v1) {
      // Past the slice cap: the binned busy fraction of each CPU row.
      const x = LEFT + Math.max(0, (cutAt - v0) * scale);
      for (const r of L.rows) if (r.cpu !== undefined) overview(c, [r.cpu], r.y, r.h, v0, v1, W, cutAt);
      c.strokeStyle = "#c00"; c.beginPath(); c.moveTo(x, 0); c.lineTo(x, L.height); c.stroke();
    }
    c.fillStyle = "#333";
    const tk = ticks(v0, v1, 8);
    for (const t of tk.list) {
      const label = fmtTime(t, tk.step), w = c.measureText(label).width || 0, x = LEFT + (t - v0) * scale;
      c.fillRect(x, L.height, 1, 4);
      c.fillText(label, Math.min(tl.width - w, Math.max(LEFT, x - w / 2)), L.height + 16);
    }
    if (els.range) els.range.textContent = "Showing " + fmt(v0) + " .. " + fmt(v1) + ".";
  }
  view.draws.push(draw);
  draw();
  const timeAt = (e) => {
    const r = tl.getBoundingClientRect(), W = tl.width - LEFT;
    const x = (e.clientX - r.left) * tl.width / r.width - LEFT;
    return { x: x, y: (e.clientY - r.top) * tl.height / r.height, t: view.v0 + (view.v1 - view.v0) * Math.min(Math.max(0, x), W) / W };
  };
  tl.addEventListener("wheel", (e) => {
    e.preventDefault();
    const t = timeAt(e).t, f = e.deltaY < 0 ? 0.8 : 1.25;
    const a = Math.max(view.t0, t - (t - view.v0) * f), b = Math.min(view.t1, t + (view.v1 - t) * f);
    view.set(a, Math.max(b, a + 100));
  }, { passive: false });
  tl.addEventListener("mousedown", (e) => { drag = { x: e.clientX, a: view.v0, b: view.v1 }; });
  window.addEventListener("mouseup", () => { drag = null; });
  tl.addEventListener("dblclick", () => view.set(view.t0, view.t1));
  tl.addEventListener("click", (e) => {
    const p = timeAt(e), r = L.rows.find((q) => q.y <= p.y && p.y < q.y + q.h);
    if (r && r.cpu === undefined && p.x < 0) { open[r.group] = !open[r.group]; L = layout(D, open); draw(); }
  });
  tl.addEventListener("mouseleave", () => { els.tip.style.display = "none"; });
  tl.addEventListener("mousemove", (e) => {
    const r = tl.getBoundingClientRect(), W = tl.width - LEFT;
    if (drag) {
      const dt = (e.clientX - drag.x) * tl.width / r.width / W * (drag.b - drag.a);
      let a = drag.a - dt, b = drag.b - dt;
      if (a < view.t0) { b += view.t0 - a; a = view.t0; }
      view.set(a, b);
    }
    const p = timeAt(e), row = L.rows.find((q) => q.y <= p.y && p.y < q.y + q.h);
    let text = null;
    if (row && row.cpu === undefined) text = D.groups[row.group].label + (p.x < 0 ? " (click to " + (open[row.group] ? "collapse)" : "expand)") : "");
    else if (row && p.x >= 0) {
      const s = D.slices.find((s) => s[0] === row.cpu && s[1] <= p.t && p.t <= s[2]);
      if (s) text = D.tasks[s[3]][0] + "-" + D.tasks[s[3]][1] + " on CPU " + row.cpu + ": " + fmt(s[1]) + " .. " + fmt(s[2]) + " (" + fmt(s[2] - s[1]) + ")";
    }
    if (text) {
      els.tip.style.display = "block"; els.tip.style.left = (e.clientX + 12) + "px"; els.tip.style.top = (e.clientY + 12) + "px";
      els.tip.textContent = text;
    } else els.tip.style.display = "none";
  });
  return {
    find(q) {
      found = matchTasks(D, q);
      draw();
      if (!found) return "";
      let n = 0, w = 0;
      for (const s of D.slices) if (found.has(s[3])) n++;
      for (const x of D.wakeups) if (found.has(x[2])) w++;
      return found.size + " task(s), " + grouped(n) + " slices, " + grouped(w) + " wakeups";
    },
  };
}

// The per-task lanes' data (src/report/lanes.rs) back into records: per
// lane task its runs [start, end, cpu, pick, end, resched] and waits
// {start, end, cpu, how, waker, at, rec}.
function decodeLanes(D) {
  const L = D.lanes;
  if (!L || L.byTask) return;
  L.order = L.tasks.map((t) => t[0]);
  L.info = new Map(L.tasks.map((t) => [t[0], { waited: t[1], tg: t[2], wl: t[3] }]));
  L.byTask = new Map(L.order.map((p) => [p, { runs: [], waits: [] }]));
  for (let i = 0; i + 3 < L.runs.length; i += 4) {
    const s = D.slices[L.runs[i]];
    if (s) L.byTask.get(s[3]).runs.push([s[1], s[2], s[0], L.runs[i + 1], L.runs[i + 2], L.runs[i + 3]]);
  }
  let t = 0;
  const w = L.waits;
  for (let i = 0; i + 7 < w.length; i += 8) {
    t += w[i + 1];
    L.byTask.get(w[i]).waits.push({ start: t, end: t + w[i + 2], cpu: w[i + 3], how: w[i + 4], waker: w[i + 5] - 1, at: t - w[i + 6], rec: w[i + 7] });
  }
  L.pidIndex = new Map(D.tasks.map((x, i) => [x[1], i]));
}
const taskName = (D, p) => D.tasks[p][0] + "-" + D.tasks[p][1];
// Decision record fields that hold a pid: shown as comm-pid.
const PID_FIELDS = new Set(["pid", "runner_up", "wakee", "curr"]);
// A decision record as --trace-decisions writes it: "pick: eligible=3 ...".
function recText(D, id) {
  const dec = D.lanes.decisions, r = dec.recs[id - 1];
  if (!r) return "";
  const [name, fields] = dec.kinds[r[0]];
  const pid = (v) => v < 0 ? "-" : D.lanes.pidIndex.has(v) ? taskName(D, D.lanes.pidIndex.get(v)) : String(v);
  const val = (f, v) => f[1] === "b" ? String(v !== 0) : f[1] === "s" ? dec.strs[v] : PID_FIELDS.has(f[0]) ? pid(v) : String(v);
  return name + ": " + fields.map((f, i) => f[0] + "=" + val(f, r[i + 1])).join(" ");
}
const END_TEXT = ["still running", "slept", "yielded", "preempted", "exited"];
// A time as ftrace and explain print it: seconds to the ns.
const stamp = (ns) => (ns / 1e9).toFixed(9);
const span = (a, b) => stamp(a) + " .. " + stamp(b) + " (" + fmt(b - a) + ")";
function runText(D, p, r) {
  const lines = [taskName(D, p) + " running on CPU " + r[2] + ": " + span(r[0], r[1])];
  lines.push(r[3] ? "chosen by " + recText(D, r[3]) : "chosen without a fair pick record (RT, idle or before the window)");
  lines.push("then " + END_TEXT[r[4]] + (r[5] ? " by " + recText(D, r[5]) : ""));
  return lines.join("\n");
}
function waitText(D, p, w) {
  const lines = [taskName(D, p) + " runnable on CPU " + w.cpu + ": " + span(w.start, w.end)];
  const by = w.waker < 0 ? "an interrupt" : taskName(D, w.waker);
  if (w.how === 0) lines.push("woken by " + by + " (sched_waking " + fmt(w.start - w.at) + " before)");
  else if (w.how === 1) lines.push("a new task" + (w.waker >= 0 ? ", forked by " + by : ""));
  else lines.push(w.how === 2 ? "preempted" : "yielded");
  if (w.rec) lines.push(recText(D, w.rec));
  return lines.join("\n");
}

// The lane tasks a filter selects: "top" (most runnable time first),
// "find" (the text), "comm:", "cg:", "wl:" or "wait" (`focus`).
function laneTasks(D, mode, q, focus) {
  const L = D.lanes;
  if (mode === "wait") return focus;
  if (mode === "find") { const m = matchTasks(D, q); return m ? L.order.filter((p) => m.has(p)) : []; }
  const [kind, v] = mode.split(/:(.*)/s);
  if (kind === "comm") return L.order.filter((p) => D.tasks[p][0] === v);
  if (kind === "cg") return L.order.filter((p) => L.info.get(p).tg === +v);
  if (kind === "wl") return L.order.filter((p) => L.info.get(p).wl === +v);
  return L.order;
}
// After each task its most frequent waker that has a lane, so that its
// wake arrows join two lanes.
function withWakers(D, list) {
  const out = [], seen = new Set(), add = (p) => { if (!seen.has(p)) { seen.add(p); out.push(p); } };
  for (const p of list) {
    add(p);
    const n = new Map();
    for (const w of D.lanes.byTask.get(p).waits) if (w.how === 0 && D.lanes.byTask.has(w.waker)) n.set(w.waker, (n.get(w.waker) || 0) + 1);
    const top = [...n.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0];
    if (top) add(top[0]);
  }
  return out;
}
// The filter's choices: top, the text, then each comm, cgroup and
// workload of the lane tasks when there is more than one.
function laneOptions(sel, D) {
  const L = D.lanes, opt = (v, t) => { const o = document.createElement("option"); o.value = v; o.textContent = t; sel.appendChild(o); };
  opt("top", "most runnable time first");
  opt("find", "tasks matching the text");
  const count = (key) => { const m = new Map(); for (const p of L.order) m.set(key(p), (m.get(key(p)) || 0) + 1); return [...m.entries()]; };
  const comms = count((p) => D.tasks[p][0]), cgs = count((p) => L.info.get(p).tg), wls = count((p) => L.info.get(p).wl);
  if (comms.length > 1) for (const [c, n] of comms) opt("comm:" + c, "comm " + c + " (" + n + ")");
  if (cgs.length > 1) for (const [g, n] of cgs) opt("cg:" + g, "cgroup " + L.cgroups[g] + " (" + n + ")");
  const wlComm = (w) => D.tasks[L.order.find((p) => L.info.get(p).wl === w)][0];
  if (wls.length > 1) for (const [w, n] of wls) opt("wl:" + w, "workload " + (w + 1) + ": " + wlComm(w) + " (" + n + ")");
}

// The per-task lanes on canvas `cv`, on the timeline's time axis: running
// above, runnable below, waker → wakee arrows; `mark` outlines one wait.
function lanes(cv, D, view, els) {
  const LEFT = 120, AXIS = 22, MAX_ARROWS = 3000;
  let tasks = [], row = new Map(), ROW = 20, mark = null;
  function band(c, x0, x1, y, h) { c.fillRect(x0, y, Math.max(0.5, x1 - x0), h); }
  function arrow(c, x0, y0, x1, y1) {
    c.beginPath(); c.moveTo(x0, y0); c.lineTo(x1, y1); c.stroke();
    const a = Math.atan2(y1 - y0, x1 - x0);
    c.beginPath(); c.moveTo(x1, y1);
    c.lineTo(x1 - 6 * Math.cos(a - 0.4), y1 - 6 * Math.sin(a - 0.4));
    c.lineTo(x1 - 6 * Math.cos(a + 0.4), y1 - 6 * Math.sin(a + 0.4)); c.fill();
  }
  function draw() {
    cv.height = Math.max(1, tasks.length) * ROW + AXIS;
    const c = cv.getContext("2d"), W = cv.width - LEFT, v0 = view.v0, v1 = view.v1, scale = W / (v1 - v0);
    const X = (t) => LEFT + Math.min(W, Math.max(0, (t - v0) * scale));
    c.clearRect(0, 0, cv.width, cv.height);
    c.font = "11px sans-serif";
    let nwaits = 0, narrows = 0;
    tasks.forEach((p, i) => {
      const y = i * ROW, lane = D.lanes.byTask.get(p);
      if (i % 2) { c.fillStyle = "#f7f7f7"; c.fillRect(LEFT, y, W, ROW); }
      c.fillStyle = "#333"; c.fillText(taskName(D, p), 4, y + ROW / 2 + 4, LEFT - 8);
      c.fillStyle = taskColor(D, p, 1);
      for (const r of lane.runs) if (r[1] >= v0 && r[0] <= v1) band(c, X(r[0]), X(r[1]), y + 1, ROW * 0.55);
      c.fillStyle = "#f5a623";
      for (const w of lane.waits) if (w.end >= v0 && w.start <= v1) { band(c, X(w.start), X(w.end), y + ROW * 0.6, ROW * 0.35); nwaits++; }
    });
    c.strokeStyle = c.fillStyle = "rgba(30,30,30,0.7)";
    tasks.forEach((p, i) => {
      for (const w of D.lanes.byTask.get(p).waits) {
        if (w.how > 1 || w.start < v0 || w.at > v1 || narrows >= MAX_ARROWS) continue;
        const from = row.get(w.waker), y = i * ROW + ROW * 0.6;
        if (from !== undefined) arrow(c, X(w.at), from * ROW + ROW * 0.3, X(w.start), y);
        else arrow(c, X(w.start), i * ROW, X(w.start), y);
        narrows++;
      }
    });
    if (mark) {
      const i = row.get(mark.p);
      if (i !== undefined) { c.strokeStyle = "#c00"; c.lineWidth = 2; c.strokeRect(X(mark.w.start) - 2, i * ROW, X(mark.w.end) - X(mark.w.start) + 4, ROW); c.lineWidth = 1; }
    }
    c.fillStyle = "#333";
    const tk = ticks(v0, v1, 8), H = tasks.length * ROW;
    for (const t of tk.list) {
      const label = fmtTime(t, tk.step), w = c.measureText(label).width || 0, x = LEFT + (t - v0) * scale;
      c.fillRect(x, H, 1, 4);
      c.fillText(label, Math.min(cv.width - w, Math.max(LEFT, x - w / 2)), H + 16);
    }
    // What is drawn, for the reader and the browser test.
    cv.dataset.lanes = tasks.length; cv.dataset.waits = nwaits; cv.dataset.arrows = narrows;
    if (els.count) els.count.textContent = tasks.length + " lane(s), " + grouped(nwaits) + " waits and " + grouped(narrows) + " wake arrows in view" + (narrows >= MAX_ARROWS ? " (arrows capped: zoom in)" : "");
  }
  view.draws.push(draw);
  // The run or wait under the mouse, within 3 pixels.
  function hit(e) {
    const r = cv.getBoundingClientRect(), W = cv.width - LEFT;
    const x = (e.clientX - r.left) * cv.width / r.width - LEFT, y = (e.clientY - r.top) * cv.height / r.height;
    const i = Math.floor(y / ROW), p = tasks[i];
    if (p === undefined || x < 0) return null;
    const t = view.v0 + (view.v1 - view.v0) * x / W, slack = 3 * (view.v1 - view.v0) / W, lane = D.lanes.byTask.get(p);
    if (y - i * ROW < ROW * 0.58) {
      const run = lane.runs.find((q) => q[0] - slack <= t && t <= q[1] + slack);
      return run ? runText(D, p, run) : null;
    }
    const w = lane.waits.find((q) => q.start - slack <= t && t <= q.end + slack);
    return w ? waitText(D, p, w) : null;
  }
  cv.addEventListener("mouseleave", () => { els.tip.style.display = "none"; });
  cv.addEventListener("mousemove", (e) => {
    const text = hit(e);
    els.tip.style.display = text ? "block" : "none";
    if (!text) return;
    els.tip.style.left = (e.clientX + 12) + "px"; els.tip.style.top = (e.clientY + 12) + "px";
    els.tip.textContent = text;
  });
  cv.addEventListener("dblclick", () => view.set(view.t0, view.t1));
  return {
    show(list, m) {
      tasks = list; mark = m || null;
      row = new Map(tasks.map((p, i) => [p, i]));
      ROW = Math.max(10, Math.min(24, Math.floor(600 / Math.max(1, tasks.length))));
      draw();
    },
  };
}

// The lanes panel: its filter, its note, and the tail waits the latency
// CDF links to (`#tail=N` opens the Nth longest on load).
function lanesPanel(D, view, el) {
  const L = D.lanes, sel = el("lanesel"), n = el("lanen"), q = el("lanefind"), wk = el("lanewakers");
  const ln = lanes(el("lanes"), D, view, { tip: $("tip"), count: el("lanecount") });
  laneOptions(sel, D);
  let focus = [], mark = null;
  const update = () => {
    const list = laneTasks(D, sel.value, q.value, focus).slice(0, Math.max(1, +n.value || 16));
    ln.show(wk.checked && sel.value !== "wait" ? withWakers(D, list) : list, sel.value === "wait" ? mark : null);
  };
  for (const e of [sel, n, q, wk]) e.addEventListener("input", update);
  q.addEventListener("input", () => { if (sel.value !== "find") { sel.value = "find"; update(); } });
  el("lanenote").textContent = "Lanes hold the " + grouped(L.order.length) + " tasks with most runnable time (sched_wakeup or preemption to running) of the "
    + grouped(L.of) + " that waited" + (L.order.length < L.of ? ", as many as fit " + grouped(L.budget) + " slices and waits, and the tasks of the latency tail with their wakers" : "")
    + "; the per-CPU timeline above has every task." + (L.cut_at !== null ? " Waits kept up to " + fmt(L.cut_at) + "." : "");
  // Show the tail's i-th wait: its task and waker, zoomed around it.
  function open(i) {
    const [p, from, lat] = L.tail[i], w = L.byTask.get(p).waits.find((x) => x.end === from + lat);
    focus = w && w.waker >= 0 && w.waker !== p && L.byTask.has(w.waker) ? [w.waker, p] : [p];
    mark = w ? { p: p, w: w } : null;
    if (![...sel.options].some((o) => o.value === "wait")) {
      const o = document.createElement("option"); o.value = "wait"; o.textContent = "the chosen wait's task and waker"; sel.appendChild(o);
    }
    sel.value = "wait";
    const a = Math.min(from, w ? w.start : from), pad = Math.max(lat, 1000) * 0.6;
    view.set(Math.max(view.t0, a - pad), Math.min(view.t1, from + lat + pad));
    update();
  }
  update();
  return open;
}
// The longest waits of the latency tail at or above `min` ns, as links.
function tailList(box, D, min, open) {
  box.textContent = "";
  const T = D.lanes.tail;
  const head = box.appendChild(document.createElement("p")); head.className = "note";
  head.textContent = "The " + T.length + " longest waits behind the tail (sched_waking → running; click the CDF to keep those above a latency, a wait to show it in the lanes):";
  T.forEach((t, i) => {
    if (t[2] < min) return;
    const a = box.appendChild(document.createElement("a"));
    a.href = "#tail=" + i; a.className = "chip";
    a.textContent = fmt(t[2]) + " " + taskName(D, t[0]) + " on CPU " + t[3] + " at " + stamp(t[1]);
    a.addEventListener("click", () => open(i));
    box.appendChild(document.createTextNode(" "));
  });
}

// The colour legend of the timeline: the comms by time on CPU.
function legend(el, D) {
  if (!el) return;
  el.textContent = "";
  D.comms.slice(0, 12).forEach((c, i) => {
    const s = document.createElement("span");
    s.className = "chip";
    const b = document.createElement("b"); b.style.background = commColor(i);
    s.appendChild(b); s.appendChild(document.createTextNode(c));
    el.appendChild(s);
  });
  if (D.comms.length > 12) el.appendChild(document.createTextNode(" +" + (D.comms.length - 12) + " more comms"));
  if (D.slices.length) el.appendChild(document.createTextNode(" · a shade per task within its comm; grey bands: busy fraction of a group or past the slice cap"));
}

// Axes of a plot: frame, round ticks, labels with units.
function axes(c, box, x, y, opt) {
  const { L, T, W, H } = box;
  c.strokeStyle = "#999"; c.strokeRect(L, T, W, H);
  c.fillStyle = "#333"; c.font = "11px sans-serif";
  const xt = opt.xlog ? null : ticks(x[0], x[1], 8);
  if (opt.xlog) {
    for (let e = Math.ceil(x[0]); e <= Math.floor(x[1]); e++) {
      const px = L + (e - x[0]) / (x[1] - x[0]) * W, label = fmtTime(Math.pow(10, e), Math.pow(10, e));
      c.fillRect(px, T + H, 1, 4);
      c.fillText(label, px - (c.measureText(label).width || 0) / 2, T + H + 15);
    }
  } else {
    for (const v of xt.list) {
      const px = L + (v - x[0]) / (x[1] - x[0]) * W, label = opt.xfmt(v, xt.step), w = c.measureText(label).width || 0;
      c.fillRect(px, T + H, 1, 4);
      c.fillText(label, Math.min(L + W - w, Math.max(L - w / 2, px - w / 2)), T + H + 15);
    }
  }
  if (y) {
    const yt = ticks(y[0], y[1], 5);
    for (const v of yt.list) {
      const py = T + H - (v - y[0]) / (y[1] - y[0]) * H, label = fmtNum(v, yt.step);
      c.fillRect(L - 4, py, 4, 1);
      c.fillText(label, L - 6 - (c.measureText(label).width || 0), py + 4);
    }
  }
  c.fillText(opt.xlab, L + W / 2 - (c.measureText(opt.xlab).width || 0) / 2, T + H + 29);
  c.save(); c.translate(12, T + H / 2 + (c.measureText(opt.ylab).width || 0) / 2); c.rotate(-Math.PI / 2); c.fillText(opt.ylab, 0, 0); c.restore();
}

// Line plot of series [{name, pts: [[x, y], ...]}] on canvas `cv`; x is
// in ns. `ymax` fixes the y range (so two sides share a scale); `ref`
// draws a dashed reference line {y, label}.
function plot(cv, series, opt) {
  const c = cv.getContext("2d");
  const legendW = Math.min(200, cv.width / 5);
  const box = { L: 58, T: 10, W: cv.width - 58 - legendW, H: cv.height - 46 };
  const xs = [], ys = [];
  for (const s of series) for (const p of s.pts) { xs.push(p[0]); ys.push(p[1]); }
  c.clearRect(0, 0, cv.width, cv.height);
  c.font = "11px sans-serif"; c.fillStyle = "#333";
  if (xs.length === 0) { c.fillText(opt.empty || "no data", box.L, 20); return null; }
  const tx = (x) => opt.xlog ? Math.log10(Math.max(x, 1)) : x;
  let x0 = tx(opt.xmin !== undefined ? opt.xmin : xs.reduce((a, b) => Math.min(a, b)));
  let x1 = tx(opt.xmax !== undefined ? opt.xmax : xs.reduce((a, b) => Math.max(a, b)));
  if (opt.xlog) { x0 = Math.floor(x0); x1 = Math.ceil(x1); }
  if (x1 <= x0) x1 = x0 + 1;
  let y1 = opt.ymax || Math.max(1, ys.reduce((a, b) => Math.max(a, b)));
  if (opt.ref) y1 = Math.max(y1, opt.ref.y * 1.05);
  y1 = ticks(0, y1, 5).list.slice(-1)[0] >= y1 ? ticks(0, y1, 5).list.slice(-1)[0] : y1;
  const X = (x) => box.L + (tx(x) - x0) / (x1 - x0) * box.W, Y = (y) => box.T + box.H - y / y1 * box.H;
  axes(c, box, [x0, x1], [0, y1], opt);
  c.save(); c.beginPath(); c.rect(box.L, box.T, box.W, box.H); c.clip();
  series.forEach((s, i) => {
    c.strokeStyle = s.color || COLORS[i % COLORS.length]; c.beginPath();
    s.pts.forEach((p, j) => {
      if (j === 0) c.moveTo(X(p[0]), Y(p[1]));
      else { if (opt.step) c.lineTo(X(p[0]), Y(s.pts[j - 1][1])); c.lineTo(X(p[0]), Y(p[1])); }
    });
    c.stroke();
  });
  if (opt.ref) {
    c.setLineDash([6, 4]); c.strokeStyle = "#c00"; c.beginPath();
    c.moveTo(box.L, Y(opt.ref.y)); c.lineTo(box.L + box.W, Y(opt.ref.y)); c.stroke(); c.setLineDash([]);
    c.fillStyle = "#c00"; c.fillText(opt.ref.label, box.L + 4, Y(opt.ref.y) - 3);
  }
  c.restore();
  // As many legend lines as fit; the last says how many are left out.
  const fit = Math.floor(box.H / 14);
  series.forEach((s, i) => {
    if (i >= fit) return;
    const last = i === fit - 1 && series.length > fit;
    c.fillStyle = last ? "#333" : s.color || COLORS[i % COLORS.length];
    c.fillText(last ? "+" + (series.length - i) + " more" : s.name, box.L + box.W + 8, 20 + i * 14, legendW - 10);
  });
  // The x value at a pixel column, for clicks.
  return { valueAt: (px) => { const v = x0 + (px - box.L) / box.W * (x1 - x0); return opt.xlog ? Math.pow(10, v) : v; } };
}

// Heatmap of a binned per-CPU signal (rows: CPUs by group, the group's
// label on the axis; columns: time bins), with its colour scale.
function heatmap(cv, D, key, opt) {
  const B = D.bins, rows = D.groups.flatMap((g) => g.cpus), n = B[key][0].length;
  const rowH = Math.max(1, Math.min(4, Math.floor(400 / D.ncpus)));
  const gap = (gi) => gi === 0 ? 0 : D.groups[gi].socket !== D.groups[gi - 1].socket ? 5 : 2;
  const H = D.groups.reduce((h, g, gi) => h + gap(gi) + g.cpus.length * rowH, 0);
  cv.height = H + 56;
  const c = cv.getContext("2d"), box = { L: 150, T: 10, W: cv.width - 150 - 90, H: H };
  c.clearRect(0, 0, cv.width, cv.height);
  const img = document.createElement("canvas");
  img.width = Math.max(1, n); img.height = rows.length;
  const ic = img.getContext("2d"), data = ic.createImageData(img.width, img.height);
  rows.forEach((cpu, r) => {
    for (let i = 0; i < n; i++) {
      const [R, G, Bl] = heat(B[key][cpu][i] / opt.scale / opt.max), o = (r * n + i) * 4;
      data.data[o] = R; data.data[o + 1] = G; data.data[o + 2] = Bl; data.data[o + 3] = 255;
    }
  });
  ic.putImageData(data, 0, 0);
  const X = (t) => box.L + (t - opt.t0) / (opt.t1 - opt.t0) * box.W;
  const w = X(B.start + n * B.width) - X(B.start);
  c.imageSmoothingEnabled = false;
  c.font = "10px sans-serif";
  let y = box.T, r0 = 0;
  D.groups.forEach((g, gi) => {
    y += gap(gi);
    const h = g.cpus.length * rowH;
    c.drawImage(img, 0, r0, n, g.cpus.length, X(B.start), y, Math.min(w, box.L + box.W - X(B.start)) , h);
    c.fillStyle = "#333";
    if (h >= 9 || gi % Math.ceil(10 / Math.max(1, h)) === 0) c.fillText(g.short, 4, y + Math.min(h, 12) - 2 + (h >= 12 ? (h - 12) / 2 : 0), box.L - 10);
    c.fillRect(box.L - 4, y, 2, h);
    y += h; r0 += g.cpus.length;
  });
  axes(c, { L: box.L, T: box.T, W: box.W, H: y - box.T }, [opt.t0, opt.t1], null,
    { xlab: opt.xlab, ylab: "", xfmt: fmtTime });
  // The colour scale.
  const sx = box.L + box.W + 20, sh = Math.min(160, H);
  for (let i = 0; i < sh; i++) { const [R, G, Bl] = heat(1 - i / sh); c.fillStyle = `rgb(${R},${G},${Bl})`; c.fillRect(sx, box.T + i, 14, 1); }
  c.strokeStyle = "#999"; c.strokeRect(sx, box.T, 14, sh);
  c.fillStyle = "#333";
  c.fillText(opt.maxLabel, sx + 17, box.T + 9, 60);
  c.fillText("0", sx + 17, box.T + sh, 60);
  c.fillText(opt.unit, sx, box.T + sh + 14, 80);
}

// Per-group means of a binned signal as line series.
function groupLines(D, key, scale) {
  const B = D.bins, n = B[key][0].length;
  return D.groups.map((g, gi) => ({
    name: g.short, color: D.groups.length > 10 ? `hsl(${gi * 360 / D.groups.length},60%,45%)` : COLORS[gi % COLORS.length],
    pts: Array.from({ length: n }, (_, i) => [B.start + i * B.width, g.cpus.reduce((a, cpu) => a + B[key][cpu][i], 0) / g.cpus.length / scale]),
  }));
}

const cdfLabel = (g) => g.name + " (n=" + grouped(g.n) + (g.new ? ", " + grouped(g.new) + " first runs" : "") + ")";
const cdfSeries = (D) => D.cdfs.filter((g) => g.q.length).map((g) => ({ name: cdfLabel(g), pts: g.q.map((v, i) => [v, i / 100]) }));
const cpuSeries = (D, k) => D.cpu_series.map((s, i) => ({ name: "cpu" + i, pts: s.map((p) => [p[0], p[k]]) }));
// The 99th percentile of a binned signal: a fork burst's few bins do not
// wash out the scale (they show in its top colour).
const binMax = (D, key, scale) => {
  const v = D.bins[key].flat().filter((x) => x > 0).sort((a, b) => a - b);
  return Math.max(1, v.length ? v[Math.floor((v.length - 1) * 0.99)] : 1) / scale;
};
const seriesMax = (D, k) => D.ncpus > HEATMAP_ABOVE ? binMax(D, k === 1 ? "util" : "nr", k === 1 ? 1 : 100)
  : Math.max(1, ...D.cpu_series.map((s) => s.reduce((m, p) => Math.max(m, p[k]), 0)));
const latencyRange = (Ds) => {
  const q = Ds.flatMap((D) => D.cdfs.flatMap((g) => g.q));
  return q.length ? [q.reduce((a, b) => Math.min(a, b)), q.reduce((a, b) => Math.max(a, b))] : [undefined, undefined];
};

// A command line as a shell would take it.
const shellQuote = (a) => /^[\w@%+=:,./-]+$/.test(a) ? a : "'" + a.replace(/'/g, "'\\''") + "'";
function header(el, D, meta) {
  if (!el || !D.header) return;
  const h = D.header, add = (tag, text, cls) => {
    const e = document.createElement(tag); if (cls) e.className = cls; e.textContent = text; el.appendChild(e); return e;
  };
  if (h.results.length) add("pre", h.results.join("\n"), "results");
  const tab = document.createElement("table"); tab.className = "kv"; el.appendChild(tab);
  const row = (k, v) => { const tr = tab.insertRow(); tr.insertCell().textContent = k; tr.insertCell().textContent = v; };
  if (meta) {
    const cmd = meta.command.slice();
    if (cmd.length) cmd[0] = cmd[0].split("/").pop();
    row("command", cmd.map(shellQuote).join(" "));
  }
  row("seed", String(h.seed));
  if (meta) {
    row("schedlab", meta.version + " (commit " + meta.commit + ", " + meta.build_date + ")");
    row("date", meta.date);
  }
  const det = document.createElement("details"); el.appendChild(det);
  det.appendChild(document.createElement("summary")).textContent = "Resolved scenario (TOML)";
  det.appendChild(document.createElement("pre")).textContent = h.scenario;
}

// The counters table, with the per-CPU busy rows by group in a closed block.
function counters(tab, det, D) {
  const row = (t, n, v, cls) => {
    const tr = t.insertRow(); if (cls) tr.className = cls;
    tr.insertCell().textContent = n;
    const td = tr.insertCell(); td.className = "n"; td.textContent = v;
  };
  for (const [n, v] of D.counters) row(tab, n, String(v));
  if (!det) return;
  det.textContent = "";
  det.appendChild(document.createElement("summary")).textContent = "Per-CPU busy time (" + D.ncpus + " CPUs in " + D.groups.length + " group(s))";
  const t = document.createElement("table"); det.appendChild(t);
  const pct = (b) => (b * 100).toFixed(1) + " %";
  for (const g of D.groups) {
    const b = g.cpus.map((c) => D.busy[c]);
    row(t, g.label, "mean " + pct(b.reduce((a, x) => a + x, 0) / b.length) + ", min " + pct(Math.min(...b)) + ", max " + pct(Math.max(...b)), "grp");
    for (const cpu of g.cpus) row(t, "cpu" + cpu + " busy", pct(D.busy[cpu]));
  }
}

// One run's charts into the elements whose ids start with `p`; `shared`
// fixes the axes two side-by-side runs share (and their time view).
function runCharts(D, p, shared) {
  decode(D);
  const el = (id) => $(p + id);
  const t0 = shared ? shared.start : D.start, t1 = shared ? shared.end : D.end;
  if (el("title")) el("title").textContent = D.header ? "schedlab: " + D.header.title : D.title;
  header(el("header"), D, D.meta);
  if (D.cut_at !== null) el("cut").textContent = "(slices kept up to " + fmt(D.cut_at) + "; after it, the busy fraction per " + fmt(D.bins.width) + " bin)";
  const view = shared ? shared.view : timeView(t0, t1);
  const tl = timeline(el("tl"), D, view, { range: el("range"), tip: $("tip") });
  legend(el("legend"), D);
  const find = el("find") || $("find");
  if (find) find.addEventListener("input", () => { const r = tl.find(find.value); const f = el("found"); if (f) f.textContent = (p && r ? p[0].toUpperCase() + ": " : "") + r; });
  const [lo, hi] = shared ? shared.latency : latencyRange([D]);
  const total = D.cdfs.length ? D.cdfs[0].n : 0;
  if (el("cdfnote")) el("cdfnote").textContent = grouped(total) + " samples: each time a task runs after sched_waking, the time since it (a new task: since sched_wakeup_new), from this run's simulated tracepoints"
 + (D.window ? " inside --trace-window" : "") + "; the five comms with most samples." + (total < 100 ? " Few samples: read the tails with care." : "");
  const cdf = plot(el("cdf"), cdfSeries(D), { xlab: "sched_waking → running latency (log scale)", ylab: "fraction of wakeups", xlog: true, xmin: lo, xmax: hi, xfmt: fmtTime });
  if (el("lanes") && D.lanes) lanesAndTail(D, view, el, cdf);
  const cap = Math.max(...D.capacity);
  const xo = { xlab: "simulated time", step: true, xmin: t0, xmax: t1, xfmt: fmtTime };
  if (D.ncpus > HEATMAP_ABOVE) {
    const um = shared ? shared.util : seriesMax(D, 1), nm = shared ? shared.nr : seriesMax(D, 2);
    heatmap(el("util"), D, "util", { t0: t0, t1: t1, scale: 1, max: Math.max(cap, um), maxLabel: "≥ " + Math.round(Math.max(cap, um)), unit: "util_avg", xlab: "simulated time" });
    heatmap(el("nr"), D, "nr", { t0: t0, t1: t1, scale: 100, max: nm, maxLabel: "≥ " + nm.toFixed(1), unit: "nr_running", xlab: "simulated time" });
    plot(el("utilagg"), groupLines(D, "util", 1), Object.assign({ ylab: "mean util_avg (1024 = a big CPU)", ref: { y: cap, label: "capacity " + cap } }, xo));
    plot(el("nragg"), groupLines(D, "nr", 100), Object.assign({ ylab: "mean nr_running" }, xo));
  } else {
    for (const id of ["utilagg", "nragg"]) if (el(id)) el(id).style.display = "none";
    plot(el("util"), cpuSeries(D, 1), Object.assign({ ylab: "util_avg (1024 = a big CPU)", ref: { y: cap, label: "capacity " + cap }, ymax: shared ? shared.util : seriesMax(D, 1) }, xo));
    plot(el("nr"), cpuSeries(D, 2), Object.assign({ ylab: "nr_running", ymax: shared ? shared.nr : seriesMax(D, 2) }, xo));
  }
  if (D.task_series.length || D.pelt_warning) {
    const box = el("pelt");
    box.innerHTML = "<h2>PELT of selected tasks (--trace-pelt): util_avg</h2>";
    if (D.pelt_warning) box.appendChild(document.createElement("p")).className = "warn";
    if (D.pelt_warning) box.lastChild.textContent = D.pelt_warning;
    const cv = document.createElement("canvas"); cv.width = el("cdf").width; cv.height = D.task_series.length ? 220 : 30; box.appendChild(cv);
    plot(cv, D.task_series.map((t) => ({ name: t.name, pts: t.s.map((q) => [q[0], q[1]]) })),
      Object.assign({ ylab: "util_avg", empty: "no samples: the selected tasks never ran" }, xo));
  }
  counters(el("counters"), el("percpu"), D);
}

// The lanes panel, and the CDF's tail list linked to it.
function lanesAndTail(D, view, el, cdf) {
  decodeLanes(D);
  const open = lanesPanel(D, view, el), cv = el("cdf");
  tailList(el("tail"), D, 0, open);
  cv.addEventListener("click", (e) => {
    const r = cv.getBoundingClientRect();
    if (cdf) tailList(el("tail"), D, cdf.valueAt((e.clientX - r.left) * cv.width / r.width), open);
  });
  const m = location.hash.match(/^#tail=(\d+)$/);
  if (m && D.lanes.tail[+m[1]]) open(+m[1]);
}

// Uncaught errors and console errors are also written into the page (the
// headless browser test reads them from the DOM).
const pageError = (msg) => {
  const e = $("errors");
  if (e) { e.style.display = "block"; e.textContent += msg + "\n"; }
};
window.addEventListener("error", (e) => pageError("error: " + e.message));
if (typeof console !== "undefined") {
  const consoleError = console.error;
  console.error = (...a) => { pageError("console.error: " + a.join(" ")); consoleError.apply(console, a); };
}
