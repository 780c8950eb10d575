//! Import of `perf script` output of `perf sched record` never panics: the fuzzer's bytes
//! follow a well-formed first event, so they reach this format's line parser.
#![no_main]
use libfuzzer_sys::fuzz_target;

const PREFIX: &str = "perf 1 [000] 1.000000: sched:sched_waking: comm=a pid=2 prio=120 target_cpu=001\n";

fuzz_target!(|data: &[u8]| {
    let text = format!("{PREFIX}{}", String::from_utf8_lossy(data));
    if let Ok(recs) = schedlab::trace::parse::parse("fuzz", &text) {
        let _ = schedlab::workload::replay::Replay::from_records("fuzz", &recs, &[], true);
    }
});
