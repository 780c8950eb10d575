//! Import of `trace-cmd report` text never panics: the fuzzer's bytes
//! follow the `version`/`cpus` header, so they reach this format's line parser.
#![no_main]
use libfuzzer_sys::fuzz_target;

const PREFIX: &str = "version = 6\ncpus=2\n";

fuzz_target!(|data: &[u8]| {
    let text = format!("{PREFIX}{}", String::from_utf8_lossy(data));
    if let Ok(recs) = schedlab::trace::parse::parse("fuzz", &text) {
        let _ = schedlab::workload::replay::Replay::from_records("fuzz", &recs, &[], true);
    }
});
