//! Trace import never panics: any text parses or is a located error, and a
//! parsed trace always rebuilds into replay tasks or an error.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(recs) = schedlab::trace::parse::parse("fuzz", text) {
            let _ = schedlab::workload::replay::Replay::from_records("fuzz", &recs, &[], true);
        }
    }
});
