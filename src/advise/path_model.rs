//! The shared CPU of a data path. On a small box one CPU does the TCP receive,
//! the file server, dm-crypt and the filesystem for every byte, so a transfer
//! can be CPU-bound far below each stage's own ceiling. Each stage's cost is a
//! CPU time per byte (seconds per GB is nanoseconds per byte); the cores the
//! path may use, against the sum of the costs, give the CPU's ceiling, and a
//! single-threaded stage (one smbd per client, one flow's softirq) can never
//! use more than one core. Pure: the figures come from the benches' documents.

use crate::format::rate as mb;
use serde::{Deserialize, Serialize};

/// One stage's CPU cost per byte moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuCost {
    /// `smbd`, `softirq`, `kcryptd`, `md-raid`, `tcp`, `client (this box)` …
    pub stage: String,
    pub ns_per_byte: f64,
    /// Bounded by one core (one process or one flow does it all).
    pub single_threaded: bool,
    /// Where the figure comes from.
    pub basis: String,
}

/// What binds the CPU's ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "stage")]
pub enum Binding {
    /// All the cores the path may use, shared by every stage.
    AllCores,
    /// One single-threaded stage that fills its core first.
    OneStage(String),
}

/// The CPU's ceiling for a path, with the arithmetic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuCeiling {
    pub bytes_per_sec: f64,
    pub cores: f64,
    pub binding: Binding,
    /// "2 cores / (9.1 + 12.4 + 14.0 + 2.2 ns/B) = 53.0 MB/s".
    pub arithmetic: String,
    /// Each stage's share of the CPU time per byte, percent, largest first.
    pub shares: Vec<Share>,
    /// When the costs were scaled to the CPUs' busy time ([`cap_at_busy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaled: Option<CostScale>,
}

impl CpuCeiling {
    /// The ceiling of costs [`cap_at_busy`] scaled, saying so in the arithmetic.
    pub fn scaled_by(mut self, scale: Option<CostScale>) -> CpuCeiling {
        if let Some(s) = &scale {
            self.arithmetic = format!("{} ({})", self.arithmetic, s.text());
        }
        self.scaled = scale;
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub stage: String,
    pub pct: f64,
}

/// The cores a path may use and, when read from the processes' affinity,
/// which ones and whose (`smbd's affinity: 0`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathCores {
    pub count: f64,
    /// `smbd's affinity: 0` or `smbd's and this client's affinity: 0-1`;
    /// `None`: all logical CPUs were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Which CPUs, when the affinity was read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u32>,
    /// Cores' worth of those CPUs other processes (and the hypervisor) used
    /// during the transfer: the path never had them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub taken_by_others: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

impl PathCores {
    pub fn counted(count: f64) -> PathCores {
        PathCores {
            count,
            source: None,
            cpus: Vec::new(),
            taken_by_others: 0.0,
        }
    }

    /// What the path had: its cores less what others took of them.
    pub fn available(&self) -> f64 {
        (self.count - self.taken_by_others).max(0.0)
    }

    fn text(&self) -> String {
        let cores = match &self.source {
            Some(s) => format!("{} ({s})", cores_text(self.count)),
            None => cores_text(self.count),
        };
        if self.taken_by_others > 0.0 {
            format!(
                "({cores} - {:.2} used by other processes during the transfer)",
                self.taken_by_others
            )
        } else {
            cores
        }
    }
}

/// A transfer's use of the box's CPUs: each CPU's busy time, whoever used
/// it, over the transfer's elapsed time and bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoreLoad {
    pub busy_by_cpu: Vec<crate::bench::smb::server::CpuBusy>,
    pub elapsed_ns: u64,
    pub bytes: u64,
}

/// Cores' worth of `cpus` (every CPU when empty) that other processes used
/// during a transfer: those CPUs' busy time less the path's own costs for
/// the bytes moved, over the elapsed time. On a shared box a pinned smbd
/// gets only part of its core; the costs alone would predict the whole.
pub fn taken_by_others(load: &CoreLoad, cpus: &[u32], costs: &[CpuCost]) -> f64 {
    if load.elapsed_ns == 0 {
        return 0.0;
    }
    let busy: u64 = load
        .busy_by_cpu
        .iter()
        .filter(|b| cpus.is_empty() || cpus.contains(&b.cpu))
        .map(|b| b.busy_ns)
        .sum();
    let own: f64 = costs.iter().map(|c| c.ns_per_byte).sum::<f64>() * load.bytes as f64;
    ((busy as f64 - own) / load.elapsed_ns as f64).max(0.0)
}

/// How a transfer's costs were scaled down to the CPUs' busy time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostScale {
    /// What the stages' own clocks counted for the transfer, ns.
    pub counted_ns: f64,
    /// What every CPU was seen busy during it, ns.
    pub busy_ns: u64,
    /// busy / counted: each stage's cost was multiplied by it.
    pub factor: f64,
}

impl CostScale {
    /// "costs scaled by 0.36: the stages counted 2866 ms, the CPUs were busy 1030 ms".
    pub fn text(&self) -> String {
        format!(
            "costs scaled by {:.2}: the stages counted {:.0} ms, the CPUs were busy {:.0} ms",
            self.factor,
            self.counted_ns / 1e6,
            self.busy_ns as f64 / 1e6
        )
    }
}

/// The costs of a transfer, scaled so they add up to no more than every CPU
/// was seen busy during it (`None`: they already do). A thread's clock runs
/// on while a hypervisor has taken its CPU away (a guest without steal
/// accounting, under load on the host), where the CPU's ticks do not: the
/// stages then claim more CPU than there was, and the prediction would be
/// the loaded run's, not the path's. All CPUs count, since the costs are the
/// whole system's (kcryptd on another core than smbd's is still the path's).
pub fn cap_at_busy(costs: &[CpuCost], load: &CoreLoad) -> (Vec<CpuCost>, Option<CostScale>) {
    let counted = costs.iter().map(|c| c.ns_per_byte).sum::<f64>() * load.bytes as f64;
    let busy_ns: u64 = load.busy_by_cpu.iter().map(|b| b.busy_ns).sum();
    // No busy time seen (no ticks sampled) is no evidence: keep the costs.
    if busy_ns == 0 || !counted.is_finite() || counted <= busy_ns as f64 {
        return (costs.to_vec(), None);
    }
    let factor = busy_ns as f64 / counted;
    let scaled = costs
        .iter()
        .map(|c| CpuCost {
            ns_per_byte: c.ns_per_byte * factor,
            basis: format!("{} x {factor:.2} (scaled to the CPUs' busy time)", c.basis),
            ..c.clone()
        })
        .collect();
    (
        scaled,
        Some(CostScale {
            counted_ns: counted,
            busy_ns,
            factor,
        }),
    )
}

/// A CPU set in the kernel's list form: `0-2,5`.
pub fn cpu_list_text(cpus: &std::collections::BTreeSet<u32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    let flush = |r: (u32, u32), parts: &mut Vec<String>| {
        parts.push(if r.0 == r.1 {
            r.0.to_string()
        } else {
            format!("{}-{}", r.0, r.1)
        })
    };
    for &c in cpus {
        run = match run {
            Some((a, b)) if c == b + 1 => Some((a, c)),
            Some(r) => {
                flush(r, &mut parts);
                Some((c, c))
            }
            None => Some((c, c)),
        };
    }
    if let Some(r) = run {
        flush(r, &mut parts);
    }
    parts.join(",")
}

/// The cores a locally served path may use: smbd's affinity and, the client
/// being this process, ours (`None` when it could not be read).
pub fn served_cores(
    smbd: &std::collections::BTreeSet<u32>,
    ours: Option<std::collections::BTreeSet<u32>>,
) -> PathCores {
    let (cpus, whose): (std::collections::BTreeSet<u32>, &str) = match ours {
        Some(o) if !o.is_subset(smbd) => (
            smbd.union(&o).copied().collect(),
            "smbd's and this client's affinity",
        ),
        _ => (smbd.clone(), "smbd's affinity"),
    };
    PathCores {
        count: cpus.len() as f64,
        source: Some(format!("{whose}: {}", cpu_list_text(&cpus))),
        cpus: cpus.iter().copied().collect(),
        taken_by_others: 0.0,
    }
}

pub fn cores_text(cores: f64) -> String {
    if cores == 1.0 {
        "1 core".into()
    } else if cores.fract() == 0.0 {
        format!("{cores:.0} cores")
    } else {
        format!("{cores:.2} cores")
    }
}

/// The CPU's ceiling: the lower of `cores` shared by all stages and each
/// single-threaded stage on its own core. `None` without costs or cores.
pub fn cpu_ceiling(costs: &[CpuCost], cores: f64) -> Option<CpuCeiling> {
    cpu_ceiling_on(costs, &PathCores::counted(cores))
}

/// [`cpu_ceiling`] with the cores' source in the arithmetic.
pub fn cpu_ceiling_on(costs: &[CpuCost], path_cores: &PathCores) -> Option<CpuCeiling> {
    let cores = path_cores.available();
    let total: f64 = costs.iter().map(|c| c.ns_per_byte).sum();
    if costs.is_empty() || total <= 0.0 || cores <= 0.0 || !total.is_finite() {
        return None;
    }
    let shared = cores * 1e9 / total;
    let terms: Vec<String> = costs
        .iter()
        .map(|c| format!("{:.1}", c.ns_per_byte))
        .collect();
    let mut best = (
        shared,
        Binding::AllCores,
        format!(
            "{} / ({} ns/B) = {}",
            path_cores.text(),
            terms.join(" + "),
            mb(shared)
        ),
    );
    for c in costs
        .iter()
        .filter(|c| c.single_threaded && c.ns_per_byte > 0.0)
    {
        let one = 1e9 / c.ns_per_byte;
        if one < best.0 {
            best = (
                one,
                Binding::OneStage(c.stage.clone()),
                format!(
                    "{} is single-threaded: 1 core / {:.1} ns/B = {} (all {} would allow {})",
                    c.stage,
                    c.ns_per_byte,
                    mb(one),
                    path_cores.text(),
                    mb(shared)
                ),
            );
        }
    }
    let mut shares: Vec<Share> = costs
        .iter()
        .map(|c| Share {
            stage: c.stage.clone(),
            pct: c.ns_per_byte / total * 100.0,
        })
        .collect();
    shares.sort_by(|a, b| b.pct.total_cmp(&a.pct));
    Some(CpuCeiling {
        bytes_per_sec: best.0,
        cores,
        binding: best.1,
        arithmetic: best.2,
        shares,
        scaled: None,
    })
}

/// A change to the box, and what the path would do then.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The path gets this many cores.
    Cores(f64),
    /// A stage's cost becomes another figure (another cipher, SMB encryption
    /// on or off), or goes away (`None`).
    Stage {
        stage: String,
        cost: Option<CpuCost>,
    },
    /// Every cost is another (SMB encryption on: the encrypted run's costs).
    Costs(Vec<CpuCost>),
}

/// The CPU ceiling after `change`.
pub fn with_change(costs: &[CpuCost], cores: f64, change: &Change) -> Option<CpuCeiling> {
    match change {
        Change::Cores(n) => cpu_ceiling(costs, *n),
        Change::Stage { stage, cost } => {
            let mut next: Vec<CpuCost> = costs
                .iter()
                .filter(|c| &c.stage != stage)
                .cloned()
                .collect();
            next.extend(cost.iter().cloned());
            cpu_ceiling(&next, cores)
        }
        Change::Costs(all) => cpu_ceiling(all, cores),
    }
}

/// How far a prediction is from what was measured, percent of the measured
/// figure; beyond [`MODEL_MISS_PCT`] the model does not explain the path.
pub fn miss_pct(predicted: f64, measured: f64) -> Option<f64> {
    (measured > 0.0).then(|| (predicted - measured) / measured * 100.0)
}

/// A prediction further than this from the measurement is itself a finding.
pub const MODEL_MISS_PCT: f64 = 25.0;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::probe::cpu_list::parse_cpus_allowed;

    #[test]
    fn a_served_path_counts_smbd_cores_and_ours_when_we_may_run_elsewhere() {
        let set = |l: &str| crate::probe::cpu_list::parse_cpu_set(l).unwrap();
        // smbd pinned to CPU 0, this client on 0-1: the copy may use both.
        let both = served_cores(&set("0"), Some(set("0-1")));
        assert_eq!(both.count, 2.0);
        assert_eq!(both.cpus, [0, 1]);
        assert_eq!(
            both.source.as_deref(),
            Some("smbd's and this client's affinity: 0-1")
        );
        // Ours within smbd's, or unread: smbd's alone.
        for ours in [Some(set("2")), None] {
            let alone = served_cores(&set("1-3"), ours);
            assert_eq!(alone.count, 3.0);
            assert_eq!(alone.source.as_deref(), Some("smbd's affinity: 1-3"));
        }
    }

    /// A literal stage cost, for the model's tests and the what-ifs'.
    pub(crate) fn cost(stage: &str, ns: f64, single: bool) -> CpuCost {
        CpuCost {
            stage: stage.into(),
            ns_per_byte: ns,
            single_threaded: single,
            basis: "literal".into(),
        }
    }

    /// The Pogoplug of the field report: one 800 MHz core does TCP receive,
    /// smbd, dm-crypt and the filesystem for a Samba write over gigabit to a
    /// disk that writes ~100 MB/s; 26 MiB/s was measured.
    #[test]
    fn pogoplug_one_core_is_the_limit_far_below_each_stage() {
        let costs = [
            cost("softirq", 9.1, true),
            cost("smbd", 12.4, true),
            cost("kcryptd", 14.0, false),
            cost("kworker", 2.2, false),
        ];
        let c = cpu_ceiling(&costs, 1.0).unwrap();
        // 1e9 / 37.7 = 26.5 MB/s.
        assert!(
            (c.bytes_per_sec - 26.525e6).abs() < 0.01e6,
            "{}",
            c.bytes_per_sec
        );
        assert_eq!(c.binding, Binding::AllCores);
        assert_eq!(
            c.arithmetic,
            "1 core / (9.1 + 12.4 + 14.0 + 2.2 ns/B) = 26.5 MB/s"
        );
        // kcryptd is 14.0 / 37.7 = 37 % of it.
        assert_eq!(c.shares[0].stage, "kcryptd");
        assert!((c.shares[0].pct - 37.14).abs() < 0.01);
        // Within 2 % of the measured 26 MiB/s (27.3 MB/s): the model explains it.
        let miss = miss_pct(c.bytes_per_sec, 26.0 * 1048576.0).unwrap();
        assert!(miss.abs() < MODEL_MISS_PCT, "{miss}");
    }

    /// Four cores (an RK3399's big cores) share the spread stages, but one
    /// smbd per client cannot use more than one of them.
    #[test]
    fn a_single_threaded_stage_binds_when_cores_are_plenty() {
        let costs = [
            cost("smbd", 8.0, true),
            cost("kcryptd", 6.0, false),
            cost("md-raid", 3.0, true),
        ];
        let c = cpu_ceiling(&costs, 4.0).unwrap();
        // All cores: 4e9 / 17 = 235 MB/s; smbd alone: 1e9 / 8 = 125 MB/s.
        assert_eq!(c.binding, Binding::OneStage("smbd".into()));
        assert!((c.bytes_per_sec - 125e6).abs() < 1.0);
        assert!(
            c.arithmetic
                .contains("smbd is single-threaded: 1 core / 8.0 ns/B = 125.0 MB/s")
        );
        // With one core it is the sum again.
        let one = with_change(&costs, 4.0, &Change::Cores(1.0)).unwrap();
        assert_eq!(one.binding, Binding::AllCores);
        assert!((one.bytes_per_sec - 1e9 / 17.0).abs() < 1.0);
    }

    /// The Pi 2 without AES instructions: Adiantum instead of AES-XTS lowers
    /// the crypto stage's cost, and the what-if says by how much.
    #[test]
    fn what_if_another_cipher_replaces_the_stage_cost() {
        let costs = [cost("smbd", 20.0, true), cost("kcryptd", 65.0, false)];
        let now = cpu_ceiling(&costs, 4.0).unwrap();
        // 4e9 / 85 = 47.1 MB/s; smbd alone 50 MB/s: the cores bind.
        assert_eq!(now.binding, Binding::AllCores);
        let adiantum = with_change(
            &costs,
            4.0,
            &Change::Stage {
                stage: "kcryptd".into(),
                cost: Some(cost("kcryptd", 12.0, false)),
            },
        )
        .unwrap();
        // 4e9 / 32 = 125 MB/s, but smbd alone is 50 MB/s: now smbd binds.
        assert_eq!(adiantum.binding, Binding::OneStage("smbd".into()));
        assert!((adiantum.bytes_per_sec - 50e6).abs() < 1.0);
        // Without the stage at all (no encryption).
        let none = with_change(
            &costs,
            4.0,
            &Change::Stage {
                stage: "kcryptd".into(),
                cost: None,
            },
        )
        .unwrap();
        assert!((none.bytes_per_sec - 50e6).abs() < 1.0);
    }

    /// smbd started under `taskset -c 0`: its affinity, not the box's two
    /// logical CPUs, is what the path can use, and the arithmetic says so.
    #[test]
    fn cores_come_from_the_affinity_and_are_named() {
        let status = "Name:\tsmbd\nCpus_allowed:\t1\nCpus_allowed_list:\t0\nMems_allowed:\t1\n";
        let cpus = parse_cpus_allowed(status).unwrap();
        assert_eq!(cpus.len(), 1);
        let mut cores = PathCores {
            count: cpus.len() as f64,
            source: Some(format!("smbd's affinity: {}", cpu_list_text(&cpus))),
            cpus: cpus.iter().copied().collect(),
            taken_by_others: 0.0,
        };
        let c = cpu_ceiling_on(
            &[cost("smbd", 4.0, true), cost("softirq", 1.0, true)],
            &cores,
        )
        .unwrap();
        assert_eq!(
            c.arithmetic,
            "1 core (smbd's affinity: 0) / (4.0 + 1.0 ns/B) = 200.0 MB/s"
        );
        assert_eq!(c.cores, 1.0);
        // Over 2 s, CPU 0 was busy 1.8 s; moving 200 MB at 5 ns/B is 1 s of
        // it: others took 0.4 of the core, and the path had 0.6 of one.
        let load = CoreLoad {
            busy_by_cpu: vec![
                crate::bench::smb::server::CpuBusy {
                    cpu: 0,
                    busy_ns: 1_800_000_000,
                },
                crate::bench::smb::server::CpuBusy {
                    cpu: 1,
                    busy_ns: 2_000_000_000,
                },
            ],
            elapsed_ns: 2_000_000_000,
            bytes: 200_000_000,
        };
        let costs = [cost("smbd", 4.0, true), cost("softirq", 1.0, true)];
        cores.taken_by_others = taken_by_others(&load, &cores.cpus, &costs);
        assert!((cores.taken_by_others - 0.4).abs() < 1e-9);
        let c = cpu_ceiling_on(&costs, &cores).unwrap();
        assert_eq!(
            c.arithmetic,
            "(1 core (smbd's affinity: 0) - 0.40 used by other processes during the transfer) \
             / (4.0 + 1.0 ns/B) = 120.0 MB/s"
        );
        // Less than the path's own work was seen busy: nobody else took any.
        assert_eq!(
            taken_by_others(&load, &[], &[cost("smbd", 50.0, true)]),
            0.0
        );
    }

    fn busy(cpu: u32, ms: u64) -> crate::bench::smb::server::CpuBusy {
        crate::bench::smb::server::CpuBusy {
            cpu,
            busy_ns: ms * 1_000_000,
        }
    }

    /// The lab's loaded run: the stages counted 2866 ms for 33.5 MB on one
    /// vCPU the guest saw busy 1030 ms; scaled, they add up to 1030 ms.
    #[test]
    fn costs_beyond_the_busy_time_are_scaled_down_to_it() {
        let costs = [
            cost("smbd", 30.0, true),
            cost("kworker", 35.0, false),
            cost("client (this box)", 20.4, true),
        ];
        let load = CoreLoad {
            busy_by_cpu: vec![busy(0, 1030)],
            elapsed_ns: 2_842_000_000,
            bytes: 33_554_432,
        };
        // 85.4 ns/B x 33554432 B = 2865.6 ms.
        let (scaled, scale) = cap_at_busy(&costs, &load);
        let scale = scale.unwrap();
        assert!((scale.counted_ns - 85.4 * 33_554_432.0).abs() < 1.0);
        assert!((scale.factor - 1.03e9 / (85.4 * 33_554_432.0)).abs() < 1e-12);
        let sum: f64 = scaled.iter().map(|c| c.ns_per_byte).sum();
        assert!((sum * load.bytes as f64 - 1.03e9).abs() < 1.0, "{sum}");
        // Each stage keeps its share: smbd 30/85.4 of the time.
        assert!((scaled[0].ns_per_byte / sum - 30.0 / 85.4).abs() < 1e-12);
        assert!(
            scaled[0]
                .basis
                .ends_with("x 0.36 (scaled to the CPUs' busy time)")
        );
        assert_eq!(
            scale.text(),
            "costs scaled by 0.36: the stages counted 2866 ms, the CPUs were busy 1030 ms"
        );
        // The ceiling says it: 1 core / 30.7 ns/B = 32.6 MB/s, not 11.7 MB/s.
        let c = cpu_ceiling(&scaled, 1.0).unwrap().scaled_by(Some(scale));
        assert!((c.bytes_per_sec - 33_554_432.0 / 1.03).abs() < 1.0);
        assert!(
            c.arithmetic
                .starts_with("1 core / (10.8 + 12.6 + 7.3 ns/B) = 32.6 MB/s (costs")
        );
    }

    /// Costs within the busy time are left alone; a second CPU's busy time
    /// counts too (the costs are the whole system's: kcryptd on CPU 1 is
    /// the path's even when smbd may use only CPU 0).
    #[test]
    fn costs_within_every_cpus_busy_time_are_kept() {
        let costs = [cost("smbd", 20.0, true), cost("kcryptd", 10.0, false)];
        // 30 ns/B x 100 MB = 3000 ms, over two CPUs busy 2000 + 1000 ms.
        let load = CoreLoad {
            busy_by_cpu: vec![busy(0, 2000), busy(1, 1000)],
            elapsed_ns: 2_000_000_000,
            bytes: 100_000_000,
        };
        let (same, scale) = cap_at_busy(&costs, &load);
        assert_eq!(scale, None);
        assert_eq!(same, costs.to_vec());
        // CPU 0 alone was busy 2000 ms of the 3000: scaled by 2/3.
        let one = CoreLoad {
            busy_by_cpu: vec![busy(0, 2000)],
            ..load.clone()
        };
        let (scaled, scale) = cap_at_busy(&costs, &one);
        assert!((scale.unwrap().factor - 2.0 / 3.0).abs() < 1e-12);
        assert!((scaled[1].ns_per_byte - 20.0 / 3.0).abs() < 1e-12);
        // No ticks seen at all is no evidence: the costs stand.
        let none = CoreLoad {
            busy_by_cpu: vec![busy(0, 0)],
            ..load
        };
        assert_eq!(cap_at_busy(&costs, &none).1, None);
    }

    #[test]
    fn cpu_lists_parse_and_print_as_the_kernel_writes_them() {
        use crate::probe::cpu_list::parse_cpu_set as parse_cpu_list;
        let set = parse_cpu_list("0-3,5,8-9\n").unwrap();
        assert_eq!(
            set.iter().copied().collect::<Vec<_>>(),
            [0, 1, 2, 3, 5, 8, 9]
        );
        assert_eq!(cpu_list_text(&set), "0-3,5,8-9");
        assert_eq!(cpu_list_text(&parse_cpu_list("0").unwrap()), "0");
        for bad in ["", "a", "3-1", "0-", "1,,x"] {
            assert_eq!(parse_cpu_list(bad), None, "{bad}");
        }
        assert_eq!(parse_cpus_allowed("Name:\tsmbd\n"), None);
    }

    fn sending(ns: f64, softirq: f64, streams: u32) -> TcpFigure {
        TcpFigure {
            peer: "192.0.2.7".into(),
            role: "send".into(),
            streams,
            bytes_per_sec: 11.2e6,
            cpus: 4,
            ns_per_byte: ns,
            softirq_ns_per_byte: softirq,
            measured_by: None,
        }
    }

    #[test]
    fn bench_net_gives_this_boxs_tcp_figure_but_not_over_loopback() {
        let mut d: crate::net::doc::NetReport = crate::compare::tests::fixture("net.json");
        d.end.cpu_cost = Some(crate::net::doc::sending_cost(61.2, 20.4));
        assert_eq!(tcp_figure(&d), None, "loopback: both ends are this box");
        d.start.connecting_to.host = "192.0.2.7".into();
        let f = tcp_figure(&d).unwrap();
        assert_eq!((f.role.as_str(), f.cpus, f.ns_per_byte), ("send", 4, 61.2));
        let bps = d.end.sum_received.as_ref().unwrap().bits_per_second;
        assert_eq!(f.bytes_per_sec, bps / 8.0);
        d.end.cpu_cost = None;
        assert_eq!(tcp_figure(&d), None);
    }

    #[test]
    fn tcp_cost_splits_softirq_from_the_copy_and_crypto_joins_it() {
        let one = tcp_costs(&sending(61.2, 20.4, 1));
        let stages: Vec<(&str, bool)> = one
            .iter()
            .map(|c| (c.stage.as_str(), c.single_threaded))
            .collect();
        assert_eq!(stages, vec![("softirq", true), ("tcp", true)]);
        assert!((one[1].ns_per_byte - 40.8).abs() < 1e-9);
        // Four streams spread the copy over cores; one flow's softirq does not spread.
        assert!(!tcp_costs(&sending(61.2, 20.4, 4))[1].single_threaded);
        // dm-crypt at 14.6 MB/s on one core: 68.5 ns/B, spread over cores.
        let k = crypto_cost("aes-xts-plain64", 14.6e6, 512).unwrap();
        assert!((k.ns_per_byte - 68.49).abs() < 0.01, "{k:?}");
        assert!(!k.single_threaded);
        assert!(k.basis.contains("at 512-byte sectors"), "{}", k.basis);
        assert_eq!(crypto_cost("x", 0.0, 512), None);
        // A read from the share is this box sending; no receive figure for writes.
        let tcp = [sending(61.2, 20.4, 1)];
        assert_eq!(assembled_costs(&tcp, false, Some(k.clone())).len(), 3);
        assert!(assembled_costs(&tcp, true, Some(k.clone())).is_empty());
        assert!(assembled_costs(&[], false, Some(k)).is_empty());
    }

    /// The Pi 2's LUKS volume has 512-byte sectors: the crypto stage takes the
    /// 512-byte figure over the 4 KiB one and says so, and bench net's cost of
    /// sending joins dm-crypt's in a CPU stage.
    #[test]
    fn pi2_crypto_at_its_sector_size_and_a_cpu_stage_from_bench_net() {
        use super::super::bottleneck::{CipherFigure, Measurements, analyse};
        let snap = crate::advise::test_support::snapshot_of("rpi2-luks");
        let fig = |size: u32, dec: f64| CipherFigure {
            cipher: "aes-xts-plain64".into(),
            key_bits: 512,
            path: "kernel".into(),
            encrypt_bytes_per_sec: dec,
            decrypt_bytes_per_sec: dec,
            request_bytes: size,
            measured_by: None,
        };
        let m = Measurements {
            crypto: vec![fig(4096, 14.6e6), fig(512, 9.8e6)],
            tcp: vec![sending(61.2, 20.4, 1)],
            ..Default::default()
        };
        let paths = analyse(&snap, &m);
        let read = paths
            .iter()
            .find(|p| p.name == "read from /srv/nas")
            .unwrap();
        let crypto = read.stages.iter().find(|s| s.name == "crypto").unwrap();
        assert_eq!(crypto.ceiling_bytes_per_sec, Some(9.8e6));
        assert!(
            crypto.basis.contains("at 512-byte sectors: 9.8 MB/s"),
            "{}",
            crypto.basis
        );
        let cpu = read.stages.iter().find(|s| s.name == "cpu").unwrap();
        // 4 cores / (20.4 + 40.8 + 102.0 ns/B) = 24.5 MB/s; tcp alone 24.5 MB/s.
        assert!(
            cpu.basis.contains("(20.4 + 40.8 + 102.0 ns/B)")
                || cpu.basis.contains("tcp is single-threaded"),
            "{}",
            cpu.basis
        );
        // Only a 4 KiB figure: used, with the measurement that would decide it.
        let m = Measurements {
            crypto: vec![fig(4096, 14.6e6)],
            ..Default::default()
        };
        let read = analyse(&snap, &m)
            .into_iter()
            .find(|p| p.name == "read from /srv/nas")
            .unwrap();
        let crypto = read.stages.iter().find(|s| s.name == "crypto").unwrap();
        assert!(
            crypto
                .basis
                .contains("at 4096-byte sectors (the volume's 512 were not measured)"),
            "{}",
            crypto.basis
        );
        assert!(
            read.missing
                .iter()
                .any(|s| s.contains("bench crypto --sector-size 512")),
            "{:?}",
            read.missing
        );
        assert!(read.stages.iter().all(|s| s.name != "cpu"));
    }

    /// A bench smb --compare-security document on this box: plain and
    /// encrypted seq-read, each with smbd's and softirq's CPU-s per GB.
    fn smb_doc(plain_smbd: f64, encrypted_smbd: f64) -> crate::bench::smb::SmbReport {
        let run = |security: &str, smbd: f64| {
            serde_json::json!({
                "security": security,
                "session": {"dialect": "3.1.1", "signing": null, "cipher": null,
                    "max_read_bytes": 1048576, "max_write_bytes": 1048576,
                    "max_transact_bytes": 1048576, "credits_granted": 64, "guest": false},
                "size_bytes": 1000000000u64, "block_bytes": 1048576,
                "results": [{"workload": "seq-read", "bytes": 1000000000u64, "ops": 954,
                    "elapsed_ns": 20000000000u64, "bw_bytes": 50e6, "iops": 47.7,
                    "clat_ns": null, "client_cpu_ns": 0,
                    "server": {"stages": [
                        {"stage": "smbd", "cpu_ns": 1, "cpu_seconds_per_gb": smbd},
                        {"stage": "softirq", "cpu_ns": 1, "cpu_seconds_per_gb": 9.1},
                        {"stage": "iowait", "cpu_ns": 1, "cpu_seconds_per_gb": 30.0}]}}]
            })
        };
        serde_json::from_value(serde_json::json!({
            "schema_version": 1, "tool_version": "0", "server_local": true,
            "settings": {"target": "//127.0.0.1/data", "user": null,
                "workloads": ["seq-read"], "securities": ["plain", "encrypt"], "dialects": [],
                "size_bytes": null, "block_bytes": 1048576, "depth": 1, "small_files": 0,
                "small_file_bytes": 0, "metadata_dirs": 0, "metadata_files_per_dir": 0},
            "runs": [run("plain", plain_smbd), run("encrypt", encrypted_smbd)]
        }))
        .expect("an SMB document")
    }

    #[test]
    fn smb_figures_carry_the_encrypted_runs_costs() {
        let f = smb_figures(&smb_doc(12.4, 41.0)).unwrap();
        assert_eq!(f.share, "data");
        let stages: Vec<(&str, f64)> = f
            .read_costs
            .iter()
            .map(|c| (c.stage.as_str(), c.ns_per_byte))
            .collect();
        // iowait is waiting, not work.
        assert_eq!(stages, vec![("smbd", 12.4), ("softirq", 9.1)]);
        assert_eq!(f.encrypted_read_costs[0].ns_per_byte, 41.0);
        assert!(f.encrypted_write_costs.is_empty());
        // Only an encrypted run: it is the figure, with no "encryption on" to add.
        let mut doc = smb_doc(12.4, 41.0);
        doc.runs.remove(0);
        let f = smb_figures(&doc).unwrap();
        assert_eq!(f.read_costs[0].ns_per_byte, 41.0);
        assert!(f.encrypted_read_costs.is_empty());
    }

    #[test]
    fn no_costs_or_no_cores_is_no_ceiling() {
        assert_eq!(cpu_ceiling(&[], 2.0), None);
        assert_eq!(cpu_ceiling(&[cost("smbd", 5.0, true)], 0.0), None);
        assert_eq!(cpu_ceiling(&[cost("smbd", 0.0, true)], 1.0), None);
        assert_eq!(miss_pct(10.0, 0.0), None);
        assert_eq!(miss_pct(75.0, 100.0), Some(-25.0));
    }
}

/// A file service measured end to end (bench smb): what it moved and, when
/// the server is this box, what each stage cost per byte.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceFigure {
    /// `smb`.
    pub service: String,
    /// The share's name.
    pub share: String,
    /// `//HOST[:PORT]/SHARE` as benched (absent before 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub server_local: bool,
    pub read_bytes_per_sec: Option<f64>,
    pub write_bytes_per_sec: Option<f64>,
    /// Per-byte costs of the sequential read and write (empty for a remote server).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_costs: Vec<CpuCost>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_costs: Vec<CpuCost>,
    /// The CPUs' busy time during the sequential read and write (local server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_load: Option<CoreLoad>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_load: Option<CoreLoad>,
    /// The cores the path's processes may use (the serving smbd's affinity,
    /// with the client's when it runs here), when check read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<PathCores>,
    /// The share's directory on this box, from the configuration of the
    /// smbd that owns the benched port (another smbd may serve another one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_path: Option<String>,
    /// The same workloads with SMB encryption on (bench smb --compare-security),
    /// when the figures above are of a plain run: what encryption would cost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub encrypted_read_costs: Vec<CpuCost>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub encrypted_write_costs: Vec<CpuCost>,
    /// The CPUs' busy time during the encrypted runs (their costs' cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_read_load: Option<CoreLoad>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_write_load: Option<CoreLoad>,
}

impl ServiceFigure {
    /// The costs and load of the plain (`encrypted` false) or encrypted
    /// copy in one direction, the costs capped at the CPUs' busy time.
    pub fn capped_costs(&self, write: bool, encrypted: bool) -> (Vec<CpuCost>, Option<CostScale>) {
        let (costs, load) = match (write, encrypted) {
            (false, false) => (&self.read_costs, &self.read_load),
            (true, false) => (&self.write_costs, &self.write_load),
            (false, true) => (&self.encrypted_read_costs, &self.encrypted_read_load),
            (true, true) => (&self.encrypted_write_costs, &self.encrypted_write_load),
        };
        match load {
            Some(l) => cap_at_busy(costs, l),
            None => (costs.clone(), None),
        }
    }
}

/// Stages one thread or one flow does: they never use more than one core.
fn single_threaded(stage: &str) -> bool {
    matches!(stage, "smbd" | "softirq" | "md-raid" | "usb-storage") || stage.starts_with("client")
}

/// The per-byte costs of one SMB workload: the server's stages (iowait is
/// waiting, not work) and, when the client runs on this box too, its own.
pub fn smb_costs(r: &crate::bench::smb::WorkloadResult, local: bool) -> Vec<CpuCost> {
    let Some(server) = r.server.as_ref().filter(|_| local && r.bytes > 0) else {
        return Vec::new();
    };
    let mut out: Vec<CpuCost> = server
        .stages
        .iter()
        .filter(|s| s.stage != "iowait")
        .filter_map(|s| {
            // CPU-seconds per GB is nanoseconds per byte.
            let ns = s.cpu_seconds_per_gb.filter(|v| *v > 0.0)?;
            Some(CpuCost {
                stage: s.stage.clone(),
                ns_per_byte: ns,
                single_threaded: single_threaded(&s.stage),
                basis: format!("bench smb server side: {:.2} CPU-s/GB", ns),
            })
        })
        .collect();
    let client = r.client_cpu_ns as f64 / r.bytes as f64;
    if client > 0.0 {
        out.push(CpuCost {
            stage: "client (this box)".into(),
            ns_per_byte: client,
            single_threaded: true,
            basis: format!("nastune's SMB client on this box: {client:.2} CPU-s/GB"),
        });
    }
    out
}

/// The CPUs' load during one workload on this box's own smbd.
fn core_load(r: &crate::bench::smb::WorkloadResult, local: bool) -> Option<CoreLoad> {
    let server = r.server.as_ref().filter(|_| local && r.bytes > 0)?;
    (!server.busy_by_cpu.is_empty()).then(|| CoreLoad {
        busy_by_cpu: server.busy_by_cpu.clone(),
        elapsed_ns: if server.window_ns > 0 {
            server.window_ns
        } else {
            r.elapsed_ns
        },
        bytes: r.bytes,
    })
}

/// The end-to-end figures of a bench smb document, from its plain run (or the
/// first, when it ran only signed or encrypted).
pub fn smb_figures(doc: &crate::bench::smb::SmbReport) -> Option<ServiceFigure> {
    use crate::bench::smb::Workload;
    use crate::smb::Security;
    let run = doc
        .runs
        .iter()
        .find(|r| r.security == Security::Plain)
        .or(doc.runs.first())?;
    let target = crate::bench::smb::Target::parse(&doc.settings.target).ok()?;
    let of = |w: Workload| run.results.iter().find(|r| r.workload == w);
    let read = of(Workload::SeqRead);
    let write = of(Workload::SeqWrite);
    let encrypted = doc
        .runs
        .iter()
        .find(|r| r.security == Security::Encrypt && run.security == Security::Plain);
    let encrypted_of =
        |w: Workload| encrypted.and_then(|e| e.results.iter().find(|r| r.workload == w));
    let encrypted_costs = |w: Workload| {
        encrypted_of(w)
            .map(|r| smb_costs(r, doc.server_local))
            .unwrap_or_default()
    };
    let encrypted_load = |w: Workload| encrypted_of(w).and_then(|r| core_load(r, doc.server_local));
    Some(ServiceFigure {
        service: "smb".into(),
        share: target.share.clone(),
        target: Some(target.display()),
        server_local: doc.server_local,
        read_bytes_per_sec: read.map(|r| r.bw_bytes).filter(|v| *v > 0.0),
        write_bytes_per_sec: write.map(|r| r.bw_bytes).filter(|v| *v > 0.0),
        read_costs: read
            .map(|r| smb_costs(r, doc.server_local))
            .unwrap_or_default(),
        write_costs: write
            .map(|r| smb_costs(r, doc.server_local))
            .unwrap_or_default(),
        read_load: read.and_then(|r| core_load(r, doc.server_local)),
        write_load: write.and_then(|r| core_load(r, doc.server_local)),
        cores: None,
        share_path: None,
        encrypted_read_costs: encrypted_costs(Workload::SeqRead),
        encrypted_write_costs: encrypted_costs(Workload::SeqWrite),
        encrypted_read_load: encrypted_load(Workload::SeqRead),
        encrypted_write_load: encrypted_load(Workload::SeqWrite),
    })
}

/// A one-way TCP transfer bench net ran from this box to a peer, with what
/// each byte cost this box's CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcpFigure {
    pub peer: String,
    /// `send` (this box sent: what a client reading from it asks) or `receive`.
    pub role: String,
    pub streams: u32,
    /// Goodput measured end to end.
    pub bytes_per_sec: f64,
    /// The cores the cost was measured over.
    pub cpus: u32,
    /// User + system + softirq CPU time per byte, all cores (CPU-seconds per GB).
    pub ns_per_byte: f64,
    pub softirq_ns_per_byte: f64,
    /// The stored run this figure comes from; `None`: this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_by: Option<super::measured::MeasuredBy>,
}

/// This box's side of a bench net document (a test to a peer, not loopback,
/// where both ends are this box and their costs add up).
pub fn tcp_figure(doc: &crate::net::doc::NetReport) -> Option<TcpFigure> {
    let host = &doc.start.connecting_to.host;
    if host
        .parse::<std::net::IpAddr>()
        .is_ok_and(|a| a.is_loopback())
        || host == "localhost"
    {
        return None;
    }
    let cost = doc.end.cpu_cost.as_ref()?.host.as_ref()?;
    let moved = doc
        .end
        .sum_received
        .as_ref()
        .or(doc.end.sum_sent.as_ref())?;
    Some(TcpFigure {
        peer: host.clone(),
        role: cost.role.clone(),
        streams: doc.start.test_start.streams,
        bytes_per_sec: moved.bits_per_second / 8.0,
        cpus: cost.cpus,
        ns_per_byte: cost.ns_per_byte,
        softirq_ns_per_byte: cost.softirq_ns_per_byte,
        measured_by: None,
    })
}

/// The CPU stages of a TCP transfer: the softirq (one flow's packets are
/// handled on one core) and the rest (the copy into or out of the socket, one
/// thread per stream).
pub fn tcp_costs(f: &TcpFigure) -> Vec<CpuCost> {
    let by = super::measured::origin(f.measured_by.as_ref());
    let rest = f.ns_per_byte - f.softirq_ns_per_byte;
    let mut out = Vec::new();
    if f.softirq_ns_per_byte > 0.0 {
        out.push(CpuCost {
            stage: "softirq".into(),
            ns_per_byte: f.softirq_ns_per_byte,
            single_threaded: true,
            basis: format!(
                "bench net {} to {}, softirq {:.2} CPU-s/GB, measured {by}",
                f.role, f.peer, f.softirq_ns_per_byte
            ),
        });
    }
    if rest > 0.0 {
        out.push(CpuCost {
            stage: "tcp".into(),
            ns_per_byte: rest,
            single_threaded: f.streams <= 1,
            basis: format!(
                "bench net {} to {}, user+system {:.2} CPU-s/GB over {} stream(s), measured {by}",
                f.role, f.peer, rest, f.streams
            ),
        });
    }
    out
}

/// dm-crypt's CPU cost per byte from a cipher's rate on one core (one request
/// in flight): 1e9 / rate. kcryptd spreads requests over the cores, so the
/// stage is not single-threaded.
pub fn crypto_cost(cipher: &str, rate_bytes_per_sec: f64, request_bytes: u32) -> Option<CpuCost> {
    (rate_bytes_per_sec > 0.0).then(|| {
        let ns = 1e9 / rate_bytes_per_sec;
        CpuCost {
            stage: "kcryptd".into(),
            ns_per_byte: ns,
            single_threaded: false,
            basis: format!(
                "{cipher} at {request_bytes}-byte sectors, {} on one core: 1e9 / rate = {ns:.2} ns/B",
                mb(rate_bytes_per_sec)
            ),
        }
    })
}

/// TCP/IPv4 goodput of a link at MTU 1500 with timestamps: 1448 payload bytes
/// of the 1538 each frame takes on the wire (preamble 8 + header 14 + FCS 4 +
/// inter-frame gap 12 around the 1500).
pub fn wire_goodput(mbit_per_sec: u64) -> f64 {
    mbit_per_sec as f64 * 1e6 / 8.0 * 1448.0 / 1538.0
}

/// The volume's cipher as dm-crypt runs it: the kernel's figure before user
/// space's, at the volume's sector size before any other (then 4 KiB).
pub fn volume_cipher<'m>(
    figures: &'m [super::bottleneck::CipherFigure],
    c: &crate::probe::dm::Crypt,
) -> Option<&'m super::bottleneck::CipherFigure> {
    figures
        .iter()
        .filter(|f| f.cipher == c.cipher && c.key_bits.is_none_or(|k| u64::from(f.key_bits) == k))
        .min_by_key(|f| {
            (
                u64::from(f.request_bytes) != c.sector_bytes,
                f.request_bytes != 4096,
                f.path != "kernel",
            )
        })
}

/// A path's CPU costs from stages measured apart: this box's TCP send (a
/// read from the share) or receive (a write), and dm-crypt's.
pub fn assembled_costs(tcp: &[TcpFigure], write: bool, crypto: Option<CpuCost>) -> Vec<CpuCost> {
    let role = if write { "receive" } else { "send" };
    let mut out: Vec<CpuCost> = tcp
        .iter()
        .find(|t| t.role == role)
        .map(tcp_costs)
        .unwrap_or_default();
    // Crypto alone is no shared-CPU model: it already has its own stage.
    if !out.is_empty() {
        out.extend(crypto);
    }
    out
}
