//! The TLS client side: rustls with ring, certificate verification against the
//! system roots (or `--cacert`), `--insecure` for self-signed home servers, and
//! what a handshake negotiated (version, suite, key exchange, certificate key).

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionMemoryCache, Resumption};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use serde::{Deserialize, Serialize};

use crate::root::Root;

/// Debian's bundle of the system roots, then the directory of single files.
const SYSTEM_BUNDLE: &str = "etc/ssl/certs/ca-certificates.crt";
const SYSTEM_DIR: &str = "etc/ssl/certs";

#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("cannot read CA file '{path}': {message}")]
    CaFile { path: String, message: String },
    #[error(
        "no usable CA certificate in '{0}': give a PEM file with --cacert, or --insecure for a self-signed server"
    )]
    NoCerts(String),
    // Not a source (`From` below): the message embeds it.
    #[error("TLS setup failed: {0}")]
    Rustls(rustls::Error),
    #[error("TLS setup failed: {0}")]
    Verifier(String),
}

impl From<rustls::Error> for TlsSetupError {
    fn from(e: rustls::Error) -> Self {
        TlsSetupError::Rustls(e)
    }
}

/// Where trust comes from.
#[derive(Debug, Clone, Default)]
pub enum Trust {
    /// The system roots under `root`'s /etc/ssl/certs.
    #[default]
    System,
    /// Only the certificates in this PEM file.
    CaFile(std::path::PathBuf),
    /// No verification of the chain or the name (signatures are still checked).
    Insecure,
}

pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client configuration; `resume` keeps session tickets/IDs for resumption.
pub fn client_config(
    trust: &Trust,
    root: &Root,
    resume: bool,
) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let mut config = match trust {
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Verifier {
                algs: provider.signature_verification_algorithms,
                policy: Policy::AcceptAny,
            }))
            .with_no_client_auth(),
        Trust::System => builder
            .with_root_certificates(system_roots(root)?)
            .with_no_client_auth(),
        Trust::CaFile(path) => {
            let (roots, pinned) = roots_from_file(path)?;
            let algs = provider.signature_verification_algorithms;
            let chains = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| TlsSetupError::Verifier(e.to_string()))?;
            let policy = Policy::CaFile {
                chains,
                pinned,
                file: path.display().to_string(),
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Verifier { algs, policy }))
                .with_no_client_auth()
        }
    };
    config.resumption = if resume {
        Resumption::store(Arc::new(ClientSessionMemoryCache::new(256)))
    } else {
        Resumption::disabled()
    };
    Ok(Arc::new(config))
}

fn add_pem(store: &mut RootCertStore, pem: &[u8]) -> usize {
    let certs = CertificateDer::pem_slice_iter(pem).filter_map(Result::ok);
    store.add_parsable_certificates(certs).0
}

/// The file's certificates as trust anchors, and as they are (for pinning).
fn roots_from_file(
    path: &std::path::Path,
) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), TlsSetupError> {
    let pem = std::fs::read(path).map_err(|e| TlsSetupError::CaFile {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let mut store = RootCertStore::empty();
    if add_pem(&mut store, &pem) == 0 {
        return Err(TlsSetupError::NoCerts(path.display().to_string()));
    }
    let certs = CertificateDer::pem_slice_iter(&pem)
        .filter_map(Result::ok)
        .collect();
    Ok((store, certs))
}

fn system_roots(root: &Root) -> Result<RootCertStore, TlsSetupError> {
    let mut store = RootCertStore::empty();
    if let Ok(pem) = root.read_string(SYSTEM_BUNDLE) {
        add_pem(&mut store, pem.as_bytes());
    }
    if store.is_empty()
        && let Ok(names) = root.read_dir(SYSTEM_DIR)
    {
        for name in names
            .iter()
            .filter(|n| n.ends_with(".pem") || n.ends_with(".crt"))
        {
            if let Ok(pem) = root.read_string(&format!("{SYSTEM_DIR}/{name}")) {
                add_pem(&mut store, pem.as_bytes());
            }
        }
    }
    if store.is_empty() {
        return Err(TlsSetupError::NoCerts(format!("/{SYSTEM_DIR}")));
    }
    Ok(store)
}

/// The handshake signatures are always verified with `algs`, so the crypto
/// cost measured is the real one; the certificate as `policy` says.
#[derive(Debug)]
struct Verifier {
    algs: WebPkiSupportedAlgorithms,
    policy: Policy,
}

#[derive(Debug)]
enum Policy {
    /// `--insecure`: any chain and name.
    AcceptAny,
    /// `--cacert FILE`: a chain to one of the file's certificates, as webpki
    /// checks it, or a server certificate byte for byte one of them. webpki
    /// refuses a CA certificate (basicConstraints CA:TRUE) as a server's own,
    /// yet that is what `openssl req -x509` makes by default for a
    /// self-signed box; given in --cacert it is pinned, as curl takes it, its
    /// name and validity period still checked.
    CaFile {
        chains: Arc<WebPkiServerVerifier>,
        pinned: Vec<CertificateDer<'static>>,
        file: String,
    },
}

/// Why a server certificate given by --cacert was still refused.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error(
        "the server's certificate is a CA certificate (basicConstraints CA:TRUE) that no \
         certificate in '{0}' is byte for byte; put the server's own certificate in that file \
         (openssl s_client -showcerts prints it), or reissue it with CA:FALSE \
         (openssl req -x509 ... -addext basicConstraints=critical,CA:FALSE)"
    )]
    CaAsServerCert(String),
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Policy::CaFile {
            chains,
            pinned,
            file,
        } = &self.policy
        else {
            return Ok(ServerCertVerified::assertion());
        };
        if pinned.iter().any(|c| c.as_ref() == end_entity.as_ref()) {
            let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_name(&parsed, server_name)?;
            check_validity(end_entity.as_ref(), now)?;
            return Ok(ServerCertVerified::assertion());
        }
        let verdict =
            chains.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verdict {
            Err(rustls::Error::InvalidCertificate(CertificateError::Other(e)))
                if matches!(
                    e.0.downcast_ref::<webpki::Error>(),
                    Some(webpki::Error::CaUsedAsEndEntity)
                ) =>
            {
                let e = PinError::CaAsServerCert(file.clone());
                Err(CertificateError::Other(rustls::OtherError(Arc::new(e))).into())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// Refuses a certificate outside its validity period at `now`.
fn check_validity(cert: &[u8], now: UnixTime) -> Result<(), CertificateError> {
    let (not_before, not_after) = validity(cert).ok_or(CertificateError::BadEncoding)?;
    let now_secs = now.as_secs();
    let at = |secs| UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs));
    if now_secs < not_before {
        return Err(CertificateError::NotValidYetContext {
            time: now,
            not_before: at(not_before),
        });
    }
    if now_secs > not_after {
        return Err(CertificateError::ExpiredContext {
            time: now,
            not_after: at(not_after),
        });
    }
    Ok(())
}

/// notBefore and notAfter of an X.509 certificate, in Unix seconds.
pub fn validity(cert: &[u8]) -> Option<(u64, u64)> {
    let (_, times, _) = der(tbs_field(cert, TBS_VALIDITY)?)?;
    let (tag_a, a, times) = der(times)?;
    let (tag_b, b, _) = der(times)?;
    Some((x509_time(tag_a, a)?, x509_time(tag_b, b)?))
}

/// UTCTime (tag 0x17, YYMMDDHHMMSSZ, years 1950-2049) or GeneralizedTime
/// (tag 0x18, YYYYMMDDHHMMSSZ), as RFC 5280 section 4.1.2.5 writes them.
fn x509_time(tag: u8, text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    let (year, rest) = match (tag, text.len()) {
        (0x17, 12) => {
            let yy: u32 = text.get(..2)?.parse().ok()?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &text[2..])
        }
        (0x18, 14) => (text.get(..4)?.parse().ok()?, &text[4..]),
        _ => return None,
    };
    if !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let field = |i: usize| rest[i..i + 2].parse::<u32>().ok();
    let (month, day) = (field(0)?, field(2)?);
    let (h, m, sec) = (field(4)?, field(6)?, field(8)?);
    if year < 1970 {
        // Only a notBefore goes back that far; it has passed for any clock.
        return Some(0);
    }
    crate::time::unix_from_civil(year, month, day, h, m, sec)
}

/// What one handshake negotiated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsInfo {
    pub version: String,
    pub cipher_suite: String,
    pub key_exchange: String,
    /// e.g. "ECDSA P-256", "RSA 2048", "Ed25519".
    pub certificate_key: String,
    pub verified: bool,
}

pub fn info(conn: &rustls::ClientConnection, verified: bool) -> TlsInfo {
    let name = |d: Option<String>| d.unwrap_or_else(|| "unknown".into());
    TlsInfo {
        version: name(conn.protocol_version().map(|v| version_name(v).to_string())),
        cipher_suite: name(
            conn.negotiated_cipher_suite()
                .map(|s| format!("{:?}", s.suite())),
        ),
        key_exchange: match conn.negotiated_key_exchange_group() {
            Some(g) => format!("{:?}", g.name()),
            None if conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed) => {
                "none (resumed session)".into()
            }
            None => "unknown".into(),
        },
        certificate_key: name(
            conn.peer_certificates()
                .and_then(|c| c.first())
                .map(|c| certificate_key_type(c.as_ref())),
        ),
        verified,
    }
}

fn version_name(v: rustls::ProtocolVersion) -> &'static str {
    match v {
        rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3",
        rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2",
        _ => "older than TLSv1.2",
    }
}

/// One DER element: (tag, contents, rest).
fn der(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |a, &b| (a << 8) | usize::from(b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
const OID_P521: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x23];
const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];

/// The key type of an X.509 certificate, read from its SubjectPublicKeyInfo.
pub fn certificate_key_type(cert: &[u8]) -> String {
    spki_key_type(cert).unwrap_or_else(|| "unknown".into())
}

/// Fields of a TBSCertificate after the optional version (RFC 5280 section
/// 4.1): serial, signature algorithm, issuer, validity, subject, key.
const TBS_VALIDITY: usize = 3;
const TBS_KEY: usize = 5;

/// The DER from field `index` of a certificate's TBSCertificate on.
fn tbs_field(cert: &[u8], index: usize) -> Option<&[u8]> {
    let (_, certificate, _) = der(cert)?;
    let (_, tbs, _) = der(certificate)?;
    let mut rest = tbs;
    let (tag, _, r) = der(rest)?;
    if tag == 0xa0 {
        rest = r; // explicit version
    }
    for _ in 0..index {
        rest = der(rest)?.2;
    }
    Some(rest)
}

fn spki_key_type(cert: &[u8]) -> Option<String> {
    let (_, spki, _) = der(tbs_field(cert, TBS_KEY)?)?;
    let (_, alg, key) = der(spki)?;
    let (_, oid, params) = der(alg)?;
    if oid == OID_RSA {
        let (_, bits, _) = der(key)?;
        let (_, rsa, _) = der(bits.get(1..)?)?;
        let (_, modulus, _) = der(rsa)?;
        let significant = modulus.iter().skip_while(|&&b| b == 0).count();
        return Some(format!("RSA {}", significant * 8));
    }
    if oid == OID_EC {
        let (_, curve, _) = der(params)?;
        let name = match curve {
            c if c == OID_P256 => "P-256",
            c if c == OID_P384 => "P-384",
            c if c == OID_P521 => "P-521",
            _ => "other curve",
        };
        return Some(format!("ECDSA {name}"));
    }
    if oid == OID_ED25519 {
        return Some("Ed25519".into());
    }
    Some("other".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert_of(alg: &'static rcgen::SignatureAlgorithm) -> Vec<u8> {
        let key = rcgen::KeyPair::generate_for(alg).unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn certificate_key_types_from_rcgen_certificates() {
        assert_eq!(
            certificate_key_type(&cert_of(&rcgen::PKCS_ECDSA_P256_SHA256)),
            "ECDSA P-256"
        );
        assert_eq!(
            certificate_key_type(&cert_of(&rcgen::PKCS_ECDSA_P384_SHA384)),
            "ECDSA P-384"
        );
        assert_eq!(
            certificate_key_type(&cert_of(&rcgen::PKCS_ED25519)),
            "Ed25519"
        );
        assert_eq!(certificate_key_type(b"\x30\x03garbage"), "unknown");
        assert_eq!(certificate_key_type(&[]), "unknown");
    }

    #[test]
    fn validity_is_read_from_the_certificate() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
        // UTCTime before 2050, GeneralizedTime from then on (RFC 5280).
        params.not_before = rcgen::date_time_ymd(2001, 2, 3);
        params.not_after = rcgen::date_time_ymd(2051, 1, 1);
        let der = params.self_signed(&key).unwrap().der().to_vec();
        assert_eq!(validity(&der), Some((981_158_400, 2_556_144_000)));
        let at = |s| UnixTime::since_unix_epoch(std::time::Duration::from_secs(s));
        assert!(check_validity(&der, at(1_000_000_000)).is_ok());
        assert!(matches!(
            check_validity(&der, at(900_000_000)),
            Err(CertificateError::NotValidYetContext { .. })
        ));
        assert!(matches!(
            check_validity(&der, at(2_600_000_000)),
            Err(CertificateError::ExpiredContext { .. })
        ));
        assert_eq!(validity(b"\x30\x03abc"), None);
        assert_eq!(x509_time(0x17, b"490101000000Z"), Some(2_493_072_000));
        assert_eq!(
            x509_time(0x17, b"500101000000Z"),
            Some(0),
            "1950: before any now"
        );
        assert_eq!(x509_time(0x17, b"2401010000Z"), None, "no seconds");
        assert_eq!(x509_time(0x18, b"20240230000000Z"), None, "30 February");
    }

    #[test]
    fn ca_file_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate").unwrap();
        let err = client_config(&Trust::CaFile(empty), &Root::live(), false).unwrap_err();
        assert!(err.to_string().contains("empty.pem'"), "{err}");
        let missing = dir.path().join("missing.pem");
        let err = client_config(&Trust::CaFile(missing), &Root::live(), false).unwrap_err();
        assert!(err.to_string().contains("cannot read CA file"), "{err}");
    }

    #[test]
    fn a_root_without_certificates_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let err =
            client_config(&Trust::System, &Root::tree(dir.path()).unwrap(), true).unwrap_err();
        assert!(err.to_string().contains("--insecure"), "{err}");
    }
}
