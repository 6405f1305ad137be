#![no_main]
//! Everything a web server can make `nastune bench http` parse: any response
//! bytes, split any way, after a GET or a HEAD, ended by the close.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    nastune::bench::http::fuzz::response(data);
});
