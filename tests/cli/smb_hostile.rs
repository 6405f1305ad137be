//! A hostile SMB2 server: a thread that answers the client's NEGOTIATE with
//! wrong lengths, zero credits, a compound chain that loops, an endless or
//! oversized response, STATUS_PENDING forever, or a close mid-message. Every
//! case must end in a clear error within the client's timeout.

#![cfg(feature = "smb")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use nastune::smb::{Client, Config, Credentials, Error, Security};

const TIMEOUT: Duration = Duration::from_secs(2);

/// A NEGOTIATE response for dialect 2.1 granting `credits`.
fn negotiate_response(credits: u16, next_command: u32, status: u32) -> Vec<u8> {
    let mut m = vec![0xFE, b'S', b'M', b'B'];
    m.extend(64u16.to_le_bytes());
    m.extend(0u16.to_le_bytes());
    m.extend(status.to_le_bytes());
    m.extend(0u16.to_le_bytes()); // NEGOTIATE
    m.extend(credits.to_le_bytes());
    m.extend(1u32.to_le_bytes()); // SERVER_TO_REDIR
    m.extend(next_command.to_le_bytes());
    m.extend(0u64.to_le_bytes()); // message id 0
    m.extend([0u8; 32]);
    let mut b = vec![0u8; 64];
    b[0..2].copy_from_slice(&65u16.to_le_bytes());
    b[2..4].copy_from_slice(&1u16.to_le_bytes());
    b[4..6].copy_from_slice(&0x0210u16.to_le_bytes());
    for at in [28, 32, 36] {
        b[at..at + 4].copy_from_slice(&65536u32.to_le_bytes());
    }
    b[56..58].copy_from_slice(&128u16.to_le_bytes());
    m.extend(b);
    m
}

fn frame(msg: &[u8]) -> Vec<u8> {
    let l = msg.len() as u32;
    let mut f = vec![0, (l >> 16) as u8, (l >> 8) as u8, l as u8];
    f.extend_from_slice(msg);
    f
}

/// Serves one connection: reads the NEGOTIATE request, then `answer` writes.
fn hostile(answer: impl FnOnce(&mut TcpStream) + Send + 'static) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut head = [0u8; 4];
        s.read_exact(&mut head).unwrap();
        let len = usize::from(head[1]) << 16 | usize::from(head[2]) << 8 | usize::from(head[3]);
        let mut req = vec![0u8; len];
        s.read_exact(&mut req).unwrap();
        answer(&mut s);
        // Keep the socket open a while: the client must not wait for the close.
        std::thread::sleep(TIMEOUT * 3);
    });
    addr
}

fn connect(addr: SocketAddr) -> (Error, Duration) {
    let mut cfg = Config::new(addr, "127.0.0.1", Credentials::Anonymous, Security::Plain);
    cfg.timeout = TIMEOUT;
    let start = Instant::now();
    let e = Client::connect(cfg)
        .err()
        .expect("a hostile server must not get through");
    let took = start.elapsed();
    assert!(took < TIMEOUT * 2, "{e} took {took:?}");
    (e, took)
}

#[test]
fn buffer_outside_the_message_is_a_protocol_error() {
    let addr = hostile(|s| {
        let mut m = negotiate_response(10, 0, 0);
        // Security buffer: 4000 bytes at offset 128, in a 128-byte message.
        m[64 + 58..64 + 60].copy_from_slice(&4000u16.to_le_bytes());
        s.write_all(&frame(&m)).unwrap();
    });
    let (e, _) = connect(addr);
    assert!(matches!(e, Error::Protocol(_)), "{e:?}");
    assert!(e.to_string().contains("outside"), "{e}");
}

#[test]
fn zero_credits_is_an_error_not_a_hang() {
    let addr = hostile(|s| s.write_all(&frame(&negotiate_response(0, 0, 0))).unwrap());
    let (e, _) = connect(addr);
    assert!(e.to_string().contains("granted no credits"), "{e}");
}

#[test]
fn looping_compound_chain_is_refused() {
    let addr = hostile(|s| {
        // NextCommand 8 points back into its own header.
        let mut m = negotiate_response(10, 8, 0);
        m.extend(negotiate_response(10, 0, 0));
        s.write_all(&frame(&m)).unwrap();
    });
    let (e, _) = connect(addr);
    assert!(e.to_string().contains("NextCommand"), "{e}");
}

#[test]
fn oversized_frame_is_refused_before_allocation() {
    let addr = hostile(|s| s.write_all(&[0, 0xff, 0xff, 0xff]).unwrap());
    let (e, took) = connect(addr);
    assert!(e.to_string().contains("exceeds"), "{e}");
    assert!(took < TIMEOUT, "refused without waiting: {took:?}");
}

#[test]
fn endless_trickle_times_out() {
    let addr = hostile(|s| {
        s.write_all(&[0, 0, 4, 0]).unwrap();
        // One byte every 100 ms of a 1024-byte message: never finishes in time.
        for _ in 0..100 {
            if s.write_all(&[0xFE]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let (e, took) = connect(addr);
    assert!(matches!(e, Error::Timeout { .. }), "{e:?}");
    assert!(took >= TIMEOUT, "{took:?}");
}

#[test]
fn pending_forever_times_out() {
    let addr = hostile(|s| {
        let mut m = negotiate_response(1, 0, 0x103);
        m[16..20].copy_from_slice(&3u32.to_le_bytes()); // SERVER_TO_REDIR | ASYNC
        m.truncate(64);
        m.extend([9, 0, 0, 0, 0, 0, 0, 0, 0]);
        for _ in 0..100 {
            if s.write_all(&frame(&m)).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let (e, _) = connect(addr);
    assert!(matches!(e, Error::Timeout { .. }), "{e:?}");
}

#[test]
fn close_mid_message_is_named() {
    let addr = hostile(|s| {
        s.write_all(&[0, 0, 1, 0]).unwrap();
        s.write_all(&[0xFE, b'S', b'M', b'B']).unwrap();
        s.shutdown(std::net::Shutdown::Both).unwrap();
    });
    let (e, _) = connect(addr);
    assert!(matches!(e, Error::Closed { .. }), "{e:?}");
    assert!(e.to_string().contains("middle of a message"), "{e}");
}

#[test]
fn smb1_answer_names_the_setting() {
    let addr = hostile(|s| {
        let mut m = vec![0xFF, b'S', b'M', b'B'];
        m.extend([0u8; 60]);
        s.write_all(&frame(&m)).unwrap();
    });
    let (e, _) = connect(addr);
    assert!(matches!(e, Error::Smb1Only), "{e:?}");
}
