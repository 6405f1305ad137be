//! An incremental HTTP/1.1 response parser for the load generator: status line,
//! the headers that frame the body (Content-Length, Transfer-Encoding: chunked,
//! Connection), chunked bodies with trailers, and bodies read until close.
//!
//! Bytes arrive in any split. Only the head (and a chunk-size line) is copied,
//! into a buffer allocated once per connection and bounded by `MAX_HEAD_BYTES`;
//! bodies are counted and skipped. A hostile server gets a typed error, never a
//! panic, an unbounded buffer or a wait for bytes that cannot come.

/// Largest response head (status line plus headers) accepted; nginx's own
/// default for request heads is 8 KiB (`large_client_header_buffers 4 8k`).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Largest chunk-size line (size, extensions, CRLF).
const MAX_CHUNK_LINE_BYTES: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("response head longer than {MAX_HEAD_BYTES} bytes; is this an HTTP server?")]
    HeadTooLarge,
    #[error("malformed status line '{0}': expected 'HTTP/1.x NNN reason'")]
    BadStatusLine(String),
    #[error("malformed header line '{0}'")]
    BadHeader(String),
    #[error("invalid Content-Length '{0}'")]
    BadContentLength(String),
    #[error("invalid chunk size line '{0}'")]
    BadChunkSize(String),
    #[error("chunk size line longer than {MAX_CHUNK_LINE_BYTES} bytes")]
    ChunkLineTooLong,
    #[error("chunk data not followed by CRLF")]
    BadChunkEnd,
    #[error("unsupported Transfer-Encoding '{0}': only chunked is understood")]
    UnsupportedEncoding(String),
    #[error("the server closed the connection in the middle of a response")]
    UnexpectedEof,
}

/// A finished response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The server allows another request on this connection.
    pub keep_alive: bool,
    pub body_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkCr,
    ChunkLf,
    Trailers,
    UntilClose,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Body(Body),
}

#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    head: Vec<u8>,
    head_request: bool,
    status: u16,
    keep_alive: bool,
    body_bytes: u64,
}

/// What one `feed` call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// All input consumed; the response is not finished.
    NeedMore,
    /// A response ended after `consumed` bytes of the input.
    Done { consumed: usize, response: Response },
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    pub fn new() -> Self {
        ResponseParser {
            state: State::Head,
            head: Vec::with_capacity(1024),
            head_request: false,
            status: 0,
            keep_alive: true,
            body_bytes: 0,
        }
    }

    /// Prepares for the response to the next request; `head_request` when it
    /// was a HEAD, whose response has no body whatever its headers say.
    pub fn start(&mut self, head_request: bool) {
        self.state = State::Head;
        self.head.clear();
        self.head_request = head_request;
        self.status = 0;
        self.keep_alive = true;
        self.body_bytes = 0;
    }

    /// Whether any byte of the current response has been seen.
    pub fn started(&self) -> bool {
        !self.head.is_empty() || self.state != State::Head
    }

    /// Consumes bytes of the response. Bytes after a finished response are
    /// left unconsumed (a pipelining server, or garbage).
    pub fn feed(&mut self, input: &[u8]) -> Result<Progress, ParseError> {
        let mut pos = 0;
        loop {
            match self.state {
                State::Head => {
                    let Some(used) = self.take_head(&input[pos..])? else {
                        return Ok(Progress::NeedMore);
                    };
                    pos += used;
                    self.parse_head()?;
                    if self.status >= 100 && self.status < 200 && self.status != 101 {
                        // Interim response (100 Continue, 103 Early Hints): the real one follows.
                        self.start(self.head_request);
                        continue;
                    }
                }
                State::Body(body) => {
                    let rest = &input[pos..];
                    match body {
                        Body::Length(0) => return Ok(self.done(pos)),
                        Body::Length(n) | Body::ChunkData(n) => {
                            if rest.is_empty() {
                                return Ok(Progress::NeedMore);
                            }
                            let take = (rest.len() as u64).min(n);
                            pos += take as usize;
                            self.body_bytes += take;
                            let left = n - take;
                            self.state = State::Body(match body {
                                Body::Length(_) => Body::Length(left),
                                _ if left == 0 => Body::ChunkCr,
                                _ => Body::ChunkData(left),
                            });
                        }
                        Body::ChunkCr | Body::ChunkLf => {
                            let Some(&b) = rest.first() else {
                                return Ok(Progress::NeedMore);
                            };
                            pos += 1;
                            self.state = match (body, b) {
                                (Body::ChunkCr, b'\r') => State::Body(Body::ChunkLf),
                                (_, b'\n') => State::Body(Body::ChunkSize),
                                _ => return Err(ParseError::BadChunkEnd),
                            };
                        }
                        Body::ChunkSize => {
                            let Some(used) = self.take_line(rest, MAX_CHUNK_LINE_BYTES)? else {
                                return Ok(Progress::NeedMore);
                            };
                            pos += used;
                            let size = parse_chunk_size(&self.head)?;
                            self.head.clear();
                            self.state = State::Body(if size == 0 {
                                Body::Trailers
                            } else {
                                Body::ChunkData(size)
                            });
                        }
                        Body::Trailers => {
                            let Some(used) = self.take_line(rest, MAX_HEAD_BYTES)? else {
                                return Ok(Progress::NeedMore);
                            };
                            pos += used;
                            let empty = self.head.trim_ascii().is_empty();
                            self.head.clear();
                            if empty {
                                return Ok(self.done(pos));
                            }
                        }
                        Body::UntilClose => {
                            self.body_bytes += rest.len() as u64;
                            return Ok(Progress::NeedMore);
                        }
                    }
                }
            }
        }
    }

    /// The connection closed: the end of a body read until close, or an error.
    pub fn eof(&mut self) -> Result<Response, ParseError> {
        match self.state {
            State::Body(Body::UntilClose) | State::Body(Body::Length(0)) => {
                let r = self.response();
                self.start(self.head_request);
                Ok(r)
            }
            _ => Err(ParseError::UnexpectedEof),
        }
    }

    fn response(&self) -> Response {
        Response {
            status: self.status,
            keep_alive: self.keep_alive && self.state != State::Body(Body::UntilClose),
            body_bytes: self.body_bytes,
        }
    }

    fn done(&mut self, consumed: usize) -> Progress {
        let response = self.response();
        self.start(self.head_request);
        Progress::Done { consumed, response }
    }

    /// Appends input up to the end of the head (CRLF CRLF, or LF LF); returns
    /// the bytes used once the head is complete. Only head bytes are copied.
    fn take_head(&mut self, input: &[u8]) -> Result<Option<usize>, ParseError> {
        let old = self.head.len();
        let avail = &input[..input.len().min(MAX_HEAD_BYTES - old)];
        let used = if old == 0 {
            // The common case: the whole head in one read.
            find_head_end(avail)
        } else {
            // Search the new bytes plus the three before them, for a split terminator.
            let from = old.saturating_sub(3);
            self.head.extend_from_slice(avail);
            let end = find_head_end(&self.head[from..]).map(|e| (from + e).saturating_sub(old));
            self.head.truncate(old);
            end
        };
        if let Some(n) = used {
            self.head.extend_from_slice(&avail[..n]);
            return Ok(Some(n));
        }
        self.head.extend_from_slice(avail);
        if self.head.len() >= MAX_HEAD_BYTES {
            return Err(ParseError::HeadTooLarge);
        }
        Ok(None)
    }

    /// Appends input up to and including one LF; returns the bytes used once
    /// the line is complete (the line, without its LF, is in `self.head`).
    fn take_line(&mut self, input: &[u8], limit: usize) -> Result<Option<usize>, ParseError> {
        match input.iter().position(|&b| b == b'\n') {
            Some(i) if self.head.len() + i <= limit => {
                self.head.extend_from_slice(&input[..i]);
                Ok(Some(i + 1))
            }
            None if self.head.len() + input.len() <= limit => {
                self.head.extend_from_slice(input);
                Ok(None)
            }
            _ if limit == MAX_CHUNK_LINE_BYTES => Err(ParseError::ChunkLineTooLong),
            _ => Err(ParseError::HeadTooLarge),
        }
    }

    fn parse_head(&mut self) -> Result<(), ParseError> {
        let mut lines = self.head.split(|&b| b == b'\n').map(|l| l.trim_ascii_end());
        let status_line = lines.next().unwrap_or_default();
        let (http10, status) = parse_status_line(status_line)?;
        let mut keep_alive = !http10;
        let mut length: Option<u64> = None;
        let mut chunked = false;
        for line in lines {
            if line.is_empty() {
                continue;
            }
            let colon = line
                .iter()
                .position(|&b| b == b':')
                .filter(|&i| i > 0 && !line[..i].iter().any(u8::is_ascii_whitespace))
                .ok_or_else(|| ParseError::BadHeader(lossy(line)))?;
            let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
            if name.eq_ignore_ascii_case(b"content-length") {
                let n = parse_decimal(value)
                    .ok_or_else(|| ParseError::BadContentLength(lossy(value)))?;
                if length.is_some_and(|l| l != n) {
                    return Err(ParseError::BadContentLength(lossy(value)));
                }
                length = Some(n);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                let last = value.rsplit(|&b| b == b',').next().unwrap_or_default();
                if last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                    chunked = true;
                } else if !value.eq_ignore_ascii_case(b"identity") {
                    return Err(ParseError::UnsupportedEncoding(lossy(value)));
                }
            } else if name.eq_ignore_ascii_case(b"connection") {
                for token in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                    if token.eq_ignore_ascii_case(b"close") {
                        keep_alive = false;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        keep_alive = true;
                    }
                }
            }
        }
        self.status = status;
        self.keep_alive = keep_alive;
        self.head.clear();
        let no_body = self.head_request || status == 204 || status == 304 || status < 200;
        self.state = State::Body(if no_body {
            Body::Length(0)
        } else if chunked {
            // RFC 9112 6.3: chunked wins over Content-Length.
            Body::ChunkSize
        } else if let Some(n) = length {
            Body::Length(n)
        } else {
            Body::UntilClose
        });
        Ok(())
    }
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'\n', buf).find_map(|i| match &buf[i + 1..] {
        [b'\n', ..] => Some(i + 2),
        [b'\r', b'\n', ..] => Some(i + 3),
        _ => None,
    })
}

fn lossy(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(80)]);
    s.escape_debug().to_string()
}

/// `HTTP/1.1 200 OK` -> (is HTTP/1.0, 200).
fn parse_status_line(line: &[u8]) -> Result<(bool, u16), ParseError> {
    let bad = || ParseError::BadStatusLine(lossy(line));
    let rest = line.strip_prefix(b"HTTP/1.").ok_or_else(bad)?;
    let (minor, rest) = rest.split_first().ok_or_else(bad)?;
    if !matches!(minor, b'0' | b'1') || rest.first() != Some(&b' ') {
        return Err(bad());
    }
    let code = rest.get(1..4).ok_or_else(bad)?;
    if !code.iter().all(u8::is_ascii_digit) || rest.get(4).is_some_and(|&b| b != b' ') {
        return Err(bad());
    }
    let status = code
        .iter()
        .fold(0u16, |acc, d| acc * 10 + u16::from(d - b'0'));
    if status < 100 {
        return Err(bad());
    }
    Ok((*minor == b'0', status))
}

fn parse_decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |acc, d| acc * 10 + u64::from(d - b'0')))
}

fn parse_chunk_size(line: &[u8]) -> Result<u64, ParseError> {
    let line = line.trim_ascii_end();
    let hex = line
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    if hex.is_empty() || hex.len() > 15 {
        return Err(ParseError::BadChunkSize(lossy(line)));
    }
    let mut n = 0u64;
    for &d in hex {
        let v = (d as char)
            .to_digit(16)
            .ok_or_else(|| ParseError::BadChunkSize(lossy(line)))?;
        n = n * 16 + u64::from(v);
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` split at `cut`; returns the response and bytes consumed in total.
    fn parse_split(bytes: &[u8], cut: usize) -> Result<(Response, usize), ParseError> {
        let mut p = ResponseParser::new();
        p.start(false);
        let mut used = 0;
        for part in [&bytes[..cut], &bytes[cut..]] {
            match p.feed(part)? {
                Progress::Done { consumed, response } => return Ok((response, used + consumed)),
                Progress::NeedMore => used += part.len(),
            }
        }
        p.eof().map(|r| (r, used))
    }

    fn every_split(bytes: &[u8]) -> Response {
        let (first, n) = parse_split(bytes, 0).unwrap();
        for cut in 0..=bytes.len() {
            let (r, used) = parse_split(bytes, cut).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            assert_eq!((r, used), (first, n), "cut at {cut}");
        }
        first
    }

    #[test]
    fn content_length_response_at_every_split() {
        let raw = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\n\r\nhello";
        let r = every_split(raw);
        assert_eq!(r.status, 200);
        assert!(r.keep_alive);
        assert_eq!(r.body_bytes, 5);
    }

    #[test]
    fn chunked_with_extensions_and_trailers_at_every_split() {
        let raw =
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n\
4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: a\r\n\r\n";
        let r = every_split(raw);
        assert_eq!(r.status, 404);
        assert_eq!(r.body_bytes, 4 + 5 + 14);
        assert!(r.keep_alive);
    }

    #[test]
    fn body_until_close_and_http10_defaults() {
        let raw = b"HTTP/1.0 200 OK\r\n\r\nall of it";
        let r = every_split(raw);
        assert_eq!((r.status, r.body_bytes, r.keep_alive), (200, 9, false));
        let r = every_split(b"HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n");
        assert!(r.keep_alive);
        let r = every_split(
            b"HTTP/1.1 200 OK\r\nConnection: Upgrade, close\r\nContent-Length: 0\r\n\r\n",
        );
        assert!(!r.keep_alive);
    }

    #[test]
    fn pipelined_responses_leave_the_rest_unconsumed() {
        let one = b"HTTP/1.1 301 Moved\r\nContent-Length: 2\r\n\r\nab";
        let mut raw = one.to_vec();
        raw.extend_from_slice(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n");
        let mut p = ResponseParser::new();
        let Progress::Done { consumed, response } = p.feed(&raw).unwrap() else {
            panic!("first response not done")
        };
        assert_eq!((consumed, response.status), (one.len(), 301));
        let Progress::Done { response, .. } = p.feed(&raw[consumed..]).unwrap() else {
            panic!("second response not done")
        };
        assert_eq!(response.status, 503);
    }

    #[test]
    fn interim_and_head_responses_have_no_body() {
        let r = every_split(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx",
        );
        assert_eq!((r.status, r.body_bytes), (201, 1));
        let mut p = ResponseParser::new();
        p.start(true);
        let got = p
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
            .unwrap();
        assert!(matches!(got, Progress::Done { response, .. } if response.body_bytes == 0));
    }

    #[test]
    fn malformed_responses_are_typed_errors() {
        type Check = fn(&ParseError) -> bool;
        let cases: [(&[u8], Check); 9] = [
            (b"SSH-2.0-OpenSSH\r\n\r\n", |e| {
                matches!(e, ParseError::BadStatusLine(_))
            }),
            (b"HTTP/2 200 OK\r\n\r\n", |e| {
                matches!(e, ParseError::BadStatusLine(_))
            }),
            (b"HTTP/1.1 2x0 OK\r\n\r\n", |e| {
                matches!(e, ParseError::BadStatusLine(_))
            }),
            (b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", |e| {
                matches!(e, ParseError::BadHeader(_))
            }),
            (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", |e| {
                matches!(e, ParseError::BadContentLength(_))
            }),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                |e| matches!(e, ParseError::BadContentLength(_)),
            ),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", |e| {
                matches!(e, ParseError::UnsupportedEncoding(_))
            }),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                |e| matches!(e, ParseError::BadChunkSize(_)),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc",
                |e| matches!(e, ParseError::BadChunkEnd),
            ),
        ];
        for (raw, check) in cases {
            let mut p = ResponseParser::new();
            let err = p.feed(raw).expect_err(&String::from_utf8_lossy(raw));
            assert!(check(&err), "{raw:?} gave {err:?}");
        }
        let err = ParseError::BadStatusLine(lossy(b"SSH-2.0"));
        assert!(err.to_string().contains("'SSH-2.0'"));
    }

    #[test]
    fn endless_heads_and_chunk_lines_are_bounded() {
        let mut p = ResponseParser::new();
        let junk = vec![b'a'; 4096];
        let mut result = Ok(Progress::NeedMore);
        for _ in 0..10 {
            result = p.feed(&junk);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result, Err(ParseError::HeadTooLarge));
        assert!(p.head.capacity() <= 2 * MAX_HEAD_BYTES);
        let mut p = ResponseParser::new();
        p.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap();
        assert_eq!(p.feed(&[b'1'; 2000]), Err(ParseError::ChunkLineTooLong));
    }

    #[test]
    fn eof_in_the_middle_is_an_error() {
        let mut p = ResponseParser::new();
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
            .unwrap();
        assert_eq!(p.eof(), Err(ParseError::UnexpectedEof));
        let mut p = ResponseParser::new();
        assert!(!p.started());
        p.feed(b"HTT").unwrap();
        assert!(p.started());
        assert_eq!(p.eof(), Err(ParseError::UnexpectedEof));
    }
}
