//! `nastune probe`: inventory the box, print it, save it, optionally capture it.

use std::process::ExitCode;

use anyhow::Context;

use crate::cli::{GlobalArgs, ProbeArgs};
use crate::probe;
use crate::root::Root;
use crate::root::capture;

pub fn run(args: &ProbeArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    // Check everything that can fail before doing work.
    if let Some(dest) = &args.capture {
        capture::check_destination(dest)?;
    }
    let store = super::open_store(global)?;
    let mut root = match &args.root {
        Some(dir) => Root::tree(dir).context("--root")?,
        None => Root::live(),
    };
    if args.capture.is_some() {
        root = root.with_recorder();
    }

    let snapshot = probe::probe(&root);

    if let Some(dest) = &args.capture {
        // The capture's time, so `watch --replay` can order and space trees.
        let _ = crate::watch::sample::capture_time(&root);
        let summary = capture::write_capture(root.base(), root.take_recording(), dest)?;
        crate::note!(
            "captured {} files, {} directories, {} links, {} read errors into '{}'",
            summary.files,
            summary.dirs,
            summary.links,
            summary.errors,
            dest.display()
        );
    }
    if let Some(store) = &store {
        let run = store.begin_run(
            crate::store::RunKind::Probe,
            &snapshot.host_id,
            &super::command_line(),
        )?;
        store.save(run, &snapshot)?;
        store.finish_run(run, "ok")?;
    }

    let out = if args.json {
        crate::output::json_line(&snapshot)?
    } else {
        crate::report::probe_text::render(&snapshot)
    };
    crate::output::write_result(&out, args.json)?;
    Ok(ExitCode::SUCCESS)
}
