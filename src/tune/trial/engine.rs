//! `nastune tune try`: one change, measured. Baseline runs, then the change is
//! applied as an ordinary journaled `tune apply` session (its old value is in
//! the store before the first write, so `tune rollback` restores it even after a
//! crash), the runs alternate in ABBA blocks by writing the session's runtime
//! values back and forth, and Welch's test decides: keep (the session stays,
//! network changes are confirmed) or revert (the session is rolled back).

use std::io::IsTerminal;
use std::time::Duration;

use crate::bench::validity::{Guard, GuardPlan, Outcome, Validity};
use crate::root::Root;
use crate::store::Store;
use crate::tune::action::{self, Action, read_entry, restore_runtime, selected_value};
use crate::tune::plan::{Plan, PlanItem, Status};
use crate::tune::remount::{self, MountState};
use crate::tune::trial::judge::{Judge, JudgeError, MetricName, PreparedJudge, Sample};
use crate::tune::trial::{
    self, Better, Effect, PlanError, Side, TrialError, TrialOutcome, TrialPlan, TryReport, Verdict,
    exercise,
};
use crate::tune::{apply, deadman, edit_file, reload, rollback};
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
    #[error(
        "the judge '{judge}' {via}, but '{setting}' changes {touched}: the trial would measure \
         traffic the change does not touch; judge it with a peer reached through {touched}"
    )]
    OtherInterface {
        judge: String,
        via: String,
        setting: String,
        touched: String,
    },
    #[error(
        "'{setting}' changes this box's Samba, but the judge '{judge}' {why}: the trial would \
         measure a server the change does not touch; judge it with smb://HOST/SHARE served here \
         (e.g. smb://127.0.0.1/SHARE)"
    )]
    SambaElsewhere {
        judge: String,
        why: &'static str,
        setting: String,
    },
    #[error(
        "'{setting}' edits '{edited}', but the smbd behind the judge '{judge}' reads {serving}: \
         the trial would measure a server the change does not touch; judge it with the smbd that \
         reads '{edited}' (or pass --root DIR for a server started with '-s DIR/etc/samba/smb.conf')"
    )]
    SambaOtherConfig {
        judge: String,
        setting: String,
        edited: String,
        serving: String,
    },
    #[error("{0}; the change was rolled back")]
    Reload(String),
    #[error("interrupted (Ctrl-C or SIGTERM) after the run in progress")]
    Interrupted,
    #[error(
        "after the revert the mount at '{mount_point}' shows '{now}', not '{before}' as before \
         the trial: the filesystem keeps an option it was remounted with until it is mounted \
         again; run 'umount {mount_point}' and 'mount {mount_point}'"
    )]
    MountNotRestored {
        mount_point: String,
        before: String,
        now: String,
    },
    #[error(
        "{0} judges given; tune try measures a change with one --bench (several only with \
         --folklore)"
    )]
    SeveralJudges(usize),
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

/// The in-place edit `tune try` switches back and forth (with a reload
/// between runs): smb.conf (Samba reloads it) or fstab (the mount point is
/// remounted), when the plan edits it.
fn switched_file(plan: &Plan) -> Option<&'static str> {
    plan.items
        .iter()
        .filter(|i| i.status == Status::Apply)
        .filter_map(|i| crate::tune::kinds::kind(&i.change).edited_file())
        .find(|f| [edit_file::SMB_CONF, edit_file::FSTAB].contains(f))
}

/// The mount point whose fstab entry the plan edits.
fn remounted(plan: &Plan) -> Option<String> {
    plan.items
        .iter()
        .filter(|i| i.status == Status::Apply)
        .find_map(|i| match &i.change {
            crate::advise::Change::MountOption { mount_point, .. } => Some(mount_point.clone()),
            _ => None,
        })
}

/// The network interfaces a plan's writes of `setting` touch.
fn touched_interfaces(plan: &Plan, setting: &str) -> Vec<String> {
    let mut out: Vec<String> = plan
        .steps
        .iter()
        .filter(|s| s.setting == setting && s.action.kind() != action::KIND_FILE)
        .filter_map(|s| exercise::touched_interface(s.action.path()))
        .collect();
    out.dedup();
    out
}

/// Refuses a network interface change judged by traffic that does not leave
/// through that interface (`via`: the peer's route, `None` for a judge that
/// sends nothing).
fn check_same_interface(
    judge: &str,
    via: Option<(std::net::IpAddr, Option<String>)>,
    setting: &str,
    touched: &[String],
) -> Result<(), TryError> {
    let via = match via {
        _ if touched.is_empty() => return Ok(()),
        Some((_, Some(iface))) if touched.contains(&iface) => return Ok(()),
        Some((ip, Some(iface))) => format!("reaches '{ip}' through '{iface}'"),
        Some((ip, None)) => format!("reaches '{ip}' through no interface the routing table names"),
        None => "sends nothing over the network".to_string(),
    };
    Err(TryError::OtherInterface {
        judge: judge.to_string(),
        via,
        setting: setting.to_string(),
        touched: format!("'{}'", touched.join("', '")),
    })
}

/// Refuses an smb.conf change judged by anything but this box's smbd
/// (`smb_local`: whether an smb judge's server is this box; `None`: no smb judge).
fn check_samba_here(smb_local: Option<bool>, name: &str, setting: &str) -> Result<(), TryError> {
    let why = match smb_local {
        Some(true) => return Ok(()),
        Some(false) => "measures a server that is not this box",
        None => "is not an smb judge",
    };
    Err(TryError::SambaElsewhere {
        judge: name.to_string(),
        why,
        setting: setting.to_string(),
    })
}

/// Refuses a trial whose judge does not exercise the change: the benched
/// file off the changed device, the peer not behind the changed interface,
/// an smb.conf change not judged against this box's Samba.
pub fn check_exercised(
    root: &Root,
    name: &str,
    judge: &PreparedJudge,
    plan: &Plan,
    setting: &str,
) -> Result<(), TryError> {
    let mut touched = touched_block_devices(plan, setting);
    // A mount option acts on the filesystem's device.
    touched.extend(remounted(plan).and_then(|mp| remount::mount_device(&mp)));
    check_same_device(
        name,
        &judge.device_stack().unwrap_or_default(),
        setting,
        &touched,
    )?;
    let via = judge
        .peer()
        .map(|a| (a.ip(), exercise::peer_interface(&Root::live(), a.ip())));
    check_same_interface(name, via, setting, &touched_interfaces(plan, setting))?;
    if switched_file(plan) == Some(edit_file::SMB_CONF) {
        let smb_local = match judge {
            PreparedJudge::Smb(s) => Some(s.local),
            _ => None,
        };
        check_samba_here(smb_local, name, setting)?;
        if let PreparedJudge::Smb(s) = judge {
            check_samba_reads(root, name, setting, s.addr().port())?;
        }
    }
    Ok(())
}

/// Refuses an smb.conf edit when the smbd listening on the judge's port reads
/// another file (a second Samba started with `-s`): the edit would not reach
/// it. Without a smbd seen on the port there is nothing to compare.
fn check_samba_reads(root: &Root, name: &str, setting: &str, port: u16) -> Result<(), TryError> {
    let canon = |p: std::path::PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
    let edited = canon(root.path(edit_file::SMB_CONF));
    let serving: Vec<std::path::PathBuf> =
        crate::bench::smb::local::configs_on_port(&Root::live(), port)
            .into_iter()
            .map(canon)
            .collect();
    if serving.is_empty() || serving.contains(&edited) {
        return Ok(());
    }
    let names: Vec<String> = serving
        .iter()
        .map(|p| format!("'{}'", p.display()))
        .collect();
    Err(TryError::SambaOtherConfig {
        judge: name.to_string(),
        setting: setting.to_string(),
        edited: edited.display().to_string(),
        serving: names.join(", "),
    })
}

/// The one change a plan holds, or why it cannot be tried.
pub fn the_change<'p>(plan: &'p Plan, what: &str) -> Result<&'p PlanItem, TryError> {
    let chosen: Vec<&PlanItem> = plan
        .items
        .iter()
        .filter(|i| i.status == Status::Apply)
        .collect();
    match chosen.as_slice() {
        [one] => {
            let runtime = plan.steps.iter().any(|s| {
                s.setting == one.setting
                    && matches!(
                        s.action,
                        Action::Runtime { value: Some(_), .. } | Action::Netdev { .. }
                    )
            });
            let edit = switched_file(plan).is_some();
            if !runtime && !edit {
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
    /// The first apply failed and rolled the session back itself.
    undone_by_apply: std::cell::Cell<bool>,
    /// The edited file switched with the runtime values (smb.conf, fstab),
    /// reloaded or remounted after each switch.
    file: Option<&'static str>,
    /// For an fstab edit: the mount point and its state before the trial,
    /// which each revert must give back.
    remount: Option<(String, MountState)>,
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
            let applied = apply::apply(
                self.store,
                self.root,
                self.run,
                self.plan,
                self.confirm_within,
                &spawn,
            );
            // A failed apply rolls its own session back: nothing is left to revert.
            self.undone_by_apply.set(applied.is_err());
            applied?;
            return self.reload();
        }
        self.check_deadman()?;
        for e in self.switched_entries()? {
            match (&e.new, e.kind.as_str()) {
                (Some(new), action::KIND_FILE) => action::write_file(self.root, &e.path, new)?,
                (Some(new), action::KIND_NETDEV) => {
                    action::write_netdev(&e.path, &String::from_utf8_lossy(new))?
                }
                (Some(new), _) => {
                    action::write_runtime(self.root, &e.path, &String::from_utf8_lossy(new))?
                }
                (None, _) => {}
            }
        }
        self.reload()
    }

    /// Makes the switched file take effect: Samba reads smb.conf again, the
    /// mount point is remounted with its fstab entry's options.
    fn reload(&self) -> anyhow::Result<()> {
        if self.file == Some(edit_file::SMB_CONF) {
            reload::samba(self.root).map_err(TryError::Reload)?;
        }
        if let Some((mount_point, _)) = &self.remount
            && let Some(e) = reload::remount_entry(self.root, mount_point).error
        {
            return Err(TryError::Reload(e).into());
        }
        Ok(())
    }

    /// After a revert: the mount as it was before the trial, or an error.
    fn check_mount_restored(&self) -> anyhow::Result<()> {
        let Some((mount_point, before)) = &self.remount else {
            return Ok(());
        };
        let now = remount::mount_state(mount_point).map_err(TryError::Reload)?;
        if now != *before {
            return Err(TryError::MountNotRestored {
                mount_point: mount_point.clone(),
                before: before.describe(),
                now: now.describe(),
            }
            .into());
        }
        Ok(())
    }

    /// The journaled old runtime values written back, newest first.
    fn revert(&self) -> anyhow::Result<()> {
        if self.undone_by_apply.get() {
            return Ok(());
        }
        if self.plan.has_network() {
            self.check_deadman()?;
        }
        for e in self.switched_entries()?.iter().rev() {
            match (&e.old, e.kind.as_str()) {
                // Byte for byte what was there: the journaled old file.
                (Some(old), action::KIND_FILE) => {
                    action::write_file_as(self.root, &e.path, old, rollback::old_meta(e).as_ref())?
                }
                (None, action::KIND_FILE) => action::remove_file(self.root, &e.path)?,
                (Some(old), action::KIND_NETDEV) => {
                    action::write_netdev(&e.path, &String::from_utf8_lossy(old))?
                }
                (Some(old), _) => restore_runtime(self.root, &e.path, old)?,
                (None, _) => {}
            }
        }
        self.reload()?;
        self.check_mount_restored()
    }

    /// The journaled runtime writes, and the switched file's.
    fn switched_entries(&self) -> anyhow::Result<Vec<crate::store::tune::EntryRecord>> {
        Ok(self
            .store
            .tune_entries(self.run)?
            .into_iter()
            // Device settings (coalescing, dm-crypt flags) switch like runtime values.
            .filter(|e| {
                matches!(e.kind.as_str(), action::KIND_RUNTIME | action::KIND_NETDEV)
                    || (e.kind == action::KIND_FILE && Some(e.path.as_str()) == self.file)
            })
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
            self.reload()?;
            return self.check_mount_restored();
        }
        Ok(())
    }
}

/// What a trial takes from the command line (`tune try`'s options).
#[derive(Debug, Clone)]
pub struct TrySettings {
    /// Runs on each side, in ABBA blocks.
    pub runs: u32,
    /// Length of one measurement.
    pub runtime: Duration,
    /// Two-sided confidence of the interval of the difference.
    pub confidence: f64,
    /// Keep the change only if the mean gains at least this many percent.
    pub min_gain: f64,
    /// The validity guard's settle time before each run, in seconds.
    pub settle_s: f64,
    /// A run still disturbed after its re-runs fails the trial.
    pub strict: bool,
    pub allow_weaker_security: bool,
}

impl TrySettings {
    /// The trial: `runs` on each side in ABBA blocks, judged at `confidence`
    /// in the direction the metric improves.
    pub fn plan(&self, better: Better) -> Result<TrialPlan, PlanError> {
        let mut plan = TrialPlan::new(self.runs, true, better);
        plan.confidence = self.confidence;
        plan.min_gain_pct = self.min_gain;
        plan.validate()?;
        Ok(plan)
    }
}

/// One trial of one change with a judge ready to measure: everything after
/// the plan is built and the judge checked, shared by a single `tune try`
/// and each recipe of `--folklore`.
pub struct Trial<'a> {
    pub a: &'a TrySettings,
    /// The command line the trial's run is stored with.
    pub command: &'a str,
    pub store: &'a Store,
    pub root: &'a Root,
    pub judge: &'a Judge,
    pub prepared: &'a PreparedJudge,
    pub metric_name: MetricName,
    /// Whether a change that wins stays (false: reverted whatever it measured).
    pub keep: bool,
}

impl Trial<'_> {
    /// Measures `item` of `plan` in ABBA runs, keeps or reverts it, and
    /// stores the trial as a `tune-try` run.
    pub fn measure(&self, plan: &Plan, item: &PlanItem) -> anyhow::Result<TryReport> {
        let (a, store, root, judge, metric_name) = (
            self.a,
            self.store,
            self.root,
            self.prepared,
            self.metric_name,
        );
        let metric = self.judge.metric(metric_name);
        let trial_plan = a.plan(metric.better)?;
        let trade = crate::tune::kinds::kind(&item.change).lowers_security(root);
        let pick = |s: Sample| {
            s.get(metric_name).ok_or_else(|| JudgeError::Missing {
                judge: self.judge.kind(),
                target: self.judge.to_string(),
                metric: metric_name.name(),
                why: "the run measured none",
            })
        };
        // The first run after a pause is slow (cold caches and queues below the
        // page cache, a disk spinning up): one unused run keeps it out of the baseline.
        let warmup = {
            let guard = Guard::start(&Root::live(), guard_plan(judge, a.settle_s));
            let v = judge.measure()?;
            guard.finish(&Root::live(), Outcome::default());
            stop_if_interrupted()?;
            pick(v)?
        };
        let host = crate::probe::host::read_host_id(root);
        let run = store.begin_run(crate::store::RunKind::TuneTry, &host, self.command)?;
        store.save(run, plan)?;
        // A network change stays behind the dead-man timer for the whole trial
        // (each run takes about its runtime plus a settle), and longer on a slow box.
        let per_run = a.runtime + Duration::from_secs(1);
        let switch = Switch {
            store,
            root,
            run,
            plan,
            confirm_within: per_run * (4 * a.runs) + Duration::from_secs(60),
            started: std::cell::Cell::new(false),
            undone_by_apply: std::cell::Cell::new(false),
            file: switched_file(plan),
            remount: match remounted(plan) {
                Some(mp) => {
                    let before = remount::mount_state(&mp).map_err(anyhow::Error::msg)?;
                    Some((mp, before))
                }
                None => None,
            },
        };
        let progress = std::io::stderr().is_terminal();
        let total = 2 * a.runs;
        let mut taken = 0;
        let mut disturbed_runs = Vec::new();
        let mut reruns = 0;
        // Throughput beside the metric, for a CPU-per-GB verdict.
        let bw = std::cell::RefCell::new(Vec::new());
        // The timeline figures beside it, for the table.
        let mut run_timelines = Vec::new();
        let result = trial::run_trial_reviewed(
            &trial_plan,
            || {
                taken += 1;
                let (sample, validity) = guarded_measure(judge, &mut reruns)?;
                let v = pick(sample)?;
                bw.borrow_mut().push(sample.bw);
                if let Some(stall) = sample.stall {
                    run_timelines.push(trial::RunTimeline {
                        longest_stall_s: stall,
                        sustained_mb_per_sec: sample.sustained,
                    });
                }
                if !validity.is_clean() {
                    let why = format!("run {taken}: {}", validity.reasons.join("; "));
                    if a.strict {
                        anyhow::bail!(
                            "{why} (still disturbed after {MAX_RERUNS} re-runs; --strict)"
                        );
                    }
                    disturbed_runs.push(why);
                }
                if progress {
                    crate::note!("nastune: run {taken}/{total}: {v:.1} {}", metric.unit);
                }
                Ok(v)
            },
            || switch.apply(),
            || switch.revert(),
            |o| {
                if metric_name == MetricName::CpuPerGb {
                    let unit = self.judge.metric(MetricName::Bw).unit;
                    review_throughput(o, &trial_plan, &bw.borrow(), unit);
                }
                review_security(o, trade.as_deref(), a.allow_weaker_security);
                if !self.keep {
                    review_folklore(o);
                }
            },
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
                apply::confirm(store, run)?;
            }
        } else {
            switch.roll_back()?;
        }
        let final_value = match switch.file {
            Some(_) => item
                .new
                .clone()
                .filter(|_| kept)
                .or_else(|| item.old.clone()),
            None => plan
                .steps
                .iter()
                .find(|s| {
                    s.setting == item.setting
                        && matches!(s.action, Action::Runtime { .. } | Action::Netdev { .. })
                })
                .and_then(|s| {
                    read_entry(root, s.action.kind(), s.action.path())
                        .ok()
                        .flatten()
                })
                .map(|b| selected_value(&String::from_utf8_lossy(&b))),
        };
        let report = TryReport {
            change: item.clone(),
            workload: self.judge.to_string(),
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
            security_trade: trade,
            run_timelines,
        };
        store.save(run, &report)?;
        store.finish_run(run, "ok")?;
        Ok(report)
    }
}

/// A CPU-per-GB gain is kept only when throughput did not fall beyond the
/// noise, and the verdict says it was kept for its CPU.
fn review_throughput(
    o: &mut TrialOutcome,
    plan: &trial::TrialPlan,
    bw: &[Option<f64>],
    unit: &str,
) {
    if o.verdict != Verdict::Keep {
        return;
    }
    let runs: Option<Vec<(Side, f64)>> = o
        .runs
        .iter()
        .zip(bw)
        .map(|((side, _), b)| b.map(|b| (*side, b)))
        .collect();
    let Some(runs) = runs else {
        return;
    };
    let t = trial::decide(
        &trial::TrialPlan {
            better: Better::Higher,
            min_gain_pct: 0.0,
            ..plan.clone()
        },
        runs,
    );
    let (with, without) = (t.changed.mean, t.baseline.mean);
    if t.effect == Some(Effect::Hurts) {
        o.verdict = Verdict::Revert;
        o.reason = format!(
            "{}; but throughput fell beyond the noise ({with:.1} vs {without:.1} {unit}): \
             not kept",
            o.reason
        );
    } else {
        o.reason = format!(
            "kept for its lower CPU per GB, throughput kept ({with:.1} vs {without:.1} {unit}): {}",
            o.reason
        );
    }
}

/// Folklore trials keep nothing without `--keep-helpful`: the measured
/// effect stands, the verdict says why the change went.
fn review_folklore(o: &mut TrialOutcome) {
    if o.verdict == Verdict::Keep {
        o.verdict = Verdict::Revert;
        o.reason = format!(
            "{}; reverted all the same: --folklore keeps a recipe only with --keep-helpful",
            o.reason
        );
    }
}

/// A change that lowers security is kept only with `--allow-weaker-security`,
/// and the verdict says what it trades either way.
fn review_security(o: &mut TrialOutcome, trade: Option<&str>, allowed: bool) {
    let Some(trade) = trade else {
        return;
    };
    if o.verdict != Verdict::Keep {
        o.reason = format!("{}; it would trade {trade}", o.reason);
    } else if allowed {
        o.reason = format!(
            "{}; kept with --allow-weaker-security: it trades {trade}",
            o.reason
        );
    } else {
        o.verdict = Verdict::Revert;
        o.reason = format!(
            "{}; not kept: it lowers security, trading {trade}; pass --allow-weaker-security \
             to keep it",
            o.reason
        );
    }
}

/// What the validity guard watches: a local server's processes are part of
/// the work; a disk judge's runs are judged on CPU as before.
fn guard_plan(judge: &PreparedJudge, settle_s: f64) -> GuardPlan {
    let mut p = match judge {
        PreparedJudge::Disk(_) => GuardPlan::cpu(0.0),
        other => other.guard_plan(),
    };
    p.settle_s = settle_s;
    p
}

/// Ends the trial at the next run boundary after Ctrl-C or SIGTERM: the
/// error path reverts the change like any other failure.
fn stop_if_interrupted() -> Result<(), TryError> {
    match crate::bench::interrupt::interrupted() {
        true => Err(TryError::Interrupted),
        false => Ok(()),
    }
}

/// A disturbed measurement is taken again up to this many times.
const MAX_RERUNS: u32 = 2;

/// One measurement under the validity guard, re-taken while disturbed (up to
/// [`MAX_RERUNS`] times); the last sample and its verdict.
fn guarded_measure(judge: &PreparedJudge, reruns: &mut u32) -> anyhow::Result<(Sample, Validity)> {
    let root = Root::live();
    let mut tries = 0;
    loop {
        stop_if_interrupted()?;
        let guard = Guard::start(&root, guard_plan(judge, 0.0));
        let v = judge.measure()?;
        stop_if_interrupted()?;
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
    fn an_interface_change_is_tried_only_through_that_interface() {
        let d = crate::tune::test_tree::tree(&[
            ("proc/sys/net/ipv4/conf/eth1/rp_filter", "1\n"),
            ("sys/class/net/eth0/tx_queue_len", "1000\n"),
        ]);
        let root = Root::tree(d.path()).unwrap();
        let setting = "sysfs:class/net/eth0/tx_queue_len";
        let plan = plan_of(&root, &[&format!("{setting}=5000")]);
        let touched = touched_interfaces(&plan, setting);
        assert_eq!(touched, ["eth0"]);
        let ip: std::net::IpAddr = "192.168.1.5".parse().unwrap();
        let via = |i: &str| Some((ip, Some(i.to_string())));
        assert!(check_same_interface("net:nas", via("eth0"), setting, &touched).is_ok());
        let e = check_same_interface("net:nas:5201", via("eth1"), setting, &touched).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the judge 'net:nas:5201' reaches '192.168.1.5' through 'eth1', but \
             'sysfs:class/net/eth0/tx_queue_len' changes 'eth0': the trial would measure traffic \
             the change does not touch; judge it with a peer reached through 'eth0'"
        );
        let e = check_same_interface("seq-read:/srv", None, setting, &touched).unwrap_err();
        assert!(
            e.to_string().contains("sends nothing over the network"),
            "{e}"
        );
        let rp = "sysctl:net.ipv4.conf.eth1.rp_filter";
        let plan = plan_of(&root, &[&format!("{rp}=2")]);
        assert_eq!(touched_interfaces(&plan, rp), ["eth1"]);
        // A change of no interface passes with any judge.
        assert!(check_same_interface("seq-read:/srv", None, "sysctl:vm.swappiness", &[]).is_ok());
    }

    #[test]
    fn an_smb_conf_change_needs_this_box_as_the_smb_judge() {
        let d = crate::tune::test_tree::tree(&[(
            "etc/samba/smb.conf",
            "[global]\n  smb encrypt = required\n",
        )]);
        let root = Root::tree(d.path()).unwrap();
        let plan = plan_of(&root, &["smb.conf:global:smb encrypt=off"]);
        assert_eq!(switched_file(&plan), Some("etc/samba/smb.conf"));
        let item = the_change(&plan, "x").unwrap();
        assert_eq!(
            crate::tune::kinds::kind(&item.change)
                .lowers_security(&root)
                .as_deref(),
            Some(
                "SMB encryption: file data crosses the network readable by anyone on the path \
                 ('smb encrypt' 'required' -> 'off')"
            )
        );
        assert!(check_samba_here(Some(true), "smb://127.0.0.1/rw", &item.setting).is_ok());
        let e = check_samba_here(Some(false), "smb://nas/rw", &item.setting).unwrap_err();
        assert!(
            e.to_string()
                .contains("measures a server that is not this box"),
            "{e}"
        );
        let e = check_samba_here(None, "seq-read:/", &item.setting).unwrap_err();
        assert_eq!(
            e.to_string(),
            "'smb.conf:[global]:smb encrypt' changes this box's Samba, but the judge 'seq-read:/' \
             is not an smb judge: the trial would measure a server the change does not touch; \
             judge it with smb://HOST/SHARE served here (e.g. smb://127.0.0.1/SHARE)"
        );
    }

    fn outcome(verdict: Verdict, effect: Effect, runs: Vec<(Side, f64)>) -> TrialOutcome {
        let mut o = trial::decide(&trial::TrialPlan::new(2, true, Better::Lower), runs);
        o.verdict = verdict;
        o.effect = Some(effect);
        o
    }

    #[test]
    fn a_weaker_change_is_kept_only_when_allowed_and_says_what_it_trades() {
        let runs = vec![(Side::Baseline, 1.0), (Side::Changed, 2.0)];
        let mut o = outcome(Verdict::Keep, Effect::Helps, runs.clone());
        review_security(&mut o, Some("SMB encryption"), false);
        assert_eq!(o.verdict, Verdict::Revert);
        assert!(
            o.reason.ends_with(
                "; not kept: it lowers security, trading SMB encryption; pass \
                 --allow-weaker-security to keep it"
            ),
            "{}",
            o.reason
        );
        let mut o = outcome(Verdict::Keep, Effect::Helps, runs.clone());
        review_security(&mut o, Some("SMB encryption"), true);
        assert_eq!(o.verdict, Verdict::Keep);
        assert!(
            o.reason
                .ends_with("kept with --allow-weaker-security: it trades SMB encryption")
        );
        let mut o = outcome(Verdict::Keep, Effect::Helps, runs);
        review_security(&mut o, None, false);
        assert_eq!(o.verdict, Verdict::Keep);
    }

    #[test]
    fn a_cpu_gain_is_kept_only_with_throughput_kept() {
        let plan = trial::TrialPlan::new(3, true, Better::Lower);
        let sides = [
            Side::Baseline,
            Side::Changed,
            Side::Changed,
            Side::Baseline,
            Side::Baseline,
            Side::Changed,
        ];
        let cpu = [2.0, 1.0, 1.1, 2.1, 1.9, 0.9];
        let runs: Vec<(Side, f64)> = sides.iter().copied().zip(cpu).collect();
        let o = trial::decide(&plan, runs.clone());
        assert_eq!(o.verdict, Verdict::Keep, "{}", o.reason);
        // Throughput the same within the noise: kept, for its CPU.
        let mut kept = o.clone();
        let same = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2].map(Some);
        review_throughput(&mut kept, &plan, &same, "MB/s");
        assert_eq!(kept.verdict, Verdict::Keep);
        assert!(
            kept.reason.starts_with("kept for its lower CPU per GB, throughput kept (100.1 vs 100.0 MB/s): better beyond the noise"),
            "{}",
            kept.reason
        );
        // Throughput fell: reverted, and said why.
        let mut fell = o;
        let slower = [100.0, 80.0, 81.0, 101.0, 99.0, 79.0].map(Some);
        review_throughput(&mut fell, &plan, &slower, "MB/s");
        assert_eq!(fell.verdict, Verdict::Revert);
        assert!(
            fell.reason
                .ends_with("but throughput fell beyond the noise (80.0 vs 100.0 MB/s): not kept"),
            "{}",
            fell.reason
        );
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
        // A device setting can be tried, on the live system only.
        let e = the_change(&eth, "x").unwrap_err().to_string();
        assert_eq!(
            e,
            "nothing to try: 'ethtool:eth0:tso' is skipped (ethtool settings are set on the \
             live system only, not in a --root tree)"
        );
    }
}
