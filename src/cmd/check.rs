//! `nastune check`, the main job: probe, a quick set of measurements (disk in a
//! directory, crypto, and what else is cheap), advise, and a short ranked summary
//! naming the bottleneck of each data path. Everything is saved as one run.
//! The engine is crate::check; this file builds its plan, stores and prints.

use std::process::ExitCode;

use crate::check::{self, CheckPlan};
use crate::cli::GlobalArgs;
use crate::cli::check::CheckArgs;
use crate::root::Root;
use anyhow::Context as _;

pub use crate::advise::check::{CheckDoc, SCHEMA_VERSION};

pub fn run(args: &CheckArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let request = args.request()?;
    let root = match &args.root {
        Some(dir) => Root::tree(dir).context("--root")?,
        None => Root::live(),
    };
    let plan = CheckPlan::new(request, &root)?;
    let store = super::open_store(global)?;
    let Ok(ran) = check::run(&plan, &root) else {
        crate::note!("nastune: interrupted; temporary files removed");
        return Ok(ExitCode::from(crate::bench::interrupt::EXIT_CODE));
    };
    let doc = &ran.doc;
    let disturbed = args.guard.strict && doc.validity.as_ref().is_some_and(|v| !v.is_clean());
    let mut stored = None;
    if let Some(store) = &store {
        let run = store.begin_run(
            crate::store::RunKind::Check,
            &ran.snapshot.host_id,
            &super::command_line(),
        )?;
        ran.save(store, run)?;
        store.finish_run(run, "ok")?;
        stored = Some(run);
    }
    let out = if args.json {
        crate::output::json_line(doc)?
    } else {
        crate::report::check_text::render(doc, stored)
    };
    crate::output::write_result(&out, args.json)?;
    let failed = args
        .fail_on
        .is_some_and(|limit| doc.findings.iter().any(|f| f.severity >= limit));
    Ok(if failed {
        ExitCode::from(1)
    } else {
        super::strict_exit(disturbed)
    })
}
