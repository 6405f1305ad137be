//! A tiny HTTP/1.1 server for `GET /metrics`: one thread, one connection at a
//! time, bounded request size and time, `Connection: close`. Enough for a
//! Prometheus scrape every few seconds without pulling in an async stack.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::metrics::CONTENT_TYPE;

/// Largest request head we read; a scrape request is a few hundred bytes.
pub const MAX_REQUEST_BYTES: usize = 8 * 1024;
const IO_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error(
        "cannot listen on '{addr}': {source}; pick a free port or address (e.g. 127.0.0.1:9109)"
    )]
    Bind {
        addr: String,
        source: std::io::Error,
    },
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
    let listener = TcpListener::bind(addr).map_err(|source| HttpError::Bind {
        addr: addr.to_string(),
        source,
    })?;
    let local = listener.local_addr().map_err(|source| HttpError::Bind {
        addr: addr.to_string(),
        source,
    })?;
    std::thread::Builder::new()
        .name("metrics-http".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                // A client that misbehaves only loses its own answer.
                let _ = handle(stream, &page);
            }
        })
        .map_err(|source| HttpError::Bind {
            addr: addr.to_string(),
            source,
        })?;
    Ok(local)
}

/// What to answer a request head with: status line and whether to send the page.
pub fn route(head: &str) -> (&'static str, bool) {
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", true),
        ("GET" | "HEAD", _) => ("404 Not Found", false),
        _ => ("405 Method Not Allowed", false),
    }
}

fn handle(mut stream: TcpStream, page: &Page) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut buf = vec![0u8; MAX_REQUEST_BYTES];
    let mut len = 0;
    let complete = loop {
        if len == buf.len() {
            break false;
        }
        let n = stream.read(&mut buf[len..])?;
        if n == 0 {
            break false;
        }
        len += n;
        if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
            break true;
        }
    };
    let head = String::from_utf8_lossy(&buf[..len]);
    let (status, body, content_type) = if !complete {
        (
            "431 Request Header Fields Too Large",
            String::new(),
            "text/plain",
        )
    } else {
        let (status, send) = route(&head);
        let body = if send {
            page.lock().unwrap_or_else(|p| p.into_inner()).clone()
        } else {
            format!("{status}: nastune serves GET /metrics\n")
        };
        (status, body, if send { CONTENT_TYPE } else { "text/plain" })
    };
    let head_only = head.starts_with("HEAD ");
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if !head_only {
        response.push_str(&body);
    }
    stream.write_all(response.as_bytes())?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_port_is_loopback() {
        assert_eq!(listen_addr("9109"), "127.0.0.1:9109");
        assert_eq!(listen_addr("[::1]:9109"), "[::1]:9109");
    }

    #[test]
    fn routes() {
        assert_eq!(
            route("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            ("200 OK", true)
        );
        assert_eq!(route("GET /metrics?x=1 HTTP/1.1\r\n\r\n"), ("200 OK", true));
        assert_eq!(route("GET / HTTP/1.1\r\n\r\n").0, "404 Not Found");
        assert_eq!(
            route("POST /metrics HTTP/1.1\r\n\r\n").0,
            "405 Method Not Allowed"
        );
        assert_eq!(route("").0, "405 Method Not Allowed");
    }

    #[test]
    fn serves_and_bounds_requests() {
        let page: Page = Arc::new(Mutex::new("x 1\n".into()));
        let addr = serve("127.0.0.1:0", page).unwrap();
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n")
            .unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).unwrap();
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.ends_with("\r\n\r\nx 1\n"), "{r}");
        let mut s = TcpStream::connect(addr).unwrap();
        let _ = s.write_all(&vec![b'a'; MAX_REQUEST_BYTES + 10]);
        let mut r = String::new();
        let _ = s.read_to_string(&mut r);
        assert!(r.starts_with("HTTP/1.1 431"), "{r}");
    }
}
