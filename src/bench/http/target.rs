//! What to load: the URL (scheme, host, port, path) and the request bytes,
//! built once and sent unchanged on every request.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("URL '{0}' must start with http:// or https://")]
    Scheme(String),
    #[error("URL '{0}' has no host")]
    NoHost(String),
    #[error("URL '{0}' has an invalid port: use 1-65535")]
    Port(String),
    #[error("URL '{0}' has user info (user@host); put credentials in a header with -H")]
    UserInfo(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Url {
    pub tls: bool,
    /// Host as written, without brackets for IPv6.
    pub host: String,
    pub port: u16,
    /// Path and query, starting with '/'.
    pub path: String,
}

impl Url {
    pub fn parse(s: &str) -> Result<Url, UrlError> {
        let (tls, rest) = if let Some(r) = strip_prefix_ci(s, "https://") {
            (true, r)
        } else if let Some(r) = strip_prefix_ci(s, "http://") {
            (false, r)
        } else {
            return Err(UrlError::Scheme(s.into()));
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        if authority.contains('@') {
            return Err(UrlError::UserInfo(s.into()));
        }
        let path = path.split('#').next().unwrap_or_default();
        let path = match path.chars().next() {
            None => "/".to_string(),
            Some('?') => format!("/{path}"),
            Some(_) => path.to_string(),
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let close = v6.find(']').ok_or_else(|| UrlError::NoHost(s.into()))?;
            let port = v6[close + 1..].strip_prefix(':');
            (&v6[..close], port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(UrlError::NoHost(s.into()));
        }
        let port = match port {
            None => {
                if tls {
                    443
                } else {
                    80
                }
            }
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| UrlError::Port(s.into()))?,
        };
        Ok(Url {
            tls,
            host: host.to_string(),
            port,
            path,
        })
    }

    /// The Host header value: the port only when it is not the scheme's default.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = if self.tls { 443 } else { 80 };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    pub fn display(&self) -> String {
        format!(
            "{}://{}{}",
            if self.tls { "https" } else { "http" },
            self.host_header(),
            self.path
        )
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix))
        .then(|| &s[prefix.len()..])
}

/// Headers whose values are credentials: stored and printed as "(redacted)".
pub fn is_secret_header(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    matches!(
        n.as_str(),
        "authorization" | "proxy-authorization" | "cookie"
    ) || ["token", "secret", "api-key", "apikey", "password"]
        .iter()
        .any(|w| n.contains(w))
}

fn redacted<S: serde::Serializer>(headers: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(headers.iter().map(|(n, v)| {
        (
            n.as_str(),
            if is_secret_header(n) {
                "(redacted)"
            } else {
                v.as_str()
            },
        )
    }))
}

/// The request: method, extra headers and body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestSpec {
    pub method: String,
    /// Credentials never reach the JSON output or the store.
    #[serde(serialize_with = "redacted")]
    pub headers: Vec<(String, String)>,
    pub body_bytes: usize,
    #[serde(skip)]
    pub body: Vec<u8>,
}

/// The bytes of one request. Host, User-Agent and Content-Length are added
/// unless given; `close` adds `Connection: close` (a new connection per request).
pub fn build_request(url: &Url, spec: &RequestSpec, close: bool) -> Vec<u8> {
    let has = |name: &str| {
        spec.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let mut out = format!("{} {} HTTP/1.1\r\n", spec.method, url.path);
    if !has("host") {
        out.push_str(&format!("Host: {}\r\n", url.host_header()));
    }
    if !has("user-agent") {
        out.push_str(concat!(
            "User-Agent: nastune/",
            env!("CARGO_PKG_VERSION"),
            "\r\n"
        ));
    }
    for (n, v) in &spec.headers {
        if close && n.eq_ignore_ascii_case("connection") {
            continue;
        }
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    if close {
        out.push_str("Connection: close\r\n");
    }
    if (!spec.body.is_empty() || matches!(spec.method.as_str(), "POST" | "PUT" | "PATCH"))
        && !has("content-length")
    {
        out.push_str(&format!("Content-Length: {}\r\n", spec.body.len()));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&spec.body);
    bytes
}

/// `Name: value` from `-H`; the name must be a token and the value one line.
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once(':')
        .ok_or_else(|| format!("header '{s}' must be 'Name: value'"))?;
    let name = name.trim();
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("header name '{name}' is not a valid HTTP token"));
    }
    if value.contains(['\r', '\n']) {
        return Err(format!("header '{name}' has a line break in its value"));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_defaults_ports_and_ipv6() {
        let u = Url::parse("http://nas.local").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.path.as_str()),
            (false, "nas.local", 80, "/")
        );
        let u = Url::parse("HTTPS://127.0.0.1:8443/a/b?x=1#frag").unwrap();
        assert_eq!((u.tls, u.port, u.path.as_str()), (true, 8443, "/a/b?x=1"));
        assert_eq!(u.host_header(), "127.0.0.1:8443");
        let u = Url::parse("https://[::1]:8443?q").unwrap();
        assert_eq!((u.host.as_str(), u.path.as_str()), ("::1", "/?q"));
        assert_eq!(u.display(), "https://[::1]:8443/?q");
        assert_eq!(Url::parse("https://h/").unwrap().host_header(), "h");
    }

    #[test]
    fn bad_urls_name_the_problem() {
        assert!(matches!(Url::parse("ftp://x"), Err(UrlError::Scheme(_))));
        assert!(matches!(
            Url::parse("http://:80/"),
            Err(UrlError::NoHost(_))
        ));
        assert!(matches!(Url::parse("http://h:0/"), Err(UrlError::Port(_))));
        assert!(matches!(
            Url::parse("http://h:99999/"),
            Err(UrlError::Port(_))
        ));
        assert!(matches!(
            Url::parse("http://u:p@h/"),
            Err(UrlError::UserInfo(_))
        ));
        assert!(
            UrlError::Port("http://h:0/".into())
                .to_string()
                .contains("'http://h:0/'")
        );
    }

    #[test]
    fn requests_carry_host_length_and_close() {
        let url = Url::parse("http://h:8080/p").unwrap();
        let spec = RequestSpec {
            method: "POST".into(),
            headers: vec![
                ("X-A".into(), "1".into()),
                ("Connection".into(), "keep-alive".into()),
            ],
            body_bytes: 2,
            body: b"hi".to_vec(),
        };
        let r = String::from_utf8(build_request(&url, &spec, true)).unwrap();
        assert!(r.starts_with("POST /p HTTP/1.1\r\nHost: h:8080\r\nUser-Agent: nastune/"));
        assert!(r.contains("X-A: 1\r\n") && !r.contains("keep-alive"));
        assert!(r.ends_with("Connection: close\r\nContent-Length: 2\r\n\r\nhi"));
        let get = RequestSpec {
            method: "GET".into(),
            headers: vec![("Host".into(), "other".into())],
            body_bytes: 0,
            body: Vec::new(),
        };
        let r = String::from_utf8(build_request(&url, &get, false)).unwrap();
        assert!(
            r.contains("Host: other\r\n") && !r.contains("h:8080") && !r.contains("Content-Length")
        );
    }

    #[test]
    fn credential_headers_are_redacted_in_json() {
        let spec = RequestSpec {
            method: "GET".into(),
            headers: vec![
                ("Authorization".into(), "Bearer abc".into()),
                ("X-Api-Key".into(), "k".into()),
                ("Accept".into(), "text/html".into()),
            ],
            body_bytes: 0,
            body: Vec::new(),
        };
        let j = serde_json::to_string(&spec).unwrap();
        assert!(!j.contains("abc") && !j.contains("\"k\""), "{j}");
        assert!(j.contains("[\"Accept\",\"text/html\"]"), "{j}");
        // The request itself still carries the real value.
        let url = Url::parse("http://h/").unwrap();
        let req = String::from_utf8(build_request(&url, &spec, false)).unwrap();
        assert!(req.contains("Authorization: Bearer abc\r\n"), "{req}");
    }

    #[test]
    fn headers_are_validated() {
        assert_eq!(parse_header("X-Y:  z "), Ok(("X-Y".into(), "z".into())));
        assert!(parse_header("nocolon").unwrap_err().contains("'nocolon'"));
        assert!(parse_header("bad name: v").unwrap_err().contains("token"));
    }
}
