//! `nastune bench http` against servers started by the test: a small in-process
//! HTTP/1.1 server (plain, TLS with an rcgen certificate, and hostile variants)
//! and a real nginx on loopback.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::util::{free_port, nastune, run_with_db, skip, stderr, stdout};

/// A self-signed ECDSA P-256 certificate for localhost/127.0.0.1: (cert PEM, key PEM, der).
pub(crate) fn certificate() -> (String, String, Vec<u8>) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem(), cert.der().to_vec())
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Behaviour {
    /// 200 with Content-Length, keep-alive.
    Ok,
    /// 200 with a chunked body.
    Chunked,
    /// Answers with something that is not HTTP.
    Garbage,
    /// Reads the request and never answers.
    Silent,
    /// 200 after 50 ms.
    Slow,
    /// Request n (over all connections) gets: n % 4 = 0 a good response,
    /// 1 a head longer than the client's bound, 2 garbage, 3 nothing for 1 s.
    Hostile,
    /// HTTP/1.1 200 with `Connection: close` and no length: the body ends at the close.
    CloseDelimited,
    /// HTTP/1.0 200 without a length: the body ends at the close.
    Http10,
    /// 200 with status 999, which no class defines.
    Status999,
    /// Answers the first request (the pre-flight) well, then every request
    /// with a response that makes progress but never ends.
    TurnsHostile(Endless),
    /// Every request, the pre-flight too, gets a response that never ends.
    Endless(Endless),
}

/// Ways to keep a response going for ever while still sending bytes.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Endless {
    Chunks,
    /// `Content-Length: 2^63 - 1`, the body streamed.
    HugeLength,
    /// The response one byte every 100 ms.
    Dribble,
    /// `100 Continue` after `100 Continue`.
    Continues,
}

/// Writes the endless response until the client goes away.
fn endless<S: Write>(s: &mut S, kind: Endless) {
    let (head, step, pause): (&[u8], &[u8], u64) = match kind {
        Endless::Chunks => (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"5\r\nhello\r\n",
            10,
        ),
        Endless::HugeLength => (
            b"HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\n",
            &[b'x'; 1024],
            10,
        ),
        Endless::Dribble => (b"", b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", 100),
        Endless::Continues => (b"", b"HTTP/1.1 100 Continue\r\n\r\n", 10),
    };
    if s.write_all(head).is_err() {
        return;
    }
    for &b in step.iter().cycle() {
        let piece = if kind == Endless::Dribble {
            &[b][..]
        } else {
            step
        };
        if s.write_all(piece).and_then(|_| s.flush()).is_err() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(pause));
    }
}

/// Serves every connection on its own thread; counts requests answered
/// (Hostile: requests received).
fn serve(tls: Option<Arc<rustls::ServerConfig>>, behaviour: Behaviour) -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicU64::new(0));
    let counter = count.clone();
    std::thread::spawn(move || {
        for sock in listener.incoming().flatten() {
            let (tls, counter) = (tls.clone(), counter.clone());
            std::thread::spawn(move || {
                let _ = sock.set_nodelay(true);
                match tls {
                    Some(cfg) => {
                        let conn = rustls::ServerConnection::new(cfg).unwrap();
                        answer(rustls::StreamOwned::new(conn, sock), behaviour, &counter);
                    }
                    None => answer(sock, behaviour, &counter),
                }
            });
        }
    });
    (port, count)
}

fn answer<S: Read + Write>(mut s: S, behaviour: Behaviour, counter: &AtomicU64) {
    let mut buf = [0u8; 4096];
    let mut pending = Vec::new();
    loop {
        let Ok(n) = s.read(&mut buf) else { return };
        if n == 0 {
            return;
        }
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
            pending.drain(..end + 4);
            let close = head.contains("connection: close");
            let oversize;
            let reply_as = match behaviour {
                Behaviour::Endless(kind) => return endless(&mut s, kind),
                Behaviour::TurnsHostile(kind) if counter.fetch_add(1, Ordering::Relaxed) > 0 => {
                    return endless(&mut s, kind);
                }
                Behaviour::TurnsHostile(_) => Behaviour::Ok,
                Behaviour::Hostile => match counter.fetch_add(1, Ordering::Relaxed) % 4 {
                    0 => Behaviour::Ok,
                    1 => {
                        oversize = format!("HTTP/1.1 200 OK\r\nX-Pad: {}", "a".repeat(20_000));
                        let _ = s.write_all(oversize.as_bytes()).and_then(|_| s.flush());
                        continue;
                    }
                    2 => Behaviour::Garbage,
                    _ => {
                        std::thread::sleep(std::time::Duration::from_secs(1));
                        return;
                    }
                },
                b => b,
            };
            let reply: &[u8] = match reply_as {
                Behaviour::Ok if close => {
                    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
                }
                Behaviour::Ok => b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
                Behaviour::Slow => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
                }
                Behaviour::Chunked => {
                    b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                }
                Behaviour::Garbage => b"SSH-2.0-OpenSSH_9.2\r\n\r\n",
                Behaviour::CloseDelimited => {
                    b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello"
                }
                Behaviour::Http10 => b"HTTP/1.0 200 OK\r\nServer: old\r\n\r\nhello",
                Behaviour::Status999 => b"HTTP/1.1 999 Odd\r\nContent-Length: 5\r\n\r\nhello",
                Behaviour::Silent => {
                    std::thread::sleep(std::time::Duration::from_secs(5));
                    return;
                }
                Behaviour::Hostile | Behaviour::TurnsHostile(_) | Behaviour::Endless(_) => {
                    unreachable!("resolved above")
                }
            };
            if s.write_all(reply).and_then(|_| s.flush()).is_err() {
                return;
            }
            if !matches!(behaviour, Behaviour::Hostile | Behaviour::TurnsHostile(_)) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
            if close || matches!(reply_as, Behaviour::CloseDelimited | Behaviour::Http10) {
                // The last data and the FIN leave together: the client must
                // take the close as the end of the body.
                return;
            }
        }
    }
}

fn tls_config(cert_pem: &str, key_pem: &str) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = vec![CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    Arc::new(cfg)
}

/// `bench http --json` with a short run (-d 0.6, --warmup 0.2 unless `args` set them).
fn bench_json(args: &[&str]) -> Value {
    let or_default = |flag: &str, default: &'static [&'static str]| -> &'static [&'static str] {
        if args.contains(&flag) { &[] } else { default }
    };
    let o = nastune()
        .args(["--no-store", "bench", "http", "--json"])
        .args(or_default("-d", &["-d", "0.6"]))
        .args(or_default("--warmup", &["--warmup", "0.2"]))
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn bench_fails(args: &[&str]) -> String {
    let o = nastune()
        .args(["--no-store", "bench", "http", "-d", "0.5", "--warmup", "0"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
    stderr(&o)
}

fn errors_total(run: &Value) -> u64 {
    run["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

#[test]
fn keep_alive_load_counts_every_response_the_server_sent() {
    let (port, served) = serve(None, Behaviour::Ok);
    let url = format!("http://127.0.0.1:{port}/x");
    let doc = bench_json(&[&url, "-t", "2", "-c", "4"]);
    let run = &doc["runs"][0];
    let requests = run["requests"].as_u64().unwrap();
    assert!(requests > 50, "{run}");
    assert_eq!(run["status_classes"]["2xx"].as_u64(), Some(requests));
    assert_eq!(errors_total(run), 0, "{run}");
    assert_eq!(run["body_bytes"].as_u64(), Some(5 * requests));
    // The server answered the warm-up, the pre-flight and the in-flight tail too.
    assert!(served.load(Ordering::Relaxed) >= requests);
    // Four keep-alive connections carried everything measured.
    assert!(run["connections_opened"].as_u64().unwrap() <= 4, "{run}");
    let total = &run["latency"]["total_ns"];
    assert_eq!(total["N"].as_u64(), Some(requests));
    assert!(run["latency"]["tls_handshake_ns"].is_null());
    assert_eq!(doc["schema_version"], 1);
}

/// Every object key of `v` (percentile labels aside), depth first.
fn keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if !k.contains('.') && !out.contains(k) {
                    out.push(k.clone());
                }
                keys(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

/// docs/json-schemas.md names every key that `bench http --json` writes.
fn assert_documented(doc: &Value) {
    let md =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json-schemas.md"))
            .unwrap();
    let start = md.find("## bench http").expect("a bench http section");
    let section = &md[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    // `validity` is the same in every document: it has its own section.
    let mut doc = doc.clone();
    let validity = doc.as_object_mut().and_then(|o| o.remove("validity"));
    let mut all = vec!["validity".to_string()];
    keys(&doc, &mut all);
    for k in all {
        assert!(
            section.contains(&format!("`{k}`")) || section.contains(&format!("`{k}[]`")),
            "'{k}' is not in the bench http section of docs/json-schemas.md"
        );
    }
    let start = md.find("## validity").expect("a validity section");
    let section = &md[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let mut all = Vec::new();
    keys(&validity.expect("bench http carries validity"), &mut all);
    for k in all {
        assert!(
            section.contains(&format!("`{k}`")) || section.contains(&format!("`{k}[]`")),
            "'{k}' is not in the validity section of docs/json-schemas.md"
        );
    }
}

#[test]
fn chunked_error_responses_are_classed_not_failed() {
    let (port, _) = serve(None, Behaviour::Chunked);
    let doc = bench_json(&[&format!("http://127.0.0.1:{port}/"), "-c", "2"]);
    let run = &doc["runs"][0];
    assert!(run["status_classes"]["4xx"].as_u64().unwrap() > 10, "{run}");
    assert_eq!(run["status_classes"]["2xx"], 0);
    assert_eq!(errors_total(run), 0);
    assert_eq!(
        run["body_bytes"].as_u64(),
        Some(3 * run["requests"].as_u64().unwrap())
    );
}

#[test]
fn https_with_cacert_reports_tls_and_resumes_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, _) = certificate();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &cert).unwrap();
    let (port, _) = serve(Some(tls_config(&cert, &key)), Behaviour::Ok);
    let url = format!("https://localhost:{port}/");
    let doc = bench_json(&[
        &url,
        "-c",
        "2",
        "--cacert",
        ca.to_str().unwrap(),
        "--mode",
        "keep-alive,close,resume",
    ]);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for run in runs {
        assert!(run["requests"].as_u64().unwrap() > 0, "{run}");
        assert_eq!(errors_total(run), 0, "{run}");
        let tls = &run["tls"];
        assert_eq!(tls["version"], "TLSv1.3", "{run}");
        assert_eq!(tls["certificate_key"], "ECDSA P-256");
        assert_eq!(tls["verified"], true);
        assert!(tls["cipher_suite"].as_str().unwrap().starts_with("TLS13_"));
    }
    let (close, resume) = (&runs[1], &runs[2]);
    assert_eq!(close["mode"], "close");
    // One connection and one full handshake per request.
    let n = close["requests"].as_u64().unwrap();
    assert!(close["tls_handshakes_full"].as_u64().unwrap() >= n);
    assert_eq!(close["tls_handshakes_resumed"], 0);
    assert!(!close["latency"]["tls_handshake_ns"].is_null());
    assert!(
        resume["tls_handshakes_resumed"].as_u64().unwrap() > 0,
        "{resume}"
    );
    assert_eq!(resume["tls_handshakes_full"], 0, "{resume}");
}

#[test]
fn compare_gives_a_slowdown_factor_per_mode() {
    let (cert, key, _) = certificate();
    let (plain, _) = serve(None, Behaviour::Ok);
    let (secure, _) = serve(Some(tls_config(&cert, &key)), Behaviour::Ok);
    let a = format!("http://127.0.0.1:{plain}/");
    let b = format!("https://127.0.0.1:{secure}/");
    let doc = bench_json(&[
        &a,
        "--compare",
        &b,
        "--insecure",
        "--mode",
        "keep-alive,close",
    ]);
    assert_eq!(doc["runs"].as_array().unwrap().len(), 4);
    let cmp = doc["comparisons"].as_array().unwrap();
    assert_eq!(cmp.len(), 2);
    assert_eq!(cmp[1]["mode"], "close");
    assert_eq!(cmp[0]["base_url"], a.as_str());
    let base = cmp[1]["base_requests_per_sec"].as_f64().unwrap();
    let other = cmp[1]["other_requests_per_sec"].as_f64().unwrap();
    let factor = cmp[1]["slowdown_factor"].as_f64().unwrap();
    assert!((factor - base / other).abs() < 1e-9);
    assert_documented(&doc);
    assert_eq!(doc["runs"][1]["tls"]["verified"], false);
}

/// One second of open-loop load at `rate` on `conns` connections: the run.
fn open_loop(behaviour: Behaviour, rate: &str, conns: &str, warmup: &str) -> Value {
    let (port, _) = serve(None, behaviour);
    let url = format!("http://127.0.0.1:{port}/");
    let args = [
        url.as_str(),
        "--rate",
        rate,
        "-c",
        conns,
        "-d",
        "1",
        "--warmup",
        warmup,
    ];
    bench_json(&args)["runs"][0].clone()
}

/// `run[key]`, asserted to lie in `range`.
fn within(run: &Value, key: &str, range: std::ops::RangeInclusive<f64>) -> u64 {
    let v = run[key].as_f64().unwrap();
    assert!(range.contains(&v), "{key} {v} not in {range:?}: {run}");
    v as u64
}

#[test]
fn open_loop_holds_the_rate_and_reports_the_schedule() {
    let run = &open_loop(Behaviour::Ok, "300", "4", "0.2");
    within(run, "requests_per_sec", 200.0..=330.0);
    within(run, "requests_due", 250.0..=320.0);
    assert_eq!(run["target_rate_per_sec"], 300.0);
}

#[test]
fn open_loop_latency_counts_from_the_intended_time_when_the_server_falls_behind() {
    // One connection to a server that needs 50 ms per request cannot keep 100/s:
    // the queue grows, and the latency must show it (no coordinated omission).
    let run = &open_loop(Behaviour::Slow, "100", "1", "0");
    let requests = within(run, "requests", 3.0..=25.0);
    let due = within(run, "requests_due", 90.0..=105.0);
    assert!(
        run["requests_late"].as_u64().unwrap() >= due - requests,
        "{run}"
    );
    let p50 = |phase: &str| {
        run["latency"][phase]["percentile"]["50.000000"]
            .as_u64()
            .unwrap()
    };
    // Each response took ~50 ms from its send, but waited in the queue before.
    assert!(p50("total_ns") > 2 * p50("ttfb_ns"), "{run}");
    assert!(
        run["latency"]["total_ns"]["max"].as_u64().unwrap() > 300_000_000,
        "{run}"
    );
}

/// A self-signed certificate with basicConstraints CA:TRUE, as `openssl req
/// -x509` makes by default: (cert PEM, key PEM).
fn ca_true_certificate(names: &[&str]) -> (String, String) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = rcgen::CertificateParams::new(names).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// Repro: a CA:TRUE self-signed certificate served as the server's own and
/// given with --cacert failed with "CaUsedAsEndEntity ... give --cacert".
/// Now it is pinned: accepted when it is byte for byte the one in the file,
/// its name still checked; another CA:TRUE certificate is refused with what
/// to do.
#[test]
fn a_ca_true_self_signed_certificate_given_by_cacert_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = ca_true_certificate(&["localhost"]);
    let pinned = dir.path().join("pinned.pem");
    // Another certificate first: the match is by bytes, anywhere in the file.
    let (other, _) = ca_true_certificate(&["localhost"]);
    std::fs::write(&pinned, format!("{other}{cert}")).unwrap();
    let (port, _) = serve(Some(tls_config(&cert, &key)), Behaviour::Ok);
    let url = format!("https://localhost:{port}/");
    let doc = bench_json(&[&url, "-c", "1", "--cacert", pinned.to_str().unwrap()]);
    let run = &doc["runs"][0];
    assert!(run["requests"].as_u64().unwrap() > 0, "{run}");
    assert_eq!(errors_total(run), 0, "{run}");
    assert_eq!(run["tls"]["verified"], true, "{run}");

    // The name is still checked against the pinned certificate.
    let ip_url = format!("https://127.0.0.1:{port}/");
    let err = bench_fails(&[&ip_url, "--cacert", pinned.to_str().unwrap()]);
    assert!(err.contains("certificate not valid for name"), "{err}");

    // A CA:TRUE certificate that is not the one in the file.
    let wrong = dir.path().join("wrong.pem");
    std::fs::write(&wrong, &other).unwrap();
    let err = bench_fails(&[&url, "--cacert", wrong.to_str().unwrap()]);
    assert!(
        err.contains("is a CA certificate (basicConstraints CA:TRUE) that no certificate in '")
            && err.contains("wrong.pem' is byte for byte")
            && err.contains("CA:FALSE"),
        "{err}"
    );
    assert!(!err.contains("give the server's CA with --cacert"), "{err}");
}

#[test]
fn a_self_signed_server_fails_verification_with_a_hint() {
    let (cert, key, _) = certificate();
    let (port, _) = serve(Some(tls_config(&cert, &key)), Behaviour::Ok);
    let err = bench_fails(&[&format!("https://localhost:{port}/")]);
    assert!(err.contains("invalid peer certificate"), "{err}");
    assert!(err.contains("--cacert FILE, or --insecure"), "{err}");
}

#[test]
fn every_connection_failure_kind_has_a_clear_error() {
    // Nothing listens on a port we just closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = bench_fails(&[&format!("http://127.0.0.1:{port}/")]);
    assert!(err.contains("is the server running"), "{err}");

    let (garbage, _) = serve(None, Behaviour::Garbage);
    let err = bench_fails(&[&format!("http://127.0.0.1:{garbage}/")]);
    assert!(
        err.contains("malformed response") && err.contains("'SSH-2.0-OpenSSH_9.2'"),
        "{err}"
    );

    let (silent, _) = serve(None, Behaviour::Silent);
    let err = bench_fails(&[&format!("http://127.0.0.1:{silent}/"), "--timeout", "0.3"]);
    assert!(err.contains("raise --timeout"), "{err}");

    let err = bench_fails(&["ftp://127.0.0.1/"]);
    assert!(err.contains("'ftp://127.0.0.1/'"), "{err}");
    let err = bench_fails(&["http://127.0.0.1/", "--mode", "resume"]);
    assert!(err.contains("needs an https:// URL"), "{err}");
}

/// Repro: a first request whose response kept coming for the whole --timeout
/// was reported as "sent no progress for N s". The error now tells silence
/// from a response that never ends, with the bytes that came.
#[test]
fn a_first_response_that_never_ends_is_told_from_silence() {
    for kind in [Endless::Chunks, Endless::HugeLength, Endless::Dribble] {
        let (port, _) = serve(None, Behaviour::Endless(kind));
        let err = bench_fails(&[&format!("http://127.0.0.1:{port}/"), "--timeout", "0.5"]);
        let (_, after) = err
            .split_once("did not complete a response within 0.5 s although bytes kept coming (")
            .unwrap_or_else(|| panic!("{kind:?}: {err}"));
        let received: u64 = after.split(' ').next().unwrap().parse().unwrap();
        assert!(received > 3, "{kind:?}: {err}");
        assert!(
            after.contains("received, still reading the response)"),
            "{kind:?}: {err}"
        );
        assert!(!err.contains("sent nothing"), "{kind:?}: {err}");
    }
    let (port, _) = serve(None, Behaviour::Silent);
    let err = bench_fails(&[&format!("http://127.0.0.1:{port}/"), "--timeout", "0.3"]);
    assert!(
        err.contains(
            "sent nothing for 0.3 s while waiting for the response (0 bytes of the response had arrived before)"
        ),
        "{err}"
    );
}

#[test]
fn a_hostile_server_under_load_is_counted_by_error_kind_without_a_hang() {
    let (port, _) = serve(None, Behaviour::Hostile);
    let started = std::time::Instant::now();
    let doc = bench_json(&[
        &format!("http://127.0.0.1:{port}/"),
        "-c",
        "2",
        "-d",
        "1",
        "--timeout",
        "0.3",
    ]);
    // The run ends on time although connections stall.
    assert!(started.elapsed().as_secs() < 15);
    let run = &doc["runs"][0];
    let errors = &run["errors"];
    assert!(run["status_classes"]["2xx"].as_u64().unwrap() > 0, "{run}");
    assert!(errors["parse"].as_u64().unwrap() >= 2, "{run}");
    assert!(errors["timeout"].as_u64().unwrap() >= 1, "{run}");
    assert_eq!(errors["connect"], 0, "{run}");
    let examples: Vec<&str> = run["error_examples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    for needle in [
        "response head longer than 16384 bytes",
        "'SSH-2.0-OpenSSH_9.2'",
        "raise --timeout",
    ] {
        assert!(examples.iter().any(|e| e.contains(needle)), "{examples:?}");
    }
}

#[test]
fn close_delimited_responses_read_10_of_10() {
    for behaviour in [Behaviour::CloseDelimited, Behaviour::Http10] {
        let (port, served) = serve(None, behaviour);
        let url = format!("http://127.0.0.1:{port}/");
        // Ten runs of ten connections: each pre-flight alone used to wait for
        // an edge that never came.
        for attempt in 0..10 {
            let doc = bench_json(&[&url, "-c", "10", "-d", "0.3", "--warmup", "0"]);
            let run = &doc["runs"][0];
            let n = run["requests"].as_u64().unwrap();
            assert!(n >= 10, "{behaviour:?} run {attempt}: {run}");
            assert_eq!(errors_total(run), 0, "{behaviour:?} run {attempt}: {run}");
            assert_eq!(run["status_classes"]["2xx"].as_u64(), Some(n));
            assert_eq!(run["body_bytes"].as_u64(), Some(5 * n), "{run}");
            // A new connection per response: the close ended each one.
            assert!(run["connections_opened"].as_u64().unwrap() >= n, "{run}");
        }
        assert!(served.load(Ordering::Relaxed) >= 100);
    }
    // Over TLS the close (without close_notify) ends the body the same way.
    let (cert, key, _) = certificate();
    let (port, _) = serve(Some(tls_config(&cert, &key)), Behaviour::CloseDelimited);
    let doc = bench_json(&[&format!("https://127.0.0.1:{port}/"), "-k", "-c", "10"]);
    let run = &doc["runs"][0];
    let n = run["requests"].as_u64().unwrap();
    assert!(n >= 10 && errors_total(run) == 0, "{run}");
    assert_eq!(run["body_bytes"].as_u64(), Some(5 * n), "{run}");
}

#[test]
fn statuses_outside_the_classes_are_counted_as_unknown() {
    let (port, _) = serve(None, Behaviour::Status999);
    let doc = bench_json(&[&format!("http://127.0.0.1:{port}/"), "-c", "2"]);
    let run = &doc["runs"][0];
    let n = run["requests"].as_u64().unwrap();
    assert!(n > 0, "{run}");
    assert_eq!(run["status_classes"]["unknown"].as_u64(), Some(n), "{run}");
    assert_eq!(run["status_classes"]["5xx"], 0, "{run}");
    assert_documented(&doc);
}

/// A run against a server that stops finishing responses: exit 1, the
/// reason on stderr, the document on stdout all the same.
fn bench_without_responses(args: &[&str]) -> (Value, String) {
    let o = nastune()
        .args(["--no-store", "bench", "http", "--warmup", "0", "-c", "2"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("no response to 'http://127.0.0.1:"), "{err}");
    let doc = if o.stdout.starts_with(b"{") {
        serde_json::from_slice(&o.stdout).unwrap()
    } else {
        Value::String(stdout(&o))
    };
    (doc, err)
}

#[test]
fn a_server_that_turns_hostile_mid_load_counts_timeouts_and_fails() {
    for kind in [
        Endless::Chunks,
        Endless::HugeLength,
        Endless::Dribble,
        Endless::Continues,
    ] {
        let (port, _) = serve(None, Behaviour::TurnsHostile(kind));
        let url = format!("http://127.0.0.1:{port}/");
        // Bytes keep coming, so only a bound on the whole request ends them.
        let started = std::time::Instant::now();
        let (doc, err) = bench_without_responses(&[&url, "--json", "-d", "1", "--timeout", "0.4"]);
        assert!(started.elapsed().as_secs() < 10, "{kind:?} hung");
        let run = &doc["runs"][0];
        assert_eq!(run["requests"], 0, "{kind:?}: {run}");
        assert!(
            run["errors"]["timeout"].as_u64().unwrap() >= 2,
            "{kind:?}: {run}"
        );
        let examples = run["error_examples"].to_string();
        assert!(
            examples.contains("did not complete a response within 0.4 s"),
            "{kind:?}: {examples}"
        );
        assert!(err.contains("timeout"), "{kind:?}: {err}");
    }
}

#[test]
fn requests_cut_off_by_the_end_are_counted_by_phase() {
    for (kind, phase) in [
        (Endless::Chunks, "reading_response"),
        (Endless::HugeLength, "reading_response"),
    ] {
        let (port, _) = serve(None, Behaviour::TurnsHostile(kind));
        let url = format!("http://127.0.0.1:{port}/");
        // The run ends long before --timeout: nothing times out, nothing completes.
        let (doc, err) = bench_without_responses(&[&url, "--json", "-d", "0.5"]);
        let run = &doc["runs"][0];
        assert_eq!(errors_total(run), 0, "{run}");
        assert_eq!(run["in_flight_at_end"][phase], 2, "{run}");
        assert!(
            err.contains(&format!("cut off by the end: {phase} 2")),
            "{err}"
        );
        assert_documented(&doc);
    }
    // Endless interim responses: bytes arrive, the response never does.
    let (port, _) = serve(None, Behaviour::TurnsHostile(Endless::Continues));
    let (text, _) = bench_without_responses(&[&format!("http://127.0.0.1:{port}/"), "-d", "0.5"]);
    let text = text.as_str().unwrap().to_string();
    assert!(text.contains("responses: none"), "{text}");
    assert!(
        text.contains("cut off by the end of the run: reading_response 2"),
        "{text}"
    );
}

#[test]
fn runs_are_stored_and_compared() {
    let dir = tempfile::tempdir().unwrap();
    let (port, _) = serve(None, Behaviour::Ok);
    let url = format!("http://127.0.0.1:{port}/");
    for _ in 0..2 {
        let o = run_with_db(
            dir.path(),
            &["bench", "http", &url, "-d", "0.3", "--warmup", "0"],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        assert!(
            text.contains("requests/s") && text.contains("socket errors: none"),
            "{text}"
        );
    }
    let list = run_with_db(
        dir.path(),
        &["history", "list", "--kind", "bench-http", "--json"],
    );
    let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
    let runs = &listed["runs"];
    assert!(
        runs.as_array()
            .unwrap()
            .iter()
            // "disturbed" when the validity guard saw other load: still stored.
            .all(|r| r["kind"] == "bench-http"
                && (r["status"] == "ok" || r["status"] == "disturbed")),
        "{runs}"
    );
    let ids: Vec<i64> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{runs}");
    let cmp = run_with_db(
        dir.path(),
        &["compare", &ids[1].to_string(), &ids[0].to_string()],
    );
    assert!(cmp.status.success(), "{}", stderr(&cmp));
    assert!(stdout(&cmp).contains("requests/s"), "{}", stdout(&cmp));
    let md = dir.path().join("report.md");
    let (a, b) = (ids[1].to_string(), ids[0].to_string());
    let rep = run_with_db(
        dir.path(),
        &["report", &a, &b, "--markdown", md.to_str().unwrap()],
    );
    assert!(rep.status.success(), "{}", stderr(&rep));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("HTTP requests") && text.contains("req/s"),
        "{text}"
    );
}

/// nginx with its own prefix and config in `dir`, HTTP and HTTPS on free ports;
/// one process (master_process off), so killing the child leaves no worker behind.
pub(crate) struct Nginx {
    child: std::process::Child,
    pub(crate) http: u16,
    https: u16,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start_nginx(dir: &Path, cert: &str, key: &str) -> Option<Nginx> {
    let bin = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
    std::fs::write(dir.join("cert.pem"), cert).unwrap();
    std::fs::write(dir.join("key.pem"), key).unwrap();
    std::fs::create_dir_all(dir.join("www")).unwrap();
    std::fs::write(dir.join("www/index.html"), vec![b'a'; 1024]).unwrap();
    let (http, https) = (free_port(), free_port());
    let d = dir.display();
    let conf = format!(
        "master_process off;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
events {{ worker_connections 1024; }}\n\
http {{\n access_log off;\n client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp;\n\
 fastcgi_temp_path {d}/tmp; uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n\
 server {{ listen 127.0.0.1:{http}; root {d}/www; }}\n\
 server {{ listen 127.0.0.1:{https} ssl; root {d}/www; ssl_protocols TLSv1.2 TLSv1.3;\n\
  ssl_certificate {d}/cert.pem; ssl_certificate_key {d}/key.pem; }}\n}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = std::process::Command::new(bin)
        .args(["-p", &d.to_string(), "-c", &format!("{d}/nginx.conf")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let guard = Nginx { child, http, https };
    for _ in 0..100 {
        if TcpStream::connect(("127.0.0.1", https)).is_ok() {
            return Some(guard);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!(
        "nginx did not start: {}",
        std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
    );
}

#[test]
fn nginx_over_http_and_https_with_a_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, _) = certificate();
    let Some(nginx) = start_nginx(dir.path(), &cert, &key) else {
        skip("nginx is not installed (apt-get install nginx; it is in .ci/apt-packages)");
        return;
    };
    let ca = dir.path().join("cert.pem");
    let a = format!("http://127.0.0.1:{}/", nginx.http);
    let b = format!("https://127.0.0.1:{}/", nginx.https);
    let doc = bench_json(&[
        &a,
        "--compare",
        &b,
        "--cacert",
        ca.to_str().unwrap(),
        "--mode",
        "keep-alive,close,resume",
        "-c",
        "8",
    ]);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    for run in runs {
        let n = run["requests"].as_u64().unwrap();
        assert!(n > 0, "{run}");
        assert_eq!(run["status_classes"]["2xx"].as_u64(), Some(n), "{run}");
        assert_eq!(run["body_bytes"].as_u64(), Some(1024 * n), "{run}");
        assert_eq!(errors_total(run), 0, "{run}");
    }
    // http:// has no TLS: resume runs as close there.
    assert_eq!(runs[4]["effective_mode"], "close");
    let https_resume = &runs[5];
    assert_eq!(https_resume["tls"]["certificate_key"], "ECDSA P-256");
    assert_eq!(https_resume["tls"]["version"], "TLSv1.3");
    assert!(https_resume["tls_handshakes_resumed"].as_u64().unwrap() > 0);
    assert_eq!(doc["comparisons"].as_array().unwrap().len(), 3);
    assert_documented(&doc);
    // A full handshake per request costs more than a plain reconnect.
    let close = &doc["comparisons"][1];
    assert!(close["slowdown_factor"].as_f64().unwrap() > 1.0, "{close}");

    // https:// on the plain port: nginx answers the ClientHello with HTTP.
    let err = bench_fails(&[&format!("https://127.0.0.1:{}/", nginx.http), "-k"]);
    assert!(
        err.contains("TLS handshake") && err.contains("is this port speaking TLS?"),
        "{err}"
    );
}
