//! The SMB2/3 client: one TCP connection, one session, one tree. Requests are
//! numbered by MessageId and charged credits; up to the granted window can be
//! in flight, and responses are matched back by id (STATUS_PENDING interim
//! answers only add credits). Every read from the socket has a deadline.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::Error;
use super::crypto::{self, Cipher, SigningAlg};
use super::ntlm::{self, Credentials};
pub use super::types::{Dialect, Security, SessionInfo};
use super::wire::{self, Command, FileId, HEADER_LEN, Header, TRANSFORM_LEN, status};

#[derive(Debug, Clone)]
pub struct Config {
    pub addr: SocketAddr,
    /// The host name as the user gave it (for the tree path).
    pub server: String,
    pub credentials: Credentials,
    pub security: Security,
    pub dialects: Vec<Dialect>,
    /// Offered in this order of preference (3.1.1).
    pub ciphers: Vec<Cipher>,
    pub signing: Vec<SigningAlg>,
    /// No answer for this long is an error.
    pub timeout: Duration,
    /// The credits the client asks to hold: the pipelining window.
    pub credit_target: u16,
}

impl Config {
    pub fn new(
        addr: SocketAddr,
        server: &str,
        credentials: Credentials,
        security: Security,
    ) -> Config {
        Config {
            addr,
            server: server.to_string(),
            credentials,
            security,
            dialects: Dialect::ALL.to_vec(),
            ciphers: vec![Cipher::Aes128Gcm, Cipher::Aes128Ccm],
            signing: vec![
                SigningAlg::AesGmac,
                SigningAlg::AesCmac,
                SigningAlg::HmacSha256,
            ],
            timeout: Duration::from_secs(30),
            credit_target: 512,
        }
    }
}

/// An open file or directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHandle {
    pub id: FileId,
    pub end_of_file: u64,
    pub is_dir: bool,
}

/// A finished request taken from the window.
#[derive(Debug)]
pub struct Completion {
    pub message_id: u64,
    pub command: Command,
    pub status: u32,
    /// When it was sent.
    pub sent: Instant,
    msg: Msg,
}

impl Completion {
    pub fn bytes(&self) -> &[u8] {
        self.msg.bytes()
    }
}

#[derive(Debug)]
struct Msg {
    buf: Vec<u8>,
    start: usize,
}

impl Msg {
    fn bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

struct InFlight {
    command: Command,
    sent: Instant,
}

struct Keys {
    signing: Option<(SigningAlg, [u8; 16])>,
    cipher: Option<(Cipher, [u8; 16], [u8; 16])>,
}

const CAP_LARGE_MTU: u32 = 0x4;
const CAP_ENCRYPTION: u32 = 0x40;
const SESSION_FLAG_IS_GUEST: u16 = 0x1;
const SESSION_FLAG_IS_NULL: u16 = 0x2;
const SESSION_FLAG_ENCRYPT_DATA: u16 = 0x4;
const SHARE_FLAG_ENCRYPT_DATA: u32 = 0x8000;
/// The largest read or write this client asks for; bounds every frame.
pub const MAX_IO: u32 = 8 << 20;
/// Bytes beyond the payload a frame may carry (headers, transform).
const FRAME_SLACK: usize = 64 << 10;

pub struct Client {
    sock: TcpStream,
    cfg: Config,
    next_id: u64,
    credits: u32,
    in_flight: HashMap<u64, InFlight>,
    session_id: u64,
    tree_id: u32,
    dialect: Dialect,
    large_mtu: bool,
    keys: Keys,
    sign_requests: bool,
    encrypt: bool,
    nonce_prefix: [u8; 4],
    nonce_counter: u64,
    max_frame: usize,
    max_read: u32,
    max_write: u32,
    max_transact: u32,
    guest: bool,
    /// Whether the session has a key (not guest or anonymous).
    has_key: bool,
    send_buf: Vec<u8>,
    pool: Vec<Vec<u8>>,
    /// Messages of a compound frame not yet handed out.
    queued: Vec<Msg>,
    /// The receive timeout armed on the socket now.
    read_timeout: Duration,
    /// 3.1.1 preauth integrity hash while the session is being set up.
    preauth: Option<[u8; 64]>,
    share: String,
}

fn io_err(addr: SocketAddr) -> impl Fn(std::io::Error) -> Error {
    move |source| Error::Io {
        addr: addr.to_string(),
        cause: source,
    }
}

impl Client {
    /// Connects, negotiates and logs on.
    pub fn connect(cfg: Config) -> Result<Client, Error> {
        let sock = TcpStream::connect_timeout(&cfg.addr, cfg.timeout).map_err(|source| {
            Error::Connect {
                addr: cfg.addr.to_string(),
                cause: source,
            }
        })?;
        sock.set_nodelay(true).map_err(io_err(cfg.addr))?;
        sock.set_write_timeout(Some(cfg.timeout))
            .map_err(io_err(cfg.addr))?;
        let mut c = Client {
            sock,
            next_id: 0,
            credits: 1,
            in_flight: HashMap::new(),
            session_id: 0,
            tree_id: 0,
            dialect: Dialect::Smb202,
            large_mtu: false,
            keys: Keys {
                signing: None,
                cipher: None,
            },
            sign_requests: false,
            encrypt: false,
            nonce_prefix: crypto::random(),
            nonce_counter: 0,
            max_frame: 1 << 20,
            max_read: 65536,
            max_write: 65536,
            max_transact: 65536,
            guest: false,
            has_key: false,
            send_buf: Vec::new(),
            pool: Vec::new(),
            queued: Vec::new(),
            read_timeout: Duration::ZERO,
            preauth: None,
            share: String::new(),
            cfg,
        };
        c.negotiate()?;
        c.session_setup()?;
        Ok(c)
    }

    pub fn info(&self) -> SessionInfo {
        SessionInfo {
            dialect: self.dialect,
            signing: if self.encrypt || !self.sign_requests {
                None
            } else {
                self.keys.signing.map(|(a, _)| a)
            },
            cipher: if self.encrypt {
                self.keys.cipher.map(|(c, _, _)| c)
            } else {
                None
            },
            max_read_bytes: self.max_read,
            max_write_bytes: self.max_write,
            max_transact_bytes: self.max_transact,
            credits_granted: self.credits + self.in_flight.len() as u32,
            guest: self.guest,
        }
    }

    pub fn max_read(&self) -> u32 {
        self.max_read
    }
    pub fn max_write(&self) -> u32 {
        self.max_write
    }
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    fn addr(&self) -> String {
        self.cfg.addr.to_string()
    }

    fn credit_charge(&self, payload: usize) -> u32 {
        if self.large_mtu {
            (payload.max(1) as u32 - 1) / 65536 + 1
        } else {
            1
        }
    }

    /// Whether a request carrying `payload` bytes fits the credits held now.
    pub fn can_send(&self, payload: usize) -> bool {
        self.credits >= self.credit_charge(payload)
    }

    // ---- sending ----

    /// Builds and sends one request. `body` writes the body after the header.
    fn send(
        &mut self,
        command: Command,
        payload: usize,
        body: impl FnOnce(&mut Vec<u8>),
    ) -> Result<u64, Error> {
        let charge = self.credit_charge(payload);
        if self.credits < charge {
            return Err(if self.in_flight.is_empty() {
                Error::Protocol(format!(
                    "the server granted no credits for {} (holding {} of {charge} needed, nothing in flight)",
                    command.name(),
                    self.credits
                ))
            } else {
                Error::Protocol(
                    "internal: request sent without credits while others are in flight".into(),
                )
            });
        }
        let id = self.next_id;
        self.next_id += u64::from(charge);
        self.credits -= charge;
        let held = self.credits + self.in_flight.len() as u32;
        let want = (charge + u32::from(self.cfg.credit_target).saturating_sub(held))
            .min(u32::from(u16::MAX)) as u16;
        let mut buf = std::mem::take(&mut self.send_buf);
        buf.clear();
        buf.resize(4 + TRANSFORM_LEN, 0);
        let start = buf.len();
        // 3.1.1 signs TREE_CONNECT even on unsigned sessions (MS-SMB2 3.2.4.1.1):
        // it stands in for the negotiate validation of 3.0.
        let must_sign = self.sign_requests
            || (command == Command::TreeConnect && self.dialect == Dialect::Smb311);
        let signed = must_sign && !self.encrypt && self.has_key && self.session_id != 0;
        let flags = if signed { wire::FLAG_SIGNED } else { 0 };
        wire::put_header(
            &mut buf,
            command,
            if self.dialect == Dialect::Smb202 {
                0
            } else {
                charge as u16
            },
            want,
            flags,
            id,
            self.tree_id,
            self.session_id,
        );
        body(&mut buf);
        if let Some(h) = self.preauth.as_mut()
            && matches!(command, Command::SessionSetup | Command::Negotiate)
        {
            *h = crypto::sha512(&[&h[..], &buf[start..]]);
        }
        if signed && let Some((alg, key)) = self.keys.signing {
            let sig = crypto::sign(alg, &key, &buf[start..]);
            buf[start + 48..start + 64].copy_from_slice(&sig);
        }
        let from = if self.encrypt {
            self.seal(&mut buf, start)?;
            0
        } else {
            start - 4
        };
        let len = buf.len() - from - 4;
        buf[from..from + 4].copy_from_slice(&wire::frame_head(len));
        let res = self.sock.write_all(&buf[from..]);
        self.send_buf = buf;
        res.map_err(|e| self.io_or_timeout(e, "sending a request"))?;
        self.in_flight.insert(
            id,
            InFlight {
                command,
                sent: Instant::now(),
            },
        );
        Ok(id)
    }

    fn seal(&mut self, buf: &mut [u8], start: usize) -> Result<(), Error> {
        let Some((cipher, key, _)) = self.keys.cipher else {
            return Err(Error::Unsupported("encryption was not negotiated".into()));
        };
        self.nonce_counter += 1;
        let mut nonce = [0u8; 16];
        let n = cipher.nonce_len();
        nonce[..n - 8].copy_from_slice(&self.nonce_prefix[..n - 8]);
        nonce[n - 8..n].copy_from_slice(&self.nonce_counter.to_le_bytes());
        let t = 4;
        let size = (buf.len() - start) as u32;
        buf[t..t + 4].copy_from_slice(&wire::PROTOCOL_TRANSFORM);
        buf[t + 20..t + 36].copy_from_slice(&nonce);
        buf[t + 36..t + 40].copy_from_slice(&size.to_le_bytes());
        buf[t + 40..t + 42].copy_from_slice(&0u16.to_le_bytes());
        buf[t + 42..t + 44].copy_from_slice(&1u16.to_le_bytes());
        buf[t + 44..t + 52].copy_from_slice(&self.session_id.to_le_bytes());
        let (head, msg) = buf.split_at_mut(start);
        let tag = crypto::seal(cipher, &key, &nonce[..n], &head[t + 20..t + 52], msg);
        head[t + 4..t + 20].copy_from_slice(&tag);
        Ok(())
    }

    // ---- receiving ----

    fn io_or_timeout(&self, e: std::io::Error, what: &str) -> Error {
        match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Error::Timeout {
                addr: self.addr(),
                secs: self.cfg.timeout.as_secs(),
                what: what.to_string(),
            },
            std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::BrokenPipe => Error::Closed {
                addr: self.addr(),
                what: format!("while {what}"),
                mid_message: false,
            },
            _ => Error::Io {
                addr: self.addr(),
                cause: e,
            },
        }
    }

    fn read_full(&mut self, buf: &mut [u8], deadline: Instant, what: &str) -> Result<(), Error> {
        let mut n = 0;
        while n < buf.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.io_or_timeout(std::io::ErrorKind::TimedOut.into(), what));
            }
            // One setsockopt per frame, not per read: re-arm only when the
            // deadline is more than a tenth nearer than the armed timeout.
            if left < self.read_timeout.saturating_sub(self.read_timeout / 10)
                || self.read_timeout.is_zero()
            {
                self.sock
                    .set_read_timeout(Some(left))
                    .map_err(io_err(self.cfg.addr))?;
                self.read_timeout = left;
            }
            match self.sock.read(&mut buf[n..]) {
                Ok(0) => {
                    let mid_message = n > 0 || !what.starts_with("waiting");
                    return Err(Error::Closed {
                        addr: self.addr(),
                        what: if mid_message {
                            format!(
                                "in the middle of a message ({n} of {} bytes) while {what}",
                                buf.len()
                            )
                        } else {
                            format!("while {what}")
                        },
                        mid_message,
                    });
                }
                Ok(k) => n += k,
                // Ctrl-C: finish the frame; the caller checks the flag between
                // requests and still needs a working connection to clean up.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // The armed timeout was shorter than this deadline: re-arm.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) && Instant::now() < deadline =>
                {
                    self.read_timeout = Duration::ZERO;
                }
                Err(e) => return Err(self.io_or_timeout(e, what)),
            }
        }
        Ok(())
    }

    /// Reads one frame, decrypts it, splits a compound, returns one message.
    fn recv_msg(&mut self, deadline: Instant) -> Result<Msg, Error> {
        if !self.queued.is_empty() {
            return Ok(self.queued.remove(0));
        }
        let mut head = [0u8; 4];
        self.read_full(&mut head, deadline, "waiting for a response")?;
        let len = wire::frame_len(head, self.max_frame)?;
        let mut buf = self.pool.pop().unwrap_or_default();
        buf.clear();
        buf.resize(len, 0);
        self.read_full(&mut buf, deadline, "reading a response")?;
        let mut start = 0;
        if buf[..4] == wire::PROTOCOL_TRANSFORM {
            let t = wire::Transform::parse(&buf)?;
            let Some((cipher, _, key)) = self.keys.cipher else {
                return Err(Error::Protocol(
                    "encrypted response before keys were set up".into(),
                ));
            };
            if t.session_id != self.session_id {
                return Err(Error::Protocol(format!(
                    "encrypted response for session {:#x}",
                    t.session_id
                )));
            }
            let (h, msg) = buf.split_at_mut(TRANSFORM_LEN);
            let aad = h[20..52].to_vec();
            if !crypto::open(
                cipher,
                &key,
                &t.nonce[..cipher.nonce_len()],
                &aad,
                msg,
                &t.signature,
            ) {
                return Err(Error::Protocol(
                    "an encrypted response failed to decrypt (bad tag)".into(),
                ));
            }
            start = TRANSFORM_LEN;
        } else if self.encrypt {
            let h = Header::parse(&buf)?;
            // Samba answers a request it cannot decrypt, or a logoff, in clear with an error.
            if h.status == status::SUCCESS {
                return Err(Error::Protocol(
                    "unencrypted response on an encrypted session".into(),
                ));
            }
        }
        let ranges = wire::split_compound(&buf[start..])?;
        if ranges.len() == 1 {
            return Ok(Msg { buf, start });
        }
        let mut msgs: Vec<Msg> = ranges
            .into_iter()
            .map(|r| Msg {
                buf: buf[start + r.start..start + r.end].to_vec(),
                start: 0,
            })
            .collect();
        let first = msgs.remove(0);
        self.queued = msgs;
        Ok(first)
    }

    fn check_signature(&self, msg: &mut Msg, h: &Header) -> Result<(), Error> {
        if h.flags & wire::FLAG_SIGNED == 0 || h.status == status::PENDING {
            if self.sign_requests
                && self.has_key
                && !self.encrypt
                && h.session_id != 0
                && h.status == status::SUCCESS
            {
                return Err(Error::Protocol(format!(
                    "unsigned {} response on a signed session",
                    h.command
                )));
            }
            return Ok(());
        }
        let Some((alg, key)) = self.keys.signing else {
            return Ok(());
        };
        // Signed over the message with a zero signature field: zero it in place.
        let m = &mut msg.buf[msg.start..];
        m[48..64].fill(0);
        let ok = crypto::sign(alg, &key, m) == h.signature;
        m[48..64].copy_from_slice(&h.signature);
        if !ok {
            return Err(Error::Protocol(format!(
                "bad {} signature on a response (command {})",
                alg.name(),
                h.command
            )));
        }
        Ok(())
    }

    /// Waits for the next final response to any request in flight.
    pub fn complete(&mut self) -> Result<Completion, Error> {
        loop {
            let oldest = self
                .in_flight
                .values()
                .map(|f| f.sent)
                .min()
                .ok_or_else(|| {
                    Error::Protocol("internal: waiting with nothing in flight".into())
                })?;
            let deadline = oldest + self.cfg.timeout;
            let mut msg = self.recv_msg(deadline)?;
            let h = Header::parse(msg.bytes())?;
            if h.flags & wire::FLAG_SERVER_TO_REDIR == 0 {
                return Err(Error::Protocol(
                    "a request arrived where a response was expected".into(),
                ));
            }
            let Some(f) = self.in_flight.get(&h.message_id) else {
                return Err(Error::Protocol(format!(
                    "response to message id {} which is not in flight",
                    h.message_id
                )));
            };
            if h.command != f.command as u16 {
                return Err(Error::Protocol(format!(
                    "response for message {} is command {}, the request was {}",
                    h.message_id,
                    h.command,
                    f.command.name()
                )));
            }
            self.credits = self.credits.saturating_add(u32::from(h.credits));
            if h.status == status::PENDING && h.flags & wire::FLAG_ASYNC != 0 {
                self.pool.push(msg.buf);
                continue;
            }
            self.check_signature(&mut msg, &h)?;
            let f = self
                .in_flight
                .remove(&h.message_id)
                .ok_or_else(|| Error::Protocol("lost request".into()))?;
            if self.credits == 0 && self.in_flight.is_empty() {
                return Err(Error::Protocol(format!(
                    "the server granted no credits in its {} response; the client cannot send another request",
                    f.command.name()
                )));
            }
            return Ok(Completion {
                message_id: h.message_id,
                command: f.command,
                status: h.status,
                sent: f.sent,
                msg,
            });
        }
    }

    /// Returns a completion's buffer for reuse.
    pub fn recycle(&mut self, c: Completion) {
        if self.pool.len() < 8 {
            self.pool.push(c.msg.buf);
        }
    }

    /// Sends one request and waits for its response (nothing else in flight).
    fn call(
        &mut self,
        command: Command,
        payload: usize,
        body: impl FnOnce(&mut Vec<u8>),
    ) -> Result<Completion, Error> {
        let id = self.send(command, payload, body)?;
        let c = self.complete()?;
        if c.message_id != id {
            return Err(Error::Protocol(format!(
                "expected the response to {id}, got {}",
                c.message_id
            )));
        }
        Ok(c)
    }

    // ---- negotiate and session ----

    fn negotiate(&mut self) -> Result<(), Error> {
        let dialects = self.cfg.dialects.clone();
        let smb311 = dialects.contains(&Dialect::Smb311);
        let salt: [u8; 32] = crypto::random();
        let guid: [u8; 16] = crypto::random();
        // Signing "enabled", never "required": the client signs when it wants to.
        let mode: u16 = 1;
        let ciphers = self.cfg.ciphers.clone();
        let signing = self.cfg.signing.clone();
        if smb311 {
            self.preauth = Some([0u8; 64]);
        }
        let sent = self.send(Command::Negotiate, 0, |b| {
            let body_start = b.len();
            b.extend_from_slice(&36u16.to_le_bytes());
            b.extend_from_slice(&(dialects.len() as u16).to_le_bytes());
            b.extend_from_slice(&mode.to_le_bytes());
            b.extend_from_slice(&0u16.to_le_bytes());
            b.extend_from_slice(&(CAP_LARGE_MTU | CAP_ENCRYPTION).to_le_bytes());
            b.extend_from_slice(&guid);
            let ctx_field = b.len();
            b.extend_from_slice(&[0u8; 8]);
            for d in &dialects {
                b.extend_from_slice(&d.code().to_le_bytes());
            }
            if smb311 {
                let hdr = body_start - HEADER_LEN;
                let mut contexts: Vec<(u16, Vec<u8>)> = Vec::new();
                let mut pre = vec![1, 0, 32, 0, 1, 0];
                pre.extend_from_slice(&salt);
                contexts.push((1, pre));
                let mut enc = (ciphers.len() as u16).to_le_bytes().to_vec();
                for c in &ciphers {
                    enc.extend_from_slice(&(*c as u16 + 1).to_le_bytes());
                }
                contexts.push((2, enc));
                let mut sig = (signing.len() as u16).to_le_bytes().to_vec();
                for s in &signing {
                    sig.extend_from_slice(&(*s as u16).to_le_bytes());
                }
                contexts.push((8, sig));
                while !(b.len() - hdr).is_multiple_of(8) {
                    b.push(0);
                }
                let off = (b.len() - hdr) as u32;
                b[ctx_field..ctx_field + 4].copy_from_slice(&off.to_le_bytes());
                b[ctx_field + 4..ctx_field + 6]
                    .copy_from_slice(&(contexts.len() as u16).to_le_bytes());
                let n = contexts.len();
                for (i, (ty, data)) in contexts.into_iter().enumerate() {
                    b.extend_from_slice(&ty.to_le_bytes());
                    b.extend_from_slice(&(data.len() as u16).to_le_bytes());
                    b.extend_from_slice(&0u32.to_le_bytes());
                    b.extend_from_slice(&data);
                    if i + 1 < n {
                        while !(b.len() - hdr).is_multiple_of(8) {
                            b.push(0);
                        }
                    }
                }
            }
        })?;
        let c = match self.complete() {
            Ok(c) => c,
            // A server without SMB2 drops the connection on an SMB2 negotiate.
            Err(Error::Closed {
                mid_message: false, ..
            }) => return Err(Error::Smb1Only),
            Err(e) => return Err(e),
        };
        debug_assert_eq!(c.message_id, sent);
        if c.status != status::SUCCESS {
            return Err(if c.status == status::NOT_SUPPORTED {
                Error::Smb1Only
            } else {
                status_error(Command::Negotiate, "", c.status)
            });
        }
        let n = wire::parse_negotiate(c.bytes())?;
        if let Some(h) = self.preauth.as_mut() {
            *h = crypto::sha512(&[&h[..], c.bytes()]);
        }
        let Some(dialect) = Dialect::from_code(n.dialect).filter(|d| dialects.contains(d)) else {
            return Err(if n.dialect == 0x02FF || n.dialect == 0xFFFF {
                Error::Smb1Only
            } else {
                Error::Protocol(format!(
                    "server chose dialect 0x{:04x}, which was not offered",
                    n.dialect
                ))
            });
        };
        self.dialect = dialect;
        if dialect != Dialect::Smb311 {
            self.preauth = None;
        }
        self.large_mtu = dialect != Dialect::Smb202 && n.capabilities & CAP_LARGE_MTU != 0;
        let cap = if self.large_mtu { MAX_IO } else { 65536 };
        self.max_read = n.max_read.clamp(4096, cap);
        self.max_write = n.max_write.clamp(4096, cap);
        self.max_transact = n.max_transact.clamp(4096, cap);
        self.max_frame =
            self.max_read.max(self.max_write).max(self.max_transact) as usize + FRAME_SLACK;
        self.sign_requests = self.cfg.security != Security::Plain || n.security_mode & 2 != 0;
        let mut signing_alg = match dialect {
            Dialect::Smb202 | Dialect::Smb21 => SigningAlg::HmacSha256,
            _ => SigningAlg::AesCmac,
        };
        let mut cipher = None;
        if dialect == Dialect::Smb311 {
            for (ty, data) in &n.contexts {
                let first = wire::u16_at(data, 2);
                match (ty, wire::u16_at(data, 0), first) {
                    (2, Some(1), Some(1)) => cipher = Some(Cipher::Aes128Ccm),
                    (2, Some(1), Some(2)) => cipher = Some(Cipher::Aes128Gcm),
                    (8, Some(1), Some(0)) => signing_alg = SigningAlg::HmacSha256,
                    (8, Some(1), Some(1)) => signing_alg = SigningAlg::AesCmac,
                    (8, Some(1), Some(2)) => signing_alg = SigningAlg::AesGmac,
                    _ => {}
                }
            }
        } else if dialect.is_smb3() && n.capabilities & CAP_ENCRYPTION != 0 {
            cipher = Some(Cipher::Aes128Ccm);
        }
        if self.cfg.security == Security::Encrypt && cipher.is_none() {
            return Err(Error::Unsupported(format!(
                "--security encrypt needs SMB 3.x with encryption; the server negotiated {} without a cipher (set 'server max protocol = SMB3' and do not disable 'smb encrypt')",
                dialect.name()
            )));
        }
        self.keys.signing = Some((signing_alg, [0u8; 16]));
        self.keys.cipher = cipher.map(|c| (c, [0u8; 16], [0u8; 16]));
        self.recycle(c);
        Ok(())
    }

    fn session_setup(&mut self) -> Result<(), Error> {
        let user = match &self.cfg.credentials {
            Credentials::Anonymous => String::new(),
            Credentials::User { user, .. } => user.clone(),
        };
        let mode: u8 = 1;
        let neg = ntlm::negotiate();
        let c = self.call(Command::SessionSetup, 0, |b| {
            session_setup_body(b, mode, &neg)
        })?;
        if c.status != status::MORE_PROCESSING_REQUIRED {
            return Err(status_error(Command::SessionSetup, &user, c.status));
        }
        if let Some(h) = self.preauth.as_mut() {
            *h = crypto::sha512(&[&h[..], c.bytes()]);
        }
        let h = Header::parse(c.bytes())?;
        self.session_id = h.session_id;
        let (_, blob) = wire::parse_session_setup(c.bytes())?;
        let challenge = ntlm::parse_challenge(blob)?;
        self.recycle(c);
        let (auth, session_key) = ntlm::authenticate(
            &self.cfg.credentials,
            &challenge,
            crypto::random(),
            ntlm::filetime_now(),
        );
        let id = self.send(Command::SessionSetup, 0, |b| {
            session_setup_body(b, mode, &auth)
        })?;
        // The final response is signed with the new keys: derive them first.
        let preauth = self.preauth.take();
        self.derive_keys(session_key, preauth);
        let c = self.complete()?;
        debug_assert_eq!(c.message_id, id);
        if c.status != status::SUCCESS {
            return Err(match c.status {
                status::LOGON_FAILURE | status::ACCOUNT_DISABLED | status::ACCESS_DENIED
                    if user.is_empty() =>
                {
                    Error::GuestRefused
                }
                status::LOGON_FAILURE | status::ACCOUNT_DISABLED | status::ACCESS_DENIED => {
                    Error::LogonFailure { user }
                }
                s => status_error(Command::SessionSetup, &user, s),
            });
        }
        let (flags, _) = wire::parse_session_setup(c.bytes())?;
        self.recycle(c);
        // Samba flags a guest but not an anonymous session (it maps that to guest).
        self.guest =
            session_key.is_none() || flags & (SESSION_FLAG_IS_GUEST | SESSION_FLAG_IS_NULL) != 0;
        self.has_key = !self.guest;
        if session_key.is_none() || self.guest {
            // Guest and anonymous sessions have no usable key.
            if self.cfg.security != Security::Plain {
                return Err(Error::Unsupported(format!(
                    "--security {} needs a real user: a guest or anonymous session has no key; pass --user",
                    self.cfg.security.name()
                )));
            }
            self.sign_requests = false;
            self.keys.signing = None;
            self.keys.cipher = None;
        }
        self.encrypt = self.keys.cipher.is_some()
            && (self.cfg.security == Security::Encrypt || flags & SESSION_FLAG_ENCRYPT_DATA != 0);
        if flags & SESSION_FLAG_ENCRYPT_DATA != 0 && self.keys.cipher.is_none() {
            return Err(Error::Unsupported(
                "the server requires encryption ('smb encrypt = required') but none was negotiated"
                    .into(),
            ));
        }
        Ok(())
    }

    fn derive_keys(&mut self, session_key: Option<[u8; 16]>, preauth: Option<[u8; 64]>) {
        let Some(sk) = session_key else { return };
        // 3.1.1 binds the keys to the preauth hash; 3.0 uses fixed contexts.
        let labels: [(&[u8], &[u8]); 3] = match &preauth {
            Some(p) => [
                (b"SMBSigningKey\0", p),
                (b"SMBC2SCipherKey\0", p),
                (b"SMBS2CCipherKey\0", p),
            ],
            None => [
                (b"SMB2AESCMAC\0", b"SmbSign\0"),
                (b"SMB2AESCCM\0", b"ServerIn \0"),
                (b"SMB2AESCCM\0", b"ServerOut\0"),
            ],
        };
        let [
            (sign_label, sign_ctx),
            (enc_label, enc_ctx),
            (dec_label, dec_ctx),
        ] = labels;
        if let Some((alg, key)) = self.keys.signing.as_mut() {
            *key = if self.dialect.is_smb3() {
                crypto::kdf(&sk, sign_label, sign_ctx)
            } else {
                debug_assert_eq!(*alg, SigningAlg::HmacSha256);
                sk
            };
        }
        if let Some((_, enc, dec)) = self.keys.cipher.as_mut() {
            *enc = crypto::kdf(&sk, enc_label, enc_ctx);
            *dec = crypto::kdf(&sk, dec_label, dec_ctx);
        }
    }

    /// Connects the tree `\\server\share`.
    pub fn tree_connect(&mut self, share: &str) -> Result<(), Error> {
        let path = wire::utf16(&format!("\\\\{}\\{}", self.cfg.server, share));
        let c = self.call(Command::TreeConnect, 0, |b| {
            b.extend_from_slice(&9u16.to_le_bytes());
            b.extend_from_slice(&0u16.to_le_bytes());
            b.extend_from_slice(&((HEADER_LEN + 8) as u16).to_le_bytes());
            b.extend_from_slice(&(path.len() as u16).to_le_bytes());
            b.extend_from_slice(&path);
        })?;
        if c.status != status::SUCCESS {
            return Err(match c.status {
                status::BAD_NETWORK_NAME => Error::BadNetworkName {
                    share: share.to_string(),
                },
                status::ACCESS_DENIED => Error::AccessDenied {
                    path: share.to_string(),
                    status: status::name(c.status),
                },
                s => status_error(Command::TreeConnect, share, s),
            });
        }
        let t = wire::parse_tree_connect(c.bytes())?;
        self.tree_id = Header::parse(c.bytes())?.tree_id;
        self.recycle(c);
        if t.share_flags & SHARE_FLAG_ENCRYPT_DATA != 0 {
            if self.keys.cipher.is_none() {
                return Err(Error::Unsupported(format!(
                    "share '{share}' requires encryption, which was not negotiated"
                )));
            }
            self.encrypt = true;
        }
        self.share = share.to_string();
        Ok(())
    }

    // ---- files ----

    /// Opens or creates `path` (backslash-separated, relative to the share).
    pub fn create(&mut self, path: &str, how: Open) -> Result<FileHandle, Error> {
        let name = wire::utf16(path);
        let (access, disposition, options, attrs) = how.fields();
        let c = self.call(Command::Create, 0, |b| {
            b.extend_from_slice(&57u16.to_le_bytes());
            b.push(0); // security flags
            b.push(0); // no oplock: the bench measures the wire, not the client cache
            b.extend_from_slice(&2u32.to_le_bytes()); // impersonation
            b.extend_from_slice(&[0u8; 16]);
            b.extend_from_slice(&access.to_le_bytes());
            b.extend_from_slice(&attrs.to_le_bytes());
            b.extend_from_slice(&7u32.to_le_bytes()); // share read|write|delete
            b.extend_from_slice(&disposition.to_le_bytes());
            b.extend_from_slice(&options.to_le_bytes());
            b.extend_from_slice(&((HEADER_LEN + 56) as u16).to_le_bytes());
            b.extend_from_slice(&(name.len() as u16).to_le_bytes());
            b.extend_from_slice(&[0u8; 8]);
            b.extend_from_slice(&name);
            if name.is_empty() {
                b.push(0);
            }
        })?;
        let c = self.success(c, Command::Create, path)?;
        let r = wire::parse_create(c.bytes())?;
        self.recycle(c);
        Ok(FileHandle {
            id: r.file_id,
            end_of_file: r.end_of_file,
            is_dir: r.attributes & wire::ATTR_DIRECTORY != 0,
        })
    }

    pub fn close(&mut self, f: &FileHandle) -> Result<(), Error> {
        let c = self.call(Command::Close, 0, |b| {
            b.extend_from_slice(&24u16.to_le_bytes());
            b.extend_from_slice(&[0u8; 6]);
            f.id.put(b);
        })?;
        self.finish(c, Command::Close, "")
    }

    pub fn flush(&mut self, f: &FileHandle) -> Result<(), Error> {
        let c = self.call(Command::Flush, 0, |b| {
            b.extend_from_slice(&24u16.to_le_bytes());
            b.extend_from_slice(&[0u8; 6]);
            f.id.put(b);
        })?;
        self.finish(c, Command::Flush, "")
    }

    fn finish(&mut self, c: Completion, command: Command, path: &str) -> Result<(), Error> {
        let c = self.success(c, command, path)?;
        self.recycle(c);
        Ok(())
    }

    /// The completion if it succeeded; otherwise its buffer is recycled and
    /// the status becomes the error.
    fn success(
        &mut self,
        c: Completion,
        command: Command,
        path: &str,
    ) -> Result<Completion, Error> {
        if c.status == status::SUCCESS {
            return Ok(c);
        }
        let s = c.status;
        self.recycle(c);
        Err(file_error(command, path, s))
    }

    /// Marks an open file or empty directory for deletion on close.
    pub fn delete_on_close(&mut self, f: &FileHandle, path: &str) -> Result<(), Error> {
        let c = self.call(Command::SetInfo, 0, |b| {
            b.extend_from_slice(&33u16.to_le_bytes());
            b.push(1); // SMB2_0_INFO_FILE
            b.push(13); // FileDispositionInformation
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(&((HEADER_LEN + 32) as u16).to_le_bytes());
            b.extend_from_slice(&[0u8; 6]);
            f.id.put(b);
            b.push(1);
        })?;
        self.finish(c, Command::SetInfo, path)
    }

    /// Queues a write; the caller collects it with [`Client::complete`].
    pub fn submit_write(&mut self, f: &FileHandle, offset: u64, data: &[u8]) -> Result<u64, Error> {
        self.send(Command::Write, data.len(), |b| {
            b.extend_from_slice(&49u16.to_le_bytes());
            b.extend_from_slice(&((HEADER_LEN + 48) as u16).to_le_bytes());
            b.extend_from_slice(&(data.len() as u32).to_le_bytes());
            b.extend_from_slice(&offset.to_le_bytes());
            f.id.put(b);
            b.extend_from_slice(&[0u8; 16]);
            b.extend_from_slice(data);
        })
    }

    /// Queues a read of `len` bytes.
    pub fn submit_read(&mut self, f: &FileHandle, offset: u64, len: u32) -> Result<u64, Error> {
        self.send(Command::Read, len as usize, |b| {
            b.extend_from_slice(&49u16.to_le_bytes());
            b.push(0x50);
            b.push(0);
            b.extend_from_slice(&len.to_le_bytes());
            b.extend_from_slice(&offset.to_le_bytes());
            f.id.put(b);
            // Minimum count 0: a short read at end of file is data, not STATUS_END_OF_FILE.
            b.extend_from_slice(&[0u8; 16]);
            b.push(0);
        })
    }

    /// The bytes a completed write wrote, or its error.
    pub fn write_result(&self, c: &Completion, path: &str) -> Result<u32, Error> {
        if c.status != status::SUCCESS {
            return Err(file_error(Command::Write, path, c.status));
        }
        wire::parse_write(c.bytes())
    }

    /// The data of a completed read (empty at end of file), or its error.
    pub fn read_result<'a>(
        &self,
        c: &'a Completion,
        asked: u32,
        path: &str,
    ) -> Result<&'a [u8], Error> {
        match c.status {
            status::SUCCESS => {
                let r = wire::parse_read(c.bytes(), asked as usize)?;
                Ok(&c.bytes()[r])
            }
            status::END_OF_FILE => Ok(&[]),
            s => Err(file_error(Command::Read, path, s)),
        }
    }

    /// Writes all of `data` at `offset` (one request at a time).
    pub fn write_all_at(
        &mut self,
        f: &FileHandle,
        mut offset: u64,
        data: &[u8],
        path: &str,
    ) -> Result<(), Error> {
        for chunk in data.chunks(self.max_write as usize) {
            self.submit_write(f, offset, chunk)?;
            let c = self.complete()?;
            let n = self.write_result(&c, path);
            self.recycle(c);
            if n? as usize != chunk.len() {
                return Err(Error::Protocol(format!("short write to '{path}'")));
            }
            offset += chunk.len() as u64;
        }
        Ok(())
    }

    /// Reads up to `len` bytes at `offset` into `out` (appended); returns the count.
    pub fn read_at(
        &mut self,
        f: &FileHandle,
        offset: u64,
        len: u32,
        out: &mut Vec<u8>,
        path: &str,
    ) -> Result<usize, Error> {
        let len = len.min(self.max_read);
        self.submit_read(f, offset, len)?;
        let c = self.complete()?;
        let r = self.read_result(&c, len, path).map(|d| {
            out.extend_from_slice(d);
            d.len()
        });
        self.recycle(c);
        r
    }

    /// Lists a directory handle (every entry, `.` and `..` included).
    pub fn list(&mut self, dir: &FileHandle, path: &str) -> Result<Vec<wire::DirEntry>, Error> {
        let mut out = Vec::new();
        let out_len = self.max_transact.min(65536);
        let pattern = wire::utf16("*");
        let mut first = true;
        loop {
            let flags: u8 = if first { 1 } else { 0 };
            first = false;
            let c = self.call(Command::QueryDirectory, out_len as usize, |b| {
                b.extend_from_slice(&33u16.to_le_bytes());
                b.push(1); // FileDirectoryInformation
                b.push(flags);
                b.extend_from_slice(&0u32.to_le_bytes());
                dir.id.put(b);
                b.extend_from_slice(&((HEADER_LEN + 32) as u16).to_le_bytes());
                b.extend_from_slice(&(pattern.len() as u16).to_le_bytes());
                b.extend_from_slice(&out_len.to_le_bytes());
                b.extend_from_slice(&pattern);
            })?;
            match c.status {
                status::NO_MORE_FILES => {
                    self.recycle(c);
                    return Ok(out);
                }
                status::SUCCESS => {}
                s => {
                    self.recycle(c);
                    return Err(file_error(Command::QueryDirectory, path, s));
                }
            }
            let entries =
                wire::parse_output_buffer(c.bytes(), Command::QueryDirectory, out_len as usize)
                    .and_then(wire::parse_directory);
            self.recycle(c);
            let entries = entries?;
            if entries.is_empty() {
                return Ok(out);
            }
            if out.len() + entries.len() > 1_000_000 {
                return Err(Error::Protocol(format!(
                    "directory '{path}' lists more than a million entries"
                )));
            }
            out.extend(entries);
        }
    }

    /// QUERY_INFO: FileNetworkOpenInformation (class 34): (end of file, attributes).
    pub fn stat(&mut self, f: &FileHandle, path: &str) -> Result<(u64, u32), Error> {
        let b = self.query_info(f, 1, 34, 56, path)?;
        Ok((
            wire::u64_at(&b, 40).unwrap_or(0),
            wire::u32_at(&b, 48).unwrap_or(0),
        ))
    }

    /// Free bytes for the caller on the share (FileFsFullSizeInformation).
    pub fn free_space(&mut self, f: &FileHandle) -> Result<u64, Error> {
        let b = self.query_info(f, 2, 7, 32, "")?;
        let units = wire::u64_at(&b, 8).unwrap_or(0);
        let per = u64::from(wire::u32_at(&b, 24).unwrap_or(0))
            * u64::from(wire::u32_at(&b, 28).unwrap_or(0));
        Ok(units.saturating_mul(per))
    }

    fn query_info(
        &mut self,
        f: &FileHandle,
        ty: u8,
        class: u8,
        len: u32,
        path: &str,
    ) -> Result<Vec<u8>, Error> {
        let c = self.call(Command::QueryInfo, len as usize, |b| {
            b.extend_from_slice(&41u16.to_le_bytes());
            b.push(ty);
            b.push(class);
            b.extend_from_slice(&len.to_le_bytes());
            b.extend_from_slice(&((HEADER_LEN + 40) as u16).to_le_bytes());
            b.extend_from_slice(&[0u8; 14]);
            f.id.put(b);
            b.push(0);
        })?;
        let c = self.success(c, Command::QueryInfo, path)?;
        let out = wire::parse_output_buffer(c.bytes(), Command::QueryInfo, len as usize)
            .map(<[u8]>::to_vec);
        self.recycle(c);
        let out = out?;
        if out.len() < len as usize {
            return Err(Error::Protocol(format!(
                "QUERY_INFO class {class} answered {} bytes",
                out.len()
            )));
        }
        Ok(out)
    }

    /// Drains whatever is still in flight (after an error or an interrupt),
    /// within the timeout; errors of the drained requests are dropped.
    pub fn drain(&mut self) {
        while !self.in_flight.is_empty() {
            match self.complete() {
                Ok(c) => self.recycle(c),
                Err(_) => {
                    self.in_flight.clear();
                    return;
                }
            }
        }
    }

    /// Disconnects the tree and logs off; errors are ignored (best effort).
    pub fn logoff(mut self) {
        self.drain();
        if self.tree_id != 0
            && let Ok(c) = self.call(Command::TreeDisconnect, 0, |b| {
                b.extend_from_slice(&[4, 0, 0, 0])
            })
        {
            self.recycle(c);
        }
        let _ = self.call(Command::Logoff, 0, |b| b.extend_from_slice(&[4, 0, 0, 0]));
    }
}

fn session_setup_body(b: &mut Vec<u8>, mode: u8, blob: &[u8]) {
    b.extend_from_slice(&25u16.to_le_bytes());
    b.push(0);
    b.push(mode);
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&((HEADER_LEN + 24) as u16).to_le_bytes());
    b.extend_from_slice(&(blob.len() as u16).to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(blob);
}

fn status_error(command: Command, path: &str, s: u32) -> Error {
    Error::Status {
        command: command.name(),
        path: path.to_string(),
        status: s,
        name: status::name(s),
    }
}

fn file_error(command: Command, path: &str, s: u32) -> Error {
    match s {
        status::ACCESS_DENIED | status::MEDIA_WRITE_PROTECTED => Error::AccessDenied {
            path: path.to_string(),
            status: status::name(s),
        },
        status::DISK_FULL | status::QUOTA_EXCEEDED => Error::DiskFull {
            path: path.to_string(),
        },
        status::OBJECT_NAME_COLLISION => Error::Exists {
            path: path.to_string(),
        },
        _ => status_error(command, path, s),
    }
}

/// How to open a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// A new file, read/write; fails if it exists.
    NewFile,
    /// An existing file for reading.
    ReadFile,
    /// An existing file or directory for attributes and deletion.
    Existing,
    /// A new directory; fails if it exists.
    NewDir,
    /// An existing directory for listing.
    Dir,
    /// The share's root, for free space.
    Root,
}

impl Open {
    /// (desired access, disposition, options, attributes)
    fn fields(self) -> (u32, u32, u32, u32) {
        const READ: u32 = 0x0012_0089; // FILE_GENERIC_READ
        const WRITE: u32 = 0x0012_0116; // FILE_GENERIC_WRITE
        const DELETE: u32 = 0x0001_0000;
        const READ_ATTRS: u32 = 0x80 | 0x0010_0000;
        const NON_DIR: u32 = 0x40;
        const DIR: u32 = 0x1;
        match self {
            Open::NewFile => (READ | WRITE | DELETE, 2, NON_DIR, 0x80),
            Open::ReadFile => (READ, 1, NON_DIR, 0),
            Open::Existing => (READ_ATTRS | DELETE, 1, 0, 0),
            Open::NewDir => (READ | DELETE | 0x6, 2, DIR, 0x10),
            Open::Dir => (READ | DELETE, 1, DIR, 0),
            Open::Root => (READ_ATTRS, 1, DIR, 0),
        }
    }
}
