//! `nastune check`, the main job: probe, a quick set of measurements (disk in a
//! directory, crypto, and what else is cheap), advise, and a short ranked summary
//! naming the bottleneck of each data path. Everything is saved as one run.

use std::process::ExitCode;
use std::time::Instant;

use crate::advise;
use crate::advise::bottleneck;
use crate::advise::path_model;
use crate::bench::validity::{Guard, GuardPlan, Outcome, Validity};
use crate::bench::{crypto, disk};
use crate::cli::GlobalArgs;
use crate::cli::check::CheckArgs;
use crate::net::{self, plan::done_fraction};
use crate::probe;
use crate::root::Root;
use crate::runs::{Doc, RunDocs};
use anyhow::Context as _;
use std::collections::BTreeSet;

pub use crate::advise::check::{CheckDoc, SCHEMA_VERSION};

/// Runs one network test for `check`; the document, or why there is none.
/// `progress` gets the share of the test done after each interval.
fn net_test(
    plan: &net::plan::Plan,
    progress: &mut dyn FnMut(f64),
) -> Result<net::doc::NetReport, String> {
    let cfg = plan.start().map_err(|e| e.to_string())?;
    net::client::run(&cfg, &mut |i| progress(done_fraction(i, &cfg)))
        .map_err(|e| format!("{:#}", anyhow::Error::from(e)))
}

/// The progress bar of `check`: one share per measuring phase.
struct Phases {
    bar: crate::progress::Progress,
    total: usize,
    started: usize,
    name: String,
}

impl Phases {
    fn new(total: usize) -> Self {
        Phases {
            bar: crate::progress::Progress::stderr(),
            total: total.max(1),
            started: 0,
            name: String::new(),
        }
    }

    fn start(&mut self, name: &str) {
        self.started += 1;
        self.name = name.to_string();
        self.within("", 0.0);
    }

    /// `step` of the current phase, `fraction` of it done.
    fn within(&mut self, step: &str, fraction: f64) {
        let label = format!(
            "check {}/{}: {} {step}",
            self.started, self.total, self.name
        );
        let done = (self.started.saturating_sub(1) as f64 + fraction) / self.total as f64;
        self.bar.draw(&label, done);
    }
}

/// The cores a locally served path may use: smbd's affinity and, the client
/// being this process, ours; `None` when smbd's could not be read.
fn path_cores(root: &Root, smbd: &BTreeSet<u32>) -> path_model::PathCores {
    let ours = root
        .read_string("proc/self/status")
        .ok()
        .and_then(|t| crate::probe::cpu_list::parse_cpus_allowed(&t));
    let (cpus, whose): (BTreeSet<u32>, &str) = match ours {
        Some(o) if !o.is_subset(smbd) => (
            smbd.union(&o).copied().collect(),
            "smbd's and this client's affinity",
        ),
        _ => (smbd.clone(), "smbd's affinity"),
    };
    path_model::PathCores {
        count: cpus.len() as f64,
        source: Some(format!("{whose}: {}", path_model::cpu_list_text(&cpus))),
        cpus: cpus.iter().copied().collect(),
        taken_by_others: 0.0,
    }
}

/// Each measurement's validity with its reasons named by the measurement
/// (`disk: …`, `smb: …`): check runs several, and a reason alone does not
/// say which one was disturbed.
fn phase_validities(docs: &RunDocs) -> Vec<Validity> {
    docs.0
        .iter()
        .filter_map(|d| {
            let mut v = d.validity()?.clone();
            let phase = d.kind().as_str();
            for r in &mut v.reasons {
                *r = format!("{phase}: {r}");
            }
            Some(v)
        })
        .collect()
}

pub fn run(args: &CheckArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut plan = args.plan()?;
    let store = super::open_store(global)?;
    let root = match &args.root {
        Some(dir) => Root::tree(dir).context("--root")?,
        None => Root::live(),
    };
    let skipped = |what: &str, flag: &str| match &args.root {
        Some(dir) => format!("{what}: not measured in a tree ('{}')", dir.display()),
        None => format!("{what}: skipped ({flag})"),
    };
    let snapshot = probe::probe(&root);
    let server = plan
        .smb
        .as_ref()
        .and_then(|p| crate::bench::smb::local::served_here(&root, p));
    // The share's own filesystem is the storage stage of the path checked.
    let share_dir = server.as_ref().and_then(|s| s.share_path.clone());
    if let (None, Some(dir), Some(_)) = (&args.dir, &share_dir, &plan.disk) {
        plan.disk = Some(args.disk_plan(std::path::Path::new(dir))?);
    }

    let mut docs: Vec<Doc> = Vec::new();
    let mut not_measured = Vec::new();
    let mut phases = Phases::new(
        [
            plan.disk.is_some(),
            plan.crypto.is_some(),
            plan.loopback.is_some(),
            plan.peer.is_some(),
            plan.smb.is_some(),
        ]
        .into_iter()
        .filter(|on| *on)
        .count(),
    );
    if let Some(disk_plan) = &plan.disk {
        phases.start(&format!("disk under '{}'", disk_plan.path.display()));
        // The disk bench draws its own bar, one test at a time.
        phases.bar.clear();
        match disk::measure(disk_plan) {
            Ok(Some(doc)) if !doc.interrupted => docs.push(Doc::Disk(Box::new(doc))),
            Ok(_) => {
                crate::note!("nastune: interrupted; temporary files removed");
                return Ok(ExitCode::from(crate::bench::interrupt::EXIT_CODE));
            }
            Err(e) => not_measured.push(format!("disk: {:#}", anyhow::Error::from(e))),
        }
    } else {
        not_measured.push(skipped("disk", "--skip-disk"));
    }
    // The disk bench settled first (or this is the first phase and settles
    // now); later phases follow our own work, so they do not wait again.
    let mut settle_s = if plan.disk.is_some() {
        0.0
    } else {
        args.guard.settle
    };
    let mut guard = |root: &Root| {
        let g = Guard::start(root, GuardPlan::cpu(settle_s));
        settle_s = 0.0;
        g
    };
    if let Some(settings) = &plan.crypto {
        phases.start("ciphers");
        let g = guard(&root);
        let mut report = crypto::run(settings, &root, &mut |step, f| phases.within(step, f));
        report.validity = Some(g.finish(
            &root,
            Outcome {
                measuring_thread: report.measuring_thread(),
                ..Outcome::default()
            },
        ));
        docs.push(Doc::Crypto(Box::new(report)));
    } else {
        not_measured.push(skipped("crypto", "--skip-crypto"));
    }

    if let Some(loopback) = &plan.loopback {
        phases.start("loopback TCP ceiling");
        let g = guard(&root);
        match net_test(loopback, &mut |f| phases.within("", f)) {
            Ok(mut doc) => {
                doc.validity = Some(g.finish(&root, Outcome::default()));
                docs.push(Doc::Net(Box::new(doc)))
            }
            Err(e) => not_measured.push(format!("tcp loopback: {e}")),
        }
    } else {
        not_measured.push(skipped("tcp", "--skip-tcp"));
    }
    if let Some((peer, peer_plan)) = &plan.peer {
        phases.start(&format!("network to '{peer}'"));
        let g = guard(&root);
        match net_test(peer_plan, &mut |f| phases.within("", f)) {
            Ok(mut doc) => {
                doc.validity = Some(g.finish(&root, Outcome::default()));
                docs.push(Doc::Net(Box::new(doc)))
            }
            Err(e) => not_measured.push(format!("network to '{peer}': {e}")),
        }
    }

    if let Some(smb_plan) = &plan.smb {
        let target = &smb_plan.settings.target;
        phases.start(&format!("SMB copy to and from '{target}'"));
        let g = Guard::start(
            &root,
            GuardPlan {
                settle_s,
                io: true,
                peer_names: vec!["smbd".into()],
                ..GuardPlan::default()
            },
        );
        match crate::bench::smb::measure(smb_plan, &root, &mut |step| phases.within(step, 0.5)) {
            Ok(mut doc) => {
                doc.validity = Some(g.finish(&root, Outcome::default()));
                docs.push(Doc::Smb(Box::new(doc)));
            }
            Err(e) => not_measured.push(format!("smb '{target}': {e}")),
        }
    }
    drop(phases);
    let docs = RunDocs(docs);
    let mut measurements = crate::runs::measured::measurements_from(&docs);
    // This run's SMB figure (the only one) gets what only a live box shows.
    if let (Some(server), Some(fig)) = (&server, measurements.services.first_mut()) {
        fig.share_path = server.share_path.clone();
        fig.cores = server.cpus.as_ref().map(|c| path_cores(&root, c));
    }
    let paths = bottleneck::analyse(&snapshot, &measurements);
    let findings = advise::evaluate(&advise::Context {
        snapshot: &snapshot,
        measurements: &measurements,
    });
    let doc = CheckDoc {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        host_id: snapshot.host_id.clone(),
        timestamp: snapshot.timestamp.clone(),
        elapsed_secs: started.elapsed().as_secs_f64(),
        measurements,
        not_measured,
        paths,
        findings,
        validity: Validity::worst(&phase_validities(&docs)),
    };
    let disturbed = args.guard.strict && doc.validity.as_ref().is_some_and(|v| !v.is_clean());
    let mut stored = None;
    if let Some(store) = &store {
        let run = store.begin_run(
            crate::store::RunKind::Check,
            &snapshot.host_id,
            &super::command_line(),
        )?;
        store.save(run, &snapshot)?;
        for d in &docs.0 {
            crate::runs::save(store, run, d)?;
        }
        store.save(run, &doc)?;
        store.finish_run(run, "ok")?;
        stored = Some(run);
    }
    let out = if args.json {
        crate::output::json_line(&doc)?
    } else {
        crate::report::check_text::render(&doc, stored)
    };
    crate::output::write_result(&out, args.json)?;
    let failed = args
        .fail_on
        .is_some_and(|limit| doc.findings.iter().any(|f| f.severity >= limit));
    Ok(if failed {
        ExitCode::from(1)
    } else {
        super::strict_exit(disturbed)
    })
}
