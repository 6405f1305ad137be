//! `nastune bench smb //HOST/SHARE`: the SMB workloads under each security
//! mode, printed (or JSON) and saved in the store.

use std::process::ExitCode;

use crate::cli::bench_smb::SmbArgs;
use crate::cli::{GlobalArgs, RunBench};

impl RunBench for SmbArgs {
    fn run(&self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        run(self, global)
    }
}

#[cfg(not(feature = "smb"))]
fn run(_args: &SmbArgs, _global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this nastune was built without SMB support (cargo feature 'smb'); rebuild with the default features to use 'bench smb'"
    )
}

#[cfg(feature = "smb")]
fn run(args: &SmbArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    use anyhow::Context;

    use crate::bench::smb::{SmbReport, engine};
    use crate::bench::validity::{Guard, GuardPlan, Outcome};
    use crate::root::Root;

    let plan = args.plan()?;
    let store = super::open_store(global)?;
    crate::bench::interrupt::install()?;
    let root = Root::live();
    let target = plan.settings.target.clone();
    let fail = |e: crate::smb::Error| -> anyhow::Result<ExitCode> {
        if matches!(e, crate::smb::Error::Interrupted) {
            return Ok(ExitCode::from(crate::bench::interrupt::EXIT_CODE));
        }
        if let Some(store) = &store {
            super::save_failed_run(store, crate::store::RunKind::BenchSmb, &root)?;
        }
        Err(e).context(format!("SMB bench on '{target}'"))
    };
    let (addr, local) = match engine::resolve(&plan) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let guard = Guard::start(
        &root,
        GuardPlan {
            settle_s: args.guard.settle,
            io: local,
            peer_names: if local {
                vec!["smbd".into()]
            } else {
                Vec::new()
            },
            ..GuardPlan::default()
        },
    );
    let mut runs = Vec::new();
    for security in &plan.settings.securities {
        let mut progress = |step: &str| {
            if !args.json {
                crate::note!("{}", crate::report::smb_text::progress(&target, step));
            }
        };
        match engine::run_security(&plan, addr, local, *security, &root, &mut progress) {
            Ok(r) => runs.push(r),
            Err(e) => return fail(e),
        }
        if crate::bench::interrupt::interrupted() {
            return Ok(ExitCode::from(crate::bench::interrupt::EXIT_CODE));
        }
    }
    let validity = guard.finish(&root, Outcome::default());
    let report = SmbReport::new(plan.settings.clone(), local, runs, Some(validity));
    let disturbed = args.guard.strict && report.validity.as_ref().is_some_and(|v| !v.is_clean());
    if let Some(store) = &store {
        super::save_bench_run(store, crate::store::RunKind::BenchSmb, &report, &root)?;
    }
    super::print_document(args.json, &report, crate::report::smb_text::render)?;
    Ok(super::strict_exit(disturbed))
}
