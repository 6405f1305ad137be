//! `nastune advise`: probe, evaluate the rules, print findings, save the run.

use std::process::ExitCode;

use crate::advise::{self, Context, FindingsDoc, Measurements};
use crate::cli::{AdviseArgs, GlobalArgs};
use crate::probe;
use crate::report::advise_text;
use crate::root::Root;
use crate::store::RunKind;
use anyhow::Context as _;

pub use crate::advise::SCHEMA_VERSION;

pub fn run(args: &AdviseArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    if args.list {
        let out = if args.json {
            let infos: Vec<_> = advise::rules().iter().map(|r| &r.info).collect();
            let doc = serde_json::json!({
                "schema_version": SCHEMA_VERSION,
                "tool_version": env!("CARGO_PKG_VERSION"),
                "rules": infos,
            });
            crate::output::json_line(&doc)?
        } else {
            advise_text::render_registry()
        };
        crate::output::write_result(&out, args.json)?;
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
            crate::note!(
                "warning: section '{section}' was not read, so no rule checked it: {}",
                problem.unwrap_or("unknown error")
            );
        }
    }
    let measurements = match &store {
        Some(store) => super::stored_measurements(store, &snapshot.host_id)?,
        None => Measurements::default(),
    };
    let findings = advise::evaluate(&Context {
        snapshot: &snapshot,
        measurements: &measurements,
    });
    let doc = FindingsDoc {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        host_id: snapshot.host_id.clone(),
        timestamp: snapshot.timestamp.clone(),
        findings,
    };
    if let Some(store) = &store {
        let run = store.begin_run(RunKind::Advise, &snapshot.host_id, &super::command_line())?;
        store.save(run, &snapshot)?;
        store.save(run, &doc)?;
        store.finish_run(run, "ok")?;
    }
    let out = if args.json {
        crate::output::json_line(&doc)?
    } else {
        advise_text::render_findings(&doc.findings)
    };
    crate::output::write_result(&out, args.json)?;
    let failed = args
        .fail_on
        .is_some_and(|limit| doc.findings.iter().any(|f| f.severity >= limit));
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
