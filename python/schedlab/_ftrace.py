"""ftrace text traces as LISA-shaped DataFrames.

:class:`Trace` reads the ftrace text that ``schedlab run --trace FILE``
writes (or a kernel's own ``trace`` file) and gives each event as a
DataFrame shaped like LISA's ``trace.df_event(...)``: index ``Time``
(seconds, float), ``__cpu``, ``__pid``, ``__comm`` (the context the line
was written in) and a column per event field. ``df_task_states()`` follows
LISA's ``trace.ana.tasks.df_tasks_states()``.
"""

from __future__ import annotations

import gzip
import os
import re
from typing import Dict, List, Optional, Tuple, Union

import pandas as pd

# `comm-pid [cpu] flags secs.nanos: event: fields`; an optional
# `(tgid)` column and flags column, as the kernel's trace options give.
_LINE = re.compile(
    r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]"
    r"(?:\s+[^\s:]{4,5})?\s+(?P<s>\d+)\.(?P<ns>\d+):\s+(?P<event>[\w:]+):\s?(?P<fields>.*)$"
)
# `key=value`, a value running to the next ` key=` (comms may hold spaces).
_FIELD = re.compile(r"(\w+)=(.*?)(?=\s+\w+=|\s*$)")

# prev_state letters and their TASK_REPORT bits (include/linux/sched.h);
# "+" is TASK_REPORT_MAX (0x100): a preempted task, as the kernel reports it.
_STATE_BITS = {"R": 0x0, "S": 0x1, "D": 0x2, "T": 0x4, "t": 0x8, "X": 0x10, "Z": 0x20, "P": 0x40, "I": 0x80, "+": 0x100}
_REPORTED = [(b, c) for c, b in _STATE_BITS.items() if 0 < b <= 0x80]

# LISA's synthetic task states (lisa.analysis.tasks.TaskState).
TASK_WAKING = 0x200
TASK_ACTIVE = 0x2000
TASK_UNKNOWN = -1

_TEXT_FIELDS = {"comm", "prev_comm", "next_comm", "child_comm", "affine", "why", "cause", "rule"}
_DECISIONS = ("schedlab_pick", "schedlab_place", "schedlab_resched")


def prev_state_bits(text: str) -> int:
    """A sched_switch ``prev_state`` as the kernel's bits: ``"S"`` 0x1,
    ``"R+"`` 0x100, ``"S|D"`` 0x3; a number stays that number."""
    if text.isdigit() or text.startswith("0x"):
        return int(text, 0)
    bits = 0
    for part in text.replace("|", ""):
        bits |= _STATE_BITS.get(part, 0)
    return bits


def state_str(value: int) -> str:
    """A task state as LISA's letter: ``A`` running, ``W`` woken (runnable),
    ``R``/``R+`` runnable after a switch out, ``S``, ``D``, ``X``, ``Z``...,
    ``U`` unknown."""
    if value == TASK_ACTIVE:
        return "A"
    if value == TASK_WAKING:
        return "W"
    if value == TASK_UNKNOWN:
        return "U"
    s = "|".join(c for b, c in _REPORTED if value & b) or "R"
    return s + "+" if value & ~0xFF else s


class Trace:
    """One ftrace text trace, its events as LISA-shaped DataFrames.

    Attributes:
        available_events: the events the trace holds, sorted.
        cpus_count: the header's ``#P:N``, else the highest CPU seen + 1.
    """

    def __init__(self, text: str):
        self._raw: Dict[str, List[Tuple[int, int, int, str, str, int]]] = {}
        cpus = _parse(text, self._raw)
        self.available_events: List[str] = sorted(self._raw)
        self.cpus_count: int = cpus
        self._frames: Dict[str, pd.DataFrame] = {}
        self._states: Optional[pd.DataFrame] = None

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike]) -> "Trace":
        """Read an ftrace text file (``.gz`` too)."""
        path = os.fspath(path)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            return cls(f.read())

    def has_events(self, *events: str) -> bool:
        """Whether every event named is in the trace."""
        return all(e in self._raw for e in events)

    def df_event(self, event: str) -> pd.DataFrame:
        """One event as LISA's ``trace.df_event(event)`` gives it.

        Index ``Time`` (s); ``__cpu``, ``__pid``, ``__comm``; a column per
        field (numbers as integers). sched_switch's ``prev_state`` is the
        kernel's bits (``prev_state_bits``); sched_wakeup and
        sched_wakeup_new get LISA's ``success`` (1). A line whose fields
        are not ``key=value`` (``tracing_mark_write``) has them in ``buf``.

        Raises:
            KeyError: the trace has no such event (``available_events``).
        """
        if event not in self._raw:
            raise KeyError(f"event {event!r} is not in the trace (it has: {', '.join(self.available_events) or 'none'})")
        if event not in self._frames:
            self._frames[event] = _frame(event, self._raw[event])
        return self._frames[event]

    def _lines(self, event: str) -> List[int]:
        """The line numbers of an event's rows, in the frame's order."""
        return [r[5] for r in self._raw[event]]

    def df_decisions(self) -> Dict[str, pd.DataFrame]:
        """schedlab's decision records (``--trace-decisions``) present in
        the trace, by event: ``schedlab_pick``, ``schedlab_place``,
        ``schedlab_resched``; empty when they were not traced."""
        return {e: self.df_event(e) for e in _DECISIONS if e in self._raw}

    def df_task_states(self, task: Union[int, str, None] = None) -> pd.DataFrame:
        """Each task's state changes, as LISA's ``df_tasks_states()``.

        Index ``Time`` (s, repeated where two tasks change at once);
        ``pid``, ``comm``, ``target_cpu`` (wakeups; -1 otherwise), ``cpu``,
        ``curr_state`` and ``next_state`` (LISA's ``TaskState`` values:
        0x2000 running (A), 0x200 woken and runnable (W), a switch's
        prev_state bits (R+, S, X, Z...), -1 unknown (U)), ``delta`` (s in
        this state; NaN for a task's last row) and ``curr_state_str``,
        ``next_state_str`` (the letters). ``task``: a pid or comm, to keep
        one task's rows.
        """
        if self._states is None:
            self._states = _task_states(self)
        df = self._states
        if task is not None:
            df = df[df["pid"] == task] if isinstance(task, int) else df[df["comm"] == task]
        return df

    def __repr__(self) -> str:
        n = sum(len(v) for v in self._raw.values())
        return f"<schedlab.Trace {n} events, {len(self._raw)} kinds, {self.cpus_count} CPUs>"


def _parse(text: str, raw: Dict[str, list]) -> int:
    """Sort the lines of ``text`` by event into ``raw``: (ns, cpu, pid,
    comm, fields, line number) each; the CPU count from the header or the
    lines."""
    cpus, top = None, -1
    for n, line in enumerate(text.splitlines()):
        if line.startswith("#"):
            m = re.search(r"#P:(\d+)", line)
            cpus = int(m.group(1)) if m else cpus
            continue
        m = _LINE.match(line)
        if m is None:
            continue
        ns = int(m["s"]) * 1_000_000_000 + int(m["ns"].ljust(9, "0")[:9])
        cpu = int(m["cpu"])
        top = max(top, cpu)
        raw.setdefault(m["event"], []).append((ns, cpu, int(m["pid"]), m["comm"], m["fields"], n))
    return cpus if cpus is not None else top + 1


def _fields(text: str) -> Dict[str, str]:
    """``key=value`` pairs of a line (sched_switch's ``==>`` dropped);
    ``{"buf": text}`` when there are none."""
    pairs = _FIELD.findall(text.replace(" ==> ", " "))
    return dict(pairs) if pairs else {"buf": text}


def _field_frame(texts: List[str]) -> pd.DataFrame:
    """The fields of an event's lines as text columns. Fast path: one
    pattern made of the first line's keys, when every line has them in
    that order (as a tracer writes them); else each line's pairs."""
    texts = [t.replace(" ==> ", " ") for t in texts]
    keys = [k for k, _ in _FIELD.findall(texts[0])] if texts else []
    if keys:
        pat = re.compile(" ".join(f"{k}=(.*?)" for k in keys) + r"\s*$")
        matches = [pat.match(t) for t in texts]
        if all(matches):
            return pd.DataFrame([m.groups() for m in matches], columns=keys)
    return pd.DataFrame([_fields(t) for t in texts])


def _frame(event: str, rows: list) -> pd.DataFrame:
    """The DataFrame of one event's lines."""
    head = pd.DataFrame(rows, columns=["ns", "__cpu", "__pid", "__comm", "_f", "_line"]).drop(columns="_line")
    fields = _field_frame(list(head["_f"])).set_axis(head.index)
    for c in fields.columns:
        if c not in _TEXT_FIELDS and c != "buf":
            fields[c] = _numeric(fields[c])
    if event == "sched_switch" and "prev_state" in fields:
        fields["prev_state"] = fields["prev_state"].astype(str).map(prev_state_bits).astype("int64")
    if event in ("sched_wakeup", "sched_wakeup_new") and "success" not in fields:
        fields["success"] = 1
    df = pd.concat([head.drop(columns=["_f"]), fields], axis=1)
    df.index = pd.Index(df.pop("ns") / 1e9, name="Time")
    return df


def _numeric(col: pd.Series) -> pd.Series:
    """The column as integers (or floats) when every value is a number."""
    try:
        return pd.to_numeric(col)
    except (ValueError, TypeError):
        return col


def _state_rows(trace: Trace) -> pd.DataFrame:
    """LISA's state changes, unsorted: a switch's prev (its prev_state)
    and next (running), each successful wakeup (woken)."""
    sw = trace.df_event("sched_switch")
    prev = sw[["__cpu", "prev_pid", "prev_comm", "prev_state"]].set_axis(["cpu", "pid", "comm", "curr_state"], axis=1)
    nxt = sw[["__cpu", "next_pid", "next_comm"]].set_axis(["cpu", "pid", "comm"], axis=1).assign(curr_state=TASK_ACTIVE)
    # In the trace's line order; a switch's prev before its next.
    order = [2 * n for n in trace._lines("sched_switch")]
    parts = [prev.assign(target_cpu=-1, _o=order), nxt.assign(target_cpu=-1, _o=[o + 1 for o in order])]
    for ev in ("sched_wakeup", "sched_wakeup_new"):
        if trace.has_events(ev):
            wk = trace.df_event(ev).assign(_o=[2 * n for n in trace._lines(ev)])
            wk = wk[wk["success"] == 1][["__cpu", "pid", "comm", "target_cpu", "_o"]].rename(columns={"__cpu": "cpu"})
            parts.append(wk.assign(curr_state=TASK_WAKING))
    return pd.concat(parts)


def _task_states(trace: Trace) -> pd.DataFrame:
    """The state changes of every task (the idle tasks, pid 0, left out),
    with the time in each state and the next."""
    df = _state_rows(trace)
    df = df[df["pid"] != 0]
    df = df.reset_index().sort_values("_o").drop(columns="_o")
    g = df.groupby("pid", sort=False)
    df["next_state"] = g["curr_state"].shift(-1, fill_value=TASK_UNKNOWN).astype("int64")
    df["delta"] = g["Time"].shift(-1) - df["Time"]
    df["curr_state_str"] = df["curr_state"].map(state_str)
    df["next_state_str"] = df["next_state"].map(state_str)
    cols = ["Time", "pid", "comm", "target_cpu", "cpu", "curr_state", "next_state", "delta", "curr_state_str", "next_state_str"]
    return df[cols].set_index("Time")
