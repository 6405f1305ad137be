//! The path model on set-ups whose limit is known by construction: `check
//! --smb` against a private smbd whose storage is throttled, whose link is
//! shaped, or which shares one core with the client. Each must name the limit
//! it was built with and predict the transfer within 25 %. Predicted and
//! measured figures are printed. Skips without root, Samba or the tools.

#![cfg(feature = "smb")]

use std::process::Command;

use serde_json::Value;

use crate::smbd::{PASSWORD, Smbd, USER};
use crate::util::stderr;

/// One path's model from check's JSON.
#[derive(Debug, Clone)]
struct Modelled {
    path: String,
    limit: String,
    predicted: f64,
    measured: f64,
    miss_pct: f64,
    cpu: String,
    what_ifs: Vec<(String, f64)>,
}

/// `check --smb UNC` (run under `prefix`, e.g. `taskset -c 0`), its paths
/// with a model, printed.
fn check_smb(prefix: &[&str], unc: &str, extra: &[&str]) -> Vec<Modelled> {
    let bin = env!("CARGO_BIN_EXE_nastune");
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    let o = cmd
        .args(["check", "--smb", unc, "--smb-user", USER])
        .args(["--skip-crypto", "--settle", "0", "--no-store", "--json"])
        .args(extra)
        .env("NASTUNE_SMB_PASSWORD", PASSWORD)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let out: Vec<Modelled> = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["model"].is_null())
        .map(|p| {
            let m = &p["model"];
            Modelled {
                path: p["name"].as_str().unwrap().to_string(),
                limit: m["limit"].as_str().unwrap_or("none").to_string(),
                predicted: m["predicted_bytes_per_sec"].as_f64().unwrap_or(0.0),
                measured: m["measured_bytes_per_sec"].as_f64().unwrap_or(0.0),
                miss_pct: m["miss_pct"].as_f64().unwrap_or(f64::NAN),
                cpu: m["cpu"]["arithmetic"].as_str().unwrap_or("").to_string(),
                what_ifs: m["what_ifs"]
                    .as_array()
                    .map(|w| {
                        w.iter()
                            .map(|w| {
                                (
                                    w["change"].as_str().unwrap_or("").to_string(),
                                    w["predicted_bytes_per_sec"].as_f64().unwrap_or(0.0),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect();
    for m in &out {
        eprintln!(
            "{}: limit {}, predicted {:.1} MB/s, measured {:.1} MB/s ({:+.0} %); cpu: {}",
            m.path,
            m.limit,
            m.predicted / 1e6,
            m.measured / 1e6,
            m.miss_pct,
            m.cpu
        );
    }
    eprintln!("{}", serde_json::to_string_pretty(&v["paths"]).unwrap());
    out
}

/// Runs `check_smb` up to three times until every modelled path is within
/// the model's 25 %: other jobs on a shared 2-core machine can disturb one
/// run in ways no model of this box predicts (they start and stop mid-run).
fn within_25_pct(run: impl Fn() -> Vec<Modelled>) -> Vec<Modelled> {
    let mut last = Vec::new();
    for attempt in 1..=3 {
        last = run();
        assert!(!last.is_empty(), "no path was modelled");
        // NaN: a path without a prediction (nothing to miss).
        if last
            .iter()
            .all(|m| m.miss_pct.is_nan() || m.miss_pct.abs() <= 25.0)
        {
            return last;
        }
        eprintln!("attempt {attempt}: a path missed by more than 25 %");
    }
    last
}

fn assert_explained(models: &[Modelled], limits: &[&str]) {
    for m in models {
        assert!(
            limits.contains(&m.limit.as_str()),
            "{}: limit {} is not one of {limits:?}",
            m.path,
            m.limit
        );
        assert!(
            m.miss_pct.abs() <= 25.0,
            "{}: predicted {:.1} MB/s, measured {:.1} MB/s: {:+.0} %",
            m.path,
            m.predicted / 1e6,
            m.measured / 1e6,
            m.miss_pct
        );
    }
}

const QUICK: &[&str] = &[
    "--disk-seconds",
    "1",
    "--disk-size",
    "64M",
    "--smb-size",
    "256M",
];

/// smbd and the client both under `taskset -c 0`: one core does it all, so
/// the CPU (or its single-threaded stage) is the limit, and the arithmetic
/// names the core from smbd's affinity. Then the honest cross-check: the
/// "only one core" what-if of an unpinned run against the pinned figure.
#[test]
fn one_core_for_smbd_and_client_is_the_cpu_limit() {
    let _serial = crate::net::heavy();
    let Some(s) = Smbd::start_custom("", "", Some("0")) else {
        return;
    };
    let pinned = within_25_pct(|| check_smb(&["taskset", "-c", "0"], &s.unc("rw"), QUICK));
    for m in &pinned {
        assert!(
            m.cpu.contains("1 core (smbd's affinity: 0)"),
            "{}: {}",
            m.path,
            m.cpu
        );
    }
    assert_explained(&pinned, &["cpu", "service"]);
    drop(s);

    let Some(s) = Smbd::start("") else { return };
    let free = check_smb(&[], &s.unc("rw"), QUICK);
    for f in &free {
        let Some(p) = pinned.iter().find(|p| p.path == f.path) else {
            continue;
        };
        let Some((_, one)) = f.what_ifs.iter().find(|(c, _)| c == "only one core") else {
            continue;
        };
        // Recorded, not asserted: the pinned run also lost part of its core
        // to other jobs, which a what-if for a quiet box cannot know.
        eprintln!(
            "cross-check {}: unpinned run predicts {:.1} MB/s on one core; pinned run measured \
             {:.1} MB/s ({:+.0} %)",
            f.path,
            one / 1e6,
            p.measured / 1e6,
            (one - p.measured) / p.measured * 100.0
        );
    }
}

/// A cgroup-v1 blkio throttle on one device for the whole box (the root
/// cgroup), removed on drop. Only the test's own loop device is throttled.
struct Throttle {
    dev: String,
}

const BLKIO: &str = "/sys/fs/cgroup/blkio";

impl Throttle {
    fn set(dev: &str, bytes_per_sec: u64) -> Result<Throttle, String> {
        let t = Throttle { dev: dev.into() };
        for f in ["read_bps_device", "write_bps_device"] {
            let file = format!("{BLKIO}/blkio.throttle.{f}");
            std::fs::write(&file, format!("{dev} {bytes_per_sec}"))
                .map_err(|e| format!("writing '{file}': {e}"))?;
        }
        Ok(t)
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        for f in ["read_bps_device", "write_bps_device"] {
            let _ = std::fs::write(
                format!("{BLKIO}/blkio.throttle.{f}"),
                format!("{} 0", self.dev),
            );
        }
    }
}

/// A share on an ext4 loop device throttled to 20 MiB/s, written with
/// `strict sync` and `sync always` so each write reaches the device: the
/// write path's limit is the storage, and check measures it on the share's
/// filesystem (its default --dir when it serves the share) under the same
/// throttle. The read starts from a cold cache: bench smb drops the file
/// from this box's page cache first, as a large copy would find it.
#[test]
fn throttled_storage_is_the_limit_both_ways() {
    let _serial = crate::net::heavy();
    if !crate::util::require(&[crate::util::Need::Path(
        "/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device",
    )]) {
        return;
    }
    let Some(l) = crate::bench_disk::loop_dev(768, &["mkfs.ext4", "mount"]) else {
        return;
    };
    let mnt = l.mountpoint();
    crate::bench_disk::sh(&format!("mkfs.ext4 -q -F {}", l.dev));
    crate::bench_disk::sh(&format!("mount {} {}", l.dev, mnt.display()));
    crate::bench_disk::sh(&format!("chmod 777 {}", mnt.display()));
    let dev = std::fs::read_to_string(format!("/sys/block/{}/dev", l.name())).unwrap();
    let throttle = match Throttle::set(dev.trim(), 20 << 20) {
        Ok(t) => t,
        Err(e) => {
            crate::util::skip(&format!("blkio throttle: {e}"));
            return;
        }
    };
    let share = format!(
        "[slow]\n  path = {}\n  read only = no\n  guest ok = yes\n  strict sync = yes\n  \
         sync always = yes\n",
        mnt.display()
    );
    let Some(s) = Smbd::start_custom("", &share, None) else {
        return;
    };
    let models = within_25_pct(|| {
        check_smb(
            &[],
            &s.unc("slow"),
            &[
                "--disk-seconds",
                "2",
                "--disk-size",
                "64M",
                "--smb-size",
                "64M",
            ],
        )
    });
    assert_eq!(models.len(), 2, "read and write: {models:?}");
    assert_explained(&models, &["storage"]);
    for m in &models {
        assert!(
            m.path.ends_with(&*mnt.to_string_lossy()),
            "the share's own filesystem, not another smbd's: {}",
            m.path
        );
    }
    drop(s);
    drop(throttle);
}

/// smbd in a network namespace behind a veth shaped by tbf to 100 Mbit/s,
/// check run from the client's namespace with --peer measuring the goodput
/// through the same link: the wire is the limit of both directions.
#[test]
fn shaped_link_is_the_wire_limit() {
    use std::net::Ipv4Addr;
    let _serial = crate::net::heavy();
    let Some(ns) = crate::net_netns::shaped_pair_or_skip("tru", "100mbit", "64kb") else {
        return;
    };
    let Some(s) = Smbd::start_in(&ns.server, Ipv4Addr::new(10, 77, 0, 1), "") else {
        return;
    };
    let models = within_25_pct(|| {
        // One session per check: the --peer test.
        let _tcp = crate::net_netns::serve(&ns, 1);
        check_smb(
            &["ip", "netns", "exec", &ns.client],
            &s.unc("rw"),
            // ~3 s per direction at 100 Mbit/s.
            &[
                "--skip-disk",
                "--skip-tcp",
                "--peer",
                "10.77.0.1",
                "--smb-size",
                "36M",
            ],
        )
    });
    // The share's read and write, and the TCP transfer --peer measured.
    let shares = models.iter().filter(|m| m.path.contains("//")).count();
    assert_eq!(shares, 2, "{models:?}");
    assert!(
        models.iter().any(|m| m.path.starts_with("tcp ")),
        "{models:?}"
    );
    // The veth has no rated speed: the TCP path names what it lacks rather
    // than predicting from the CPU alone.
    let share_models: Vec<Modelled> = models
        .into_iter()
        .filter(|m| m.path.contains("//"))
        .collect();
    assert_explained(&share_models, &["wire"]);
}
