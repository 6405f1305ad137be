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
    let o = nastune_gen().arg("rules-doc").output().unwrap();
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

/// A real `bench disk` run, stored as if it had measured the USB filesystem of
/// the rpi2-luks box (its host id, /srv/nas on dm-0): `advise --root` of that
/// box then weighs the dirty limit against the measured speed and names the run.
#[test]
fn dirty_limit_rule_uses_the_write_speed_a_stored_bench_measured() {
    use nastune::store::{RunKind, Store};
    let (t, boxdir) = crate::tune::copy_box("rpi2-luks");
    // 1 TB of dirty data is more than 5 s of any disk's writes: the rule fires
    // whatever this machine's disk measures.
    std::fs::write(boxdir.join("proc/sys/vm/dirty_bytes"), "1000000000000\n").unwrap();
    let data = t.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let o = run_with_db(
        t.path(),
        &[
            "bench",
            "disk",
            "--rw",
            "write",
            "--bs",
            "1m",
            "--runtime",
            "1",
            "--size",
            "8M",
            // Direct: a buffered write of 8 MiB is the page cache, no disk speed.
            "--direct",
            "--json",
            data.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));

    let db = t.path().join("nastune.db");
    let store = Store::open(&db).unwrap();
    let live = store
        .runs_of(Some(RunKind::BenchDisk), 1)
        .unwrap()
        .remove(0);
    let mut doc = nastune::runs::load(&store, live.id)
        .unwrap()
        .disk()
        .unwrap()
        .clone();
    doc.target.path = "/srv/nas/nastune-bench.tmp".into();
    doc.target.device = Some("dm-0".into());
    let host = nastune::probe::host::read_host_id(&nastune::root::Root::tree(&boxdir).unwrap());
    let run = store
        .begin_run(RunKind::BenchDisk, &host, &live.command)
        .unwrap();
    store.save(run, &doc).unwrap();
    store.finish_run(run, "ok").unwrap();
    drop(store);
    let written = doc.tests[0].write.as_ref().unwrap().bw_bytes;
    let mb = (written / 1e6).round().max(1.0) as u64;

    let o = run_with_db(
        t.path(),
        &["advise", "--json", "--root", boxdir.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "advise: using measurements of bench-disk run {run}"
        )),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let finding = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule_id"] == "dirty-limit-for-usb-disk")
        .unwrap_or_else(|| panic!("no dirty-limit finding in {v}"));
    let rationale = finding["rationale"].as_str().unwrap();
    assert!(
        rationale.contains(&format!(
            "the measured {mb} MB/s sequential write on dm-0 (/srv/nas) by bench disk run {run}"
        )),
        "{rationale}"
    );
    let dirty = finding["recommendation"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == "vm.dirty_bytes")
        .unwrap();
    assert_eq!(dirty["value"], (mb * 3_000_000).to_string());
}

/// Every qdisc the `qdisc-pfifo-fast` finding would set (sysctl default and tc root).
fn recommended_qdiscs(f: &serde_json::Value) -> Vec<String> {
    f["recommendation"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["key"] == "net.core.default_qdisc" || c["setting"] == "qdisc")
        .map(|c| c["value"].as_str().unwrap().to_string())
        .collect()
}

/// A copy of the pogoplug box at `t` in a temporary directory.
fn pogoplug_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(fixtures().join("boxes/pogoplug-v4"))
        .arg(dir.path().join("t"))
        .status()
        .unwrap();
    assert!(st.success());
    dir
}

/// A copy of the pogoplug box whose /proc/config.gz (made by gzip) has `config`.
fn pogoplug_with_config(config: &str) -> tempfile::TempDir {
    let dir = pogoplug_copy();
    let tree = dir.path().join("t");
    let plain = tree.join("proc/config");
    std::fs::write(&plain, config).unwrap();
    let st = std::process::Command::new("gzip")
        .arg(&plain)
        .status()
        .unwrap();
    assert!(st.success());
    dir
}

fn advise_json(root: &std::path::Path) -> serde_json::Value {
    let args = ["advise", "--no-store", "--json", "--root"];
    json_of(&nastune().args(args).arg(root).output().unwrap())
}

#[test]
fn pfifo_fast_finding_recommends_only_a_qdisc_in_the_kernels_config() {
    if !require(&[Need::Tool("gzip")]) {
        return;
    }
    let no_fq_codel = "CONFIG_NET_SCH_FQ=m\n# CONFIG_NET_SCH_FQ_CODEL is not set\n";
    let dir = pogoplug_with_config(no_fq_codel);
    let v = advise_json(&dir.path().join("t"));
    let f = finding(&v, "qdisc-pfifo-fast");
    assert_eq!(recommended_qdiscs(f), ["fq", "fq"], "{f}");
    let none = "CONFIG_TCP_CONG_CUBIC=y\n# CONFIG_NET_SCH_FQ_CODEL is not set\n";
    let dir = pogoplug_with_config(none);
    let v = advise_json(&dir.path().join("t"));
    let f = finding(&v, "qdisc-pfifo-fast");
    assert!(recommended_qdiscs(f).is_empty(), "{f}");
    assert_eq!(f["severity"], "info");
    let why = f["rationale"].as_str().unwrap_or_default();
    assert!(why.contains("no fair-queueing qdisc"), "{why}");
}

/// This box's kernel: when its config leaves fq_codel out, advise must not offer it.
#[test]
fn pfifo_fast_finding_on_this_box_offers_no_missing_qdisc() {
    let config = ["/proc/config.gz", "/boot"]
        .iter()
        .any(|p| std::path::Path::new(p).exists());
    if !config {
        skip("this box has no /proc/config.gz or /boot to read its kernel config from");
        return;
    }
    // Live (no --root): the root qdisc comes from rtnetlink, which a tree lacks.
    let v = json_of(
        &nastune()
            .args(["advise", "--no-store", "--json"])
            .output()
            .unwrap(),
    );
    let snap = json_of(
        &nastune()
            .args(["probe", "--no-store", "--json"])
            .output()
            .unwrap(),
    );
    let options = &snap["kernel_config"]["data"]["options"];
    let Some(f) = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule_id"] == "qdisc-pfifo-fast")
    else {
        skip("no physical NIC with pfifo_fast here, so the rule says nothing");
        return;
    };
    for (kind, option) in [
        ("fq_codel", "CONFIG_NET_SCH_FQ_CODEL"),
        ("fq", "CONFIG_NET_SCH_FQ"),
        ("cake", "CONFIG_NET_SCH_CAKE"),
    ] {
        if options[option] == "absent" {
            assert!(
                !recommended_qdiscs(f).iter().any(|q| q == kind),
                "{kind} is not in this kernel but advise recommends it: {f}"
            );
        }
    }
}

/// tune refuses a default qdisc the kernel's config leaves out, before writing anything.
#[test]
fn tune_plan_refuses_a_default_qdisc_the_kernel_lacks() {
    if !require(&[Need::Tool("gzip")]) {
        return;
    }
    let dir = pogoplug_with_config("CONFIG_NET_SCH_FQ=m\n# CONFIG_NET_SCH_FQ_CODEL is not set\n");
    let root = dir.path().join("t");
    let plan = |value: &str| {
        let set = format!("sysctl:net.core.default_qdisc={value}");
        let args = [
            "tune",
            "plan",
            "--root",
            root.to_str().unwrap(),
            "--set",
            &set,
        ];
        run_with_db(dir.path(), &args)
    };
    let o = plan("fq_codel");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(
            "'fq_codel' is not valid for 'sysctl:net.core.default_qdisc': this kernel has no \
             fq_codel: CONFIG_NET_SCH_FQ_CODEL is not set in '/proc/config.gz'; use one it has: fq"
        ),
        "{text}"
    );
    let o = plan("fq");
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A copy of the pogoplug box whose USB stick (sdb, a Cruzer Fit) is made an
/// Intenso Rainbow Line, a name no list of stick models holds, still claiming
/// rotational=1 as usb-storage sticks do, with its partition at sector 63.
fn pogoplug_with_unnamed_stick(removable: &str) -> tempfile::TempDir {
    let dir = pogoplug_copy();
    let tree = dir.path().join("t");
    let sdb = std::fs::canonicalize(tree.join("sys/block/sdb")).unwrap();
    let usb = tree.join("sys/devices/platform/soc/soc:internal-regs/f1050000.ehci/usb1/1-1");
    for (file, text) in [
        (sdb.join("device/vendor"), "Intenso \n"),
        (sdb.join("device/model"), "Rainbow Line    \n"),
        (sdb.join("removable"), removable),
        (sdb.join("queue/rotational"), "1\n"),
        (sdb.join("sdb1/start"), "63\n"),
        (usb.join("manufacturer"), "Intenso\n"),
        (usb.join("product"), "Rainbow Line\n"),
    ] {
        std::fs::write(&file, text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
    dir
}

/// A stick reporting rotational=1 with a model no list knows is recognised as
/// flash from its removable bit, size and missing SMART, and the finding says so.
#[test]
fn misaligned_stick_claiming_rotation_is_a_flash_finding_naming_the_evidence() {
    let dir = pogoplug_with_unnamed_stick("1\n");
    let v = advise_json(&dir.path().join("t"));
    let f = finding(&v, "partition-misaligned-flash");
    assert_eq!(
        f["title"], "sdb1 starts at sector 63 on USB flash sdb, not at a 1 MiB boundary",
        "{f}"
    );
    let evidence = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["fact"] == "sdb flash evidence")
        .unwrap_or_else(|| panic!("no flash evidence: {f}"));
    let why = evidence["value"].as_str().unwrap();
    assert!(
        why.contains("removable=1")
            && why.contains("14 GiB, stick-sized")
            && why.contains("rotational=1 set aside"),
        "{why}"
    );
    assert!(
        f["rationale"]
            .as_str()
            .unwrap()
            .contains("sdb is flash: removable=1"),
        "{f}"
    );
    // The same stick reporting fixed media leaves only its missing SMART
    // answer: not enough to call it flash, so no finding rather than a guess.
    let dir = pogoplug_with_unnamed_stick("0\n");
    let v = advise_json(&dir.path().join("t"));
    let ids: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rule_id"].as_str())
        .collect();
    assert!(!ids.contains(&"partition-misaligned-flash"), "{ids:?}");
}
