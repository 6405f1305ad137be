//! Network rules: TCP buffer semantics and flags (tcp), queues, qdiscs and the
//! softnet backlog (queue), the NIC and its link (nic), and its interrupt
//! coalescing (coalesce).

mod coalesce;
mod nic;
mod queue;
mod tcp;

use super::{Context, Rule};
use crate::probe::net::{Interface, SoftnetCpu};

pub static RULES: &[&Rule] = &[
    &tcp::TCP_BUFFER_MAX_LOWERED,
    &tcp::CORE_BUFFER_MAX_RAISED,
    &tcp::TCP_MEM_VS_RAM,
    &tcp::TCP_TIMESTAMPS_OFF,
    &tcp::TCP_SACK_OFF,
    &tcp::TCP_WINDOW_SCALING_OFF,
    &tcp::SLOW_START_AFTER_IDLE_OFF,
    &queue::TXQUEUELEN_LARGE,
    &queue::QDISC_PFIFO_FAST,
    &queue::BACKLOG_RAISED_WITHOUT_DROPS,
    &queue::SOFTNET_DROPS,
    &nic::RX_RING_OVERFLOW,
    &nic::RX_DROPPED_UNEXPLAINED,
    &nic::COUNTERS_32BIT,
    &nic::OFFLOADS_OFF,
    &nic::LINK_DEGRADED,
    &nic::CARRIER_FLAPPING,
    &coalesce::RX_COALESCING_OFF,
];

/// Link speed assumed for BDP arithmetic when no physical NIC reports one.
pub(super) const ASSUMED_LINK_MBIT: u64 = 1000;

/// Interfaces backed by hardware (not lo, bridges, veth, tunnels).
pub(super) fn physical<'a>(ctx: &Context<'a>) -> Vec<&'a Interface> {
    ctx.snapshot
        .network
        .data()
        .map(|n| n.interfaces.iter().filter(|i| !i.is_virtual).collect())
        .unwrap_or_default()
}

/// Fastest negotiated speed of a physical NIC, or the assumption.
pub(super) fn link_mbit(ctx: &Context) -> (u64, bool) {
    physical(ctx)
        .iter()
        .filter_map(|i| i.speed_mbit_per_sec)
        .max()
        .map_or((ASSUMED_LINK_MBIT, true), |s| (s, false))
}

pub(super) fn softnet<'a>(ctx: &Context<'a>) -> Option<&'a [SoftnetCpu]> {
    ctx.snapshot
        .network
        .data()?
        .softnet
        .data()
        .map(|v| v.as_slice())
}

pub(super) fn softnet_totals(cpus: &[SoftnetCpu]) -> (u64, u64, u64) {
    cpus.iter().fold((0, 0, 0), |(p, d, s), c| {
        (
            p.saturating_add(c.processed),
            d.saturating_add(c.dropped),
            s.saturating_add(c.time_squeeze),
        )
    })
}

/// Snapshot edits and a runner for the network rule tests.
#[cfg(test)]
pub(super) mod test_edit {
    use super::super::{Finding, Rule};
    use super::*;
    use crate::probe::{Outcome, Snapshot};

    pub fn run(rule: &Rule, snap: &Snapshot) -> Vec<Finding> {
        rule.run(&Context::unmeasured(snap))
    }

    pub fn eth0(snap: &mut Snapshot) -> &mut Interface {
        let Outcome::Ok { data } = &mut snap.network else {
            panic!("no network section");
        };
        data.interfaces
            .iter_mut()
            .find(|i| i.name == "eth0")
            .expect("eth0")
    }

    pub fn softnet_mut(snap: &mut Snapshot) -> &mut Vec<SoftnetCpu> {
        let Outcome::Ok { data } = &mut snap.network else {
            panic!("no network section");
        };
        let Outcome::Ok { data } = &mut data.softnet else {
            panic!("no softnet");
        };
        data
    }
}
