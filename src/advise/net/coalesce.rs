//! Interrupt coalescing on a box with one or two cores: a NIC that interrupts
//! for every received frame spends the CPU that smbd, TCP and dm-crypt share.

use super::super::{Change, Finding, Risk, Rule, RuleInfo, Severity};
use super::physical;
use crate::probe::ethtool::Coalesce;

/// At most this many cores: where per-frame interrupts take a share of the
/// one CPU every stage of a transfer runs on.
const FEW_CORES: u32 = 2;

/// The rx-usecs the rule proposes: about 20 000 interrupts/s at most, what
/// e1000e's default ITR and many vendor defaults give; a 1500-byte frame at
/// 1 Gbit/s arrives every 12 µs, so a burst of four frames shares one interrupt.
const PROPOSED_RX_USECS: u32 = 50;

/// Frames a second at gigabit line rate with 1500-byte frames (1538 bytes on the wire).
const GIGABIT_FRAMES_PER_SEC: u32 = 81_274;

/// Whether the NIC interrupts for every received frame: no delay, no frame
/// count beyond one, and the driver not adapting it.
pub fn per_frame_interrupts(c: &Coalesce) -> bool {
    c.rx_usecs == 0 && c.rx_frames <= 1 && !c.adaptive_rx
}

pub(super) static RX_COALESCING_OFF: Rule = Rule {
    info: RuleInfo {
        id: "nic-rx-coalescing-off",
        area: "network",
        title: "The NIC interrupts for every received frame on a box with few cores",
        severity: Severity::Info,
        risk: Risk::RuntimeSafe,
        checks: "A physical NIC whose coalescing (ETHTOOL_GCOALESCE) has rx-usecs 0, rx-frames \
                 at most 1 and adaptive-rx off, on a box with at most 2 cores. Recommends \
                 rx-usecs 50, to be proven with 'tune try --metric cpu_per_gb': NAPI turns \
                 to polling under sustained load, so the gain is in bursts and small-packet \
                 traffic, and the cost is up to 50 µs of receive latency.",
        references: &[
            "https://docs.kernel.org/networking/napi.html",
            "https://man7.org/linux/man-pages/man8/ethtool.8.html",
        ],
    },
    evaluate: |info, ctx| {
        let cores = ctx.snapshot.cpu.data().map(|c| c.logical_cpus).unwrap_or(0);
        if cores == 0 || cores > FEW_CORES {
            return Vec::new();
        }
        physical(ctx)
            .into_iter()
            .filter_map(|i| {
                let c = i.ethtool.data()?.coalesce.as_ref()?.data()?;
                if !per_frame_interrupts(c) {
                    return None;
                }
                let set = format!("ethtool:{}:rx-usecs={PROPOSED_RX_USECS}", i.name);
                let finding = Finding::of(
                    info,
                    format!("{} interrupts for every received frame", i.name),
                    format!(
                        "rx-usecs = 0, rx-frames = {} and adaptive-rx off: each frame that \
                         arrives while the driver is not already polling costs an interrupt, \
                         up to {GIGABIT_FRAMES_PER_SEC} a second at gigabit line rate, taken \
                         from the {cores} core(s) that also run TCP, Samba and the disk \
                         layers. rx-usecs {PROPOSED_RX_USECS} lets a burst share one \
                         interrupt, at up to {PROPOSED_RX_USECS} µs of receive latency. NAPI \
                         already polls under sustained load, so measure before keeping it: \
                         'nastune tune try --set {set} --bench net:PEER --metric cpu_per_gb'.",
                        c.rx_frames
                    ),
                )
                .evidence(
                    format!("{} coalescing", i.name),
                    format!(
                        "rx-usecs {} rx-frames {} adaptive-rx off",
                        c.rx_usecs, c.rx_frames
                    ),
                )
                .evidence("cores", cores)
                .setting(format!("ethtool:{}:rx-usecs", i.name))
                .change(Change::Ethtool {
                    interface: i.name.clone(),
                    setting: "rx-usecs".into(),
                    value: PROPOSED_RX_USECS.to_string(),
                });
                Some(finding)
            })
            .collect()
    },
};

#[cfg(test)]
mod tests {
    use super::super::test_edit::*;
    use super::*;
    use crate::advise::test_support::snapshot_of;
    use crate::probe::Outcome;

    fn coalesce(rx_usecs: u32, rx_frames: u32, adaptive_rx: bool) -> Coalesce {
        Coalesce {
            rx_usecs,
            rx_frames,
            tx_usecs: 0,
            tx_frames: 0,
            adaptive_rx,
            adaptive_tx: false,
        }
    }

    #[test]
    fn per_frame_means_no_delay_no_count_and_no_adaptation() {
        assert!(per_frame_interrupts(&coalesce(0, 0, false)));
        assert!(per_frame_interrupts(&coalesce(0, 1, false)));
        assert!(!per_frame_interrupts(&coalesce(0, 2, false)));
        assert!(!per_frame_interrupts(&coalesce(1, 0, false)));
        assert!(!per_frame_interrupts(&coalesce(0, 0, true)));
    }

    #[test]
    fn flags_per_frame_interrupts_on_one_or_two_cores_only() {
        let mut snap = snapshot_of("pogoplug-v4");
        let set = |snap: &mut crate::probe::Snapshot, c: Option<Coalesce>| {
            let Outcome::Ok { data } = &mut eth0(snap).ethtool else {
                panic!("no ethtool data for eth0");
            };
            data.coalesce = c.map(|data| Outcome::Ok { data });
        };
        set(&mut snap, Some(coalesce(0, 1, false)));
        let cores = snap.cpu.data().unwrap().logical_cpus;
        assert!(cores <= FEW_CORES, "the pogoplug fixture has {cores} cores");
        let f = run(&RX_COALESCING_OFF, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].title, "eth0 interrupts for every received frame");
        assert!(
            f[0].rationale
                .contains("--set ethtool:eth0:rx-usecs=50 --bench net:PEER --metric cpu_per_gb"),
            "{}",
            f[0].rationale
        );
        assert_eq!(
            f[0].recommendation,
            [Change::Ethtool {
                interface: "eth0".into(),
                setting: "rx-usecs".into(),
                value: "50".into(),
            }]
        );
        // Coalescing on, or adapted by the driver: nothing to say.
        set(&mut snap, Some(coalesce(0, 1, true)));
        assert!(run(&RX_COALESCING_OFF, &snap).is_empty());
        set(&mut snap, Some(coalesce(100, 0, false)));
        assert!(run(&RX_COALESCING_OFF, &snap).is_empty());
        // Not read (a capture from before, or the driver has none).
        set(&mut snap, None);
        assert!(run(&RX_COALESCING_OFF, &snap).is_empty());
        // Four cores: interrupts are not what every stage waits for.
        set(&mut snap, Some(coalesce(0, 1, false)));
        if let Outcome::Ok { data } = &mut snap.cpu {
            data.logical_cpus = 4;
        }
        assert!(run(&RX_COALESCING_OFF, &snap).is_empty());
    }
}
