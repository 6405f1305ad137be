//! `nastune tune try`: one change, measured. Baseline runs, then the change is
//! applied as an ordinary journaled `tune apply` session (its old value is in
//! the store before the first write, so `tune rollback` restores it even after a
//! crash), the runs alternate in ABBA blocks by writing the session's runtime
//! values back and forth, and Welch's test decides: keep (the session stays,
//! network changes are confirmed) or revert (the session is rolled back).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use super::tune::{ask, json, make_plan, need_store, open_root};
use crate::bench::validity::{Guard, GuardPlan, Outcome, Validity};
use crate::cli::GlobalArgs;
use crate::cli::tune::{SelectArgs, TryArgs};
use crate::report::{tune_text, tune_try_text};
use crate::root::Root;
use crate::store::Store;
use crate::tune::action::{self, Action, read_entry, restore_runtime, selected_value};
use crate::tune::plan::{Plan, PlanItem, Status};
use crate::tune::trial::{self, TrialError, TryReport, Verdict};
use crate::tune::{apply, deadman, rollback};
use anyhow::Context as _;

#[derive(Debug, thiserror::Error)]
pub enum TryError {
    #[error("nothing to try: {0}")]
    NothingToTry(String),
    #[error(
        "'{what}' selects {n} changes ({settings}); tune try measures one at a time: name one with --set"
    )]
    SeveralChanges {
        what: String,
        n: usize,
        settings: String,
    },
    #[error(
        "'{setting}' is {kind} change, which cannot be switched back and forth at runtime; \
         tune try measures sysctl, sysfs and udev attribute changes only: use 'nastune tune apply'"
    )]
    NotRuntime { setting: String, kind: &'static str },
    #[error("'{0}' writes no runtime value now (no device matches): there is nothing to measure")]
    NoRuntimeValue(String),
    #[error(
        "the dead-man timer reverted session {0}'s network change before the trial ended; \
         try again with fewer or shorter runs"
    )]
    DeadmanFired(i64),
    #[error(
        "the workload's path '{path}' is {on}, but '{setting}' changes {touched}: the trial would \
         measure a device the change does not touch; give --bench a path on {touched}"
    )]
    OtherDevice {
        path: String,
        on: String,
        setting: String,
        touched: String,
    },
}

/// The block devices a plan's runtime writes touch (`sys/block/NAME/…`).
fn touched_block_devices(plan: &Plan, setting: &str) -> Vec<String> {
    let mut out: Vec<String> = plan
        .steps
        .iter()
        .filter(|s| s.setting == setting && matches!(s.action, Action::Runtime { .. }))
        .filter_map(|s| {
            let rest = s.action.path().trim_start_matches('/');
            let rest = rest.strip_prefix("sys/block/")?;
            rest.split('/').next().map(str::to_string)
        })
        .collect();
    out.dedup();
    out
}

/// Refuses a trial whose workload does not pass through any device the change
/// touches: it would measure noise (a change of no device passes).
fn check_same_device(
    path: &str,
    stack: &[String],
    setting: &str,
    touched: &[String],
) -> Result<(), TryError> {
    if touched.is_empty() || touched.iter().any(|t| stack.contains(t)) {
        return Ok(());
    }
    Err(TryError::OtherDevice {
        path: path.to_string(),
        on: match stack {
            [] => "on no block device".to_string(),
            _ => format!("on '{}'", stack.join("' over '")),
        },
        setting: setting.to_string(),
        touched: format!("'{}'", touched.join("', '")),
    })
}

/// The one change a plan holds, or why it cannot be tried.
fn the_change<'p>(plan: &'p Plan, what: &str) -> Result<&'p PlanItem, TryError> {
    for i in &plan.items {
        // Advice is never applied: a rule's advice beside its change is fine.
        let Some(kind) = crate::tune::kinds::kind(&i.change).untryable() else {
            continue;
        };
        return Err(TryError::NotRuntime {
            setting: i.setting.clone(),
            kind,
        });
    }
    let chosen: Vec<&PlanItem> = plan
        .items
        .iter()
        .filter(|i| i.status == Status::Apply)
        .collect();
    match chosen.as_slice() {
        [one] => {
            if !plan.steps.iter().any(|s| {
                s.setting == one.setting
                    && matches!(
                        s.action,
                        Action::Runtime { value: Some(_), .. } | Action::Netdev { .. }
                    )
            }) {
                return Err(TryError::NoRuntimeValue(one.setting.clone()));
            }
            Ok(one)
        }
        [] => Err(TryError::NothingToTry(match plan.items.as_slice() {
            [] => format!("'{what}' recommends no change"),
            items => items
                .iter()
                .map(|i| {
                    format!(
                        "'{}' is skipped ({})",
                        i.setting,
                        i.reason.as_deref().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        })),
        many => Err(TryError::SeveralChanges {
            what: what.to_string(),
            n: many.len(),
            settings: many
                .iter()
                .map(|i| i.setting.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// The change as a journaled session that can be switched on and off.
struct Switch<'a> {
    store: &'a Store,
    root: &'a Root,
    run: i64,
    plan: &'a Plan,
    confirm_within: Duration,
    started: std::cell::Cell<bool>,
}

impl Switch<'_> {
    /// The first time: a full journaled apply (persistence included). Later: the
    /// session's runtime values and device settings written again.
    fn apply(&self) -> anyhow::Result<()> {
        if !self.started.replace(true) {
            let exe = std::env::current_exe()
                .context("cannot find this program to start the dead-man timer")?;
            let db = std::fs::canonicalize(self.store.path())
                .unwrap_or_else(|_| self.store.path().to_path_buf());
            let spawn = |session| deadman::spawn(&exe, &db, session);
            apply::apply(
                self.store,
                self.root,
                self.run,
                self.plan,
                self.confirm_within,
                &spawn,
            )?;
            return Ok(());
        }
        self.check_deadman()?;
        for e in self.runtime_entries()? {
            if let Some(new) = &e.new {
                let new = String::from_utf8_lossy(new);
                if e.kind == action::KIND_NETDEV {
                    action::write_netdev(&e.path, &new)?;
                } else {
                    action::write_runtime(self.root, &e.path, &new)?;
                }
            }
        }
        Ok(())
    }

    /// The journaled old runtime values written back, newest first.
    fn revert(&self) -> anyhow::Result<()> {
        if self.plan.has_network() {
            self.check_deadman()?;
        }
        for e in self.runtime_entries()?.iter().rev() {
            match &e.old {
                Some(old) if e.kind == action::KIND_NETDEV => {
                    action::write_netdev(&e.path, &String::from_utf8_lossy(old))?;
                }
                Some(old) => restore_runtime(self.root, &e.path, old)?,
                None => {}
            }
        }
        Ok(())
    }

    fn runtime_entries(&self) -> anyhow::Result<Vec<crate::store::tune::EntryRecord>> {
        Ok(self
            .store
            .tune_entries(self.run)?
            .into_iter()
            // Device settings (coalescing, dm-crypt flags) switch like runtime values.
            .filter(|e| matches!(e.kind.as_str(), action::KIND_RUNTIME | action::KIND_NETDEV))
            .filter(|e| matches!(e.state.as_str(), "journaled" | "applied"))
            .collect())
    }

    /// A network change the timer already reverted must not be written again.
    fn check_deadman(&self) -> anyhow::Result<()> {
        let state = self
            .store
            .tune_session(self.run)?
            .map(|s| s.network_state)
            .unwrap_or_default();
        if matches!(state.as_str(), "reverting" | "reverted") {
            return Err(TryError::DeadmanFired(self.run).into());
        }
        Ok(())
    }

    /// Rolls the whole session back (files too), unless it never started or is
    /// rolled back already.
    fn roll_back(&self) -> anyhow::Result<()> {
        if let Some(s) = self.store.tune_session(self.run)?
            && s.state != "rolled_back"
        {
            rollback::rollback_session(self.store, &s, false)?;
        }
        Ok(())
    }
}

pub fn run(a: &TryArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let store = need_store(global, "try")?;
    let metric = a.bench.kind.metric();
    let trial_plan = a.plan()?;
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
        crate::output::write_stdout(tune_text::render_plan(&plan).as_bytes())?;
    }
    if !a.yes && !ask(1)? {
        eprintln!("nastune: nothing tried");
        return Ok(ExitCode::SUCCESS);
    }
    // The workload reads the real device, whatever tree the change goes to.
    let workload = a.bench.prepare(Root::live(), a.runtime, None)?;
    check_same_device(
        &a.bench.path.display().to_string(),
        &workload.device_stack(&Root::live()),
        &item.setting,
        &touched_block_devices(&plan, &item.setting),
    )?;
    // The first run after a pause is slow (cold caches and queues below the
    // page cache, a disk spinning up): one unused run keeps it out of the baseline.
    let warmup = {
        let guard = Guard::start(&Root::live(), GuardPlan::cpu(a.guard.settle));
        let v = workload.measure()?;
        guard.finish(&Root::live(), Outcome::default());
        v
    };
    let host = crate::probe::host::read_host_id(&root);
    let run = store.begin_run(
        crate::store::RunKind::TuneTry,
        &host,
        &super::command_line(),
    )?;
    store.save(run, &plan)?;
    // A network change stays behind the dead-man timer for the whole trial
    // (each run takes about its runtime plus a settle), and longer on a slow box.
    let per_run = a.runtime + Duration::from_secs(1);
    let switch = Switch {
        store: &store,
        root: &root,
        run,
        plan: &plan,
        confirm_within: per_run * (4 * a.runs) + Duration::from_secs(60),
        started: std::cell::Cell::new(false),
    };
    let progress = std::io::stderr().is_terminal();
    let total = 2 * a.runs;
    let mut taken = 0;
    let mut disturbed_runs = Vec::new();
    let mut reruns = 0;
    let result = trial::run_trial(
        &trial_plan,
        || {
            taken += 1;
            let (v, validity) = guarded_measure(&workload, &mut reruns)?;
            if !validity.is_clean() {
                let why = format!("run {taken}: {}", validity.reasons.join("; "));
                if a.guard.strict {
                    anyhow::bail!("{why} (still disturbed after {MAX_RERUNS} re-runs; --strict)");
                }
                disturbed_runs.push(why);
            }
            if progress {
                eprintln!("nastune: run {taken}/{total}: {v:.1} {}", metric.unit);
            }
            Ok(v)
        },
        || switch.apply(),
        || switch.revert(),
    );
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
            let cleanup = switch.roll_back();
            store.finish_run(run, "failed")?;
            cleanup.context("rolling the tried change back after the failure")?;
            return Err(match e {
                TrialError::Plan(p) => p.into(),
                stopped => anyhow::anyhow!("{stopped}"),
            });
        }
    };
    let kept = outcome.verdict == Verdict::Keep;
    if kept {
        if plan.has_network() {
            apply::confirm(&store, run)?;
        }
    } else {
        switch.roll_back()?;
    }
    let final_value = plan
        .steps
        .iter()
        .find(|s| {
            s.setting == item.setting
                && matches!(s.action, Action::Runtime { .. } | Action::Netdev { .. })
        })
        .and_then(|s| {
            read_entry(&root, s.action.kind(), s.action.path())
                .ok()
                .flatten()
        })
        .map(|b| selected_value(&String::from_utf8_lossy(&b)));
    let report = TryReport {
        change: item.clone(),
        workload: a.bench.to_string(),
        metric: metric.into(),
        runs_per_side: a.runs,
        runtime_ms: a.runtime.as_millis() as u64,
        warmup_value: warmup,
        alternate: true,
        session: run,
        outcome,
        min_gain_pct: a.min_gain,
        kept,
        final_value,
        disturbed_runs,
        reruns,
    };
    store.save(run, &report)?;
    store.finish_run(run, "ok")?;
    let out = if a.json {
        json(&report)?
    } else {
        tune_try_text::render(&report)
    };
    crate::output::write_stdout(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// A disturbed measurement is taken again up to this many times.
const MAX_RERUNS: u32 = 2;

/// One measurement under the validity guard, re-taken while disturbed (up to
/// [`MAX_RERUNS`] times); the last value and its verdict.
fn guarded_measure(
    workload: &trial::workload::PreparedWorkload,
    reruns: &mut u32,
) -> anyhow::Result<(f64, Validity)> {
    let root = Root::live();
    let mut tries = 0;
    loop {
        let guard = Guard::start(&root, GuardPlan::cpu(0.0));
        let v = workload.measure()?;
        let validity = guard.finish(&root, Outcome::default());
        if validity.is_clean() || tries == MAX_RERUNS {
            return Ok((v, validity));
        }
        tries += 1;
        *reruns += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::Change;
    use crate::tune::plan::{build, manual, parse_set};

    fn tree() -> tempfile::TempDir {
        crate::tune::test_tree::tree(&[
            ("proc/sys/vm/swappiness", "60\n"),
            ("proc/sys/vm/vfs_cache_pressure", "100\n"),
        ])
    }

    fn plan_of(root: &Root, sets: &[&str]) -> Plan {
        build(
            root,
            sets.iter().map(|s| manual(parse_set(s).unwrap())).collect(),
        )
    }

    #[test]
    fn a_device_change_is_tried_only_on_a_path_through_that_device() {
        let d = crate::tune::test_tree::tree(&[("sys/block/sdb/queue/read_ahead_kb", "128\n")]);
        let root = Root::tree(d.path()).unwrap();
        let setting = "sysfs:block/sdb/queue/read_ahead_kb";
        let plan = plan_of(&root, &[&format!("{setting}=1024")]);
        let touched = touched_block_devices(&plan, setting);
        assert_eq!(touched, ["sdb"]);
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // A file on a partition of sdb, or on dm-crypt over it: measured.
        assert!(check_same_device("/srv/f", &s(&["sdb1", "sdb"]), setting, &touched).is_ok());
        assert!(
            check_same_device("/srv/f", &s(&["dm-0", "sdb1", "sdb"]), setting, &touched).is_ok()
        );
        let e = check_same_device("/tmp/f", &s(&["vda"]), setting, &touched).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the workload's path '/tmp/f' is on 'vda', but 'sysfs:block/sdb/queue/read_ahead_kb' \
             changes 'sdb': the trial would measure a device the change does not touch; give \
             --bench a path on 'sdb'"
        );
        let e = check_same_device("/dev/shm/f", &[], setting, &touched).unwrap_err();
        assert!(e.to_string().contains("is on no block device"), "{e}");
        // A sysctl touches no device: any path will do.
        assert!(check_same_device("/tmp/f", &s(&["vda"]), "sysctl:vm.swappiness", &[]).is_ok());
    }

    #[test]
    fn exactly_one_runtime_change_is_tried() {
        let d = tree();
        let root = Root::tree(d.path()).unwrap();
        let one = plan_of(&root, &["sysctl:vm.swappiness=10"]);
        assert_eq!(
            the_change(&one, "x").unwrap().setting,
            "sysctl:vm.swappiness"
        );
        let two = plan_of(
            &root,
            &["sysctl:vm.swappiness=10", "sysctl:vm.vfs_cache_pressure=50"],
        );
        assert_eq!(
            the_change(&two, "rule").unwrap_err().to_string(),
            "'rule' selects 2 changes (sysctl:vm.swappiness, sysctl:vm.vfs_cache_pressure); \
             tune try measures one at a time: name one with --set"
        );
        let noop = plan_of(&root, &["sysctl:vm.swappiness=60"]);
        assert_eq!(
            the_change(&noop, "x").unwrap_err().to_string(),
            "nothing to try: 'sysctl:vm.swappiness' is skipped (already '60')"
        );
        let mut eth = plan_of(&root, &[]);
        eth.items = build(
            &root,
            vec![manual(Change::Ethtool {
                interface: "eth0".into(),
                setting: "tso".into(),
                value: "on".into(),
            })],
        )
        .items;
        let e = the_change(&eth, "x").unwrap_err().to_string();
        assert!(
            e.starts_with("'ethtool:eth0:tso' is an ethtool change"),
            "{e}"
        );
    }
}
