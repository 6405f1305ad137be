//! The SMB client library against a real smbd: every dialect with each
//! security mode (checking what was negotiated, not just that it worked),
//! NTLMv2 and guest, and the errors that say what to change.

#![cfg(feature = "smb")]

use nastune::smb::client::Open;
use nastune::smb::crypto::{Cipher, SigningAlg};
use nastune::smb::{Client, Config, Credentials, Dialect, Error, Security};

use crate::smbd::{PASSWORD, Smbd, USER};

fn user() -> Credentials {
    Credentials::User {
        user: USER.into(),
        domain: String::new(),
        password: PASSWORD.into(),
    }
}

fn config(s: &Smbd, security: Security, dialect: Dialect) -> Config {
    let mut c = Config::new(s.addr(), "127.0.0.1", user(), security);
    c.dialects = vec![dialect];
    c
}

/// Writes, reads back, lists, stats and deletes one file.
fn round_trip(c: &mut Client, name: &str) {
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
    let f = c.create(name, Open::NewFile).unwrap();
    c.write_all_at(&f, 0, &data, name).unwrap();
    c.flush(&f).unwrap();
    c.close(&f).unwrap();
    let f = c.create(name, Open::ReadFile).unwrap();
    assert_eq!(f.end_of_file, data.len() as u64);
    let mut back = Vec::new();
    while back.len() < data.len() {
        let off = back.len() as u64;
        let n = c.read_at(&f, off, 65536, &mut back, name).unwrap();
        assert!(n > 0, "short file");
    }
    assert!(back == data, "read back differs");
    assert_eq!(c.stat(&f, name).unwrap().0, data.len() as u64);
    c.close(&f).unwrap();
    let root = c.create("", Open::Dir).unwrap();
    let names: Vec<String> = c
        .list(&root, "")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.iter().any(|n| n == name), "{names:?}");
    c.close(&root).unwrap();
    let f = c.create(name, Open::Existing).unwrap();
    c.delete_on_close(&f, name).unwrap();
    c.close(&f).unwrap();
    assert!(matches!(
        c.create(name, Open::ReadFile),
        Err(Error::Status { .. })
    ));
}

#[test]
fn every_dialect_and_security_mode_interoperates_with_samba() {
    let Some(s) = Smbd::start("") else { return };
    for dialect in Dialect::ALL {
        for security in [Security::Plain, Security::Sign, Security::Encrypt] {
            let what = format!("{} {}", dialect.name(), security.name());
            let r = Client::connect(config(&s, security, dialect));
            if security == Security::Encrypt && dialect < Dialect::Smb30 {
                assert!(
                    matches!(r, Err(Error::Unsupported(_))),
                    "{what}: {:?}",
                    r.err()
                );
                continue;
            }
            let mut c = r.unwrap_or_else(|e| panic!("{what}: {e}\n{}", s.log()));
            c.tree_connect("rw")
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let info = c.info();
            assert_eq!(info.dialect, dialect, "{what}");
            assert!(!info.guest, "{what}");
            match security {
                Security::Plain => assert_eq!((info.signing, info.cipher), (None, None), "{what}"),
                Security::Sign => {
                    let want = match dialect {
                        Dialect::Smb202 | Dialect::Smb21 => SigningAlg::HmacSha256,
                        Dialect::Smb30 | Dialect::Smb302 => SigningAlg::AesCmac,
                        Dialect::Smb311 => SigningAlg::AesGmac,
                    };
                    assert_eq!(info.signing, Some(want), "{what}");
                    assert_eq!(info.cipher, None, "{what}");
                }
                Security::Encrypt => {
                    let want = if dialect == Dialect::Smb311 {
                        Cipher::Aes128Gcm
                    } else {
                        Cipher::Aes128Ccm
                    };
                    assert_eq!(info.cipher, Some(want), "{what}");
                }
            }
            if dialect != Dialect::Smb202 {
                assert!(info.max_write_bytes > 65536, "{what}: large MTU {info:?}");
            }
            round_trip(
                &mut c,
                &format!("rt-{}-{}.bin", dialect.name(), security.name()),
            );
            c.logoff();
        }
    }
}

#[test]
fn smb311_ccm_and_cmac_when_offered_alone() {
    let Some(s) = Smbd::start("") else { return };
    let mut cfg = config(&s, Security::Encrypt, Dialect::Smb311);
    cfg.ciphers = vec![Cipher::Aes128Ccm];
    let mut c = Client::connect(cfg).unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    c.tree_connect("rw").unwrap();
    assert_eq!(c.info().cipher, Some(Cipher::Aes128Ccm));
    round_trip(&mut c, "ccm.bin");
    c.logoff();
    let mut cfg = config(&s, Security::Sign, Dialect::Smb311);
    cfg.signing = vec![SigningAlg::AesCmac];
    let mut c = Client::connect(cfg).unwrap();
    c.tree_connect("rw").unwrap();
    assert_eq!(c.info().signing, Some(SigningAlg::AesCmac));
    round_trip(&mut c, "cmac.bin");
    c.logoff();
}

#[test]
fn pipelined_writes_and_reads_stay_within_credits() {
    let Some(s) = Smbd::start("") else { return };
    let mut c = Client::connect(config(&s, Security::Plain, Dialect::Smb311)).unwrap();
    c.tree_connect("rw").unwrap();
    let block = c.max_write().min(1 << 20);
    let f = c.create("pipe.bin", Open::NewFile).unwrap();
    let data = vec![0x5au8; block as usize];
    let blocks = 32u64;
    let (mut next, mut done, mut most) = (0u64, 0u64, 0usize);
    while done < blocks {
        while next < blocks && c.in_flight() < 8 && c.can_send(data.len()) {
            c.submit_write(&f, next * u64::from(block), &data).unwrap();
            next += 1;
        }
        most = most.max(c.in_flight());
        let r = c.complete().unwrap();
        assert_eq!(c.write_result(&r, "pipe.bin").unwrap(), block);
        c.recycle(r);
        done += 1;
    }
    assert_eq!(most, 8, "the window never filled");
    assert!(
        c.info().credits_granted >= 8 * (block / 65536),
        "{:?}",
        c.info()
    );
    c.close(&f).unwrap();
    let f = c.create("pipe.bin", Open::ReadFile).unwrap();
    assert_eq!(f.end_of_file, blocks * u64::from(block));
    for i in 0..4 {
        c.submit_read(&f, i * u64::from(block), block).unwrap();
    }
    for _ in 0..4 {
        let r = c.complete().unwrap();
        assert_eq!(
            c.read_result(&r, block, "pipe.bin").unwrap().len(),
            block as usize
        );
        c.recycle(r);
    }
    c.close(&f).unwrap();
    c.logoff();
}

#[test]
fn guest_logs_on_anonymously() {
    let Some(s) = Smbd::start("") else { return };
    let cfg = Config::new(
        s.addr(),
        "127.0.0.1",
        Credentials::Anonymous,
        Security::Plain,
    );
    let mut c = Client::connect(cfg).unwrap();
    c.tree_connect("rw").unwrap();
    assert!(c.info().guest);
    round_trip(&mut c, "guest.bin");
    c.logoff();
    let cfg = Config::new(
        s.addr(),
        "127.0.0.1",
        Credentials::Anonymous,
        Security::Sign,
    );
    let e = Client::connect(cfg).err().unwrap();
    assert!(e.to_string().contains("--user"), "{e}");
}

/// Samba refuses a guest when it requires encryption: the error says that
/// may be why, not "check the password" of a user nobody gave.
#[test]
fn a_guest_refused_by_required_encryption_is_told_why() {
    let Some(s) = Smbd::start("smb encrypt = required") else {
        return;
    };
    let cfg = Config::new(
        s.addr(),
        "127.0.0.1",
        Credentials::Anonymous,
        Security::Plain,
    );
    let e = Client::connect(cfg).err().unwrap();
    assert!(matches!(e, Error::GuestRefused), "{e:?}");
    assert!(e.to_string().contains("smb encrypt = required"), "{e}");
}

#[test]
fn errors_say_what_to_change() {
    let Some(s) = Smbd::start("") else { return };
    let mut bad = config(&s, Security::Plain, Dialect::Smb311);
    bad.credentials = Credentials::User {
        user: USER.into(),
        domain: String::new(),
        password: "wrong".into(),
    };
    let e = Client::connect(bad).err().unwrap();
    assert!(matches!(e, Error::LogonFailure { .. }), "{e:?}");
    assert!(
        e.to_string().contains("check --user and the password"),
        "{e}"
    );

    let mut c = Client::connect(config(&s, Security::Plain, Dialect::Smb311)).unwrap();
    let e = c.tree_connect("nosuch").unwrap_err();
    assert!(matches!(e, Error::BadNetworkName { .. }), "{e:?}");
    assert!(e.to_string().contains("'nosuch'"), "{e}");

    // A directory that exists is refused, not reused.
    let mut c = Client::connect(config(&s, Security::Plain, Dialect::Smb311)).unwrap();
    c.tree_connect("rw").unwrap();
    let d = c.create("nastune-bench-taken", Open::NewDir).unwrap();
    c.close(&d).unwrap();
    let e = c.create("nastune-bench-taken", Open::NewDir).unwrap_err();
    assert!(matches!(e, Error::Exists { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("'nastune-bench-taken' already exists"),
        "{e}"
    );

    let mut c = Client::connect(config(&s, Security::Plain, Dialect::Smb311)).unwrap();
    c.tree_connect("ro").unwrap();
    let e = c.create("new.bin", Open::NewFile).unwrap_err();
    assert!(matches!(e, Error::AccessDenied { .. }), "{e:?}");
    assert!(e.to_string().contains("read-only"), "{e}");

    let mut c = Client::connect(config(&s, Security::Plain, Dialect::Smb311)).unwrap();
    c.tree_connect("small").unwrap();
    let root = c.create("", Open::Root).unwrap();
    let free = c.free_space(&root).unwrap();
    assert!(free > 0 && free <= 4 << 20, "free {free}");
    let f = c.create("fill.bin", Open::NewFile).unwrap();
    let e = c
        .write_all_at(&f, 0, &vec![1u8; 8 << 20], "fill.bin")
        .unwrap_err();
    assert!(matches!(e, Error::DiskFull { .. }), "{e:?}");
    assert!(e.to_string().contains("free space"), "{e}");
}

#[test]
fn smb1_only_server_is_named() {
    let Some(s) = Smbd::start("  server min protocol = NT1\n  server max protocol = NT1\n") else {
        return;
    };
    let e = Client::connect(config(&s, Security::Plain, Dialect::Smb311))
        .err()
        .unwrap();
    assert!(matches!(e, Error::Smb1Only), "{e:?}");
    assert!(e.to_string().contains("server min protocol"), "{e}");
}
