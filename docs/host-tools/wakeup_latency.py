#!/usr/bin/env python3
"""sched_waking → sched_switch-in latency of one comm, from `perf script`
or ftrace text. Prints count, p10/p50/p90, the fraction that waited past
1 ms (for the tick) and the median of those that preempted at once.
Usage: wakeup_latency.py TRACE COMM"""
import re
import sys

ev = re.compile(r"\s(\d+\.\d+):\s+(?:sched:)?(sched_waking|sched_switch):\s(.*)$")
path, comm = sys.argv[1], sys.argv[2]
waking, lat = {}, []
for line in open(path, errors="replace"):
    m = ev.search(line)
    if not m:
        continue
    ts, name, rest = float(m.group(1)), m.group(2), m.group(3)
    if name == "sched_waking":
        f = dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)
        if f.get("comm") == comm:
            waking[f["pid"]] = ts
    else:
        nxt = rest.split("==>")[1]
        f = dict(kv.split("=", 1) for kv in nxt.split() if "=" in kv)
        w = waking.pop(f.get("next_pid"), None)
        if w is not None:
            lat.append((ts - w) * 1e6)
lat.sort()
if not lat:
    sys.exit(f"no wakeups of {comm} in {path}")
q = lambda v, p: v[min(len(v) - 1, int(p * len(v)))]
now = [x for x in lat if x < 1000]
print(f"{comm}: {len(lat)} wakeups, latency µs p10 {q(lat,.1):.1f} p50 {q(lat,.5):.1f} "
      f"p90 {q(lat,.9):.1f}; waited >1 ms: {100*(len(lat)-len(now))/len(lat):.0f} %; "
      f"preempting at once: n={len(now)} p10 {q(now,.1):.1f} p50 {q(now,.5):.1f} p90 {q(now,.9):.1f}")
