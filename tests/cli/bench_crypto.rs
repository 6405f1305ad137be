use crate::util::*;

/// A quick run: tiny durations, no KDF, two sizes.
fn quick(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "bench",
        "crypto",
        "--duration",
        "0.02",
        "--size",
        "512,4k",
        "--depth",
        "2",
        "--no-kdf",
    ];
    args.extend_from_slice(extra);
    run_with_db(dir, &args)
}

#[test]
fn bench_crypto_json_has_every_cipher_and_saves_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = quick(dir.path(), &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["request_sizes_bytes"], serde_json::json!([512, 4096]));
    let user = v["user_space"].as_array().unwrap();
    assert_eq!(user.len(), 7);
    for c in user {
        let points = c["points"].as_array().unwrap();
        assert_eq!(points.len(), 2, "{c}");
        for p in points {
            assert!(p["encrypt"]["bytes_per_sec"].as_f64().unwrap() > 0.0, "{p}");
            assert!(p["decrypt"]["bytes"].as_u64().unwrap() > 0, "{p}");
        }
    }
    let kernel = v["kernel"].as_array().unwrap();
    assert!(!kernel.is_empty());
    if v["afalg"]["available"] == false {
        // This machine: every kernel cipher says why it was not measured.
        assert_eq!(v["afalg"]["errno"], "EAFNOSUPPORT");
        for c in kernel {
            assert_eq!(c["not_measured"]["errno"], "EAFNOSUPPORT", "{c}");
            assert!(c["points"].as_array().unwrap().is_empty());
        }
    } else {
        println!("AF_ALG present: checking kernel points instead");
        assert!(
            kernel
                .iter()
                .any(|c| !c["points"].as_array().unwrap().is_empty())
        );
    }
    assert!(v["kdf"].is_null());
    assert!(!v["recommendation"]["reason"].as_str().unwrap().is_empty());

    let c = rusqlite::Connection::open(dir.path().join("nastune.db")).unwrap();
    let (kind, status, doc): (String, String, String) = c
        .query_row(
            "SELECT r.kind, r.status, d.kind FROM runs r JOIN documents d ON d.run_id = r.id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    // A run the validity guard judged disturbed (a loaded box) is stored as such.
    let expected = if v["validity"]["verdict"] == "disturbed" {
        "disturbed"
    } else {
        "ok"
    };
    assert_eq!(
        (kind.as_str(), status.as_str(), doc.as_str()),
        ("bench-crypto", expected, "crypto"),
        "{}",
        v["validity"]
    );
}

#[test]
fn bench_crypto_table_explains_a_missing_af_alg_and_names_a_cipher() {
    let dir = tempfile::tempdir().unwrap();
    let o = quick(dir.path(), &["--cipher", "xts,gcm"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(t.contains("aes-xts-plain64"), "{t}");
    assert!(t.contains("aes-gcm"), "{t}");
    assert!(
        !t.contains("chacha20-poly1305"),
        "--cipher filter ignored:\n{t}"
    );
    assert!(t.contains("For a new LUKS volume on this box:"), "{t}");
    assert!(t.contains("cryptsetup luksFormat --type luks2"), "{t}");
    if t.contains("AF_ALG unavailable") {
        assert!(t.contains("EAFNOSUPPORT"), "{t}");
        assert!(t.contains("not measured: EAFNOSUPPORT"), "{t}");
    }
}

#[test]
fn bench_crypto_kdf_reports_pbkdf2_and_a_capped_argon2() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_with_db(
        dir.path(),
        &[
            "bench",
            "crypto",
            "--cipher",
            "chacha",
            "--size",
            "4096",
            "--duration",
            "0.01",
            "--argon2-memory-kib",
            "1024",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let pbkdf2 = v["kdf"]["pbkdf2"].as_array().unwrap();
    let hashes: Vec<&str> = pbkdf2.iter().map(|p| p["hash"].as_str().unwrap()).collect();
    assert_eq!(hashes, ["sha1", "sha256", "sha512"]);
    assert!(
        pbkdf2
            .iter()
            .all(|p| p["iterations_per_sec"].as_f64().unwrap() > 0.0)
    );
    let a = &v["kdf"]["argon2id"];
    assert_eq!(a["status"], "ok", "{a}");
    assert_eq!(a["data"]["memory_kib"], 1024);
    assert_eq!(a["data"]["iterations"], 4);
    // The reference implementation's output for these parameters (Debian's `argon2`:
    // `echo -n "nastune benchmark" | argon2 0123456789abcdef -id -t 4 -k 1024 -p P -l 32 -r`),
    // which a derivation with fewer passes than reported cannot produce.
    let want = match a["data"]["lanes"].as_u64().unwrap() {
        1 => "90f066adc721759f716bd55bfe0087761f1af5a56c6e7d02db204f5ae756d1d1",
        2 => "51094cb1feb25b63f48db51f5e17d4ded89ff817841f4b206f50822d8b4e2a40",
        3 => "1f0eb14eda7a49157edf466ad3a185073bb92c21eddd1d9d72d70a452b322b8a",
        4 => "99609d94cb043055312e1a40075c5defd365bfabeed5ebd3cd27b78702046fd7",
        other => panic!("lanes {other} outside LUKS2's 1..=4"),
    };
    assert_eq!(a["data"]["derived_key_hex"], want, "{a}");
    assert!(
        a["data"]["memory_capped"]
            .as_str()
            .unwrap()
            .contains("below LUKS2's default")
    );
}

#[test]
fn bench_crypto_self_test_passes_and_explains_the_kernel_path() {
    let o = nastune()
        .args(["bench", "crypto", "--self-test"])
        .output()
        .unwrap();
    let t = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{t}{}", stderr(&o));
    assert!(
        t.contains("PASS  user space       XTS-AES-256 IEEE 1619 vector 10"),
        "{t}"
    );
    assert!(
        t.contains("PASS  user space       ChaCha20-Poly1305 RFC 8439"),
        "{t}"
    );
    assert!(
        t.contains("PASS  user space       Argon2id RFC 9106"),
        "{t}"
    );
    assert!(!t.contains("FAIL"), "{t}");
    let afalg_missing = t.contains("SKIP  kernel (AF_ALG)");
    if afalg_missing {
        assert!(t.contains("EAFNOSUPPORT"), "{t}");
        // --require-afalg turns the missing kernel path into a failure.
        let o = nastune()
            .args(["bench", "crypto", "--self-test", "--require-afalg"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("--require-afalg"), "{}", stderr(&o));
    } else {
        assert!(
            t.contains("PASS  kernel (AF_ALG)  XTS-AES-128 IEEE 1619 vector 1"),
            "{t}"
        );
    }
}

#[test]
fn bench_crypto_bad_flags_are_clear_usage_errors() {
    for (args, needle) in [
        (&["--size", "100"][..], "multiples of 16"),
        (&["--size", "1M"][..], "'1M'"),
        (&["--duration", "0"][..], "out of range"),
        (&["--depth", "0"][..], "0"),
        (&["--cipher", "rot13"][..], "matches no cipher"),
        (&["--require-afalg"][..], "--self-test"),
    ] {
        let o = nastune()
            .args(["bench", "crypto", "--no-store"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn argon2id_is_announced_with_its_expected_time() {
    let o = nastune()
        .args([
            "bench",
            "crypto",
            "--no-store",
            "--json",
            "--cipher",
            "gcm",
            "--size",
            "4096",
            "--duration",
            "0.01",
            "--argon2-memory-kib",
            "131072",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    // Before the derivation, with how long it should take.
    let line = err
        .lines()
        .find(|l| l.starts_with("bench crypto: Argon2id at "))
        .unwrap_or_else(|| panic!("no note before Argon2id:\n{err}"));
    let about: f64 = line
        .split_once("about ")
        .and_then(|(_, r)| r.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let a = &v["kdf"]["argon2id"]["data"];
    let took = a["wall_secs"].as_f64().unwrap_or_else(|| panic!("{a}"));
    let kib = a["memory_kib"].as_u64().unwrap();
    assert!(line.contains(&format!("at {kib} KiB")), "{line}");
    // One pass over 16 MiB timed, scaled to 128 MiB and 4 passes: the same
    // work, so within a factor of 4 even on a box shared with other builds.
    assert!(
        about >= took / 4.0 && about <= took * 4.0 + 0.2,
        "announced {about} s, took {took} s"
    );
}
