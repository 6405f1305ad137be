//! Issue "Must show": `probe --root` on /proc and /sys trees captured on
//! machines nobody on the team built completes without a panic and says what it
//! could not read.

use std::path::Path;

use serde_json::Value;

use crate::ttar;
use crate::util::*;

const TREES: &[&str] = &["node_exporter.ttar", "procfs.ttar"];

fn extract(name: &str, dir: &Path) {
    let text = std::fs::read_to_string(fixtures().join("foreign").join(name)).unwrap();
    let n = ttar::extract(&text, dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(n > 5, "{name}: only {n} entries");
}

/// Every top-level object with a `status` is a probe section.
fn sections(v: &Value) -> Vec<(&String, &Value)> {
    v.as_object()
        .unwrap()
        .iter()
        .filter(|(_, s)| s.get("status").is_some())
        .collect()
}

#[test]
fn foreign_trees_probe_without_panic_and_name_what_is_missing() {
    for name in TREES {
        let work = tempfile::tempdir().unwrap();
        let tree = work.path().join("tree");
        extract(name, &tree);
        let o = nastune()
            .args(["probe", "--json", "--no-store", "--root"])
            .arg(&tree)
            .output()
            .unwrap();
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o))
            .unwrap_or_else(|e| panic!("{name}: probe --json is not JSON: {e}"));
        assert_eq!(v["source"], "tree");
        let all = sections(&v);
        assert!(all.len() >= 5, "{name}: {} sections", all.len());
        let mut ok = 0;
        for (section, s) in &all {
            match s["status"].as_str() {
                Some("ok") => {
                    assert!(s.get("data").is_some(), "{name}: {section}");
                    ok += 1;
                }
                Some("failed") | Some("unsupported") => {
                    let why = s["error"].as_str().or(s["reason"].as_str()).unwrap_or("");
                    assert!(!why.is_empty(), "{name}: {section} has no reason: {s}");
                    // A read problem names the path it could not read.
                    if why.contains("does not exist") || why.contains("not in the captured tree") {
                        assert!(why.contains('\''), "{name}: {section}: {why}");
                    }
                }
                other => panic!("{name}: section {section} has status {other:?}"),
            }
        }
        assert!(ok >= 1, "{name}: nothing probed ok");

        // Nothing under etc/ or .nastune/: the file services are absent (not an
        // error) and SMART says the capture lacks smartctl's output.
        let fs = &v["file_services"]["data"];
        assert!(
            fs["samba_absent"]
                .as_str()
                .unwrap()
                .contains("/etc/samba/smb.conf")
        );
        let smart = v["smart"]["reason"].as_str().unwrap_or_default();
        assert!(
            smart.contains(".nastune/smartctl-binary.json"),
            "{name}: {}",
            v["smart"]
        );

        // The readable summary renders too.
        let o = nastune()
            .args(["probe", "--no-store", "--root"])
            .arg(&tree)
            .output()
            .unwrap();
        assert!(o.status.success(), "{name}: {}", stderr(&o));
    }
}

#[test]
fn foreign_tree_sections_missing_files_name_the_path() {
    // procfs.ttar has no proc/cpuinfo or proc/meminfo; node_exporter.ttar has both.
    let work = tempfile::tempdir().unwrap();
    extract("procfs.ttar", work.path());
    let snap = nastune::probe::probe(&nastune::root::Root::tree(work.path()).unwrap());
    let statuses = snap.section_statuses();
    let cpu = statuses.iter().find(|s| s.0 == "cpu").unwrap();
    assert_eq!(cpu.1, "failed");
    assert!(cpu.2.unwrap().contains("proc/cpuinfo"), "{:?}", cpu.2);
    let mem = statuses.iter().find(|s| s.0 == "memory").unwrap();
    assert!(mem.2.unwrap().contains("proc/meminfo"), "{:?}", mem.2);

    let work = tempfile::tempdir().unwrap();
    extract("node_exporter.ttar", work.path());
    let snap = nastune::probe::probe(&nastune::root::Root::tree(work.path()).unwrap());
    let cpu = snap.cpu.data().expect("cpuinfo from node_exporter parses");
    assert_eq!(cpu.logical_cpus, 2);
    assert!(cpu.has_aes);
    assert_eq!(snap.memory.data().unwrap().total_bytes, 3_742_148 * 1024);
}
