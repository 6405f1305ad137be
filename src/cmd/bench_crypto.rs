//! `nastune bench crypto`: measure cipher and KDF speed, print, save.

use std::process::ExitCode;

use crate::bench::crypto::{self, kat};
use crate::bench::validity::{Guard, GuardPlan, Outcome};
use crate::cli::bench_crypto::BenchCryptoArgs;
use crate::cli::{GlobalArgs, RunBench};
use crate::root::Root;

impl RunBench for BenchCryptoArgs {
    fn run(&self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        run(self, global)
    }
}

fn run(args: &BenchCryptoArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    if args.self_test {
        return self_test(args);
    }
    let settings = args.plan()?;
    let store = super::open_store(global)?;
    let root = Root::live();
    let guard = Guard::start(&root, GuardPlan::cpu(args.guard.settle));
    let mut bar = crate::progress::Progress::stderr();
    let mut report = crypto::run(&settings, &root, &mut |step, f| bar.draw(step, f));
    bar.clear();
    report.validity = Some(guard.finish(
        &root,
        Outcome {
            measuring_thread: report.measuring_thread(),
            ..Outcome::default()
        },
    ));
    let disturbed = report.validity.as_ref().is_some_and(|v| !v.is_clean());
    if let Some(store) = &store {
        super::save_bench_run(store, crate::store::RunKind::BenchCrypto, &report, &root)?;
    }
    super::print_document(args.json, &report, crate::report::crypto_text::render)?;
    Ok(super::strict_exit(args.guard.strict && disturbed))
}

fn self_test(args: &BenchCryptoArgs) -> anyhow::Result<ExitCode> {
    let mut results = kat::user_space();
    results.extend(kat::kernel());
    let failed = results
        .iter()
        .filter(|r| matches!(r.verdict, kat::Verdict::Fail { .. }))
        .count();
    let kernel_skipped = results
        .iter()
        .any(|r| r.path.starts_with("kernel") && matches!(r.verdict, kat::Verdict::Skip { .. }));
    let out = if args.json {
        crate::output::json_line(&results)?
    } else {
        crate::report::crypto_text::render_self_test(&results)
    };
    crate::output::write_result(&out, args.json)?;
    if failed > 0 || (args.require_afalg && kernel_skipped) {
        if args.require_afalg && kernel_skipped {
            crate::note!(
                "nastune: self-test: the kernel path was required (--require-afalg) but skipped"
            );
        }
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
