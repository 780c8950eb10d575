#!/usr/bin/env python3
"""Compare `perf bench sched messaging` (hackbench) traces task by task.

Reads real traces exported with `perf script --ns` and schedlab's simulated
ftrace text (`schedlab run --trace FILE`), classifies the benchmark's tasks
into senders and receivers, and prints one table of per-message scheduling
behaviour side by side: switches per message (voluntary / involuntary), run
lengths between blocks, messages read per receiver wakeup, who preempts whom,
same-CPU vs cross-CPU wakeups, IPIs per cross-CPU wakeup, wakeup->running
latency and migrations per message.

Usage:
  trace_compare.py --loops 400 \\
      --trace real=real-socket.txt \\
      --trace sim=sim-socket.txt,json=sim-socket.json [--markdown]

Each --trace is LABEL=PATH[,loops=N][,groups=N][,fds=N][,json=FILE]; the
optional schedlab --json file supplies IPI counts when the trace has no IPI
events. Roles: a comm containing "recv"/"send" decides; otherwise fork order
(perf bench and hackbench fork a group's fds receivers, then its fds senders).
Standard library only.
"""

import argparse
import json
import re
import sys

# perf script: "comm pid [cpu] secs: [subsys:]event: args" (comm may hold spaces)
PERF_RE = re.compile(
    r"^\s*(?P<comm>.*?)\s+(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<ts>\d+\.\d+):"
    r"\s+(?:[\w-]+:)?(?P<event>\w+):\s?(?P<args>.*)$"
)
# ftrace text: "comm-pid [cpu] flags secs: event: args" (flags optional)
FTRACE_RE = re.compile(
    r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]"
    r"\s+(?:\S{4,5}\s+)?(?P<ts>\d+\.\d+):\s+(?P<event>\w+):\s?(?P<args>.*)$"
)
SWITCH_RE = re.compile(
    r"prev_comm=(?P<pcomm>.*?) prev_pid=(?P<ppid>\d+) prev_prio=\d+ "
    r"prev_state=(?P<pstate>\S+) ==> next_comm=(?P<ncomm>.*?) "
    r"next_pid=(?P<npid>\d+)"
)
WAKE_RE = re.compile(r"comm=(?P<comm>.*?) pid=(?P<pid>\d+) prio=\d+.*?target_cpu=(?P<tcpu>\d+)")
FORK_RE = re.compile(r"child_comm=(?P<comm>.*?) child_pid=(?P<pid>\d+)")
MIGRATE_RE = re.compile(r"pid=(?P<pid>\d+) .*orig_cpu=(?P<o>\d+) dest_cpu=(?P<d>\d+)")
IPI_RE = re.compile(r"callsite=(?P<site>[\w.]+)")
SCHED_IPI_SITES = {"wakeup_preempt", "check_preempt_curr", "check_preempt_wakeup_fair", "resched_curr",
                   "update_curr", "ttwu_queue_wakelist", "kick_ilb", "sched_balance_trigger",
                   "smp_send_reschedule", "task_tick_fair"}


def die(msg):
    """Bad input: say what and where, exit 2."""
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


class Event:
    """One parsed trace line."""

    __slots__ = ("ts", "cpu", "pid", "comm", "event", "args")

    def __init__(self, ts, cpu, pid, comm, event, args):
        self.ts, self.cpu, self.pid = ts, cpu, pid
        self.comm, self.event, self.args = comm, event, args


def parse_trace(path):
    """Parse perf script or ftrace text into time-ordered events."""
    events = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                m = FTRACE_RE.match(line) or PERF_RE.match(line)
                if m is None:
                    continue
                events.append(
                    Event(
                        float(m["ts"]) * 1e6,  # µs
                        int(m["cpu"]),
                        int(m["pid"]),
                        m["comm"].strip(),
                        m["event"],
                        m["args"],
                    )
                )
    except OSError as e:
        die(f"cannot read trace {path}: {e}")
    if not events:
        die(f"{path}: no trace events recognised (perf script or ftrace text expected)")
    events.sort(key=lambda e: e.ts)  # perf script is per-CPU merged; keep stable order
    return events


def classify(events, fds):
    """Map pid -> 'recv'/'send' for the benchmark's workers, and the parent pid."""
    forks = []  # (parent, child, child_comm)
    for e in events:
        if e.event == "sched_process_fork":
            m = FORK_RE.search(e.args)
            if m:
                forks.append((e.pid, int(m["pid"]), m["comm"]))
    if not forks:
        die("no sched_process_fork events: cannot find the benchmark's tasks")
    # The benchmark parent is the task that forks the most children.
    counts = {}
    for parent, _, _ in forks:
        counts[parent] = counts.get(parent, 0) + 1
    parent = max(sorted(counts), key=lambda p: counts[p])
    children = [(c, comm) for p, c, comm in forks if p == parent]
    roles = {}
    by_comm = all(("recv" in comm) or ("send" in comm) for _, comm in children)
    for i, (pid, comm) in enumerate(children):
        if by_comm:
            roles[pid] = "recv" if "recv" in comm else "send"
        else:
            roles[pid] = "recv" if (i % (2 * fds)) < fds else "send"
    return parent, roles, ("comm" if by_comm else "fork order")


def pct(values, q):
    """q-th percentile (nearest rank) or None."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(q / 100.0 * (len(s) - 1)))))
    return s[k]


class Analysis:
    """Walks one trace and accumulates the per-role statistics."""

    def __init__(self, events, roles):
        self.roles = roles
        self.switch_out = {("send", "S"): 0, ("send", "R"): 0, ("recv", "S"): 0, ("recv", "R"): 0}
        self.block_wakeups = {"send": 0, "recv": 0}
        self.other_wakings = {"send": 0, "recv": 0}  # wakings of a task that had not blocked
        self.migrations = {"send": 0, "recv": 0}
        self.run_between_blocks = {"send": [], "recv": []}
        self.segment = {("send", "S"): [], ("send", "R"): [], ("recv", "S"): [], ("recv", "R"): []}
        self.latency = {"same": [], "cross": []}
        self.wake_kind = {"same": 0, "cross": 0}
        self.wake_kind_by = {}  # (waker role, wakee role, kind) -> n
        self.preempted_by = {}  # (victim role, cause) -> n
        self.local_wakes = 0  # sender wakes a receiver on its own CPU
        self.local_wake_preempts = 0
        self.local_preempt_delay = []
        self.ipi_sites = {}
        self.wake_idle_no_ipi = 0
        self.cpu_time = 0.0
        self.role_cpu = {"send": 0.0, "recv": 0.0}
        self.cross_victim_ran = []  # victim's time on CPU when a cross-CPU wakee preempted it
        self.cross_preempt_delay = []  # cross-CPU waking -> the preempting switch
        self.first = None
        self.last = None
        self._run(events)

    def _run(self, events):
        roles = self.roles
        on_cpu_since = {}  # pid -> switch-in time
        accum = {}  # pid -> on-CPU time since last block
        sleeping = set()
        pending = {}  # wakee pid -> (waking ts, waker pid, waker cpu, waker role)
        kind_of = {}  # wakee pid -> 'same'/'cross' once its sched_wakeup is seen
        woke_since_in = {}  # pid -> {wakee: (ts, kind)} wakeups it did while on CPU
        last_wake = {}  # wakee pid -> (ts, waker pid, kind)
        for e in events:
            if e.event == "sched_switch":
                m = SWITCH_RE.search(e.args)
                if not m:
                    continue
                self._switch(e, int(m["ppid"]), m["pstate"], int(m["npid"]),
                             on_cpu_since, accum, sleeping, pending, kind_of,
                             woke_since_in, last_wake)
            elif e.event == "sched_waking":
                m = WAKE_RE.search(e.args)
                if m and int(m["pid"]) in roles:
                    wakee = int(m["pid"])
                    if wakee in sleeping:
                        sleeping.discard(wakee)
                        pending[wakee] = (e.ts, e.pid, e.cpu, roles.get(e.pid))
                        kind_of.pop(wakee, None)
                    else:
                        self.other_wakings[roles[wakee]] += 1
            elif e.event == "sched_wakeup":
                m = WAKE_RE.search(e.args)
                if m and int(m["pid"]) in pending and int(m["pid"]) not in kind_of:
                    wakee = int(m["pid"])
                    ts, waker, wcpu, wrole = pending[wakee]
                    kind = "same" if wcpu == int(m["tcpu"]) else "cross"
                    kind_of[wakee] = kind
                    self._count_wake(waker, wakee, wrole, kind, ts, wcpu, woke_since_in, last_wake)
            elif e.event == "sched_migrate_task":
                m = MIGRATE_RE.search(e.args)
                if m and int(m["pid"]) in roles:
                    self.migrations[roles[int(m["pid"])]] += 1
            elif e.event in ("ipi_send_cpu", "ipi_send_cpumask"):
                if self.first is not None:
                    m = IPI_RE.search(e.args)
                    site = m["site"].split("+")[0] if m else "?"
                    self.ipi_sites[site] = self.ipi_sites.get(site, 0) + 1
            elif e.event == "sched_wake_idle_without_ipi":
                if self.first is not None:
                    self.wake_idle_no_ipi += 1
            if e.pid in roles:
                self.first = e.ts if self.first is None else self.first
                self.last = e.ts

    def _count_wake(self, waker, wakee, wrole, kind, ts, wcpu, woke_since_in, last_wake):
        role = self.roles[wakee]
        self.block_wakeups[role] += 1
        self.wake_kind[kind] += 1
        key = (wrole or "other", role, kind)
        self.wake_kind_by[key] = self.wake_kind_by.get(key, 0) + 1
        last_wake[wakee] = (ts, waker, kind)
        if waker in woke_since_in:
            woke_since_in[waker][wakee] = (ts, kind)
        if wrole == "send" and role == "recv" and kind == "same":
            self.local_wakes += 1

    def _switch(self, e, prev, pstate, nxt, on_cpu_since, accum, sleeping,
                pending, kind_of, woke_since_in, last_wake):
        roles = self.roles
        involuntary = pstate.startswith("R")
        if prev in roles and prev in on_cpu_since:
            role = roles[prev]
            seg = e.ts - on_cpu_since.pop(prev)
            self.cpu_time += seg
            self.role_cpu[role] += seg
            accum[prev] = accum.get(prev, 0.0) + seg
            kind = "R" if involuntary else "S"
            self.switch_out[(role, kind)] += 1
            self.segment[(role, kind)].append(seg)
            if not involuntary:
                self.run_between_blocks[role].append(accum.pop(prev))
                if not pstate.startswith(("X", "Z")):
                    sleeping.add(prev)
            else:
                self._preemption(e, prev, role, nxt, seg, woke_since_in, last_wake)
            woke_since_in.pop(prev, None)
        elif prev in roles and not involuntary and not pstate.startswith(("X", "Z")):
            sleeping.add(prev)
        if nxt in roles:
            on_cpu_since[nxt] = e.ts
            woke_since_in[nxt] = {}
            if nxt in pending:
                ts, _, _, _ = pending.pop(nxt)
                kind = kind_of.pop(nxt, None)
                if kind is not None:
                    self.latency[kind].append(e.ts - ts)

    def _preemption(self, e, prev, role, nxt, seg, woke_since_in, last_wake):
        mine = woke_since_in.get(prev, {})
        if role == "send":
            for wakee, (_, kind) in mine.items():
                if kind == "same" and self.roles.get(wakee) == "recv" and wakee == nxt:
                    self.local_wake_preempts += 1
                    self.local_preempt_delay.append(e.ts - mine[wakee][0])
        if nxt in mine and mine[nxt][1] == "same":
            cause = "own local wakee"
        elif nxt in last_wake and last_wake[nxt][2] == "cross" and nxt not in mine:
            cause = "wakee from other CPU"
            self.cross_victim_ran.append(seg)
            self.cross_preempt_delay.append(e.ts - last_wake[nxt][0])
        else:
            cause = "other (tick, runnable task)"
        if nxt not in self.roles:
            cause = "non-benchmark task"
        key = (role, cause)
        self.preempted_by[key] = self.preempted_by.get(key, 0) + 1


def ipi_timing(events):
    """Resched IPIs (ipi_send_cpu from wakeup_preempt): how long the sending
    vCPU and the target vCPU go without any trace event afterwards, and the
    delay to reschedule_entry on the target. Empty lists without IPI events."""
    out = {"sender_gap": [], "target_gap": [], "to_entry": []}
    sender_wait, target_wait, entry_wait = {}, {}, {}
    for e in events:
        if e.cpu in sender_wait:
            out["sender_gap"].append(e.ts - sender_wait.pop(e.cpu))
        if e.cpu in target_wait:
            out["target_gap"].append(e.ts - target_wait.pop(e.cpu))
        if e.event == "reschedule_entry" and e.cpu in entry_wait:
            out["to_entry"].append(e.ts - entry_wait.pop(e.cpu))
        elif e.event == "sched_switch":
            entry_wait.pop(e.cpu, None)  # target switched before the IPI landed
        if e.event == "ipi_send_cpu" and "wakeup_preempt" in e.args:
            m = re.search(r"\bcpu=(\d+)", e.args)
            if m:
                target = int(m[1])
                sender_wait[e.cpu] = e.ts
                target_wait[target] = e.ts
                entry_wait[target] = e.ts
    return out


def load_ipis_from_json(path):
    """schedlab --json totals: IPIs sent and avoided (no per-callsite split)."""
    try:
        with open(path, encoding="utf-8") as f:
            totals = json.load(f)["totals"]
        return totals.get("ipis_sent"), totals.get("ipis_avoided_polling")
    except (OSError, ValueError, KeyError) as e:
        die(f"{path}: cannot read totals.ipis_sent: {e}")


def fmt(v, digits=3):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.{digits}g}"


def rows_for(a, msgs, ipis_json, ipit):
    """The table rows (name, value) of one analysis."""
    per = lambda n: n / msgs  # noqa: E731
    sw = a.switch_out
    total_sw = sum(sw.values())
    rwake = a.block_wakeups["recv"]
    cross = a.wake_kind["cross"]
    # Scheduler IPIs only (resched_curr from wakeup_preempt/update_curr, the
    # wakelist); TLB shootdowns at exit (on_each_cpu_cond_mask) are not ours.
    ipi_total = sum(v for k, v in a.ipi_sites.items() if k in SCHED_IPI_SITES) if a.ipi_sites else None
    if ipi_total is None and ipis_json is not None:
        ipi_total = ipis_json[0]
    lat = a.latency
    rows = [
        ("messages", f"{msgs}"),
        ("elapsed µs/msg (first..last worker event)", per(a.last - a.first)),
        ("worker CPU µs/msg (from switches)", per(a.cpu_time)),
        ("  sender CPU µs/msg", per(a.role_cpu["send"])),
        ("  receiver CPU µs/msg", per(a.role_cpu["recv"])),
        ("switch-outs/msg, all workers", per(total_sw)),
        ("  sender voluntary (S)", per(sw[("send", "S")])),
        ("  sender involuntary (R)", per(sw[("send", "R")])),
        ("  receiver voluntary (S)", per(sw[("recv", "S")])),
        ("  receiver involuntary (R)", per(sw[("recv", "R")])),
        ("receiver wakeups/msg (after a block)", per(rwake)),
        ("messages read per receiver wakeup", (msgs / rwake) if rwake else None),
        ("sender wakeups/msg (after a block)", per(a.block_wakeups["send"])),
        ("wakings of a task not blocked/msg", per(sum(a.other_wakings.values()))),
        ("receiver run between blocks µs p50", pct(a.run_between_blocks["recv"], 50)),
        ("receiver run between blocks µs p90", pct(a.run_between_blocks["recv"], 90)),
        ("sender run between blocks µs p50", pct(a.run_between_blocks["send"], 50)),
        ("sender run between blocks µs p90", pct(a.run_between_blocks["send"], 90)),
        ("sender run before preemption µs p50", pct(a.segment[("send", "R")], 50)),
        ("sender run before preemption µs p90", pct(a.segment[("send", "R")], 90)),
        ("P(sender preempted by recv it woke on own CPU)",
         (a.local_wake_preempts / a.local_wakes) if a.local_wakes else None),
        ("  local wake -> that preemption µs p50", pct(a.local_preempt_delay, 50)),
    ]
    for victim in ("send", "recv"):
        for cause in ("own local wakee", "wakee from other CPU", "other (tick, runnable task)",
                      "non-benchmark task"):
            rows.append((f"{victim} preempted by {cause}/msg", per(a.preempted_by.get((victim, cause), 0))))
    rows += [
        ("victim's run when a cross-CPU wakee preempts µs p50", pct(a.cross_victim_ran, 50)),
        ("cross-CPU waking -> that preemption µs p50", pct(a.cross_preempt_delay, 50)),
        ("same-CPU wakeups/msg", per(a.wake_kind["same"])),
        ("cross-CPU wakeups/msg", per(cross)),
        ("  cross share of wakeups", cross / max(1, cross + a.wake_kind["same"])),
        ("sched IPIs sent per cross-CPU wakeup", (ipi_total / cross) if (ipi_total is not None and cross) else None),
        ("wake_idle_without_ipi/msg", per(a.wake_idle_no_ipi) if a.ipi_sites else None),
        ("resched IPI: sender vCPU silent after send µs p50", pct(ipit["sender_gap"], 50)),
        ("resched IPI: target vCPU silent after send µs p50", pct(ipit["target_gap"], 50)),
        ("resched IPI: send -> reschedule_entry µs p50", pct(ipit["to_entry"], 50)),
    ]
    for kind in ("same", "cross"):
        rows += [
            (f"{kind}-CPU waking->running µs p10", pct(lat[kind], 10)),
            (f"{kind}-CPU waking->running µs p50", pct(lat[kind], 50)),
            (f"{kind}-CPU waking->running µs p90", pct(lat[kind], 90)),
            (f"{kind}-CPU share running within 5 µs",
             (sum(1 for v in lat[kind] if v <= 5.0) / len(lat[kind])) if lat[kind] else None),
        ]
    rows.append(("migrations/msg", per(sum(a.migrations.values()))))
    return rows


def parse_spec(spec, defaults):
    """LABEL=PATH[,key=value...] -> dict."""
    if "=" not in spec:
        die(f"--trace {spec!r}: expected LABEL=PATH[,loops=N,groups=N,fds=N,json=FILE]")
    label, rest = spec.split("=", 1)
    parts = rest.split(",")
    out = dict(defaults, label=label, path=parts[0], json=None)
    for p in parts[1:]:
        k, _, v = p.partition("=")
        if k in ("loops", "groups", "fds"):
            try:
                out[k] = int(v)
            except ValueError:
                die(f"--trace {label}: {k}={v!r} is not an integer")
        elif k == "json":
            out["json"] = v
        else:
            die(f"--trace {label}: unknown key {k!r}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", action="append", required=True, help="LABEL=PATH[,loops=N,groups=N,fds=N,json=FILE]")
    ap.add_argument("--loops", type=int, default=100)
    ap.add_argument("--groups", type=int, default=1)
    ap.add_argument("--fds", type=int, default=20)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--ipi-sites", action="store_true", help="also print IPI callsites per trace")
    args = ap.parse_args()
    defaults = {"loops": args.loops, "groups": args.groups, "fds": args.fds}
    columns, labels, notes = [], [], []
    for spec in args.trace:
        s = parse_spec(spec, defaults)
        events = parse_trace(s["path"])
        _, roles, how = classify(events, s["fds"])
        a = Analysis(events, roles)
        msgs = s["groups"] * s["fds"] * s["fds"] * s["loops"]
        ipis = load_ipis_from_json(s["json"]) if s["json"] else None
        columns.append(rows_for(a, msgs, ipis, ipi_timing(events)))
        labels.append(s["label"])
        nrecv = sum(1 for r in roles.values() if r == "recv")
        notes.append(f"{s['label']}: {s['path']}: {nrecv} receivers, {len(roles) - nrecv} senders by {how}; "
                     f"receiver block-wakeups {a.block_wakeups['recv']}, sender {a.block_wakeups['send']}"
                     + ("" if a.block_wakeups["recv"] >= a.block_wakeups["send"] else
                        "  WARNING: receivers woken less than senders: roles may be swapped"))
        if args.ipi_sites:
            sites = ", ".join(f"{k} {v}" for k, v in sorted(a.ipi_sites.items(), key=lambda kv: -kv[1]))
            notes.append(f"{s['label']}: IPI callsites: {sites or 'none in trace'}"
                         + (f"; json ipis_sent={ipis[0]} avoided={ipis[1]}" if ipis else ""))
    names = [n for n, _ in columns[0]]
    if args.markdown:
        print("| metric | " + " | ".join(labels) + " |")
        print("|---|" + "---:|" * len(labels))
        for i, n in enumerate(names):
            print(f"| {n.strip() if not n.startswith('  ') else '↳ ' + n.strip()} | "
                  + " | ".join(fmt(c[i][1]) for c in columns) + " |")
    else:
        w = max(len(n) for n in names) + 2
        print("metric".ljust(w) + "".join(l.rjust(12) for l in labels))
        for i, n in enumerate(names):
            print(n.ljust(w) + "".join(fmt(c[i][1]).rjust(12) for c in columns))
    print()
    if args.ipi_sites:
        print("sched IPIs = callsites " + ", ".join(sorted(SCHED_IPI_SITES)) + "; schedlab: totals.ipis_sent")
    for n in notes:
        print(n)


if __name__ == "__main__":
    main()
