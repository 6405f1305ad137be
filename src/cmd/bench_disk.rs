//! `nastune bench disk [PATH]`: plan the tests, check the target is safe to
//! use, run, report, store.

use std::process::ExitCode;

use crate::bench::disk::{self, TestStatus};
use crate::bench::interrupt;
use crate::cli::bench_disk::DiskArgs;
use crate::cli::{GlobalArgs, RunBench};

impl RunBench for DiskArgs {
    fn run(&self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        run(self, global)
    }
}

fn run(args: &DiskArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let plan = args.plan()?;
    let store = super::open_store(global)?;
    let Some(doc) = disk::measure(&plan)? else {
        return Ok(ExitCode::from(interrupt::EXIT_CODE));
    };
    let interrupted = doc.interrupted;
    let disturbed = args.guard.strict && doc.validity.as_ref().is_some_and(|v| !v.is_clean());
    let mut stored = None;
    if let Some(store) = &store {
        let run = store.begin_run(
            crate::store::RunKind::BenchDisk,
            &doc.host_id,
            &super::command_line(),
        )?;
        store.save(run, &doc)?;
        super::save_snapshot(store, run, &crate::root::Root::live())?;
        store.finish_run(run, if interrupted { "interrupted" } else { "ok" })?;
        stored = Some(run);
    }
    let out = if args.json {
        crate::output::json_line(&doc)?
    } else {
        crate::report::bench_disk_text::render(&doc, stored)
    };
    let failed = doc
        .tests
        .iter()
        .find(|t| t.status == TestStatus::Failed)
        .map(|t| {
            format!(
                "test '{}' failed: {}",
                t.name,
                t.reason.as_deref().unwrap_or("unknown")
            )
        });
    drop(doc);
    crate::output::write_result(&out, args.json)?;
    if interrupted {
        crate::note!("nastune: interrupted; temporary files removed");
        return Ok(ExitCode::from(interrupt::EXIT_CODE));
    }
    if let Some(f) = failed {
        anyhow::bail!(f);
    }
    Ok(super::strict_exit(disturbed))
}
