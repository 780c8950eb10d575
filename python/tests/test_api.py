"""run(), compare(), the listings and InputError."""

import pandas as pd
import pytest

import schedlab


def test_run_gives_totals_tasks_cpus_and_a_trace():
    r = schedlab.run(machine="smp:cpus=4", workloads=["hackbench:groups=1,loops=50"],
                     set={"kernel.wakelist": "idle"}, seed=2)
    assert r.totals["context_switches"] > 0
    assert r.benchmark["name"] == "hackbench" and r.benchmark["time_s"] > 0
    assert isinstance(r.tasks, pd.DataFrame) and len(r.tasks) == r.totals["forks"]
    assert list(r.cpus["cpu"]) == [0, 1, 2, 3]
    assert r.json["scenario"]["kernel"]["wakelist"] == "idle"
    t = r.trace()
    switches = t[t.event == "sched_switch"]
    # Each switch the trace shows is a context switch the counters count.
    assert len(switches) == r.totals["rq_switches"]
    assert t.time_ns.is_monotonic_increasing
    assert set(t.event) >= {"sched_waking", "sched_wakeup", "sched_process_fork"}


def test_same_seed_same_results_other_seed_differs():
    kw = dict(machine="smp:cpus=4", workloads=["hackbench:groups=1,loops=50"])
    a, b, c = (schedlab.run(seed=s, **kw) for s in (1, 1, 2))
    assert a.totals == b.totals
    assert a.totals != c.totals


def test_scenario_file_and_keywords_combine(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[machine]\npreset = "vm-2"\n[[workload]]\nkind = "pipe"\nloops = 300\n')
    r = schedlab.run(scenario=f, set={"kernel.hz": 1000})
    assert r.json["machine"]["name"] == "vm-2"
    assert r.json["scenario"]["kernel"]["hz"] == 1000


def test_input_error_carries_the_cli_message(tmp_path):
    with pytest.raises(schedlab.InputError, match=r"key `kernel.nope`: unknown key"):
        schedlab.run(workloads=["pipe"], set={"kernel.nope": 1})
    f = tmp_path / "bad.toml"
    f.write_text("[kernel]\nhz = 7\n")
    with pytest.raises(schedlab.InputError, match=r"bad.toml:2: key `kernel.hz`"):
        schedlab.run(scenario=f, workloads=["pipe"])
    assert issubclass(schedlab.InputError, ValueError)


def test_duration_is_seconds_or_a_string_with_a_unit():
    kw = dict(machine="smp:cpus=2", workloads=["periodic:tasks=1"])
    ns = {d: schedlab.run(duration=d, **kw).json["scenario"]["sim"]["duration"]
          for d in (3, 0.25, "3s", "250ms")}
    assert ns[3] == ns["3s"] and ns[0.25] == ns["250ms"] and ns[3] != ns[0.25]
    with pytest.raises(TypeError, match=r"duration: expected seconds"):
        schedlab.run(duration=[3], **kw)
    with pytest.raises(schedlab.InputError, match=r"no time unit"):
        schedlab.run(duration="3", **kw)


def test_compare_has_per_run_values_and_statistics():
    c = schedlab.compare(a={"set": {"kernel.features.TTWU_QUEUE": False}}, b={}, runs=2,
                         machine="smp:cpus=4", workloads=["pipe:loops=300"],
                         variants={"hz1k": {"set": {"kernel.hz": 1000}}})
    assert sorted(set(c.runs.side)) == ["A", "B", "hz1k"]
    assert len(c.runs) == 6 and list(c.runs.seed[:2]) == [1, 2]
    row = c.stats[(c.stats.metric == "totals.ttwu_wakelist") & (c.stats.side == "B")].iloc[0]
    assert row.a_mean == 0 and row.b_mean > 0 and pd.isna(row.change_pct)
    assert "benchmark.loops" not in set(c.stats.metric)


def test_listings():
    assert "xeon-8269cy" in set(schedlab.machines().name)
    assert "hackbench" in set(schedlab.workloads().name)
    f = schedlab.features().set_index("name")
    assert bool(f.loc["PLACE_LAG", "default"]) is True
