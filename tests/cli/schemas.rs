//! Every `--json` output is versioned and documented in docs/json-schemas.md.

use clap::CommandFactory;

use crate::util::{nastune, stderr, stdout};

/// Paths of the subcommands that take `--json` ("bench disk", "net serve", ...).
fn json_commands(cmd: &clap::Command, prefix: &str, out: &mut Vec<String>) {
    for sub in cmd.get_subcommands() {
        let path = format!("{prefix}{}", sub.get_name()).trim().to_string();
        if sub.get_arguments().any(|a| a.get_long() == Some("json")) {
            out.push(path.clone());
        }
        json_commands(sub, &format!("{path} "), out);
    }
}

#[test]
fn every_json_output_is_in_the_schema_document() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json-schemas.md"),
    )
    .unwrap();
    let rows: Vec<&str> = doc.lines().filter(|l| l.starts_with("| `")).collect();
    let mut commands = Vec::new();
    json_commands(&nastune::cli::Cli::command(), "", &mut commands);
    assert!(commands.len() >= 10, "{commands:?}");
    for c in &commands {
        assert!(
            rows.iter()
                .any(|r| r.contains(&format!("`{c} ")) && r.contains("--json`")),
            "'{c} --json' has no row in docs/json-schemas.md"
        );
    }
}

#[test]
fn advise_list_json_carries_its_schema_version() {
    let o = nastune()
        .args(["advise", "--list", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["schema_version"], 1);
    let rules = v["rules"].as_array().unwrap();
    assert!(rules.len() > 10);
    assert!(
        rules
            .iter()
            .all(|r| r["id"].is_string() && r["checks"].is_string())
    );
}

fn probe_of(boxname: &str) -> serde_json::Value {
    let o = nastune()
        .args(["probe", "--json", "--no-store", "--root"])
        .arg(crate::util::fixtures().join("boxes").join(boxname))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn every_probe_section_and_doctor_field_is_in_the_schema_document() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json-schemas.md"),
    )
    .unwrap();
    let probe = doc
        .split("## probe (")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap();
    let v = probe_of("rpi4-usb");
    for (key, section) in v.as_object().unwrap() {
        if section.get("status").is_some() {
            assert!(
                probe.contains(&format!("`{key}`")),
                "section '{key}' undocumented"
            );
        }
    }
    let rk = probe_of("rk3399-raid5");
    let objects = [
        &v["usb"]["data"],
        &v["usb"]["data"]["devices"][0],
        &v["usb"]["data"]["disks"][1],
        &v["links"]["data"]["nics"][0],
        &v["links"]["data"]["nics"][0]["ethtool"]["data"]["modes"]["data"],
        &v["links"]["data"]["nics"][0]["ethtool"]["data"]["eee"]["data"],
        &rk["links"]["data"]["pcie"][0],
        &rk["irq"]["data"],
        &rk["irq"]["data"]["nics"][0],
        &rk["irq"]["data"]["nics"][0]["queues"][0],
        &rk["irq"]["data"]["nics"][0]["rps"][0],
    ];
    for o in objects {
        for key in o.as_object().expect("an object").keys() {
            assert!(
                probe.contains(&format!("`{key}`")),
                "field '{key}' undocumented"
            );
        }
    }
}
