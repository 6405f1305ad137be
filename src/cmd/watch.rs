//! `nastune watch`: sample, track, alert, export, persist baselines.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::bench::interrupt;
use crate::cli::GlobalArgs;
use crate::cli::watch::WatchArgs;
use crate::root::Root;
use crate::store::Store;
use crate::watch::alert::{Alert, AlertConfig};
use crate::watch::counter::SeriesState;
use crate::watch::points::PointBuffer;
use crate::watch::{RunSummary, Watcher, http, replay, sample};
use anyhow::Context;

pub fn run(args: &WatchArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    args.validate()?;
    let trees = replay::open_trees(&args.replay).context("--replay")?;
    let live = Root::live();
    let first = trees.first().unwrap_or(&live);
    let host_id = crate::probe::host::read_host_id(first);
    let mut store = match super::open_store(global)? {
        Some(s) => {
            let run = s.begin_run(
                crate::store::RunKind::Watch,
                &host_id,
                &super::command_line(),
            )?;
            Some((s, run))
        }
        None => None,
    };
    let baselines = match &store {
        Some((s, _)) => load_baselines(s, &host_id)?,
        None => BTreeMap::new(),
    };
    let cfg = AlertConfig {
        increases: args.increases,
        within_s: args.within,
        max_rate_per_sec: args.max_rate,
        max_celsius: args.max_temp,
    };
    let mut watcher = Watcher::new(cfg, baselines);
    let page: http::Page = Arc::new(Mutex::new(String::new()));
    if let Some(addr) = &args.metrics_listen {
        let bound = http::serve(addr, page.clone())?;
        crate::note!("serving Prometheus metrics at http://{bound}/metrics");
    }
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let count = match (args.count, trees.len()) {
        (Some(n), 0) => Some(n),
        (Some(n), t) => Some(n.min(t as u64)),
        (None, 0) => None,
        (None, t) => Some(t as u64),
    };
    let mut last_smart: Option<f64> = None;
    let mut last_persist: Option<f64> = None;
    let mut taken = 0u64;
    let mut points = PointBuffer::default();
    let mut kernel_log = crate::watch::kernel_log::KernelLogCounter::default();
    let mut summary = RunSummary::new(&host_id, !trees.is_empty());
    let mut growth = crate::watch::Growth::default();
    interrupt::install()?;
    loop {
        let started = Instant::now();
        let root = trees.get(taken as usize).unwrap_or(&live);
        let mut s = if trees.is_empty() {
            sample::read_sample(root, false)
        } else {
            // A tree without a time is one --interval after the one before.
            let unrecorded = args.interval.map(|i| taken as f64 * i);
            sample::read_replayed(root, unrecorded)
        }
        .map_err(anyhow::Error::msg)?;
        kernel_log.add(root, &mut s);
        if !args.no_smart
            && last_smart
                .is_none_or(|t| s.time_unix_s - t >= args.smart_interval || s.time_unix_s < t)
        {
            sample::add_smart(root, &mut s);
            last_smart = Some(s.time_unix_s);
        }
        let report = watcher.step(s);
        taken += 1;
        points.add(report.time_unix_s, &report.changes);
        summary.add(&report);
        growth.add(&report);
        let mut out = String::new();
        if args.json {
            out.push_str(&crate::json::to_string(&report)?);
            out.push('\n');
            for a in &report.alerts {
                out.push_str(&crate::json::to_string(a)?);
                out.push('\n');
            }
        } else {
            out.push_str(&crate::report::watch_text::sample_line(&report));
            for a in &report.alerts {
                out.push_str(&crate::report::watch_text::alert_block(a, colour));
            }
        }
        if args.json {
            crate::output::write_stdout(out.as_bytes())?;
        } else {
            crate::output::write_coloured(&out, colour)?;
        }
        if let Some(cmd) = &args.exec {
            for a in &report.alerts {
                run_exec(cmd, a, Duration::from_secs_f64(args.exec_timeout));
            }
        }
        *page.lock().unwrap_or_else(|p| p.into_inner()) = watcher.metrics_page();
        let done = count.is_some_and(|n| taken >= n) || interrupt::interrupted();
        if let Some((store, run)) = &mut store
            && (done || last_persist.is_none_or(|t| report.time_unix_s - t >= args.persist_every))
        {
            let cutoff = report.time_unix_s - args.keep_days * 86_400.0;
            save_baselines(store, &host_id, watcher.tracker.states(), cutoff)?;
            store.save_watch_points(*run, &points.take())?;
            store.prune_watch(cutoff, crate::store::MAX_WATCH_POINTS)?;
            last_persist = Some(report.time_unix_s);
        }
        if done {
            break;
        }
        if trees.is_empty() {
            let wait =
                Duration::from_secs_f64(args.live_interval()).saturating_sub(started.elapsed());
            sleep_unless_interrupted(wait);
        }
    }
    if !args.json {
        let top = growth.top(5);
        crate::output::write_text(&crate::report::watch_text::summary(&summary, &top))?;
    }
    if let Some((store, run)) = &store {
        store.save(*run, &summary)?;
        let status = if interrupt::interrupted() {
            "stopped"
        } else {
            "ok"
        };
        store.finish_run(*run, status)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Sleeps `wait` in short slices, so Ctrl-C or SIGTERM ends a long interval at once.
fn sleep_unless_interrupted(wait: Duration) {
    let deadline = Instant::now() + wait;
    while !interrupt::interrupted() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

fn load_baselines(store: &Store, host_id: &str) -> anyhow::Result<BTreeMap<String, SeriesState>> {
    let mut out = BTreeMap::new();
    for (series, json) in store.watch_series(host_id)? {
        match serde_json::from_str::<SeriesState>(&json) {
            Ok(state) => {
                out.insert(series, state);
            }
            // One bad row costs that series its baseline, not the watch.
            Err(e) => crate::note!(
                "warning: stored baseline of '{series}' unreadable ({e}); starting it afresh"
            ),
        }
    }
    Ok(out)
}

/// Saves the baselines of the series seen since `cutoff`, each stamped with
/// when it was last seen, so a series that went away (a removed NIC) ages out.
fn save_baselines(
    store: &mut Store,
    host_id: &str,
    states: &BTreeMap<String, SeriesState>,
    cutoff: f64,
) -> anyhow::Result<()> {
    let rows = states
        .iter()
        .filter(|(_, s)| s.last_time_unix_s >= cutoff)
        .map(|(k, s)| Ok((k.clone(), crate::json::to_string(s)?, s.last_time_unix_s)))
        .collect::<serde_json::Result<Vec<_>>>()?;
    store.save_watch_series(host_id, &rows)?;
    Ok(())
}

/// Runs `sh -c CMD` with the alert on stdin; kills it after `timeout`. A failing
/// command is reported on stderr and does not stop the watch.
fn run_exec(cmd: &str, alert: &Alert, timeout: Duration) {
    let json = match crate::json::to_string(alert) {
        Ok(json) => json,
        Err(e) => {
            crate::note!("warning: alert not written as JSON ({e}); '{cmd}' not run");
            return;
        }
    };
    // Its own process group, so a timeout kills what the shell started too
    // (a surviving grandchild would keep our stderr open and live on).
    let mut child = match Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            crate::note!("warning: --exec '{cmd}' did not start: {e}");
            return;
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read stdin closes the pipe: not an error.
        let _ = stdin.write_all(json.as_bytes());
        let _ = stdin.write_all(b"\n");
    }
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return,
            Ok(Some(status)) => {
                crate::note!("warning: --exec '{cmd}' failed: {status}");
                return;
            }
            Ok(None) if Instant::now() >= deadline => {
                if let Ok(pgid) = i32::try_from(child.id()) {
                    // SAFETY: kill(2) with a negative pid signals that process
                    // group; no memory is involved.
                    unsafe {
                        libc::kill(-pgid, libc::SIGKILL);
                    }
                }
                let _ = child.kill();
                let _ = child.wait();
                crate::note!(
                    "warning: --exec '{cmd}' ran longer than {:.1} s and was killed; raise --exec-timeout",
                    timeout.as_secs_f64()
                );
                return;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                crate::note!("warning: --exec '{cmd}': {e}");
                return;
            }
        }
    }
}
