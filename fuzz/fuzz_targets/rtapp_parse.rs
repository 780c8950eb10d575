//! rt-app import never panics: any text is a workload or a located error.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = schedlab::workload::rtapp::RtApp::from_text("fuzz", text);
    }
});
