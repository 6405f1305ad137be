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

#[test]
fn every_probe_section_is_in_the_schema_document() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json-schemas.md"),
    )
    .unwrap();
    let box_dir = crate::util::fixtures().join("boxes/rpi2-luks");
    let o = nastune()
        .args(["probe", "--json", "--no-store", "--root"])
        .arg(&box_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let sections: Vec<&String> = v
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, s)| s.get("status").is_some())
        .map(|(k, _)| k)
        .collect();
    assert!(sections.iter().any(|s| *s == "kernel_log"), "{sections:?}");
    for s in sections {
        assert!(
            doc.contains(&format!("`{s}`")),
            "probe section '{s}' is not in docs/json-schemas.md"
        );
    }
}
