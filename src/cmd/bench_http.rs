//! `nastune bench http URL`: load a web server over HTTP/1.1 or HTTPS, print
//! the summary (or JSON), save the document in the store.

use std::process::ExitCode;

use anyhow::Context;

use crate::bench::http::{self, HttpReport, Plan};
use crate::bench::validity::{Guard, GuardPlan, Outcome};
use crate::cli::bench_http::HttpArgs;
use crate::cli::{GlobalArgs, RunBench};
use crate::root::Root;

impl RunBench for HttpArgs {
    fn run(&self, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
        run(self, global)
    }
}

fn run(args: &HttpArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let Plan {
        urls,
        modes,
        settings,
    } = args.plan()?;
    let store = super::open_store(global)?;
    crate::bench::interrupt::install()?;
    let root = Root::live();
    let guard = match urls.first() {
        Some(u) => GuardPlan::peer(&root, args.guard.settle, &u.host, u.port),
        None => GuardPlan::cpu(args.guard.settle),
    };
    let guard = Guard::start(&root, guard);
    let mut runs = Vec::new();
    for mode in &modes {
        for url in &urls {
            if !args.json {
                crate::note!(
                    "{}",
                    crate::report::http_text::progress(url, *mode, &settings)
                );
            }
            let result = http::measure(url, *mode, &settings, &root);
            if crate::bench::interrupt::interrupted() {
                return Ok(ExitCode::from(crate::bench::interrupt::EXIT_CODE));
            }
            match result {
                Ok(r) => runs.push(r),
                Err(e) => {
                    if let Some(store) = &store {
                        super::save_failed_run(store, crate::store::RunKind::BenchHttp, &root)?;
                    }
                    return Err(e).context(format!("HTTP load on '{}'", url.display()));
                }
            }
        }
    }
    let comparisons = match urls.as_slice() {
        [a, b] => http::compare(&runs, &a.display(), &b.display()),
        _ => Vec::new(),
    };
    let report = HttpReport {
        schema_version: http::SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        settings,
        runs,
        comparisons,
        validity: Some(guard.finish(&root, Outcome::default())),
    };
    let disturbed = report.validity.as_ref().is_some_and(|v| !v.is_clean());
    if let Some(store) = &store {
        super::save_bench_run(store, crate::store::RunKind::BenchHttp, &report, &root)?;
    }
    let status = super::print_document(args.json, &report, crate::report::http_text::render)?;
    // A load that completed nothing measured nothing: say so and fail, even
    // though every request reached the server.
    let empty: Vec<String> = report
        .runs
        .iter()
        .filter_map(crate::report::http_text::no_responses)
        .collect();
    if empty.is_empty() {
        return Ok(if status == ExitCode::SUCCESS {
            super::strict_exit(args.guard.strict && disturbed)
        } else {
            status
        });
    }
    for msg in empty {
        crate::note!("nastune: {msg}");
    }
    Ok(ExitCode::from(1))
}
