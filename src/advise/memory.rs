//! Memory rules: pressure stalls and swap kind on small boards.

use super::{Change, Finding, Risk, Rule, RuleInfo, Severity};

pub static RULES: &[&Rule] = &[&PRESSURE, &ZRAM];

/// PSI "some" over a minute above this share of time is worth a look.
const PRESSURE_WARN_PERCENT: f64 = 10.0;

static PRESSURE: Rule = Rule {
    info: RuleInfo {
        id: "pressure-stalls",
        area: "memory",
        title: "Tasks stall waiting for memory or I/O",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "PSI 'some' avg60 for memory or io is at or above 10%: tasks spent that share of \
                 the last minute waiting.",
        references: &["https://docs.kernel.org/accounting/psi.html"],
    },
    evaluate: |info, ctx| {
        let Some(mem) = ctx.snapshot.memory.data() else {
            return Vec::new();
        };
        let Some(pressure) = &mem.pressure else {
            return Vec::new();
        };
        pressure
            .iter()
            .filter(|p| p.resource != "cpu" && p.some_avg60 >= PRESSURE_WARN_PERCENT)
            .map(|p| {
                let what = if p.resource == "io" {
                    "the disks (or the crypto and RAID layers above them)"
                } else {
                    "memory reclaim"
                };
                Finding::of(
                    info,
                    format!(
                        "{} pressure {:.1}% over the last minute",
                        p.resource, p.some_avg60
                    ),
                    format!(
                        "At least one task waited on {what} for {:.1}% of the last 60 s \
                         ({:.1}% over 10 s); from {PRESSURE_WARN_PERCENT:.0}% up users feel it.{}",
                        p.some_avg60,
                        p.some_avg10,
                        p.full_avg60
                            .map(|f| format!(
                                " All tasks were stalled at once {f:.1}% of the time."
                            ))
                            .unwrap_or_default()
                    ),
                )
                .evidence(
                    format!("{} some avg60", p.resource),
                    format!("{:.2}%", p.some_avg60),
                )
                .change(Change::AdviceOnly {
                    action: if p.resource == "io" {
                        "run 'nastune bench disk' to find the slow layer".into()
                    } else {
                        "find the memory hog (smbd count, caches) or add zram swap".into()
                    },
                })
            })
            .collect()
    },
};

/// Boards with this much RAM or less gain from compressed swap in RAM.
const ZRAM_RAM_LIMIT_BYTES: u64 = 1 << 30;

static ZRAM: Rule = Rule {
    info: RuleInfo {
        id: "small-ram-without-zram",
        area: "memory",
        title: "Small RAM without zram swap",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "The box has at most 1 GiB of RAM and no zram swap device.",
        references: &[
            "https://docs.kernel.org/admin-guide/blockdev/zram.html",
            "https://docs.kernel.org/admin-guide/sysctl/vm.html#swappiness",
        ],
    },
    evaluate: |info, ctx| {
        let Some(mem) = ctx.snapshot.memory.data() else {
            return Vec::new();
        };
        if mem.total_bytes > ZRAM_RAM_LIMIT_BYTES || mem.swaps.iter().any(|s| s.kind == "zram") {
            return Vec::new();
        }
        let on_disk: Vec<&str> = mem.swaps.iter().map(|s| s.device.as_str()).collect();
        let mib = mem.total_bytes / (1024 * 1024);
        vec![
            Finding::of(
                info,
                format!("{mib} MiB of RAM and no zram"),
                format!(
                    "With {mib} MiB every smbd process and page of cache counts. zram keeps \
                     swapped pages compressed in RAM (typically 2-3:1), which is far faster than \
                     swapping to {} and spares flash from wear; with zram, swappiness 100 or \
                     more is right.",
                    if on_disk.is_empty() {
                        "nothing (no swap: the OOM killer decides instead)".to_string()
                    } else {
                        on_disk.join(", ")
                    }
                ),
            )
            .evidence("MemTotal", format!("{mib} MiB"))
            .evidence(
                "swap devices",
                if on_disk.is_empty() {
                    "none".to_string()
                } else {
                    on_disk.join(", ")
                },
            )
            .change(Change::AdviceOnly {
                action: "apt install systemd-zram-generator (or zram-tools) and size zram at \
                         half of RAM"
                    .into(),
            }),
        ]
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::Context;
    use crate::advise::test_support::snapshot_of;

    fn run(rule: &Rule, boxname: &str) -> Vec<Finding> {
        let snap = snapshot_of(boxname);
        rule.run(&Context::unmeasured(&snap))
    }

    #[test]
    fn zram_advice_for_small_boards_without_it() {
        let f = run(&ZRAM, "pogoplug-v4");
        assert_eq!(f.len(), 1);
        assert!(f[0].rationale.contains("/dev/sda2"), "{}", f[0].rationale);
        assert!(
            run(&ZRAM, "rpi2-luks").is_empty(),
            "the Pi already has zram"
        );
        assert!(run(&ZRAM, "rk3399-raid5").is_empty(), "4 GiB is plenty");
    }

    #[test]
    fn io_pressure_on_the_busy_pi() {
        let f = run(&PRESSURE, "rpi2-luks");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].title, "io pressure 13.6% over the last minute");
        assert!(run(&PRESSURE, "rk3399-raid5").is_empty());
    }
}
