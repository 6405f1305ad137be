#![no_main]
//! Everything an smb.conf and the files it includes can make `probe` and
//! `tune` parse: NUL-separated files, the first being smb.conf (see
//! `nastune::probe::smb::fuzz::smb_conf`).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    nastune::probe::smb::fuzz::smb_conf(data);
});
