#!/usr/bin/env python3
"""Recorded-vs-replayed table of docs/replay.md: one markdown row per trace
and flag set, from `schedlab replay FILE --fidelity --json -`.

usage: scripts/replay-table.py [SCHEDLAB] LABEL=FILE... [-- FLAGS|FLAGS...]
  The machine is vm-2, or $REPLAY_MACHINE (a preset or a machine file).
  e.g. scripts/replay-table.py target/release/schedlab \
         A=tests/data/messaging-g1-l20.perf.txt -- "" "--pin --handover"
"""
import json
import os
import subprocess
import sys


def row(schedlab, label, path, flags):
    machine = os.environ.get("REPLAY_MACHINE", "vm-2")
    cmd = [schedlab, "replay", path, "--fidelity", "--machine", machine, "-q", "--json", "-"]
    cmd += flags.split()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return f"| {label} | `{flags}` | failed: {out.stderr.strip()[:80]} |"
    b = json.loads(out.stdout)["benchmark"]
    f = b["fidelity"]
    rec, sim = f["total"]["recorded"], f["total"]["simulated"]
    ok = sum(
        1
        for t in f["tasks"]
        if t["recorded"]["runtime_ns"] > 0
        and abs(t["simulated"]["runtime_ns"] / t["recorded"]["runtime_ns"] - 1) <= 0.05
    )
    ran = sum(1 for t in f["tasks"] if t["recorded"]["runtime_ns"] > 0)

    def pair(key, scale=1.0, fmt="{:.0f}"):
        r, s = rec[key] / scale, sim[key] / scale
        pct = f" ({(s - r) / r * 100:+.0f}%)" if r else ""
        return f"{fmt.format(r)} / {fmt.format(s)}{pct}"

    span_r, span_s = b["recorded_span_ns"] / 1e6, b["simulated_span_ns"] / 1e6
    mig_r, mig_s = rec["migrations"], sim["migrations"]
    return (
        f"| {label} | `{flags or 'default'}` | {b['tasks']} "
        f"| {pair('runtime_ns', 1e6, '{:.1f}')}; {ok}/{ran} ≤5 % "
        f"| {pair('switches')} | {pair('wait_ns', 1e6, '{:.1f}')} "
        f"| {mig_r} / {mig_s} "
        f"| {span_r:.1f} / {span_s:.1f} ({(span_s - span_r) / span_r * 100:+.0f}%) |"
    )


def main(argv):
    schedlab = "target/release/schedlab"
    if argv and "=" not in argv[0] and argv[0] != "--":
        schedlab, argv = argv[0], argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    traces = [a.split("=", 1) for a in argv[:cut]]
    flag_sets = argv[cut + 1 :] or ["", "--handover", "--pin", "--pin --handover"]
    print(
        "| trace | flags | tasks | CPU ms rec / sim; tasks ≤5 % | switches rec / sim "
        "| wait ms rec / sim | migrations rec / sim | span ms rec / sim |"
    )
    print("|---|---|---:|---|---|---|---|---|")
    for label, path in traces:
        for flags in flag_sets:
            print(row(schedlab, label, path, flags), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
