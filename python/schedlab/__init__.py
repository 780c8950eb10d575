"""schedlab: a fast, deterministic simulator of the Linux kernel's CPU scheduler.

Runs, comparisons and sweeps as pandas DataFrames::

    import schedlab
    r = schedlab.run(machine="xeon-8269cy", workloads=["hackbench:groups=4,loops=200"],
                     set={"kernel.wakelist": "idle"}, seed=1)
    r.totals["context_switches"]; r.benchmark; r.tasks; r.cpus; r.trace()
    t = schedlab.run(machine="vm-2", workloads=["pipe:loops=200"], trace=True).ftrace()
    t.df_event("sched_switch"); t.df_task_states()     # as LISA's frames
    schedlab.trace("trace.txt").df_event("sched_wakeup")  # a `schedlab run --trace` file
    c = schedlab.compare(a={"set": {"kernel.hz": 250}}, b={"set": {"kernel.hz": 1000}},
                         machine="vm-2", workloads=["pipe:loops=2000"], runs=5)
    df = schedlab.sweep(grid={"kernel.wakelist": ["on_cpu_nr_le1", "idle"]},
                        workloads=["hackbench:groups=1,loops=2000"], seeds=range(10))

Every function that simulates releases the GIL. Bad input raises
:class:`InputError` with the command line's message (file, line, key).
"""

from __future__ import annotations

import io
import json
import math
import numbers
import os
import shutil
import tempfile
import warnings
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from . import _native
from ._ftrace import Trace, _numeric
from ._native import InputError

__all__ = [
    "InputError",
    "Result",
    "Comparison",
    "Trace",
    "run",
    "trace",
    "compare",
    "sweep",
    "sweep_report",
    "machines",
    "workloads",
    "features",
    "__version__",
]

__version__: str = _native.VERSION

Scalar = Union[str, int, float, bool]


def _sets(values: Optional[Mapping[str, Scalar]]) -> List[str]:
    """``{"kernel.hz": 1000}`` as the CLI's ``--set`` strings."""
    out = []
    for k, v in (values or {}).items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, str):
            v = json.dumps(v)  # a TOML basic string: stays a string
        out.append(f"{k}={v}")
    return out


def _duration(d: Union[str, float, None]) -> Optional[str]:
    """``duration=`` as the CLI's ``--duration``: a number is seconds, a
    string keeps its unit (``"3s"``, ``"500ms"``)."""
    if d is None or isinstance(d, str):
        return d
    if isinstance(d, bool) or not isinstance(d, numbers.Real):
        raise TypeError(f"duration: expected seconds (a number) or a string with a unit such as \"3s\", not {type(d).__name__} {d!r}")
    if isinstance(d, numbers.Integral):
        return f"{int(d)}s"
    if not math.isfinite(d):
        raise InputError(f"duration: {d!r} seconds is not a finite time")
    # In ns, so 1e-4 s does not become the CLI-unreadable "0.0001s" of an exponent.
    return f"{round(float(d) * 1e9)}ns"


def _spec(scenario=None, machine=None, workloads=None, cgroups=None, set=None, seed=None, duration=None) -> dict:
    if isinstance(workloads, str):
        workloads = [workloads]
    if isinstance(cgroups, str):
        cgroups = [cgroups]
    spec = {
        "scenario": os.fspath(scenario) if scenario is not None else None,
        "machine": machine,
        "workloads": list(workloads or []),
        "cgroups": list(cgroups or []),
        "set": _sets(set),
        "seed": seed,
        "duration": _duration(duration),
    }
    return {k: v for k, v in spec.items() if v is not None}


_TRACE_COLUMNS = ["time_ns", "event", "cpu", "pid", "comm", "other_pid", "target_cpu", "dest_cpu"]


class Result:
    """One run's results: the ``--json`` document as attributes and DataFrames.

    Attributes:
        json: the whole results document (a dict), as ``schedlab run --json`` writes it.
        totals: the perf-stat-like counters (dict).
        benchmark: the benchmark's own results (dict).
        tasks: one row per task (pid, comm, sum_exec_ns, wait_ns, switches, ...).
        cpus: one row per CPU (busy_ns, idle_ns, nr_switches, util_avg, ...).
    """

    def __init__(self, spec: dict, text: str, ftrace: Optional[Trace] = None):
        self._spec = spec
        self._ftrace = ftrace
        self.json: Dict[str, Any] = json.loads(text)
        self.totals: Dict[str, Any] = self.json["totals"]
        self.benchmark: Dict[str, Any] = self.json["benchmark"]
        self.tasks: pd.DataFrame = pd.json_normalize(self.json["tasks"])
        self.cpus: pd.DataFrame = pd.DataFrame(self.json["cpus"])
        self._trace: Optional[pd.DataFrame] = None

    def trace(self) -> pd.DataFrame:
        """The scheduler tracepoints, one row per event.

        Columns: ``time_ns``, ``event`` (sched_switch, sched_waking,
        sched_wakeup, sched_wakeup_new, sched_migrate_task,
        sched_process_fork, sched_process_exit), ``cpu``, ``pid``, ``comm``
        (for sched_switch the next task), ``other_pid`` (the previous task,
        the waker or the parent), ``target_cpu`` (wakeups; the origin for
        migrations) and ``dest_cpu`` (migrations).

        Runs are deterministic, so the events are recorded by running the
        same scenario again with a tracer (the first call costs one run).
        """
        if self._trace is None:
            _, events = _native.run(json.dumps(self._spec), True)
            df = pd.DataFrame(json.loads(events or "{}"))
            for c in ("cpu", "other_pid", "target_cpu", "dest_cpu"):
                if c in df:
                    df[c] = df[c].astype("Int64")
            self._trace = df.reindex(columns=_TRACE_COLUMNS)
        return self._trace

    def ftrace(self) -> Trace:
        """The run's ftrace text trace as a :class:`Trace`: LISA-shaped
        frames per event (``df_event``) and task states (``df_task_states``).

        The trace ``run(trace=True)`` recorded (with the decision records
        when ``run(trace_decisions=True)``); for a run made without, the
        same scenario is run again with the trace on (once, no decision
        records), which gives the same run: runs are deterministic.
        """
        if self._ftrace is None:
            _, self._ftrace = _traced_run(self._spec, False)
        return self._ftrace

    def __repr__(self) -> str:
        m = self.json.get("machine", {}).get("name", "?")
        return f"<schedlab.Result {self.benchmark.get('name', '?')} on {m}, seed {self.json['sim']['seed']}>"


def run(
    *,
    scenario: Optional[Union[str, os.PathLike]] = None,
    machine: Optional[str] = None,
    workloads: Optional[Sequence[str]] = None,
    cgroups: Optional[Sequence[str]] = None,
    set: Optional[Mapping[str, Scalar]] = None,
    seed: Optional[int] = None,
    duration: Union[str, float, None] = None,
    trace: bool = False,
    trace_decisions: bool = False,
) -> Result:
    """Run one simulation, like ``schedlab run``.

    Args:
        scenario: a scenario file (TOML); the other keywords override its keys.
        machine: a preset (``machines()``), ``smp:cpus=N``, ``host`` or a machine file.
        workloads: workload specs ``name:key=value,...`` (``workloads()``).
        cgroups: task groups ``PATH:weight=N``.
        set: scenario keys to override, e.g. ``{"kernel.hz": 1000}``.
        seed: the random seed (default 1).
        duration: stop after this much simulated time: seconds (``3``,
            ``0.5``) or a string with a unit (``"3s"``, ``"500ms"``).
        trace: record the ftrace text trace (``--trace``) as the run goes,
            for :meth:`Result.ftrace`.
        trace_decisions: record it with schedlab's decision records
            (``--trace-decisions``); implies ``trace``.

    Raises:
        InputError: bad input, with the CLI's message (file, line and key).
    """
    spec = _spec(scenario, machine, workloads, cgroups, set, seed, duration)
    if trace or trace_decisions:
        text, ftrace = _traced_run(spec, trace_decisions)
        return Result(spec, text, ftrace)
    text, _ = _native.run(json.dumps(spec), False)
    return Result(spec, text)


def _traced_run(spec: dict, decisions: bool) -> Tuple[str, Trace]:
    """Run ``spec`` writing an ftrace text trace into a temporary
    directory: the results JSON and the trace, read back."""
    tmp = tempfile.mkdtemp(prefix="schedlab-trace-")
    try:
        path = os.path.join(tmp, "trace.txt")
        sets = {"output.trace": path, "output.trace_format": "ftrace", "output.trace_decisions": decisions}
        traced = {**spec, "set": spec.get("set", []) + _sets(sets)}
        text, _ = _native.run(json.dumps(traced), False)
        return text, Trace.from_file(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def trace(path: Union[str, os.PathLike]) -> Trace:
    """Read an ftrace text trace (``schedlab run --trace FILE``, ``.gz``
    too, or a kernel's own ``trace`` file) as a :class:`Trace`:
    ``df_event("sched_switch")``, ``df_task_states()``, ... as LISA's."""
    return Trace.from_file(path)


class Comparison:
    """A comparison of sides, each run ``runs`` times with seeds seed, seed+1, ...

    Attributes:
        json: the ``schedlab compare --json`` document (dict).
        runs: one row per side and run: ``side``, ``seed`` and a column per metric.
        stats: one row per metric and side against the first: ``metric``,
            ``side``, ``a_mean``, ``a_stddev``, ``b_mean``, ``b_stddev``,
            ``change_pct``, ``p_value`` (Welch), ``p_holm`` (Holm-corrected
            over the metrics of each side; ``significant`` uses it),
            ``significant``, ``exact``.
    """

    def __init__(self, text: str):
        self.json: Dict[str, Any] = json.loads(text)
        rows = []
        for side in self.json["sides"]:
            for r in side["runs"]:
                rows.append({"side": side["name"], "seed": r["seed"], **r["metrics"]})
        self.runs: pd.DataFrame = pd.DataFrame(rows)
        self.stats: pd.DataFrame = pd.DataFrame(self.json["metrics"])

    def __repr__(self) -> str:
        names = [s["name"] for s in self.json["sides"]]
        return f"<schedlab.Comparison {' vs '.join(names)}, {self.json['runs']} run(s) each>"


def compare(
    a: Optional[Mapping[str, Any]] = None,
    b: Optional[Mapping[str, Any]] = None,
    *,
    runs: int = 5,
    variants: Optional[Mapping[str, Mapping[str, Any]]] = None,
    **common: Any,
) -> Comparison:
    """Run two or more configurations ``runs`` times each and test which metrics differ.

    ``a``, ``b`` and each of ``variants`` (name -> keywords) take the keywords
    of :func:`run` (``set=`` dicts are merged over the common one); the other
    keywords are common to all sides. Each side after ``a`` is tested
    against ``a`` (Welch's t-test), like ``schedlab compare``.
    """
    sides = [("A", a or {})]
    if b is not None:
        sides.append(("B", b))
    sides += list((variants or {}).items())
    payload = []
    for name, kw in sides:
        merged = {**common, **kw}
        merged["set"] = {**(common.get("set") or {}), **(kw.get("set") or {})}
        payload.append({"name": name, "spec": _spec(**merged)})
    return Comparison(_native.compare(json.dumps(payload), runs))


def _sweep_spec(file, scenario, machine, workloads, cgroups, set, seeds, grid, variants, metrics) -> dict:
    if file is not None:
        return {"file": os.fspath(file)}
    spec = _spec(scenario, machine, workloads, cgroups, set)
    if seeds is not None:
        spec["seeds"] = seeds if isinstance(seeds, int) else [int(s) for s in seeds]
    if grid is not None:
        spec["grid"] = {k: list(v) for k, v in grid.items()}
    if variants is not None:
        spec["variants"] = [{"name": n, **keys} for n, keys in variants.items()]
    if metrics is not None:
        spec["metrics"] = list(metrics)
    return spec


def sweep(
    *,
    file: Optional[Union[str, os.PathLike]] = None,
    scenario: Optional[Union[str, os.PathLike]] = None,
    machine: Optional[str] = None,
    workloads: Optional[Sequence[str]] = None,
    cgroups: Optional[Sequence[str]] = None,
    set: Optional[Mapping[str, Scalar]] = None,
    seeds: Union[int, Iterable[int], None] = None,
    grid: Optional[Mapping[str, Sequence[Scalar]]] = None,
    variants: Optional[Mapping[str, Mapping[str, Scalar]]] = None,
    metrics: Optional[Sequence[str]] = None,
    out: Optional[Union[str, os.PathLike]] = None,
    jobs: Optional[int] = None,
    resume: bool = False,
    force: bool = False,
    backend: str = "local",
    address: Optional[str] = None,
    html: Optional[Union[str, os.PathLike]] = None,
) -> pd.DataFrame:
    """Run every grid point x variant x seed, like ``schedlab sweep``.

    The sweep is a sweep file (``file=``) or the keywords of :func:`run`
    (``scenario=``, ``machine=``, ...) with ``seeds`` (a count N for seeds
    1..N, or seeds such as ``range(10)``), ``grid`` (scenario key -> list of
    values, any key ``set=`` takes, ``machine.preset`` included),
    ``variants`` (name -> scenario keys, each crossed with the grid) and
    ``metrics`` (JSON paths; default the benchmark's results, switches,
    migrations, wakeups, wakeup latency and wall time).

    Results go to ``out`` (a new temporary directory when None) as the CLI
    writes them: one JSON per run, ``manifest.json``, ``summary.csv``.
    ``resume=True`` runs only the missing and failed points; ``force=True``
    reuses a directory written by another sweep.

    ``backend="local"`` runs on ``jobs`` threads (default all cores);
    ``backend="ray"`` submits each point as a Ray task, to ``address``
    (``"auto"``, ``"ray://HOST:10001"``) or to a local ``ray.init()``.

    Returns:
        summary.csv as a DataFrame: a column per parameter, ``seed``, a
        column per metric, ``error`` (empty when the run succeeded). Failed
        points are also reported with a warning.

    Raises:
        InputError: a bad sweep (file, line and key), a results directory of
            another sweep, an unreachable Ray address.
    """
    spec = _sweep_spec(file, scenario, machine, workloads, cgroups, set, seeds, grid, variants, metrics)
    plan = _native.plan(json.dumps(spec))
    out = os.fspath(out) if out is not None else tempfile.mkdtemp(prefix="schedlab-sweep-")
    if backend == "local":
        failures = _native.sweep_local(plan, out, jobs or os.cpu_count() or 1, resume, force)
    elif backend == "ray":
        from ._ray import sweep_ray

        failures = sweep_ray(plan, out, resume, force, address)
    else:
        raise InputError(f"backend `{backend}`: must be \"local\" or \"ray\"")
    if html is not None:
        _native.report(out, os.fspath(html))
    if failures:
        warnings.warn(f"{len(failures)} run(s) failed: " + "; ".join(failures), stacklevel=2)
    return read_summary(out)


def read_summary(out: Union[str, os.PathLike]) -> pd.DataFrame:
    """A results directory's summary.csv as a DataFrame: a parameter whose
    every value is a number is numeric (so ``kernel.hz`` sorts 250 before
    1000), the others text."""
    path = os.path.join(os.fspath(out), "summary.csv")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    header = text.split("\n", 1)[0].split(",")
    plan = json.load(open(os.path.join(os.fspath(out), "plan.json"), encoding="utf-8"))
    text_cols = {p: str for p in plan["params"]}
    text_cols["error"] = str
    df = pd.read_csv(io.StringIO(text), dtype={c: t for c, t in text_cols.items() if c in header}, keep_default_na=False, na_values=[""])
    if "error" in df:
        df["error"] = df["error"].fillna("")
    for p in plan["params"]:
        if p in df:
            df[p] = _numeric(df[p])
    return df


def sweep_report(out: Union[str, os.PathLike], html: Optional[Union[str, os.PathLike]] = None) -> str:
    """Write the HTML report of a results directory (default OUT/report.html); its path."""
    path = os.fspath(html) if html is not None else os.path.join(os.fspath(out), "report.html")
    _native.report(os.fspath(out), path)
    return path


def machines() -> pd.DataFrame:
    """Machine presets: ``name``, ``description``."""
    return pd.DataFrame(_native.machines(), columns=["name", "description"])


def workloads() -> pd.DataFrame:
    """Workloads: ``name``, ``usage`` (parameters with defaults), ``description``."""
    return pd.DataFrame(_native.workloads(), columns=["name", "usage", "description"])


def features() -> pd.DataFrame:
    """Scheduler features (``kernel.features.NAME``): ``name``, ``default``, ``description``."""
    return pd.DataFrame(_native.features(), columns=["name", "default", "description"])
