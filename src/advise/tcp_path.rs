//! A plain TCP transfer to a peer (bench net from this box) as a path of its
//! own: the wire and this box's CPU, whose per-byte cost bench net measured.
//! The model's prediction stands against the goodput the same run measured,
//! so a miss says something other than the wire and the CPU held it.

use super::bottleneck::{self, PathAnalysis, PathModel, Stage};
use super::path_model::{self, TcpFigure};
use super::what_if;
use crate::format::rate as mb;
use crate::probe::Snapshot;

/// One path per direction measured (the newest figure of each).
pub fn tcp_paths(snapshot: &Snapshot, m: &bottleneck::Measurements) -> Vec<PathAnalysis> {
    let cores = snapshot
        .cpu
        .data()
        .map_or(1.0, |c| f64::from(c.logical_cpus.max(1)));
    let link = bottleneck::fastest_link(snapshot);
    m.tcp
        .iter()
        .map(|f| tcp_path(f, link.as_ref(), cores))
        .collect()
}

/// The path of one measured transfer, given the fastest link (name, Mbit/s).
pub fn tcp_path(f: &TcpFigure, link: Option<&(String, u64)>, cores: f64) -> PathAnalysis {
    let mut stages = Vec::new();
    let mut missing = Vec::new();
    stages.push(match link {
        Some((name, mbit)) => {
            let wire = path_model::wire_goodput(*mbit);
            Stage {
                name: "network".into(),
                ceiling_bytes_per_sec: Some(wire),
                basis: format!("{name} link {mbit} Mbit/s x 1448/1538 = {}", mb(wire)),
            }
        }
        None => {
            missing.push("a physical link with a rated speed".into());
            Stage {
                name: "network".into(),
                ceiling_bytes_per_sec: None,
                basis: "no physical link with a rated speed".into(),
            }
        }
    });
    let costs = path_model::tcp_costs(f);
    let cpu = path_model::cpu_ceiling(&costs, cores);
    if let Some(c) = &cpu {
        stages.push(Stage {
            name: "cpu".into(),
            ceiling_bytes_per_sec: Some(c.bytes_per_sec),
            basis: c.arithmetic.clone(),
        });
    }
    // Without the wire's speed (a veth, a VM's NIC) the CPU alone is no
    // prediction: the transfer may well have been held by the unknown link.
    let wire_known = stages[0].ceiling_bytes_per_sec.is_some();
    let limiting_stage = bottleneck::lowest(&stages).filter(|_| wire_known);
    let predicted = limiting_stage.and_then(|i| stages[i].ceiling_bytes_per_sec);
    let others: Vec<Stage> = stages.iter().filter(|s| s.name != "cpu").cloned().collect();
    let what_ifs = what_if::predict(&what_if::Inputs {
        costs,
        cores,
        others,
        link_mbit_per_sec: link.map(|(_, s)| *s),
        ..what_if::Inputs::default()
    });
    let model = PathModel {
        limit: limiting_stage.map(|i| bottleneck::limit_of(&stages[i], cpu.as_ref())),
        cpu,
        predicted_bytes_per_sec: predicted,
        measured_bytes_per_sec: Some(f.bytes_per_sec),
        measured_by: format!(
            "bench net {} to {} ({})",
            f.role,
            f.peer,
            super::measured::origin(f.measured_by.as_ref())
        ),
        miss_pct: predicted.and_then(|p| path_model::miss_pct(p, f.bytes_per_sec)),
        what_ifs,
    };
    PathAnalysis {
        name: format!(
            "tcp {} to {}",
            if f.role == "send" { "send" } else { "receive" },
            f.peer
        ),
        mount_point: String::new(),
        limit_bytes_per_sec: predicted,
        limiting_stage,
        stages,
        missing,
        model: Some(model),
        verdict: None,
        cpu_estimate: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::bottleneck::Limit;

    fn figure(role: &str, rate: f64, ns: f64, softirq: f64) -> TcpFigure {
        TcpFigure {
            peer: "192.0.2.7".into(),
            role: role.into(),
            streams: 1,
            bytes_per_sec: rate,
            cpus: 1,
            ns_per_byte: ns,
            softirq_ns_per_byte: softirq,
            measured_by: None,
        }
    }

    /// The Pogoplug receiving over gigabit: 9.1 ns/B softirq and 24.8 ns/B the
    /// rest on its one core: 1e9 / 33.9 = 29.5 MB/s, far below the wire's
    /// 117.7; 28.0 MB/s measured.
    #[test]
    fn pogoplug_receive_is_cpu_bound_and_the_model_explains_it() {
        let link = ("eth0".to_string(), 1000);
        let p = tcp_path(&figure("receive", 28.0e6, 33.9, 9.1), Some(&link), 1.0);
        assert_eq!(p.name, "tcp receive to 192.0.2.7");
        assert_eq!(p.stages[p.limiting_stage.unwrap()].name, "cpu");
        let m = p.model.as_ref().unwrap();
        assert_eq!(m.limit, Some(Limit::Cpu));
        let predicted = m.predicted_bytes_per_sec.unwrap();
        assert!((predicted - 29.5e6).abs() < 0.05e6, "{predicted}");
        assert!(m.miss_pct.unwrap().abs() < path_model::MODEL_MISS_PCT);
        assert_eq!(
            m.measured_by,
            "bench net receive to 192.0.2.7 (in this run)"
        );
        assert_eq!(p.stages[1].basis, "1 core / (9.1 + 24.8 ns/B) = 29.5 MB/s");
        // A faster link changes nothing: the core binds.
        let w = m
            .what_ifs
            .iter()
            .find(|w| w.change.contains("faster"))
            .unwrap();
        assert!((w.predicted_bytes_per_sec - predicted).abs() < 1.0);
    }

    /// The Pi 2 sending at 100 Mbit/s: the wire binds (11.8 MB/s) below its
    /// four cores; a far lower measurement is a miss the model reports.
    #[test]
    fn pi2_send_is_wire_bound_and_a_low_measurement_misses() {
        let link = ("eth0".to_string(), 100);
        let p = tcp_path(&figure("send", 11.2e6, 61.2, 20.4), Some(&link), 4.0);
        let m = p.model.as_ref().unwrap();
        assert_eq!(m.limit, Some(Limit::Wire));
        assert!((m.predicted_bytes_per_sec.unwrap() - 11.77e6).abs() < 0.01e6);
        assert!(m.miss_pct.unwrap().abs() < path_model::MODEL_MISS_PCT);
        // A gigabit link: tcp is single-threaded at 1e9 / 40.8 = 24.5 MB/s.
        let w = m
            .what_ifs
            .iter()
            .find(|w| w.change.contains("faster"))
            .unwrap();
        assert!((w.predicted_bytes_per_sec - 24.5e6).abs() < 0.05e6, "{w:?}");
        let slow = tcp_path(&figure("send", 5.0e6, 61.2, 20.4), Some(&link), 4.0);
        assert!(slow.model.unwrap().miss_pct.unwrap() > path_model::MODEL_MISS_PCT);
        let no_link = tcp_path(&figure("send", 5.0e6, 61.2, 20.4), None, 4.0);
        assert_eq!(no_link.stages[0].ceiling_bytes_per_sec, None);
        assert!(!no_link.missing.is_empty());
    }
}
