#!/usr/bin/env python3
"""Where wakees go, window by window, from an ftrace text trace written with
`schedlab run ... --trace FILE.txt --trace-decisions`.

Per window: the placements (schedlab_place records): how many, the share put
on the waker's own CPU, the share moved off the wakee's previous CPU, CPUs
scanned per wakeup, and the share of each `why` (select_idle_sibling's rule)
and `affine` (wake_affine's answer); then, from sched_switch, how many
distinct tasks each CPU ran in the window and on how many CPUs both tasks of
one context1 pair ran (a pair is child pid p, parent p+1, as the context1
workload creates them).

    scripts/trace-placement.py TRACE.txt [WINDOW_SECONDS]   (default 0.001)
"""
import collections
import re
import sys

PLACE = re.compile(
    r"\s(\d+\.\d+): schedlab_place: pid=(\d+) prev_cpu=(\d+) waker_cpu=(\d+) "
    r"target_cpu=(\d+) affine=(\S+) why=(\S+) scanned=(\d+)"
)
SWITCH = re.compile(r"\[(\d+)\] \S+\s+(\d+\.\d+): sched_switch: .*next_pid=(\d+)")


def main():
    path = sys.argv[1]
    win = float(sys.argv[2]) if len(sys.argv) > 2 else 1e-3
    place = collections.defaultdict(collections.Counter)
    ran = collections.defaultdict(lambda: collections.defaultdict(set))
    with open(path) as f:
        for line in f:
            if "schedlab_place" in line:
                m = PLACE.search(line)
                if not m:
                    continue
                c = place[int(float(m.group(1)) / win)]
                prev, waker, target = (int(m.group(i)) for i in (3, 4, 5))
                c["n"] += 1
                c["on_waker"] += target == waker
                c["moved"] += target != prev
                c["scanned"] += int(m.group(8))
                c["affine=" + m.group(6)] += 1
                c["why=" + m.group(7)] += 1
            elif "sched_switch" in line:
                m = SWITCH.search(line)
                if m and m.group(3) != "0":
                    w = int(float(m.group(2)) / win)
                    ran[w][int(m.group(1))].add(int(m.group(3)))
    for w in sorted(set(place) | set(ran)):
        c = place[w]
        n = max(c["n"], 1)
        shares = " ".join(
            f"{k}:{v / n * 100:.0f}%"
            for k, v in sorted(c.items())
            if k.startswith(("why", "affine"))
        )
        per_cpu = collections.Counter(len(s) for s in ran[w].values())
        pairs = sum(1 for s in ran[w].values() for p in s if p % 2 == 0 and p + 1 in s)
        print(
            f"{w * win * 1e3:7.1f} ms  wakeups {c['n']:6d}  on waker's CPU "
            f"{c['on_waker'] / n * 100:5.1f}%  moved {c['moved'] / n * 100:5.1f}%  "
            f"scanned/wakeup {c['scanned'] / n:5.2f}  {shares}"
        )
        print(
            f"{'':10s} CPUs running tasks {len(ran[w])}, tasks per CPU "
            f"{dict(sorted(per_cpu.items()))}, pairs on one CPU {pairs}"
        )


if __name__ == "__main__":
    main()
