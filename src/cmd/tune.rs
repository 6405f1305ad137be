//! `nastune tune plan|apply|rollback|verify|confirm`: findings become journaled
//! changes that can be verified and undone.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde::Serialize;

use crate::cli::GlobalArgs;
use crate::cli::tune::{
    ApplyArgs, ConfirmArgs, PlanArgs, RollbackArgs, SelectArgs, TryArgs, TuneArgs, TuneCommand,
    VerifyArgs,
};
use crate::report::{tune_text, tune_try_text};
use crate::root::Root;
use crate::store::Store;
use crate::tune::trial::engine::{Trial, TryError, check_exercised, the_change};
use crate::tune::{apply, deadman, plan, reload, rollback, verify};

/// Version of every `tune --json` document.
pub use crate::tune::plan::SCHEMA_VERSION;

mod export;
mod folklore;

pub fn run(args: &TuneArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        TuneCommand::Plan(a) => run_plan(a, global),
        TuneCommand::Apply(a) => run_apply(a, global),
        TuneCommand::Rollback(a) => run_rollback(a, &need_store(global, "rollback")?),
        TuneCommand::Verify(a) => run_verify(a, &need_store(global, "verify")?),
        TuneCommand::Confirm(a) => run_confirm(a, &need_store(global, "confirm")?),
        TuneCommand::Try(a) if a.folklore => folklore::run(a, global),
        TuneCommand::Try(a) => run_try(a, global),
        TuneCommand::Export(a) => export::run(a, global),
        TuneCommand::Deadman(a) => {
            let store = need_store(global, "deadman")?;
            deadman::run(&store, a.session)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub(crate) fn need_store(global: &GlobalArgs, what: &str) -> anyhow::Result<Store> {
    match super::open_store(global)? {
        Some(s) => Ok(s),
        None => bail!("'tune {what}' needs the store (the journal lives there); drop --no-store"),
    }
}

pub(crate) fn open_root(dir: &Option<PathBuf>) -> anyhow::Result<Root> {
    Ok(match dir {
        Some(d) => Root::tree(d).context("--root")?,
        None => Root::live(),
    })
}

/// The plan for the selected findings and `--set` changes. Findings come from
/// the same rules and stored measurements as `advise`, so both recommend the
/// same values.
pub(crate) fn make_plan(
    sel: &SelectArgs,
    root: &Root,
    store: Option<&Store>,
) -> anyhow::Result<plan::Plan> {
    let mut sources = Vec::new();
    // Findings are needed unless only --set changes were asked for.
    if !sel.ids.is_empty() || sel.sets.is_empty() {
        let snapshot = crate::probe::probe(root);
        let measurements = match store {
            Some(s) => super::stored_measurements(s, &snapshot.host_id)?,
            None => Default::default(),
        };
        let findings = crate::advise::evaluate(&crate::advise::Context {
            snapshot: &snapshot,
            measurements: &measurements,
        });
        sources = plan::select(&findings, &sel.ids, !sel.sets.is_empty())?;
    }
    for s in &sel.sets {
        sources.push(plan::manual(plan::parse_set(s)?));
    }
    Ok(plan::build(root, sources))
}

#[derive(Serialize)]
struct Doc<'a, T> {
    schema_version: u32,
    tool_version: &'static str,
    #[serde(flatten)]
    body: &'a T,
}

pub(crate) fn json<T: Serialize>(body: &T) -> serde_json::Result<String> {
    crate::output::json_line(&Doc {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION"),
        body,
    })
}

fn run_plan(a: &PlanArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let root = open_root(&a.select.root)?;
    let store = super::open_store_to_read(global)?;
    let plan = make_plan(&a.select, &root, store.as_ref())?;
    let out = if a.json {
        json(&plan)?
    } else {
        tune_text::render_plan(&plan)
    };
    crate::output::write_result(&out, a.json)?;
    refuse_if_every_set_rejected(&plan)?;
    Ok(ExitCode::SUCCESS)
}

/// A command line whose `--set` changes are all impossible fails (exit 2), after
/// the plan has shown why each was skipped.
pub(crate) fn refuse_if_every_set_rejected(plan: &plan::Plan) -> anyhow::Result<()> {
    if plan.every_set_rejected() {
        bail!(
            "none of the --set changes can be made: each is skipped for the reason shown; \
             fix the setting or value and run again"
        );
    }
    Ok(())
}

#[derive(Serialize)]
struct ApplyDoc<'a> {
    plan: &'a plan::Plan,
    applied: Option<&'a apply::Applied>,
    /// What --reload ran; absent without --reload.
    #[serde(skip_serializing_if = "Option::is_none")]
    reloads: Option<Vec<reload::Reload>>,
}

fn run_apply(a: &ApplyArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let store = need_store(global, "apply")?;
    let root = open_root(&a.select.root)?;
    if a.reload && !root.is_live() {
        bail!(
            "--reload remounts and reloads this machine's services, not those of the tree '{}'; \
             drop --reload with --root",
            root.base().display()
        );
    }
    let plan = make_plan(&a.select, &root, Some(&store))?;
    if !a.json {
        crate::output::write_text(&tune_text::render_plan(&plan))?;
    }
    if plan.to_apply() == 0 {
        if a.json {
            let out = json(&ApplyDoc {
                plan: &plan,
                applied: None,
                reloads: None,
            })?;
            crate::output::write_result(&out, true)?;
        }
        refuse_if_every_set_rejected(&plan)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !a.yes && !ask(plan.to_apply())? {
        crate::note!("nastune: nothing applied");
        return Ok(ExitCode::SUCCESS);
    }
    let host = crate::probe::host::read_host_id(&root);
    let run = store.begin_run(crate::store::RunKind::Tune, &host, &super::command_line())?;
    store.save(run, &plan)?;
    let exe =
        std::env::current_exe().context("cannot find this program to start the dead-man timer")?;
    let db = std::fs::canonicalize(store.path()).unwrap_or_else(|_| store.path().to_path_buf());
    let spawn = |session| deadman::spawn(&exe, &db, session);
    let result = apply::apply(&store, &root, run, &plan, a.confirm_within, &spawn);
    match result {
        Ok(applied) => {
            store.finish_run(run, "ok")?;
            let reloads = a.reload.then(|| {
                reload::needed(&plan)
                    .into_iter()
                    .map(|step| reload::run(step, &root))
                    .collect()
            });
            let failed = reloads
                .iter()
                .flatten()
                .any(|r: &reload::Reload| r.error.is_some());
            let out = if a.json {
                json(&ApplyDoc {
                    plan: &plan,
                    applied: Some(&applied),
                    reloads,
                })?
            } else {
                tune_text::render_applied(&applied)
                    + &tune_text::render_reloads(reloads.as_deref().unwrap_or_default())
            };
            crate::output::write_result(&out, a.json)?;
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Err(e) => {
            store.finish_run(run, "failed")?;
            Err(e.into())
        }
    }
}

/// Asks on a terminal; refuses when stdin is not one.
pub(crate) fn ask(n: usize) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        bail!("refusing to apply without confirmation: stdin is not a terminal; pass --yes");
    }
    crate::output::prompt(format_args!("Apply {n} change(s)? [y/N] "));
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

fn run_rollback(a: &RollbackArgs, store: &Store) -> anyhow::Result<ExitCode> {
    if let Some(entry) = a.entry {
        let r = rollback::rollback_entry(store, entry)?;
        let out = if a.json {
            json(&r)?
        } else {
            tune_text::render_restored(&r)
        };
        crate::output::write_result(&out, a.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let session = match a.session {
        Some(id) => store
            .tune_session(id)?
            .ok_or(rollback::RollbackError::NoSession(id))?,
        None => rollback::latest(store)?,
    };
    let r = rollback::rollback_session(store, &session, false)?;
    let out = if a.json {
        json(&r)?
    } else {
        tune_text::render_rolled_back(&r)
    };
    crate::output::write_result(&out, a.json)?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct VerifyDoc<'a> {
    root: &'a str,
    checks: &'a [verify::Check],
    interrupted_sessions: Vec<i64>,
}

fn run_verify(a: &VerifyArgs, store: &Store) -> anyhow::Result<ExitCode> {
    let root = open_root(&a.root)?;
    let name = apply::root_name(&root);
    let checks = verify::verify(store, &name)?;
    let interrupted: Vec<i64> = store
        .tune_sessions()?
        .into_iter()
        .filter(|s| s.root == name && s.state == "applying")
        .map(|s| s.id)
        .collect();
    let out = if a.json {
        json(&VerifyDoc {
            root: &name,
            checks: &checks,
            interrupted_sessions: interrupted,
        })?
    } else {
        let mut t = tune_text::render_verify(&checks);
        for s in interrupted {
            t.push_str(&format!(
                "session {s} was interrupted while applying; run 'nastune tune rollback {s}'\n"
            ));
        }
        t
    };
    crate::output::write_result(&out, a.json)?;
    Ok(ExitCode::SUCCESS)
}

fn run_confirm(a: &ConfirmArgs, store: &Store) -> anyhow::Result<ExitCode> {
    let session = match a.session {
        Some(s) => s,
        None => store
            .tune_sessions()?
            .into_iter()
            .find(|s| s.network_state == "pending")
            .map(|s| s.id)
            .context("no session has network changes waiting for confirmation")?,
    };
    let written = apply::confirm(store, session)?;
    crate::output::write_text(&format!(
        "session {session}: network changes kept; {written} persistence write(s) done\n"
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `tune try` of one change (`--folklore` is [`folklore::run`]).
fn run_try(a: &TryArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let [bench] = a.bench.as_slice() else {
        return Err(TryError::SeveralJudges(a.bench.len()).into());
    };
    let store = need_store(global, "try")?;
    let opts = a.judge_options()?;
    let metric_name = bench.pick(&opts, a.metric)?;
    // Checked before anything is read or asked.
    a.plan(bench.metric(metric_name).better)?;
    let root = open_root(&a.root)?;
    let select = SelectArgs {
        ids: a.id.iter().cloned().collect(),
        sets: a.set.iter().cloned().collect(),
        root: a.root.clone(),
    };
    let what = a.id.clone().or_else(|| a.set.clone()).unwrap_or_default();
    let plan = make_plan(&select, &root, Some(&store))?;
    let item = the_change(&plan, &what)?;
    if !a.json {
        crate::output::write_text(&tune_text::render_plan(&plan))?;
    }
    if !a.yes && !ask(1)? {
        crate::note!("nastune: nothing tried");
        return Ok(ExitCode::SUCCESS);
    }
    // From here Ctrl-C ends the trial at the next run boundary, reverted.
    crate::bench::interrupt::install()?;
    // The judge measures the real system, whatever tree the change goes to.
    let prepared = bench.prepare(&opts)?;
    check_exercised(&root, &bench.to_string(), &prepared, &plan, &item.setting)?;
    let (settings, command) = (a.settings(), super::command_line());
    let trial = Trial {
        a: &settings,
        command: &command,
        store: &store,
        root: &root,
        judge: bench,
        prepared: &prepared,
        metric_name,
        keep: true,
    };
    let report = match trial.measure(&plan, item) {
        Ok(r) => r,
        Err(e) => return interrupted_exit(&e).ok_or(e),
    };
    let out = if a.json {
        json(&report)?
    } else {
        tune_try_text::render(&report)
    };
    crate::output::write_result(&out, a.json)?;
    Ok(ExitCode::SUCCESS)
}

/// After Ctrl-C or SIGTERM: the error (the change already reverted) said,
/// and the exit code shells expect.
pub(crate) fn interrupted_exit(e: &anyhow::Error) -> Option<ExitCode> {
    if !crate::bench::interrupt::interrupted() {
        return None;
    }
    crate::note!("nastune: {e:#}");
    Some(ExitCode::from(crate::bench::interrupt::EXIT_CODE))
}
