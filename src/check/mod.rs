//! `nastune check`, the engine: one [`CheckPlan`] in; the probe, the quick
//! measurements (disk in a directory, ciphers, loopback and peer TCP, an SMB
//! copy), each inside the validity guard; then the path analysis and the
//! findings as one [`CheckDoc`]. It draws only its progress bar: cmd/check.rs
//! builds the plan, stores the run and prints.

pub mod plan;

use std::convert::Infallible;
use std::time::Instant;

use crate::advise::bottleneck;
use crate::advise::check::{CheckDoc, SCHEMA_VERSION};
use crate::advise::{self, measured, path_model};
use crate::bench::crypto::{self, CryptoReport};
use crate::bench::disk::{self, DiskBench};
use crate::bench::smb::SmbReport;
use crate::bench::validity::{Guard, GuardPlan, Outcome, Validity};
use crate::doc::Document;
use crate::net::doc::NetReport;
use crate::net::{self, plan::done_fraction};
use crate::probe::{self, Snapshot};
use crate::root::Root;
use crate::store::{RunId, Store, StoreError};

pub use plan::{CheckPlan, Request};

/// What a check measured and concluded: the documents its run stores.
#[derive(Debug)]
pub struct CheckRun {
    pub snapshot: Snapshot,
    pub disk: Option<DiskBench>,
    pub crypto: Option<CryptoReport>,
    /// The loopback test, then the peer's.
    pub nets: Vec<NetReport>,
    pub smb: Option<SmbReport>,
    pub doc: CheckDoc,
}

/// The disk bench was interrupted (its temporary files are removed).
#[derive(Debug)]
pub struct Interrupted;

impl CheckRun {
    /// Stores every document in `run`: the snapshot, each measurement's, then
    /// the check document.
    pub fn save(&self, store: &Store, run: RunId) -> Result<(), StoreError> {
        store.save(run, &self.snapshot)?;
        if let Some(d) = &self.disk {
            store.save(run, d)?;
        }
        if let Some(c) = &self.crypto {
            store.save(run, c)?;
        }
        for n in &self.nets {
            store.save(run, n)?;
        }
        if let Some(s) = &self.smb {
            store.save(run, s)?;
        }
        store.save(run, &self.doc)
    }
}

/// Runs `plan` on the box `root` reads.
pub fn run(plan: &CheckPlan, root: &Root) -> Result<CheckRun, Interrupted> {
    let started = Instant::now();
    let snapshot = probe::probe(root);
    let mut phases = Phases::new(plan.phases());
    let mut not_measured = Vec::new();

    let mut disk = None;
    if let Some(disk_plan) = &plan.disk {
        phases.start(&format!("disk under '{}'", disk_plan.path.display()));
        // The disk bench draws its own bar, one test at a time.
        phases.bar.clear();
        match disk::measure(disk_plan) {
            Ok(Some(doc)) if !doc.interrupted => disk = Some(doc),
            Ok(_) => return Err(Interrupted),
            Err(e) => not_measured.push(format!("disk: {:#}", anyhow::Error::from(e))),
        }
    } else {
        not_measured.push(plan.skipped("disk", "--skip-disk"));
    }
    let mut guarded = Guarded {
        root,
        phases,
        // The disk bench settled first (or this is the first phase and settles
        // now); later phases follow our own work, so they do not wait again.
        settle_s: if plan.disk.is_some() {
            0.0
        } else {
            plan.settle_s
        },
    };

    let mut crypto = None;
    if let Some(settings) = &plan.crypto {
        let Ok(report) = guarded.phase("ciphers", GuardPlan::default(), |phases| {
            Ok::<_, Infallible>(crypto::run(settings, root, &mut |step, f| {
                phases.within(step, f)
            }))
        });
        crypto = Some(report);
    } else {
        not_measured.push(plan.skipped("crypto", "--skip-crypto"));
    }

    let mut nets = Vec::new();
    if let Some(loopback) = &plan.loopback {
        match guarded.phase("loopback TCP ceiling", GuardPlan::default(), |phases| {
            net_test(loopback, &mut |f| phases.within("", f))
        }) {
            Ok(doc) => nets.push(doc),
            Err(e) => not_measured.push(format!("tcp loopback: {e}")),
        }
    } else {
        not_measured.push(plan.skipped("tcp", "--skip-tcp"));
    }
    if let Some((peer, peer_plan)) = &plan.peer {
        let name = format!("network to '{peer}'");
        match guarded.phase(&name, GuardPlan::default(), |phases| {
            net_test(peer_plan, &mut |f| phases.within("", f))
        }) {
            Ok(doc) => nets.push(doc),
            Err(e) => not_measured.push(format!("network to '{peer}': {e}")),
        }
    }

    let mut smb = None;
    if let Some(smb_plan) = &plan.smb {
        let target = &smb_plan.settings.target;
        let guard = GuardPlan {
            io: true,
            peer_names: vec!["smbd".into()],
            ..GuardPlan::default()
        };
        let name = format!("SMB copy to and from '{target}'");
        match guarded.phase(&name, guard, |phases| {
            crate::bench::smb::measure(smb_plan, root, &mut |step| phases.within(step, 0.5))
        }) {
            Ok(doc) => smb = Some(doc),
            Err(e) => not_measured.push(format!("smb '{target}': {e}")),
        }
    }
    drop(guarded);

    let mut measurements =
        measured::from_documents(disk.iter(), crypto.iter(), nets.iter(), smb.iter());
    // This run's SMB figure (the only one) gets what only a live box shows.
    if let (Some(server), Some(fig)) = (&plan.server, measurements.services.first_mut()) {
        fig.share_path = server.share_path.clone();
        fig.cores = server.cpus.as_ref().map(|smbd| {
            path_model::served_cores(smbd, probe::cpu_list::read_cpus_allowed(root, "self"))
        });
    }
    let paths = bottleneck::analyse(&snapshot, &measurements);
    let findings = advise::evaluate(&advise::Context {
        snapshot: &snapshot,
        measurements: &measurements,
    });
    let validities: Vec<Validity> = (disk.iter().filter_map(named_validity))
        .chain(crypto.iter().filter_map(named_validity))
        .chain(nets.iter().filter_map(named_validity))
        .chain(smb.iter().filter_map(named_validity))
        .collect();
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
        validity: Validity::worst(&validities),
    };
    Ok(CheckRun {
        snapshot,
        disk,
        crypto,
        nets,
        smb,
        doc,
    })
}

/// A measurement's validity with its reasons named by the measurement
/// (`disk: …`, `smb: …`): check runs several, and a reason alone does not
/// say which one was disturbed.
fn named_validity<D: Document>(doc: &D) -> Option<Validity> {
    let mut v = doc.validity()?.clone();
    let phase = D::KIND.as_str();
    for r in &mut v.reasons {
        *r = format!("{phase}: {r}");
    }
    Some(v)
}

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

/// The phases after the disk bench (which guards itself), each run inside the
/// validity guard.
struct Guarded<'r> {
    root: &'r Root,
    phases: Phases,
    /// Seconds the next guard waits for an idle box: only the first waits.
    settle_s: f64,
}

impl Guarded<'_> {
    /// Starts phase `name` and runs `measure` inside the guard `guard` (its
    /// settle time this engine's), the verdict set on the document; `Err`
    /// says why there is no document, and no verdict is kept.
    fn phase<D: Measurement, E>(
        &mut self,
        name: &str,
        guard: GuardPlan,
        measure: impl FnOnce(&mut Phases) -> Result<D, E>,
    ) -> Result<D, E> {
        self.phases.start(name);
        let g = Guard::start(
            self.root,
            GuardPlan {
                settle_s: std::mem::take(&mut self.settle_s),
                ..guard
            },
        );
        let mut doc = measure(&mut self.phases)?;
        let outcome = doc.outcome();
        *doc.validity_mut() = Some(g.finish(self.root, outcome));
        Ok(doc)
    }
}

/// A measurement's document, which carries the guard's verdict.
trait Measurement {
    fn validity_mut(&mut self) -> &mut Option<Validity>;

    /// What the measurement tells the guard about itself.
    fn outcome(&self) -> Outcome {
        Outcome::default()
    }
}

impl Measurement for CryptoReport {
    fn validity_mut(&mut self) -> &mut Option<Validity> {
        &mut self.validity
    }

    fn outcome(&self) -> Outcome {
        Outcome {
            measuring_thread: self.measuring_thread(),
            ..Outcome::default()
        }
    }
}

impl Measurement for NetReport {
    fn validity_mut(&mut self) -> &mut Option<Validity> {
        &mut self.validity
    }
}

impl Measurement for SmbReport {
    fn validity_mut(&mut self) -> &mut Option<Validity> {
        &mut self.validity
    }
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
