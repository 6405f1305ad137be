//! The iperf3 control protocol, byte for byte (esnet/iperf `src/iperf_api.h`,
//! `iperf_api.c`): a 37-byte cookie, one signed byte per state change, and JSON
//! messages framed by a 4-byte big-endian length. Pure encode/decode plus thin
//! blocking helpers; every length is checked against a cap before allocating.

use std::io::{self, Read, Write};

use thiserror::Error;

/// 36 random base32 characters plus a NUL (`COOKIE_SIZE`).
pub const COOKIE_SIZE: usize = 37;
const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// iperf3's `MAX_PARAMS_JSON_STRING`: the parameter message is never larger.
pub const MAX_PARAMS_JSON: usize = 8 * 1024;
/// Results carry one small object per stream (≤ 128 streams) plus optional server
/// text; 256 KiB bounds that with a wide margin and stays cheap on 128 MiB boxes.
pub const MAX_RESULTS_JSON: usize = 256 * 1024;

/// Control states (`iperf_api.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    TestStart,
    TestRunning,
    TestEnd,
    ParamExchange,
    CreateStreams,
    ServerTerminate,
    ClientTerminate,
    ExchangeResults,
    DisplayResults,
    IperfStart,
    IperfDone,
    AccessDenied,
    ServerError,
}

impl State {
    pub fn to_byte(self) -> i8 {
        match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::TestEnd => 4,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfStart => 15,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        }
    }

    pub fn from_byte(b: i8) -> Result<State, ProtocolError> {
        Ok(match b {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            15 => State::IperfStart,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            other => return Err(ProtocolError::UnknownState(other)),
        })
    }
}

#[derive(Debug, Error)]
pub enum ProtocolError {
    #[error("unknown control state byte '{0}'; the peer is not iperf3-compatible")]
    UnknownState(i8),
    #[error(
        "message length '{len}' exceeds the cap of '{cap}' bytes; the peer is broken or hostile"
    )]
    TooLong { len: u64, cap: usize },
    #[error("message length '0' is not a JSON document")]
    Empty,
    // Not sources (`From` below): the messages embed them, and the error
    // chain the CLI prints would say them twice.
    #[error("message is not the JSON expected: {0}")]
    Decode(serde_json::Error),
    #[error("cannot write the JSON message: {0}")]
    Encode(serde_json::Error),
    #[error("control connection: {0}")]
    Io(io::Error),
    #[error("the peer closed the control connection")]
    Closed,
    #[error("the peer sent nothing within the deadline")]
    TimedOut,
    #[error("expected state '{expected:?}', the peer sent '{got:?}'")]
    UnexpectedState { expected: State, got: State },
    #[error("the server refused the test (ACCESS_DENIED): it is busy or the client is not allowed")]
    AccessDenied,
    #[error("the server reported an error (iperf3 error '{code}', errno '{errno}')")]
    ServerError { code: i32, errno: i32 },
    #[error("the peer terminated the test")]
    Terminated,
}

impl From<serde_json::Error> for ProtocolError {
    fn from(e: serde_json::Error) -> Self {
        ProtocolError::Decode(e)
    }
}

impl From<io::Error> for ProtocolError {
    fn from(e: io::Error) -> Self {
        ProtocolError::Io(e)
    }
}

/// A new random cookie: 36 base32 characters and a NUL, as iperf3's `make_cookie`.
pub fn make_cookie() -> [u8; COOKIE_SIZE] {
    let mut raw = [0u8; COOKIE_SIZE - 1];
    fill_random(&mut raw);
    let mut cookie = [0u8; COOKIE_SIZE];
    for (c, r) in cookie.iter_mut().zip(raw) {
        *c = COOKIE_ALPHABET[usize::from(r % 32)];
    }
    cookie
}

/// Whether `bytes` has the shape of an iperf3 cookie (base32 text, NUL-terminated).
pub fn is_cookie(bytes: &[u8; COOKIE_SIZE]) -> bool {
    bytes[COOKIE_SIZE - 1] == 0
        && bytes[..COOKIE_SIZE - 1]
            .iter()
            .all(|b| COOKIE_ALPHABET.contains(b))
}

/// Fills `buf` from the kernel's CSPRNG (getrandom(2), or /dev/urandom).
pub fn fill_random(buf: &mut [u8]) {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: the pointer and length describe the writable slice `rest`.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n > 0 {
            done += n as usize;
        } else if let Ok(mut f) = std::fs::File::open("/dev/urandom")
            && f.read_exact(rest).is_ok()
        {
            return;
        }
    }
}

/// Decodes a length prefix and checks it against `cap` before anything is allocated.
pub fn decode_length(prefix: [u8; 4], cap: usize) -> Result<usize, ProtocolError> {
    let len = u32::from_be_bytes(prefix);
    if len == 0 {
        return Err(ProtocolError::Empty);
    }
    match usize::try_from(len) {
        Ok(n) if n <= cap => Ok(n),
        _ => Err(ProtocolError::TooLong {
            len: u64::from(len),
            cap,
        }),
    }
}

/// Frames `json` as iperf3 does: 4-byte big-endian length, then the text.
pub fn encode_message(json: &[u8]) -> Result<Vec<u8>, ProtocolError> {
    let len = u32::try_from(json.len()).map_err(|_| ProtocolError::TooLong {
        len: json.len() as u64,
        cap: u32::MAX as usize,
    })?;
    let mut out = Vec::with_capacity(4 + json.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(json);
    Ok(out)
}

fn map_eof(e: io::Error) -> ProtocolError {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => ProtocolError::Closed,
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ProtocolError::TimedOut,
        _ => ProtocolError::Io(e),
    }
}

pub fn write_state<W: Write>(w: &mut W, state: State) -> Result<(), ProtocolError> {
    w.write_all(&[state.to_byte() as u8])?;
    Ok(())
}

/// Reads one state byte; ACCESS_DENIED, SERVER_ERROR and terminations become errors
/// so that every caller handles them the same way.
pub fn read_state<R: Read>(r: &mut R) -> Result<State, ProtocolError> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b).map_err(map_eof)?;
    let state = State::from_byte(b[0] as i8)?;
    match state {
        State::AccessDenied => Err(ProtocolError::AccessDenied),
        State::ServerError => {
            let mut codes = [0u8; 8];
            r.read_exact(&mut codes).map_err(map_eof)?;
            let code = i32::from_be_bytes([codes[0], codes[1], codes[2], codes[3]]);
            let errno = i32::from_be_bytes([codes[4], codes[5], codes[6], codes[7]]);
            Err(ProtocolError::ServerError { code, errno })
        }
        State::ClientTerminate | State::ServerTerminate => Err(ProtocolError::Terminated),
        s => Ok(s),
    }
}

pub fn expect_state<R: Read>(r: &mut R, expected: State) -> Result<(), ProtocolError> {
    let got = read_state(r)?;
    if got == expected {
        Ok(())
    } else {
        Err(ProtocolError::UnexpectedState { expected, got })
    }
}

/// Reads one framed message of at most `cap` bytes.
pub fn read_message<R: Read>(r: &mut R, cap: usize) -> Result<Vec<u8>, ProtocolError> {
    let mut prefix = [0u8; 4];
    r.read_exact(&mut prefix).map_err(map_eof)?;
    let len = decode_length(prefix, cap)?;
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf).map_err(map_eof)?;
    Ok(buf)
}

pub fn write_message<W: Write>(w: &mut W, json: &[u8]) -> Result<(), ProtocolError> {
    w.write_all(&encode_message(json)?)?;
    Ok(())
}

pub fn read_cookie<R: Read>(r: &mut R) -> Result<[u8; COOKIE_SIZE], ProtocolError> {
    let mut c = [0u8; COOKIE_SIZE];
    r.read_exact(&mut c).map_err(map_eof)?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_37_bytes_of_base32_and_differ() {
        let a = make_cookie();
        let b = make_cookie();
        assert!(is_cookie(&a));
        assert_ne!(a, b);
        let mut bad = a;
        bad[3] = b'!';
        assert!(!is_cookie(&bad));
    }

    #[test]
    fn state_bytes_round_trip_and_unknown_is_rejected() {
        for b in [1i8, 2, 4, 9, 10, 11, 12, 13, 14, 15, 16, -1, -2] {
            assert_eq!(State::from_byte(b).unwrap().to_byte(), b);
        }
        assert!(matches!(
            State::from_byte(3),
            Err(ProtocolError::UnknownState(3))
        ));
    }

    #[test]
    fn length_is_checked_before_allocating() {
        // CVE-2023-38403: 0xffffffff must be refused, not wrapped.
        let err = decode_length([0xff; 4], MAX_PARAMS_JSON).unwrap_err();
        assert!(err.to_string().contains("'4294967295'"), "{err}");
        assert!(matches!(
            decode_length([0, 0, 0x20, 0x01], MAX_PARAMS_JSON),
            Err(ProtocolError::TooLong { .. })
        ));
        assert_eq!(
            decode_length([0, 0, 0x20, 0], MAX_PARAMS_JSON).unwrap(),
            8192
        );
        assert!(matches!(
            decode_length([0; 4], 10),
            Err(ProtocolError::Empty)
        ));
    }

    #[test]
    fn messages_round_trip_and_truncation_is_closed() {
        let framed = encode_message(br#"{"tcp":true}"#).unwrap();
        assert_eq!(&framed[..4], &[0, 0, 0, 12]);
        let got = read_message(&mut &framed[..], MAX_PARAMS_JSON).unwrap();
        assert_eq!(got, br#"{"tcp":true}"#);
        let cut = &framed[..8];
        assert!(matches!(
            read_message(&mut &cut[..], MAX_PARAMS_JSON),
            Err(ProtocolError::Closed)
        ));
    }

    #[test]
    fn server_error_carries_both_codes() {
        let bytes = [0xfe, 0, 0, 0, 7, 0, 0, 0, 11];
        match read_state(&mut &bytes[..]) {
            Err(ProtocolError::ServerError { code, errno }) => assert_eq!((code, errno), (7, 11)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            read_state(&mut &[0xffu8][..]),
            Err(ProtocolError::AccessDenied)
        ));
    }
}
