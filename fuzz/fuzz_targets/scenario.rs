//! Scenario files never panic: any text resolves into a scenario or a
//! located error. (`schedlab fuzz --format scenario` also runs them, on
//! stable Rust.)
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    if let Ok((src, table)) = schedlab::scenario::Source::parse(Some("fuzz.toml".into()), text) {
        let _ = schedlab::scenario::Scenario::resolve(&src, &table);
    }
});
