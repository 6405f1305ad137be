//! `nastune bench net`: run one client test (against a remote server or our own
//! loopback server), print intervals and the summary, save the document.

use std::process::ExitCode;

use anyhow::Context;

use crate::bench::validity::{Guard, GuardPlan, Outcome};
use crate::cli::{BenchNetArgs, GlobalArgs, RunBench};
use crate::net::client;
use crate::net::engine::Interval;
use crate::net::plan::done_fraction;
use crate::report::net_text;
use crate::root::Root;

impl RunBench for BenchNetArgs {
    fn run(&self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        run(self, global)
    }
}

fn run(args: &BenchNetArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let plan = args.plan()?;
    let store = super::open_store(global)?;
    let json = args.json;
    let cfg = plan.start()?;
    if !json {
        crate::note!("{}", net_text::header(&cfg));
    }
    let root = Root::live();
    let guard = Guard::start(
        &root,
        GuardPlan::peer(&root, args.guard.settle, &cfg.host, cfg.port),
    );
    let mut bar = crate::progress::Progress::stderr();
    let mut print_interval = |i: &Interval| {
        // Off the line first, so the interval does not print over the bar.
        bar.clear();
        if !json {
            let _ = crate::output::write_text(&net_text::interval(i));
        }
        bar.draw("bench net", done_fraction(i, &cfg));
    };
    let outcome = client::run(&cfg, &mut print_interval).map_err(anyhow::Error::from);
    drop(bar);
    let mut report = match outcome {
        Ok(r) => r,
        Err(e) => {
            if let Some(store) = &store {
                let run = store.begin_run(
                    crate::store::RunKind::BenchNet,
                    &host_id(),
                    &super::command_line(),
                )?;
                store.finish_run(run, "failed")?;
            }
            return Err(e).context(format!("network test against '{}:{}'", cfg.host, cfg.port));
        }
    };
    report.validity = Some(guard.finish(&root, Outcome::default()));
    let disturbed = report.validity.as_ref().is_some_and(|v| !v.is_clean());
    if let Some(store) = &store {
        // With its probe snapshot, so compare can diff the settings of two runs.
        super::save_bench_run(
            store,
            crate::store::RunKind::BenchNet,
            &report,
            &Root::live(),
        )?;
    }
    let out = if json {
        crate::output::json_line(&report)?
    } else {
        net_text::summary(&report)
    };
    crate::output::write_result(&out, json)?;
    Ok(super::strict_exit(args.guard.strict && disturbed))
}

fn host_id() -> String {
    crate::probe::host::read_host_id(&Root::live())
}
