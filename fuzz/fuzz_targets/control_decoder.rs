#![no_main]
//! Everything a network peer can make `nastune net serve` decode: state bytes,
//! framed parameter and results JSON, UDP headers, auth answers.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    nastune::net::fuzz::control(data);
});
