//! A tiny HTTP/1.1 server for `GET /metrics`: one thread, one `poll(2)` loop
//! over up to [`MAX_CONNECTIONS`] non-blocking connections, bounded request
//! size, one deadline per request, `Connection: close`. Enough for a
//! Prometheus scrape every few seconds without pulling in an async stack.
//!
//! Serving one connection at a time with a read timeout let one idle client
//! hold every scrape behind it for the whole timeout (5 s each, 30 idle
//! clients past 90 s against Prometheus' default 10 s scrape timeout). Here a
//! scrape is read and answered as soon as its bytes arrive, whatever the other
//! connections do: idle and dripping clients wait in the table until their
//! [`REQUEST_DEADLINE`], and when the table is full a new connection evicts the
//! oldest, so a flood of connections cannot keep a fresh scrape out either.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::metrics::CONTENT_TYPE;

/// Largest request head we read; a scrape request is a few hundred bytes.
pub const MAX_REQUEST_BYTES: usize = 8 * 1024;
/// Connections served at once. Each holds at most one request head
/// (8 KiB) and one copy of the page, so 64 stay within a few MiB.
pub const MAX_CONNECTIONS: usize = 64;
/// From accept to the last byte of the answer. A scrape on a LAN needs a few
/// milliseconds; 2 s leaves room for a slow link and is well inside
/// Prometheus' default scrape timeout of 10 s.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// Connections accepted per turn of the loop before the others are served
/// again, so a burst of connects cannot starve requests already readable.
const ACCEPTS_PER_TURN: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error(
        "cannot listen on '{addr}': {cause}; pick a free port or address (e.g. 127.0.0.1:9109)"
    )]
    Bind { addr: String, cause: std::io::Error },
}

/// The page being served; the watch loop replaces it after every sample.
pub type Page = Arc<Mutex<String>>;

/// A bare port means loopback: metrics stay on the box unless an address
/// says otherwise.
pub fn listen_addr(addr: &str) -> String {
    if addr.bytes().all(|b| b.is_ascii_digit()) {
        format!("127.0.0.1:{addr}")
    } else {
        addr.to_string()
    }
}

/// Binds now (so a bad address fails before the first sample) and serves in a
/// background thread. Returns the bound address (port 0 picks one).
pub fn serve(addr: &str, page: Page) -> Result<SocketAddr, HttpError> {
    let addr = listen_addr(addr);
    let addr = addr.as_str();
    let bind_error = |source| HttpError::Bind {
        addr: addr.to_string(),
        cause: source,
    };
    let listener = TcpListener::bind(addr).map_err(bind_error)?;
    let local = listener.local_addr().map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    std::thread::Builder::new()
        .name("metrics-http".into())
        .stack_size(64 * 1024)
        .spawn(move || Server::new(listener, page).run())
        .map_err(bind_error)?;
    Ok(local)
}

/// A request head that is not HTTP/1.x as RFC 9112 writes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadRequest {
    #[error("malformed request line '{0}'")]
    RequestLine(String),
    #[error("malformed header line '{0}'")]
    HeaderLine(String),
}

/// What a complete request head asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    pub method: &'a str,
    pub target: &'a str,
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Parses a request head (up to, not including, its empty line). Lines end in
/// CRLF or a bare LF (RFC 9112 section 2.2 lets a server accept both).
pub fn parse_request(head: &str) -> Result<Request<'_>, BadRequest> {
    let mut lines = head.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let first = lines.next().unwrap_or("");
    let bad_line = || BadRequest::RequestLine(first.escape_debug().to_string());
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad_line());
    };
    let version_ok = version
        .strip_prefix("HTTP/1.")
        .is_some_and(|minor| minor.len() == 1 && minor.as_bytes()[0].is_ascii_digit());
    if !is_token(method)
        || target.is_empty()
        || !target.bytes().all(|b| b.is_ascii_graphic())
        || !version_ok
    {
        return Err(bad_line());
    }
    for line in lines.filter(|l| !l.is_empty()) {
        // A name, then a colon with no space before it; folded lines (leading
        // whitespace) are obsolete and refused (RFC 9112 section 5.2).
        let named = line.split_once(':').is_some_and(|(name, _)| is_token(name));
        if !named {
            return Err(BadRequest::HeaderLine(line.escape_debug().to_string()));
        }
    }
    Ok(Request { method, target })
}

/// What to answer a request with: status line and whether to send the page.
pub fn route(request: &Request<'_>) -> (&'static str, bool) {
    let path = request.target.split('?').next().unwrap_or("");
    match (request.method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", true),
        ("GET" | "HEAD", _) => ("404 Not Found", false),
        _ => ("405 Method Not Allowed", false),
    }
}

/// Where the head ends: the length of the head and of its terminator, at the
/// first empty line (CRLF CRLF, or bare LFs).
fn head_end(buf: &[u8]) -> Option<(usize, usize)> {
    let at = memchr::memchr_iter(b'\n', buf)
        .find(|&i| buf[i + 1..].starts_with(b"\n") || buf[i + 1..].starts_with(b"\r\n"))?;
    let terminator = if buf[at + 1] == b'\n' { 1 } else { 2 };
    Some((at + 1, terminator))
}

/// The whole answer to what `buf` holds so far, or `None` when more may come.
/// `full` says the buffer cannot take more bytes; `eof` that none will come.
pub fn respond(buf: &[u8], full: bool, eof: bool, page: &Page) -> Option<Vec<u8>> {
    let (status, body, content_type, head_only) = match head_end(buf) {
        Some((len, _)) => {
            let head = String::from_utf8_lossy(&buf[..len]);
            match parse_request(head.trim_end()) {
                Ok(request) => {
                    let (status, send) = route(&request);
                    let body = if send {
                        page.lock().unwrap_or_else(|p| p.into_inner()).clone()
                    } else {
                        format!("{status}: nastune serves GET /metrics\n")
                    };
                    let content_type = if send { CONTENT_TYPE } else { "text/plain" };
                    (status, body, content_type, request.method == "HEAD")
                }
                Err(e) => ("400 Bad Request", format!("{e}\n"), "text/plain", false),
            }
        }
        None if full => {
            let status = if buf.contains(&b'\n') {
                "431 Request Header Fields Too Large"
            } else {
                "414 URI Too Long"
            };
            let body =
                format!("{status}: a request head holds at most {MAX_REQUEST_BYTES} bytes\n");
            (status, body, "text/plain", false)
        }
        // The peer closed mid-head: nobody reads an answer.
        None if eof => return Some(Vec::new()),
        None => return None,
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(body.as_bytes());
    }
    Some(out)
}

enum Stage {
    /// Reading the request head into `buf`.
    Reading,
    /// Writing the answer from `written` on.
    Writing { out: Vec<u8>, written: usize },
    /// Answer sent and our side shut: reading until the peer closes, so that
    /// unread request bytes do not turn our close into a reset that could
    /// destroy the answer (a 431 after an oversized head, for one).
    Draining,
}

struct Conn {
    stream: TcpStream,
    accepted: Instant,
    buf: Vec<u8>,
    stage: Stage,
    /// Closed this turn; removed at its end.
    done: bool,
}

/// What a turn did with one connection.
enum Next {
    Keep,
    Close,
}

struct Server {
    listener: TcpListener,
    page: Page,
    conns: Vec<Conn>,
    fds: Vec<libc::pollfd>,
}

impl Server {
    fn new(listener: TcpListener, page: Page) -> Server {
        Server {
            listener,
            page,
            conns: Vec::with_capacity(MAX_CONNECTIONS),
            fds: Vec::with_capacity(MAX_CONNECTIONS + 1),
        }
    }

    fn run(mut self) {
        loop {
            let now = Instant::now();
            // Evicts every connection whose request is past its deadline.
            self.conns
                .retain(|c| now.duration_since(c.accepted) < REQUEST_DEADLINE);
            let wait = self
                .conns
                .iter()
                .map(|c| (c.accepted + REQUEST_DEADLINE).saturating_duration_since(now))
                .min()
                .unwrap_or(REQUEST_DEADLINE);
            self.fds.clear();
            self.fds
                .push(pollfd(self.listener.as_raw_fd(), libc::POLLIN));
            for c in &self.conns {
                let events = match c.stage {
                    Stage::Writing { .. } => libc::POLLOUT,
                    Stage::Reading | Stage::Draining => libc::POLLIN,
                };
                self.fds.push(pollfd(c.stream.as_raw_fd(), events));
            }
            let ms = wait.as_millis().clamp(1, 1000) as libc::c_int;
            // SAFETY: `fds` is a live, initialised array of `len` pollfd values.
            let n =
                unsafe { libc::poll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, ms) };
            if n <= 0 {
                // Timeout or EINTR: the deadlines above run on the next turn.
                continue;
            }
            // Serve the ready connections first, then take new ones.
            for i in 0..self.conns.len() {
                if self.fds[i + 1].revents != 0 && matches!(self.turn(i), Next::Close) {
                    self.conns[i].done = true;
                }
            }
            self.conns.retain(|c| !c.done);
            if self.fds[0].revents != 0 {
                self.accept();
            }
        }
    }

    fn accept(&mut self) {
        for _ in 0..ACCEPTS_PER_TURN {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                // WouldBlock: all taken; EMFILE and friends: the next turn tries again.
                Err(_) => return,
            };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            if self.conns.len() >= MAX_CONNECTIONS {
                // The oldest has had the longest to send its request; a real
                // scrape sends it with the connect and is answered at once.
                if let Some(oldest) = (0..self.conns.len()).min_by_key(|&i| self.conns[i].accepted)
                {
                    self.conns.swap_remove(oldest);
                }
            }
            self.conns.push(Conn {
                stream,
                accepted: Instant::now(),
                buf: Vec::new(),
                stage: Stage::Reading,
                done: false,
            });
            // The request usually came with the connect: answer it now.
            let last = self.conns.len() - 1;
            if matches!(self.turn(last), Next::Close) {
                self.conns.pop();
            }
        }
    }

    /// Reads, answers or drains connection `i` as far as it goes without waiting.
    fn turn(&mut self, i: usize) -> Next {
        let page = &self.page;
        let c = &mut self.conns[i];
        loop {
            match &mut c.stage {
                Stage::Reading => {
                    let mut chunk = [0u8; 1024];
                    let room = MAX_REQUEST_BYTES - c.buf.len();
                    let (n, eof) = match c.stream.read(&mut chunk[..room.min(1024)]) {
                        Ok(0) => (0, true),
                        Ok(n) => (n, false),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Next::Keep,
                        Err(_) => return Next::Close,
                    };
                    c.buf.extend_from_slice(&chunk[..n]);
                    let full = c.buf.len() >= MAX_REQUEST_BYTES;
                    match respond(&c.buf, full, eof, page) {
                        Some(out) if out.is_empty() => return Next::Close,
                        Some(out) => {
                            c.buf = Vec::new();
                            c.stage = Stage::Writing { out, written: 0 }
                        }
                        None => {}
                    }
                }
                Stage::Writing { out, written } => {
                    match c.stream.write(&out[*written..]) {
                        Ok(n) => *written += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Next::Keep,
                        Err(_) => return Next::Close,
                    }
                    if *written == out.len() {
                        let _ = c.stream.shutdown(Shutdown::Write);
                        c.stage = Stage::Draining;
                    }
                }
                Stage::Draining => {
                    let mut sink = [0u8; 1024];
                    match c.stream.read(&mut sink) {
                        Ok(0) => return Next::Close,
                        Ok(_) => {}
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Next::Keep,
                        Err(_) => return Next::Close,
                    }
                }
            }
        }
    }
}

fn pollfd(fd: libc::c_int, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_port_is_loopback() {
        assert_eq!(listen_addr("9109"), "127.0.0.1:9109");
        assert_eq!(listen_addr("[::1]:9109"), "[::1]:9109");
    }

    fn route_of(head: &str) -> (&'static str, bool) {
        route(&parse_request(head).unwrap())
    }

    #[test]
    fn routes() {
        assert_eq!(
            route_of("GET /metrics HTTP/1.1\r\nHost: x"),
            ("200 OK", true)
        );
        assert_eq!(route_of("GET /metrics?x=1 HTTP/1.1"), ("200 OK", true));
        assert_eq!(
            route_of("HEAD /metrics HTTP/1.0\nHost: x"),
            ("200 OK", true)
        );
        assert_eq!(route_of("GET / HTTP/1.1").0, "404 Not Found");
        assert_eq!(
            route_of("POST /metrics HTTP/1.1").0,
            "405 Method Not Allowed"
        );
    }

    #[test]
    fn malformed_heads_are_named() {
        for head in [
            "",
            "GET /metrics",
            "GET  /metrics HTTP/1.1",
            "GET /metrics HTTP/2.0",
            "GET /metrics HTTP/1.1 x",
            "G(T /metrics HTTP/1.1",
            "\u{1}\u{2} x HTTP/1.1",
        ] {
            let want = BadRequest::RequestLine(head.escape_debug().to_string());
            assert_eq!(parse_request(head), Err(want), "{head:?}");
        }
        assert_eq!(
            parse_request("\u{1} x HTTP/1.1").unwrap_err().to_string(),
            "malformed request line '\\u{1} x HTTP/1.1'"
        );
        for (head, line) in [
            ("GET /metrics HTTP/1.1\r\nno colon", "no colon"),
            ("GET /metrics HTTP/1.1\r\nHost : x", "Host : x"),
            ("GET /metrics HTTP/1.1\r\nA: b\r\n folded", " folded"),
        ] {
            let want = BadRequest::HeaderLine(line.into());
            assert_eq!(parse_request(head), Err(want), "{head:?}");
        }
    }

    #[test]
    fn answers_by_what_the_buffer_holds() {
        let page: Page = Arc::new(Mutex::new("x 1\n".into()));
        let text = |b: &[u8], full, eof| {
            respond(b, full, eof, &page).map(|o| String::from_utf8(o).unwrap())
        };
        assert_eq!(
            text(b"GET /metrics HTTP/1.1\r\nHost: a\r\n", false, false),
            None
        );
        let ok = text(b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n", false, false).unwrap();
        assert!(
            ok.starts_with("HTTP/1.1 200 OK\r\n") && ok.ends_with("\r\n\r\nx 1\n"),
            "{ok}"
        );
        let lf = text(b"GET /metrics HTTP/1.1\nHost: a\n\n", false, false).unwrap();
        assert!(lf.starts_with("HTTP/1.1 200 OK\r\n"), "{lf}");
        let head = text(b"HEAD /metrics HTTP/1.1\r\n\r\n", false, false).unwrap();
        assert!(
            head.ends_with("Content-Length: 4\r\nConnection: close\r\n\r\n"),
            "{head}"
        );
        let bad = text(b"hello\r\n\r\n", false, false).unwrap();
        assert!(bad.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{bad}");
        assert!(bad.ends_with("malformed request line 'hello'\n"), "{bad}");
        let long = text(b"GET /aaaa", true, false).unwrap();
        assert!(long.starts_with("HTTP/1.1 414 "), "{long}");
        let big = text(b"GET / HTTP/1.1\r\nA: aaaa", true, false).unwrap();
        assert!(big.starts_with("HTTP/1.1 431 "), "{big}");
        assert_eq!(text(b"GET / HT", false, true), Some(String::new()));
    }

    fn get(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.write_all(request);
        let mut r = Vec::new();
        let _ = s.read_to_end(&mut r);
        String::from_utf8_lossy(&r).into_owned()
    }

    #[test]
    fn serves_and_bounds_requests() {
        let page: Page = Arc::new(Mutex::new("x 1\n".into()));
        let addr = serve("127.0.0.1:0", page).unwrap();
        let r = get(addr, b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.ends_with("\r\n\r\nx 1\n"), "{r}");
        // The answer arrives whole although most of the head was never read.
        let mut huge = b"GET /metrics HTTP/1.1\r\n".to_vec();
        huge.extend(std::iter::repeat_n(b"X-A: b\r\n", 4 * MAX_REQUEST_BYTES).flatten());
        let r = get(addr, &huge);
        assert!(r.starts_with("HTTP/1.1 431"), "{r}");
        assert!(get(addr, &[b'a'; 2 * MAX_REQUEST_BYTES]).starts_with("HTTP/1.1 414"));
        assert!(get(addr, b"\x16\x03\x01\x02\x00\r\n\r\n").starts_with("HTTP/1.1 400"));
    }

    fn scrape_at_once(addr: SocketAddr) {
        let t = Instant::now();
        let r = get(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
    }

    /// `MAX_CONNECTIONS` idle, dripping and half-sent clients, then a burst of
    /// connections twice the table: a scrape is answered at once all the same,
    /// and the stalled clients are closed at their deadline.
    #[test]
    fn stalled_clients_do_not_delay_a_scrape() {
        let page: Page = Arc::new(Mutex::new("x 1\n".into()));
        let addr = serve("127.0.0.1:0", page).unwrap();
        let mut stalled = Vec::new();
        for i in 0..MAX_CONNECTIONS {
            let mut s = TcpStream::connect(addr).unwrap();
            if i % 2 == 1 {
                s.write_all(b"GET /metrics HTTP/1.1\r\nHo").unwrap();
            }
            stalled.push(s);
        }
        scrape_at_once(addr);
        // A burst: each new connection evicts the oldest.
        let burst: Vec<TcpStream> = (0..2 * MAX_CONNECTIONS)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        scrape_at_once(addr);
        // The burst's survivors are closed by the deadline, with no answer.
        let t = Instant::now();
        for mut s in burst.into_iter().rev().take(8) {
            s.set_read_timeout(Some(REQUEST_DEADLINE * 3)).unwrap();
            let mut b = Vec::new();
            assert_eq!(s.read_to_end(&mut b).ok(), Some(0));
        }
        assert!(
            t.elapsed() < REQUEST_DEADLINE + Duration::from_secs(1),
            "{:?}",
            t.elapsed()
        );
        drop(stalled);
    }
}
