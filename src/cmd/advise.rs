//! `nastune advise`: probe, evaluate the rules, print findings, save the run.

use std::process::ExitCode;

use anyhow::Context as _;
use serde::Serialize;

use crate::advise::{self, Context, Finding};
use crate::cli::{AdviseArgs, GlobalArgs};
use crate::probe;
use crate::report::advise_text;
use crate::root::Root;

/// Version of the `advise --json` document.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct AdviseDoc<'a> {
    schema_version: u32,
    tool_version: &'static str,
    host_id: &'a str,
    timestamp: &'a str,
    findings: &'a [Finding],
}

pub fn run(args: &AdviseArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    if args.list {
        let out = if args.json {
            let infos: Vec<_> = advise::rules().iter().map(|r| &r.info).collect();
            let doc = serde_json::json!({
                "schema_version": SCHEMA_VERSION,
                "tool_version": env!("CARGO_PKG_VERSION"),
                "rules": infos,
            });
            serde_json::to_string_pretty(&doc)? + "\n"
        } else {
            advise_text::render_registry()
        };
        crate::output::write_stdout(out.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let store = super::open_store(global)?;
    let root = match &args.root {
        Some(dir) => Root::tree(dir).context("--root")?,
        None => Root::live(),
    };
    let snapshot = probe::probe(&root);
    // Rules cannot judge a section that was not read; say so rather than look clean.
    for (section, status, problem) in snapshot.section_statuses() {
        if status == "failed" {
            eprintln!(
                "warning: section '{section}' was not read, so no rule checked it: {}",
                problem.unwrap_or("unknown error")
            );
        }
    }
    let findings = advise::evaluate(&Context {
        snapshot: &snapshot,
    });
    let doc = AdviseDoc {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION"),
        host_id: &snapshot.host_id,
        timestamp: &snapshot.timestamp,
        findings: &findings,
    };
    if let Some(store) = &store {
        let run = store.begin_run("advise", &snapshot.host_id, &super::command_line())?;
        store.save_document(run, "snapshot", probe::SCHEMA_VERSION, &snapshot)?;
        store.save_document(run, "findings", SCHEMA_VERSION, &doc)?;
        store.finish_run(run, "ok")?;
    }
    let out = if args.json {
        serde_json::to_string_pretty(&doc)? + "\n"
    } else {
        advise_text::render_findings(&findings)
    };
    crate::output::write_stdout(out.as_bytes())?;
    let failed = args
        .fail_on
        .is_some_and(|limit| findings.iter().any(|f| f.severity >= limit));
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
