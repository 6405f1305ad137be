#![no_main]
//! Everything an SMB server can make `nastune bench smb` decode: any frame
//! header, SMB2 or transform header, compound chain, response body and NTLM
//! challenge.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    nastune::smb::fuzz::response(data);
});
