use crate::util::*;

fn advise(boxname: &str, extra: &[&str]) -> std::process::Output {
    let root = fixtures().join("boxes").join(boxname);
    nastune()
        .args(["advise", "--no-store", "--root"])
        .arg(root)
        .args(extra)
        .output()
        .unwrap()
}

fn rule_ids(v: &serde_json::Value) -> Vec<&str> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule_id"].as_str().unwrap())
        .collect()
}

fn finding<'a>(v: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule_id"] == id)
        .unwrap()
}

#[test]
fn fail_on_sets_the_exit_code() {
    // The Pi's io pressure is a warning.
    let o = advise("rpi2-luks", &["--fail-on", "warning"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = advise("rpi2-luks", &["--fail-on", "critical"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = advise("rpi2-luks", &["--fail-on", "dire"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("dire"));
}

#[test]
fn json_findings_carry_evidence_and_typed_changes() {
    let o = advise("pogoplug-v4", &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["schema_version"], 1);
    let ids = rule_ids(&v);
    assert!(ids.contains(&"small-ram-without-zram"), "{ids:?}");
    assert!(ids.contains(&"cpu-without-aes"), "{ids:?}");
    let zram = finding(&v, "small-ram-without-zram");
    assert_eq!(zram["recommendation"][0]["kind"], "advice_only");
    assert_eq!(zram["risk"], "advice_only");
}

#[test]
fn advise_runs_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixtures().join("boxes/rk3399-raid5");
    let o = run_with_db(dir.path(), &["advise", "--root", root.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_with_db(
        dir.path(),
        &["history", "list", "--kind", "advise", "--json"],
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 1);
}

#[test]
fn rules_doc_is_generated_from_the_registry() {
    let o = nastune().args(["generate", "rules-doc"]).output().unwrap();
    assert!(o.status.success());
    let list = nastune().args(["advise", "--list"]).output().unwrap();
    for line in stdout(&list).lines() {
        let id = line.split_whitespace().next().unwrap();
        assert!(
            stdout(&o).contains(&format!("## `{id}`")),
            "rules doc lacks {id}"
        );
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/rules.md");
    assert_golden(&path, &stdout(&o));
}

#[test]
fn oldguide_network_and_vm_folklore_is_flagged_end_to_end() {
    let o = advise("oldguide", &["--json", "--fail-on", "warning"]);
    // tcp_timestamps=0, vfs_cache_pressure=1000, txqueuelen 5000 are warnings.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let ids = rule_ids(&v);
    for id in [
        "tcp-timestamps-off",
        "tcp-buffer-max-lowered",
        "netdev-backlog-raised",
        "txqueuelen-large",
        "nic-offloads-off",
        "swappiness-for-swap-kind",
        "vfs-cache-pressure",
        "sysctl-removed-key",
        "sysctl-overridden",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    let ts = finding(&v, "tcp-timestamps-off");
    assert_eq!(ts["recommendation"][0]["kind"], "sysctl");
    assert_eq!(ts["recommendation"][0]["value"], "1");
    assert_eq!(ts["settings"][0], "sysctl:net.ipv4.tcp_timestamps");
}

#[test]
fn oldguide_box_is_flagged_end_to_end() {
    // SMB1 via `server min protocol = NT1` is critical.
    let o = advise("oldguide", &["--fail-on", "critical"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    for needle in [
        "(smb1-enabled)",
        "8192 entries × 4 KiB page × 4 disks = 128 MiB",
        "sets scheduler 'noop' on sd[a-z]",
        "fstab /srv: remove 'nobh'",
        "runs hdparm -M 254",
    ] {
        assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
    }
}
