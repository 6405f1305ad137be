//! The figures rules use, read from stored runs: the latest bench and check
//! runs of a host ([`latest_of_host`]) and the bench documents of one run
//! ([`measurements_from`]). It lives with the catalog because it decodes whole
//! runs; advise only reads the [`Measurements`] it returns.

use super::{RunDocs, load};
use crate::advise::bottleneck::Measurements;
use crate::advise::measured::{self, MeasuredBy};
use crate::store::{DISTURBED, RunId, RunKind, RunRecord, Store, StoreError};

/// How many of the newest runs of each kind are looked at for this host: the
/// store may hold many boxes' runs, but a host's useful figures are recent.
pub const RUNS_LOOKED_AT: u32 = 20;

/// The kinds of run whose documents carry figures rules use.
const MEASURING_KINDS: [RunKind; 4] = [
    RunKind::BenchDisk,
    RunKind::BenchCrypto,
    RunKind::BenchNet,
    RunKind::Check,
];

/// Reads the figures this analysis needs from a run's bench documents (`disk`,
/// `crypto`, `net`, `smb`).
pub fn measurements_from(docs: &RunDocs) -> Measurements {
    measured::from_documents(docs.disks(), docs.cryptos(), docs.nets(), docs.smbs())
}

/// Figures gathered from the store, with the runs they came from.
#[derive(Debug, Default)]
pub struct Gathered {
    pub measurements: Measurements,
    /// The runs whose figures were used, newest first.
    pub used: Vec<RunRecord>,
    /// Runs of this host that could not be read, with the reason.
    pub skipped: Vec<(RunId, String)>,
}

/// The figures of the newest bench-disk, bench-crypto, bench-net and check run of
/// `host_id` (looking at most at the [`RUNS_LOOKED_AT`] newest runs of each
/// kind), merged so that a newer run's figure wins over an older one's.
pub fn latest_of_host(store: &Store, host_id: &str) -> Result<Gathered, StoreError> {
    let mut found: Vec<(RunRecord, Measurements)> = Vec::new();
    let mut skipped = Vec::new();
    for kind in MEASURING_KINDS {
        let runs = store.runs_of(Some(kind), RUNS_LOOKED_AT)?;
        for run in runs
            .into_iter()
            // A disturbed run's figures are still the newest measured (as
            // they were before runs were marked so).
            .filter(|r| r.host_id == host_id && matches!(r.status.as_str(), "ok" | DISTURBED))
        {
            match load(store, run.id) {
                Ok(docs) => {
                    let m = attributed(measurements_from(&docs), &run);
                    if !is_empty(&m) {
                        found.push((run, m));
                        break;
                    }
                }
                // An unreadable run (newer schema, damaged) costs its figures only.
                Err(e) => skipped.push((run.id, e.to_string())),
            }
        }
    }
    found.sort_by_key(|(run, _)| std::cmp::Reverse(run.id));
    let mut out = Gathered {
        skipped,
        ..Default::default()
    };
    for (run, m) in found {
        merge(&mut out.measurements, m);
        out.used.push(run);
    }
    Ok(out)
}

/// Marks every figure as read from `run`.
fn attributed(mut m: Measurements, run: &RunRecord) -> Measurements {
    let by = MeasuredBy {
        run_id: run.id,
        run_kind: run.kind.clone(),
    };
    for d in &mut m.disk {
        d.measured_by = Some(by.clone());
    }
    for c in &mut m.crypto {
        c.measured_by = Some(by.clone());
    }
    for t in &mut m.shared_disks {
        t.measured_by = Some(by.clone());
    }
    if m.tcp_loopback_bytes_per_sec.is_some() {
        m.tcp_loopback_measured_by = Some(by.clone());
    }
    for t in &mut m.tcp {
        t.measured_by = Some(by.clone());
    }
    if m.network_goodput_bytes_per_sec.is_some() {
        m.network_goodput_measured_by = Some(by);
    }
    m
}

pub fn is_empty(m: &Measurements) -> bool {
    m.disk.is_empty()
        && m.crypto.is_empty()
        && m.shared_disks.is_empty()
        && m.tcp_loopback_bytes_per_sec.is_none()
        && m.network_goodput_bytes_per_sec.is_none()
        && m.tcp.is_empty()
}

/// Adds the figures of an older run that a newer one (already in `into`) did
/// not measure: a disk by path and device, a cipher by name, key and path.
fn merge(into: &mut Measurements, older: Measurements) {
    for d in older.disk {
        if !into
            .disk
            .iter()
            .any(|n| n.path == d.path && n.device == d.device)
        {
            into.disk.push(d);
        }
    }
    for c in older.crypto {
        if !into.crypto.iter().any(|n| {
            n.cipher == c.cipher
                && n.key_bits == c.key_bits
                && n.path == c.path
                && n.request_bytes == c.request_bytes
        }) {
            into.crypto.push(c);
        }
    }
    for t in older.shared_disks {
        if !into.shared_disks.iter().any(|n| n.devices == t.devices) {
            into.shared_disks.push(t);
        }
    }
    for t in older.tcp {
        if !into.tcp.iter().any(|n| n.role == t.role) {
            into.tcp.push(t);
        }
    }
    if into.tcp_loopback_bytes_per_sec.is_none() {
        into.tcp_loopback_bytes_per_sec = older.tcp_loopback_bytes_per_sec;
        into.tcp_loopback_measured_by = older.tcp_loopback_measured_by;
    }
    if into.network_goodput_bytes_per_sec.is_none() {
        into.network_goodput_bytes_per_sec = older.network_goodput_bytes_per_sec;
        into.network_goodput_measured_by = older.network_goodput_measured_by;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::bottleneck::DiskFigure;
    use crate::advise::measured::{MeasuredBy, origin};
    use crate::bench::disk::DiskBench;

    fn disk_doc() -> DiskBench {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/docs/disk-loops.json");
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("decode")
    }

    fn store_disk_run(store: &Store, host: &str, doc: &DiskBench) -> RunId {
        let run = store
            .begin_run(RunKind::BenchDisk, host, "nastune bench disk d")
            .expect("begin");
        store.save(run, doc).expect("save");
        store.finish_run(run, "ok").expect("finish");
        run
    }

    #[test]
    fn newest_run_of_this_host_wins_and_others_are_ignored() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("n.db")).expect("open");
        let mut doc = disk_doc();
        let old = store_disk_run(&store, "aaaa", &doc);
        let read = |d: &DiskBench| d.tests[0].read.as_ref().expect("read").bw_bytes;
        let first = read(&doc);
        doc.tests[0].read.as_mut().expect("read").bw_bytes = first * 2.0;
        let new = store_disk_run(&store, "aaaa", &doc);
        // Another box's run, newer still: not this host's disk.
        doc.tests[0].read.as_mut().expect("read").bw_bytes = first * 4.0;
        store_disk_run(&store, "bbbb", &doc);
        // An unfinished run of this host is not a measurement.
        store
            .begin_run(RunKind::BenchDisk, "aaaa", "nastune bench disk d")
            .expect("begin");

        let g = latest_of_host(&store, "aaaa").expect("gather");
        assert_eq!(g.used.iter().map(|r| r.id).collect::<Vec<_>>(), vec![new]);
        assert!(new > old);
        assert_eq!(g.measurements.disk.len(), 1, "{:?}", g.measurements);
        let fig = &g.measurements.disk[0];
        assert_eq!(fig.seq_read_bytes_per_sec, Some(first * 2.0));
        let by = fig.measured_by.as_ref().expect("attributed");
        assert_eq!(by.to_string(), format!("bench disk run {new}"));
        assert_eq!(origin(Some(by)), format!("by bench disk run {new}"));
        assert_eq!(origin(None), "in this run");

        let none = latest_of_host(&store, "cccc").expect("gather");
        assert!(is_empty(&none.measurements) && none.used.is_empty());
    }

    fn fig(path: &str, write: f64, run: RunId) -> DiskFigure {
        DiskFigure {
            path: path.into(),
            device: Some("sda".into()),
            seq_read_bytes_per_sec: None,
            seq_write_bytes_per_sec: Some(write),
            measured_by: Some(MeasuredBy {
                run_id: run,
                run_kind: "check".into(),
            }),
        }
    }

    #[test]
    fn merge_keeps_the_newer_figure_and_adds_what_it_lacks() {
        let mut newer = Measurements {
            disk: vec![fig("/srv", 90e6, 9)],
            ..Default::default()
        };
        let older = Measurements {
            disk: vec![fig("/srv", 30e6, 4), fig("/mnt/usb", 20e6, 4)],
            network_goodput_bytes_per_sec: Some(11e6),
            network_goodput_measured_by: Some(MeasuredBy {
                run_id: 4,
                run_kind: "bench-net".into(),
            }),
            ..Default::default()
        };
        merge(&mut newer, older);
        let writes: Vec<_> = newer
            .disk
            .iter()
            .map(|d| (d.path.as_str(), d.seq_write_bytes_per_sec))
            .collect();
        assert_eq!(writes, vec![("/srv", Some(90e6)), ("/mnt/usb", Some(20e6))]);
        assert_eq!(newer.network_goodput_bytes_per_sec, Some(11e6));
        assert_eq!(
            newer.network_goodput_measured_by.map(|b| b.to_string()),
            Some("bench net run 4".into())
        );
    }
}
