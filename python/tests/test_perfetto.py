"""`--trace t.pftrace` decoded with Perfetto's own protos (the `perfetto`
PyPI package ships them compiled): the sched_switch events are those of
the ftrace text trace of the same run, the threads are named, each
waking by a task starts a flow that ends when the wakee runs, and the
decision records carry their numbers."""

import collections
import os
import shutil
import subprocess

import pytest

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

RUN = ["run", "--machine", "vm-2", "--workload", "hackbench:groups=1,loops=20", "-q"]


@pytest.fixture
def schedlab():
    exe = os.environ.get("SCHEDLAB_BIN") or shutil.which("schedlab")
    if not exe:
        pytest.skip("no schedlab binary (set SCHEDLAB_BIN)")
    return exe


def run(exe, *args):
    subprocess.run([exe, *RUN, *args], check=True, capture_output=True)


def packets(path):
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    return list(trace.packet)


def test_perfetto_trace_matches_the_text_trace(schedlab, tmp_path):
    pf, txt = tmp_path / "t.pftrace", tmp_path / "t.txt"
    run(schedlab, "--trace", str(pf), "--trace-decisions")
    run(schedlab, "--trace", str(txt))
    kinds = collections.Counter()
    threads = {}
    flows, ends, names = set(), set(), collections.Counter()
    for p in packets(pf):
        assert p.trusted_packet_sequence_id > 0
        if p.HasField("ftrace_events"):
            for e in p.ftrace_events.event:
                kinds[e.WhichOneof("event")] += 1
        if p.HasField("process_tree"):
            threads.update((t.tid, t.name) for t in p.process_tree.threads)
        if p.HasField("track_event"):
            flows.update(p.track_event.flow_ids)
            ends.update(p.track_event.terminating_flow_ids)
            names[p.track_event.name] += 1
    text = txt.read_text().splitlines()
    switches = sum(" sched_switch: " in line for line in text)
    assert switches > 0
    assert kinds["sched_switch"] == switches
    assert kinds["sched_waking"] == sum(" sched_waking: " in line for line in text)
    assert threads[1000] == "hackbench"
    assert "hackbench-recv" in threads.values()
    assert flows and flows == ends, "each flow from a waking ends where the wakee runs"
    assert names["pick"] > 0 and names["place"] > 0


def test_prev_state_follows_task_report(schedlab, tmp_path):
    """Perfetto derives thread states from prev_state's TASK_REPORT bits:
    each letter of the text trace is its bit (R+ is TASK_REPORT_MAX)."""
    pf, txt = tmp_path / "s.pftrace", tmp_path / "s.txt"
    run(schedlab, "--trace", str(pf))
    run(schedlab, "--trace", str(txt))
    bits = {"R": 0, "S": 0x01, "X": 0x10, "Z": 0x20, "R+": 0x100}
    want = collections.Counter(
        bits[line.split(" prev_state=")[1].split()[0]]
        for line in txt.read_text().splitlines()
        if " sched_switch: " in line
    )
    got = collections.Counter(
        e.sched_switch.prev_state
        for p in packets(pf)
        for e in p.ftrace_events.event
        if e.HasField("sched_switch")
    )
    assert got == want
    assert got[0x01] > 0 and got[0x100] > 0, "sleeps and preemptions both"
