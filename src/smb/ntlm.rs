//! NTLMSSP messages (MS-NLMP 2.2.1), sent raw in SESSION_SETUP (Samba takes
//! them without a SPNEGO wrapper). No KEY_EXCH: the session key is the
//! NTLMv2 SessionBaseKey, so no RC4 is needed.

use super::Error;
use super::crypto;
pub use super::types::Credentials;
use super::wire::{u16_at, u32_at, utf16};

const SIGNATURE: &[u8; 8] = b"NTLMSSP\0";
const UNICODE: u32 = 0x1;
const REQUEST_TARGET: u32 = 0x4;
const SIGN: u32 = 0x10;
const NTLM: u32 = 0x200;
const ANONYMOUS: u32 = 0x800;
const ALWAYS_SIGN: u32 = 0x8000;
const EXTENDED_SESSIONSECURITY: u32 = 0x8_0000;
const TARGET_INFO: u32 = 0x80_0000;
const N128: u32 = 0x2000_0000;
const N56: u32 = 0x8000_0000;

const FLAGS: u32 = UNICODE
    | REQUEST_TARGET
    | SIGN
    | NTLM
    | ALWAYS_SIGN
    | EXTENDED_SESSIONSECURITY
    | TARGET_INFO
    | N128
    | N56;

const AV_EOL: u16 = 0;
const AV_TIMESTAMP: u16 = 7;

pub fn negotiate() -> Vec<u8> {
    let mut m = SIGNATURE.to_vec();
    m.extend_from_slice(&1u32.to_le_bytes());
    m.extend_from_slice(&FLAGS.to_le_bytes());
    m.extend_from_slice(&[0u8; 16]); // domain and workstation: empty
    m
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub flags: u32,
    pub server_challenge: [u8; 8],
    pub target_info: Vec<u8>,
    /// MsvAvTimestamp from the target info, which the response must reuse.
    pub timestamp: Option<u64>,
}

fn bad(what: &str) -> Error {
    Error::Protocol(format!("NTLM challenge: {what}"))
}

pub fn parse_challenge(b: &[u8]) -> Result<Challenge, Error> {
    if b.len() < 48 || &b[..8] != SIGNATURE || u32_at(b, 8) != Some(2) {
        return Err(bad(
            "not an NTLMSSP CHALLENGE_MESSAGE (does the server want Kerberos only?)",
        ));
    }
    let mut server_challenge = [0u8; 8];
    server_challenge.copy_from_slice(&b[24..32]);
    let len = usize::from(u16_at(b, 40).unwrap_or(0));
    let off = u32_at(b, 44).unwrap_or(0) as usize;
    let target_info = b
        .get(off..off.saturating_add(len))
        .ok_or_else(|| bad("target info outside the message"))?
        .to_vec();
    let mut timestamp = None;
    let mut at = 0;
    while let (Some(id), Some(l)) = (u16_at(&target_info, at), u16_at(&target_info, at + 2)) {
        let l = usize::from(l);
        if id == AV_EOL {
            break;
        }
        let v = target_info
            .get(at + 4..at + 4 + l)
            .ok_or_else(|| bad("AV pair runs past the target info"))?;
        if id == AV_TIMESTAMP && l == 8 {
            timestamp = super::wire::u64_at(v, 0);
        }
        at += 4 + l;
    }
    Ok(Challenge {
        flags: u32_at(b, 20).unwrap_or(0),
        server_challenge,
        target_info,
        timestamp,
    })
}

/// The AUTHENTICATE_MESSAGE and the session key (None for anonymous).
pub fn authenticate(
    cred: &Credentials,
    ch: &Challenge,
    client_challenge: [u8; 8],
    now_filetime: u64,
) -> (Vec<u8>, Option<[u8; 16]>) {
    let (lm, nt, domain, user, key, flags) = match cred {
        Credentials::Anonymous => (
            vec![0u8],
            Vec::new(),
            Vec::new(),
            Vec::new(),
            None,
            FLAGS | ANONYMOUS,
        ),
        Credentials::User {
            user,
            domain,
            password,
        } => {
            let rk = crypto::ntowf_v2(password, user, domain);
            let time = ch.timestamp.unwrap_or(now_filetime);
            let r = crypto::ntlmv2(
                &rk,
                &ch.server_challenge,
                &client_challenge,
                time,
                &ch.target_info,
            );
            // With a server timestamp the LMv2 response is zeros (MS-NLMP 3.1.5.1.2).
            let lm = if ch.timestamp.is_some() {
                vec![0u8; 24]
            } else {
                r.lm_response
            };
            (
                lm,
                r.nt_response,
                utf16(domain),
                utf16(user),
                Some(r.session_base_key),
                FLAGS,
            )
        }
    };
    let fields: [&[u8]; 6] = [&lm, &nt, &domain, &user, &[], &[]];
    let mut m = SIGNATURE.to_vec();
    m.extend_from_slice(&3u32.to_le_bytes());
    let mut off = 64u32;
    for f in fields {
        let l = f.len() as u16;
        m.extend_from_slice(&l.to_le_bytes());
        m.extend_from_slice(&l.to_le_bytes());
        m.extend_from_slice(&off.to_le_bytes());
        off += u32::from(l);
    }
    m.extend_from_slice(&(flags & (ch.flags | ANONYMOUS)).to_le_bytes());
    for f in fields {
        m.extend_from_slice(f);
    }
    (m, key)
}

/// Now as a Windows FILETIME (100 ns since 1601).
pub fn filetime_now() -> u64 {
    let since_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64 / 100)
        .unwrap_or(0);
    since_unix + 116_444_736_000_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenge_msg(target_info: &[u8]) -> Vec<u8> {
        let mut m = SIGNATURE.to_vec();
        m.extend(2u32.to_le_bytes());
        m.extend([0u8; 8]);
        m.extend(FLAGS.to_le_bytes());
        m.extend([1, 2, 3, 4, 5, 6, 7, 8]);
        m.extend([0u8; 8]);
        m.extend((target_info.len() as u16).to_le_bytes());
        m.extend((target_info.len() as u16).to_le_bytes());
        m.extend(48u32.to_le_bytes());
        m.extend(target_info);
        m
    }

    #[test]
    fn challenge_yields_timestamp_and_refuses_overruns() {
        let mut ti = vec![7, 0, 8, 0];
        ti.extend(42u64.to_le_bytes());
        ti.extend([0, 0, 0, 0]);
        let c = parse_challenge(&challenge_msg(&ti)).expect("parse");
        assert_eq!(c.server_challenge, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(c.timestamp, Some(42));
        let mut m = challenge_msg(&ti);
        m[40] = 200;
        assert!(parse_challenge(&m).is_err());
        let bad_pair = [7, 0, 100, 0, 1, 2];
        assert!(parse_challenge(&challenge_msg(&bad_pair)).is_err());
    }

    #[test]
    fn authenticate_lays_out_fields_and_keeps_the_session_key() {
        let c = parse_challenge(&challenge_msg(&[0, 0, 0, 0])).expect("parse");
        let cred = Credentials::User {
            user: "u".into(),
            domain: String::new(),
            password: "p".into(),
        };
        let (m, key) = authenticate(&cred, &c, [9; 8], 1);
        assert!(key.is_some());
        // The user name field points at UTF-16 "u".
        let len = usize::from(u16_at(&m, 36).expect("len"));
        let off = u32_at(&m, 40).expect("off") as usize;
        assert_eq!(&m[off..off + len], &utf16("u")[..]);
        assert!(!format!("{cred:?}").contains('p'));
        let (anon, none) = authenticate(&Credentials::Anonymous, &c, [9; 8], 1);
        assert!(none.is_none());
        assert_eq!(u32_at(&anon, 60).expect("flags") & ANONYMOUS, ANONYMOUS);
    }
}
