//! Pre-shared-key authentication between nastune peers: the server sends a random
//! nonce, the client answers HMAC-SHA256(psk, label ‖ nonce ‖ cookie), the server
//! compares in constant time. Binding the cookie ties the answer to this session,
//! so a sniffed answer cannot be replayed for another one.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::protocol::COOKIE_SIZE;

/// A state byte plain iperf3 does not know: an iperf3 client fails at once with
/// "unknown state" instead of hanging, which is the honest answer.
pub const AUTH_CHALLENGE_STATE: i8 = 100;
pub const NONCE_BYTES: usize = 32;
const LABEL: &[u8] = b"nastune-net-auth-v1";
/// Keys shorter than this are guessable offline from one captured exchange.
pub const MIN_PSK_BYTES: usize = 16;
pub const MAX_AUTH_JSON: usize = 512;

#[derive(Debug, Error)]
pub enum AuthError {
    #[error("pre-shared key file '{path}': {reason}")]
    File { path: String, reason: String },
    #[error("authentication message is malformed: {0}")]
    Malformed(String),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Challenge {
    pub nonce: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Response {
    pub mac: String,
}

/// Reads a key file: its trimmed content is the key; at least 16 bytes.
pub fn load_psk(path: &std::path::Path) -> Result<Vec<u8>, AuthError> {
    let err = |reason: String| AuthError::File {
        path: path.display().to_string(),
        reason,
    };
    // Opened without blocking and refused unless a regular file: a FIFO would
    // hang the server at startup.
    let file = crate::root::open_regular(path).map_err(|e| err(e.to_string()))?;
    let meta = file.metadata().map_err(|e| err(e.to_string()))?;
    if meta.len() > 4096 {
        return Err(err("larger than 4096 bytes; put only the key in it".into()));
    }
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, 4097), &mut text)
        .map_err(|e| err(e.to_string()))?;
    let key = text.trim_ascii().to_vec();
    if key.len() < MIN_PSK_BYTES {
        return Err(err(format!(
            "key is '{}' bytes, need at least {MIN_PSK_BYTES}; e.g. 'head -c 32 /dev/urandom | base64 > FILE'",
            key.len()
        )));
    }
    Ok(key)
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(text: &str) -> Result<Vec<u8>, AuthError> {
    if !text.len().is_multiple_of(2) || text.len() > 256 {
        return Err(AuthError::Malformed(format!(
            "'{text}' is not short even-length hex"
        )));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(text.get(i..i + 2).unwrap_or(""), 16)
                .map_err(|_| AuthError::Malformed(format!("'{text}' is not hex")))
        })
        .collect()
}

/// The HMAC-SHA256 key and the message it covers: the label, the nonce and the cookie.
fn mac_input(psk: &[u8], nonce: &[u8], cookie: &[u8; COOKIE_SIZE]) -> (ring::hmac::Key, Vec<u8>) {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, psk);
    (key, [LABEL, nonce, &cookie[..]].concat())
}

pub fn respond(psk: &[u8], nonce: &[u8], cookie: &[u8; COOKIE_SIZE]) -> String {
    let (key, msg) = mac_input(psk, nonce, cookie);
    hex(ring::hmac::sign(&key, &msg).as_ref())
}

/// Constant-time check of the client's answer.
pub fn verify(psk: &[u8], nonce: &[u8], cookie: &[u8; COOKIE_SIZE], answer: &str) -> bool {
    match unhex(answer) {
        Ok(tag) => {
            let (key, msg) = mac_input(psk, nonce, cookie);
            ring::hmac::verify(&key, &msg, &tag).is_ok()
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn right_key_verifies_and_wrong_key_or_cookie_does_not() {
        let cookie = [b'a'; COOKIE_SIZE];
        let nonce = [7u8; NONCE_BYTES];
        let answer = respond(b"0123456789abcdef", &nonce, &cookie);
        assert_eq!(answer.len(), 64);
        assert!(verify(b"0123456789abcdef", &nonce, &cookie, &answer));
        assert!(!verify(b"0123456789abcdeX", &nonce, &cookie, &answer));
        let other = [b'b'; COOKIE_SIZE];
        assert!(!verify(b"0123456789abcdef", &nonce, &other, &answer));
        assert!(!verify(b"0123456789abcdef", &nonce, &cookie, "zz"));
        assert!(!verify(b"0123456789abcdef", &nonce, &cookie, &answer[..62]));
    }

    #[test]
    fn hex_round_trips_and_rejects_junk() {
        assert_eq!(unhex(&hex(&[0, 255, 16])).unwrap(), vec![0, 255, 16]);
        assert!(unhex("abc").is_err());
        assert!(unhex("g0").is_err());
    }

    #[test]
    fn a_fifo_as_key_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        crate::root::mkfifo(&p);
        let e = load_psk(&p).unwrap_err().to_string();
        assert!(e.contains("named pipe (FIFO)"), "{e}");
    }

    #[test]
    fn short_key_files_are_refused_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        std::fs::write(&p, "short\n").unwrap();
        let e = load_psk(&p).unwrap_err().to_string();
        assert!(e.contains("'5' bytes"), "{e}");
        std::fs::write(&p, "0123456789abcdef0123\n").unwrap();
        assert_eq!(load_psk(&p).unwrap().len(), 20);
    }
}
