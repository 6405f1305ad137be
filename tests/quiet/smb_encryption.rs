//! The smb.conf must-show of `tune try`, for real: a private smbd whose
//! encryption is tried off (a gain, refused without --allow-weaker-security,
//! kept with it) and on (a loss, reverted), smb.conf byte-identical after every
//! revert. In the quiet binary: the gain is a timing, and another test's load
//! (a lab VM, a web server) widened its interval past "helps" in a full run.

use std::path::Path;
use std::process::Output;

use crate::smbd::{PASSWORD, Smbd, USER};
use crate::tune::json_of;
use crate::util::*;

/// `tune try --root` the smbd's tree, judged by a sequential write to its `rw` share.
fn try_smb(smbd: &Smbd, db: &Path, set: &str, extra: &[&str]) -> Output {
    nastune()
        .args(["tune", "try", "--yes", "--json", "--root"])
        .arg(smbd.dir.path())
        .args(["--set", set, "--bench"])
        .arg(format!("smb:{}", smbd.unc("rw")))
        // AES-GCM is cheap with AES-NI (a third of the throughput here) and
        // other builds share the box: enough runs to see its cost anyway.
        .args(["--user", USER, "--smb-size", "96M", "--runs", "12"])
        .args(["--confidence", "0.9"])
        .args(extra)
        .arg("--db")
        .arg(db.join("nastune.db"))
        .env("NASTUNE_SMB_PASSWORD", PASSWORD)
        .output()
        .unwrap()
}

/// The reverse: turning encryption on is slower on average, and reverted.
fn encryption_on_costs_and_is_reverted() {
    let Some(smbd) = Smbd::start("") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let conf = smbd.conf();
    let before = std::fs::read(&conf).unwrap();
    let doc = json_of(&try_smb(
        &smbd,
        t.path(),
        "smb.conf:global:smb encrypt=required",
        &[],
    ));
    // Slower on average; beyond the noise only when the box is quiet enough.
    assert!(doc["diff"].as_f64().unwrap() < 0.0, "{doc}");
    assert_ne!(doc["effect"], "helps", "{doc}");
    assert_eq!(doc["verdict"], "revert", "{doc}");
    assert!(
        doc.get("security_trade").is_none(),
        "stronger is no trade: {doc}"
    );
    assert_eq!(
        std::fs::read(&conf).unwrap(),
        before,
        "smb.conf after the revert"
    );
}

/// Both directions in one test, one after the other: two smbd trials at once
/// would each measure the other.
#[test]
fn try_smb_encryption_off_gains_and_is_kept_only_when_weaker_security_is_allowed() {
    let _serial = crate::net::heavy();
    let Some(smbd) = Smbd::start("  smb encrypt = required") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let conf = smbd.conf();
    let before = std::fs::read(&conf).unwrap();
    let set = "smb.conf:global:smb encrypt=off";

    // Without the flag: the gain is measured, then refused.
    let doc = json_of(&try_smb(&smbd, t.path(), set, &[]));
    assert_eq!(doc["metric"]["name"], "mb_per_sec", "{doc}");
    assert_eq!(
        doc["effect"], "helps",
        "encryption costs on this CPU: {doc}"
    );
    assert!(doc["diff"].as_f64().unwrap() > 0.0, "{doc}");
    assert_eq!(doc["verdict"], "revert", "{doc}");
    assert_eq!(doc["kept"], false);
    let reason = doc["reason"].as_str().unwrap();
    assert!(
        reason.contains("not kept: it lowers security, trading SMB encryption")
            && reason.contains("pass --allow-weaker-security to keep it"),
        "{reason}"
    );
    assert!(
        doc["security_trade"]
            .as_str()
            .unwrap()
            .contains("'required' -> 'off'")
    );
    assert_eq!(
        std::fs::read(&conf).unwrap(),
        before,
        "smb.conf after the revert"
    );

    // With it: kept, and said what it trades; rollback restores the bytes.
    let doc = json_of(&try_smb(&smbd, t.path(), set, &["--allow-weaker-security"]));
    assert_eq!(doc["verdict"], "keep", "{doc}");
    assert!(
        doc["reason"]
            .as_str()
            .unwrap()
            .contains("kept with --allow-weaker-security: it trades SMB encryption"),
        "{doc}"
    );
    let now = std::fs::read_to_string(&conf).unwrap();
    assert!(now.contains("smb encrypt = off"), "{now}");
    let o = run_with_db(t.path(), &["tune", "rollback"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&conf).unwrap(),
        before,
        "smb.conf after rollback"
    );
    drop(smbd);
    encryption_on_costs_and_is_reverted();
}
