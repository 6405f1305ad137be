//! One file per subcommand: arguments in, a plan, the run, a report out.

pub mod advise;
pub mod bench_crypto;
pub mod bench_disk;
pub mod bench_http;
pub mod bench_net;
pub mod bench_smb;
pub mod check;
pub mod compare;
pub mod history;
pub mod net;
pub mod probe;
pub mod report;
pub mod tune;
pub mod watch;

use std::process::ExitCode;

use crate::cli::{Cli, Command, GlobalArgs, NetCommand};
use crate::store::{Store, StoreError};

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Probe(args) => probe::run(&args, &cli.global),
        Command::Check(args) => check::run(&args, &cli.global),
        Command::Advise(args) => advise::run(&args, &cli.global),
        Command::History(cmd) => history::run(&cmd, &cli.global),
        Command::Bench(args) => args.command.command().run(&cli.global),
        Command::Compare(args) => compare::run(&args, &cli.global),
        Command::Report(args) => report::run(&args, &cli.global),
        Command::Watch(args) => watch::run(&args, &cli.global),
        Command::Tune(args) => tune::run(&args, &cli.global),
        Command::Net(args) => match args.command {
            NetCommand::Serve(a) => net::serve(&a),
        },
    }
}

/// Opens the store named by `--db` (or the default) for writing, or `None`
/// with `--no-store`.
pub fn open_store(global: &GlobalArgs) -> Result<Option<Store>, StoreError> {
    store_path(global)?.map(|p| Store::open(&p)).transpose()
}

/// Like [`open_store`] for a command that only reads: a read-only store works.
pub fn open_store_to_read(global: &GlobalArgs) -> Result<Option<Store>, StoreError> {
    store_path(global)?
        .map(|p| Store::open_read_only(&p))
        .transpose()
}

fn store_path(global: &GlobalArgs) -> Result<Option<std::path::PathBuf>, StoreError> {
    if global.no_store {
        return Ok(None);
    }
    match &global.db {
        Some(p) => Ok(Some(p.clone())),
        None => crate::store::default_path().map(Some),
    }
}

/// Stores a probe snapshot with a bench run, so `compare` can show which
/// settings differed between two runs.
pub fn save_snapshot(
    store: &Store,
    run: crate::store::RunId,
    root: &crate::root::Root,
) -> Result<(), StoreError> {
    let snapshot = crate::probe::probe(root);
    store.save(run, &snapshot)
}

/// Saves a bench document and a probe snapshot as one finished run.
pub fn save_bench_run<D: crate::doc::Document>(
    store: &Store,
    run_kind: crate::store::RunKind,
    doc: &D,
    root: &crate::root::Root,
) -> Result<(), StoreError> {
    let host_id = crate::probe::host::read_host_id(root);
    let run = store.begin_run(run_kind, &host_id, &command_line())?;
    store.save(run, doc)?;
    save_snapshot(store, run, root)?;
    store.finish_run(run, "ok")
}

/// Records a bench run that failed before it measured anything.
pub fn save_failed_run(
    store: &Store,
    run_kind: crate::store::RunKind,
    root: &crate::root::Root,
) -> Result<(), StoreError> {
    let host_id = crate::probe::host::read_host_id(root);
    let run = store.begin_run(run_kind, &host_id, &command_line())?;
    store.finish_run(run, "failed")
}

/// Writes a bench document on stdout: pretty JSON, or the rendered text.
pub fn print_document<T: serde::Serialize>(
    json: bool,
    doc: &T,
    render: impl FnOnce(&T) -> String,
) -> anyhow::Result<ExitCode> {
    let out = if json {
        crate::output::json_line(doc)?
    } else {
        render(doc)
    };
    crate::output::write_result(&out, json)?;
    Ok(ExitCode::SUCCESS)
}

/// Exit 1 for a disturbed run under `--strict` (it is stored and printed all
/// the same, with its reasons), else 0.
pub fn strict_exit(disturbed: bool) -> ExitCode {
    if disturbed {
        crate::note!("nastune: the run was disturbed (see validity); --strict makes that an error");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The figures the latest bench and check runs of this host measured, saying on
/// stderr which runs they come from (advise itself measures nothing).
pub(crate) fn stored_measurements(
    store: &crate::store::Store,
    host_id: &str,
) -> anyhow::Result<crate::advise::Measurements> {
    // Without a machine id every box is 'unknown': their runs must not mix.
    if host_id == "unknown" {
        crate::note!("advise: no machine id, so no stored measurements are used");
        return Ok(crate::advise::Measurements::default());
    }
    let gathered = crate::runs::measured::latest_of_host(store, host_id)?;
    for (run, why) in &gathered.skipped {
        crate::note!("warning: run {run} skipped for measurements: {why}");
    }
    // Rules that assume a speed say so in their rationale; only a use is news here.
    if !gathered.used.is_empty() {
        let runs: Vec<String> = gathered
            .used
            .iter()
            .map(|r| format!("{} run {}", r.kind, r.id))
            .collect();
        crate::note!("advise: using measurements of {}", runs.join(", "));
    }
    Ok(gathered.measurements)
}

/// The command line as typed, for the run record.
pub fn command_line() -> String {
    redact_args(std::env::args())
}

/// The command line with credential header values (`-H 'Authorization: …'`)
/// replaced, so the store never keeps a secret.
fn redact_args(args: impl Iterator<Item = String>) -> String {
    let secret = |h: &str| {
        h.split_once(':')
            .filter(|(n, _)| crate::bench::http::target::is_secret_header(n))
            .map(|(n, _)| format!("{n}: (redacted)"))
    };
    let mut out: Vec<String> = Vec::new();
    let mut header_next = false;
    for a in args {
        let shown = if header_next {
            secret(&a).unwrap_or(a)
        } else if let Some(h) = a.strip_prefix("--header=") {
            secret(h).map_or(a.clone(), |r| format!("--header={r}"))
        } else if let Some(h) = a.strip_prefix("-H").filter(|h| !h.is_empty()) {
            secret(h).map_or(a.clone(), |r| format!("-H{r}"))
        } else {
            a
        };
        header_next = shown == "-H" || shown == "--header";
        out.push(shown);
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::redact_args;

    #[test]
    fn stored_command_lines_keep_no_credentials() {
        let args = [
            "nastune",
            "bench",
            "http",
            "-H",
            "Authorization: Bearer s3cret",
            "--header=Cookie: id=s3cret",
            "-HX-Auth-Token: s3cret",
            "-H",
            "Accept: */*",
            "https://nas/",
        ]
        .map(String::from);
        let line = redact_args(args.into_iter());
        assert!(!line.contains("s3cret"), "{line}");
        assert_eq!(
            line,
            "nastune bench http -H Authorization: (redacted) --header=Cookie: (redacted) \
             -HX-Auth-Token: (redacted) -H Accept: */* https://nas/"
        );
    }
}
