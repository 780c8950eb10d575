"""schedlab.trace(), Result.ftrace(): ftrace text as LISA-shaped frames."""

import pandas as pd
import pytest

import schedlab

KW = dict(machine="smp:cpus=4", workloads=["hackbench:groups=1,loops=50"], seed=2)
# The kernel's prev_state bits schedlab writes: R, S, X (EXIT_DEAD),
# Z (EXIT_ZOMBIE), R+ (TASK_REPORT_MAX: preempted).
REPORTED = {0x0, 0x1, 0x10, 0x20, 0x100}


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """One run with its trace written by `output.trace` (as `--trace`
    does) and the same run with the trace recorded by run(trace=True)."""
    path = tmp_path_factory.mktemp("trace") / "trace.txt"
    on_file = schedlab.run(set={"output.trace": str(path)}, **KW)
    held = schedlab.run(trace=True, **KW)
    return path, on_file, held


def test_sched_switch_has_lisas_columns_and_one_row_per_line(traced):
    path, _, held = traced
    sw = schedlab.trace(path).df_event("sched_switch")
    lines = sum(": sched_switch: " in line for line in path.read_text().splitlines())
    assert len(sw) == lines > 0
    assert list(sw.columns) == ["__cpu", "__pid", "__comm", "prev_comm", "prev_pid", "prev_prio",
                                "prev_state", "next_comm", "next_pid", "next_prio"]
    assert sw.index.name == "Time" and sw.index.dtype == float and sw.index.is_monotonic_increasing
    # The context a switch is written in is the task switched out.
    assert (sw["__pid"] == sw["prev_pid"]).all()
    assert set(sw.prev_state) <= REPORTED and {0x1, 0x100} <= set(sw.prev_state)
    # The same run, recorded as it went, gives the same frame.
    pd.testing.assert_frame_equal(held.ftrace().df_event("sched_switch"), sw)


def test_wakeup_and_other_events(traced):
    t = traced[2].ftrace()
    assert t.has_events("sched_waking", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task",
                        "sched_process_fork", "sched_process_exit")
    wk = t.df_event("sched_wakeup")
    assert list(wk.columns) == ["__cpu", "__pid", "__comm", "comm", "pid", "prio", "target_cpu", "success"]
    assert (wk.success == 1).all() and wk.target_cpu.between(0, 3).all()
    mig = t.df_event("sched_migrate_task")
    assert (mig.orig_cpu != mig.dest_cpu).all()
    assert len(t.df_event("sched_process_fork")) == traced[2].totals["forks"] - 1
    with pytest.raises(KeyError, match="schedlab_pick"):
        t.df_event("schedlab_pick")


def test_prev_state_text_as_kernel_bits():
    from schedlab._ftrace import prev_state_bits, state_str

    assert [prev_state_bits(s) for s in ("R", "R+", "S", "D", "S|D", "X", "Z", "0x2")] == [0, 0x100, 1, 2, 3, 0x10, 0x20, 2]
    assert [state_str(v) for v in (0x2000, 0x200, 0, 0x100, 1, 0x20, -1)] == ["A", "W", "R", "R+", "S", "Z", "U"]


def test_task_states_add_up_to_each_task_span_and_its_time_on_cpu(traced):
    _, _, r = traced
    st = r.ftrace().df_task_states()
    assert list(st.columns) == ["pid", "comm", "target_cpu", "cpu", "curr_state", "next_state", "delta",
                                "curr_state_str", "next_state_str"]
    assert set(st.curr_state_str) <= {"A", "W", "R", "R+", "S", "X", "Z"}
    assert set(st.pid) == set(r.tasks.pid)
    by_pid = st.reset_index().groupby("pid")
    span = by_pid.Time.max() - by_pid.Time.min()
    assert (by_pid.delta.sum() - span).abs().max() < 1e-9
    # Each task's last state has no end; a task that exited ends as a zombie.
    last = by_pid.tail(1)
    assert last.delta.isna().all() and (last.next_state_str == "U").all()
    assert (last.curr_state_str == "Z").all()
    running = st[st.curr_state_str == "A"].groupby("pid").delta.sum() * 1e9
    tasks = r.tasks.set_index("pid")
    # A is sched_switch in -> out, as oncpu_ns counts, except where a
    # wakeup lands before the switch out (then W, as LISA has it).
    oncpu = tasks.oncpu_ns.reindex(running.index)
    assert (running <= oncpu + 1).all() and (running >= 0.98 * oncpu).all()
    # sum_exec_runtime is the rq clock's view: close, not equal.
    assert running.sum() == pytest.approx(tasks.sum_exec_ns.sum(), rel=0.05)
    one = r.ftrace().df_task_states(int(tasks.index[1]))
    assert set(one.pid) == {tasks.index[1]} and len(one) == len(st[st.pid == tasks.index[1]])


def test_decision_frames_only_when_traced(traced):
    assert traced[2].ftrace().df_decisions() == {}
    r = schedlab.run(trace_decisions=True, **KW)
    d = r.ftrace().df_decisions()
    assert sorted(d) == ["schedlab_pick", "schedlab_place", "schedlab_resched"]
    assert {"cpu", "pid", "eligible", "vruntime", "deadline", "lag", "protected", "runner_up"} <= set(d["schedlab_pick"].columns)
    place = d["schedlab_place"]
    assert place.target_cpu.between(0, 3).all() and place.why.isin(
        ["pinned", "rt", "target-idle", "prev-idle", "recent-idle", "idle-smt", "idle-scan", "no-idle",
         "fallback", "queued", "on-cpu"]).all()
    assert set(d["schedlab_resched"].cause) <= {"wakeup", "tick", "lazy-upgrade", "other"}
    # Decision records change nothing.
    assert r.totals == traced[2].totals
    assert len(r.ftrace().df_event("sched_switch")) == len(traced[2].ftrace().df_event("sched_switch"))


def test_ftrace_of_an_untraced_run_runs_it_again(traced):
    _, on_file, _ = traced
    plain = schedlab.run(**KW)
    assert plain._ftrace is None
    sw = plain.ftrace().df_event("sched_switch")
    assert len(sw) == len(on_file.ftrace().df_event("sched_switch"))
    assert plain.ftrace() is plain.ftrace()


def test_reads_gzip_and_kernel_lines_with_tgid_and_spaces(tmp_path):
    text = ("# tracer: nop\n#\n"
            "   kworker/u8:1-57    (   57) [002] d..2  10.000100: sched_switch: prev_comm=kworker/u8:1 prev_pid=57 "
            "prev_prio=120 prev_state=I ==> next_comm=Web Content next_pid=900 next_prio=120\n"
            "     Web Content-900   (  880) [002] d..2  10.000200: sched_switch: prev_comm=Web Content prev_pid=900 "
            "prev_prio=120 prev_state=R+ ==> next_comm=swapper/2 next_pid=0 next_prio=120\n"
            # Fields that differ from line to line (an older kernel's success=).
            "          <idle>-0     [000] d.h2  10.000300: sched_waking: comm=a b pid=7 prio=120 success=1 target_cpu=001\n"
            "          <idle>-0     [000] d.h2  10.000400: sched_waking: comm=c pid=8 prio=120 target_cpu=002\n")
    import gzip

    p = tmp_path / "k.txt.gz"
    with gzip.open(p, "wt") as f:
        f.write(text)
    t = schedlab.trace(p)
    sw = t.df_event("sched_switch")
    assert list(sw.next_comm) == ["Web Content", "swapper/2"] and list(sw.prev_state) == [0x80, 0x100]
    assert list(sw["__comm"]) == ["kworker/u8:1", "Web Content"] and sw.index[1] == pytest.approx(10.0002)
    assert t.cpus_count == 3
    wk = t.df_event("sched_waking")
    assert list(wk.comm) == ["a b", "c"] and list(wk.target_cpu) == [1, 2] and list(wk.pid) == [7, 8]
