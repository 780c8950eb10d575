//! Garbage in, exit 2 out: each input parser (perf script, ftrace text,
//! trace-cmd report, rt-app JSON) given broken input from the command line
//! names the file in an error and exits 2, never panicking. The fuzz
//! targets in fuzz/ explore the same parsers at random (cargo-fuzz needs
//! nightly; this runs on stable).

mod common;
use common::{schedlab, tmp};

const PERF: &str =
    "perf 1 [000] 1.000000: sched:sched_waking: comm=a pid=2 prio=120 target_cpu=001\n";
const FTRACE: &str = "# tracer: nop\n#\n";
const TRACE_CMD: &str = "version = 6\ncpus=2\n";

/// Broken bodies that follow each format's header.
const BODIES: &[&[u8]] = &[
    b"",
    b"\xff\xfe\x00garbage\x80\n",
    b"a-1 [000] 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=",
    b"a-1 [000] x.y: sched_wakeup: comm=a pid=zz prio=120 target_cpu=000\n",
    b"a 1 [0x1] 1.0: sched:sched_switch: a:1 [120] S ==> b:2 [120]\n",
    b"a-1 [000] 99999999999999999999.5: sched_waking: comm=a pid=1 prio=120 target_cpu=000\n",
    b"[000] [001] : : : ==> ==> prev_pid= next_pid=\n",
    b"b-2 [001] 2.0: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=R ==> next_comm=c next_pid=-3 next_prio=120\n",
    b"a-1 [999999999999] 1.0: sched_waking: comm=a pid=1 prio=120 target_cpu=000\n",
];

fn assert_exit_2(args: &[&str], file: &str) {
    let (rc, out, err) = schedlab(args);
    assert!(!err.contains("panicked"), "{file}: {err}");
    assert_eq!(rc, 2, "{file}: rc {rc}\n{out}\n{err}");
    assert!(
        err.starts_with("schedlab: error: ") && err.contains(file),
        "{file}: {err}"
    );
}

#[test]
fn broken_traces_exit_2_in_every_format() {
    for (fmt, header) in [("perf", PERF), ("ftrace", FTRACE), ("tracecmd", TRACE_CMD)] {
        for (i, body) in BODIES.iter().enumerate() {
            let name = format!("garbage-{fmt}-{i}.txt");
            let path = tmp(&name);
            let mut bytes = header.as_bytes().to_vec();
            // The perf header line is an event; drop it for the empty body
            // so that case is a file with no events at all.
            if fmt == "perf" && body.is_empty() {
                bytes.clear();
            }
            bytes.extend_from_slice(body);
            std::fs::write(&path, &bytes).unwrap();
            let p = path.display().to_string();
            assert_exit_2(&["replay", &p, "--machine", "vm-2", "-q"], &name);
        }
    }
}

#[test]
fn broken_rtapp_json_exits_2() {
    let cases: &[&[u8]] = &[
        b"",
        b"\xff\xfe{\"tasks\": {}}",
        b"{",
        b"[]",
        b"{\"tasks\": 5}",
        b"{\"tasks\": {\"t\": {\"run\": -1}}}",
        b"{\"tasks\": {\"t\": {\"run\": 99999999999999999999999}}}",
        b"{\"tasks\": {\"t\": {\"phases\": {\"p\": {\"loop\": \"x\"}}}}}",
        b"{\"tasks\": {\"t\": {\"run\": 1, \"sleep\": 1, \"instance\": 100000000}}}",
        b"{\"tasks\": {\"t\": {\"run\": 1}}, \"global\": {\"duration\": \"x\"}}",
    ];
    for (i, text) in cases.iter().enumerate() {
        let name = format!("garbage-rtapp-{i}.json");
        let path = tmp(&name);
        std::fs::write(&path, text).unwrap();
        let spec = format!("rtapp:{}", path.display());
        assert_exit_2(&["run", "--machine", "vm-2", "--workload", &spec], &name);
    }
}
