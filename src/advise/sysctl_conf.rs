//! sysctl.d hygiene: keys the kernel no longer has, keys set in several files
//! where the later file silently wins, values sysctl rejects, and files whose
//! value the kernel does not have. Also the small lookups the net and vm rules
//! share, which attribute a value to a file only when the file's value is live.

use super::{Change, Context, Finding, Risk, Rule, RuleInfo, Severity};
use crate::probe::sysctl::{ConfigSetting, Sysctl};

pub static RULES: &[&Rule] = &[
    &REMOVED_KEY,
    &OVERRIDDEN_KEY,
    &INVALID_VALUE,
    &FILE_NOT_APPLIED,
];

/// The sysctl section, when the probe got it.
pub(super) fn sysctl<'a>(ctx: &Context<'a>) -> Option<&'a Sysctl> {
    ctx.snapshot.sysctl.data()
}

/// A numeric sysctl's current value.
pub(super) fn value_u64(ctx: &Context, key: &str) -> Option<u64> {
    sysctl(ctx)?.values.get(key)?.trim().parse().ok()
}

/// The three numbers of tcp_rmem / tcp_wmem / tcp_mem.
pub(super) fn triple(ctx: &Context, key: &str) -> Option<[u64; 3]> {
    let text = sysctl(ctx)?.values.get(key)?;
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    <[u64; 3]>::try_from(v).ok()
}

/// The assignment boot applies last, when a file sets the key.
pub(super) fn boot_setting<'a>(ctx: &Context<'a>, key: &str) -> Option<&'a ConfigSetting> {
    sysctl(ctx)?
        .configured
        .get(key)?
        .iter()
        .rfind(|c| !c.exclude)
}

/// `FILE:LINE` of the assignment boot applies last, when a file sets the key.
pub(super) fn set_at(ctx: &Context, key: &str) -> Option<String> {
    boot_setting(ctx, key).map(location)
}

/// Where the live value comes from, said only as far as it is known: `set at
/// FILE:LINE` when that line's value is live, else what the line says instead.
pub(super) fn attribution(ctx: &Context, key: &str) -> Option<String> {
    let c = boot_setting(ctx, key)?;
    let live = sysctl(ctx)?.values.get(key);
    Some(match live {
        Some(v) if !same_value(&c.value, v) => format!(
            "{} sets '{}', which is not live: not applied or overridden",
            location(c),
            c.value
        ),
        _ => format!("set at {}", location(c)),
    })
}

/// A value's numbers, when it is only numbers (tcp_rmem has three).
fn numbers(value: &str) -> Option<Vec<i64>> {
    value.split_whitespace().map(|t| t.parse().ok()).collect()
}

/// Whether a file's value and the kernel's are the same setting: numbers by
/// value (`01` is 1), anything else with whitespace runs folded.
fn same_value(file: &str, live: &str) -> bool {
    match (numbers(file), numbers(live)) {
        (Some(a), Some(b)) => a == b,
        _ => {
            let fold = |v: &str| v.split_whitespace().collect::<Vec<_>>().join(" ");
            fold(file) == fold(live)
        }
    }
}

/// Why sysctl rejects a file's value, given the kernel's current value of the
/// key: a unit suffix (`64K`), or words where the kernel has numbers.
fn invalid_because(file: &str, live: Option<&str>) -> Option<String> {
    let v = file.trim();
    let digits = v.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if !v.contains(char::is_whitespace)
        && digits.len() < v.len()
        && !digits.is_empty()
        && digits.parse::<u64>().is_ok()
    {
        return Some(format!(
            "the kernel takes plain numbers: '{}' has the unit suffix '{}', which sysctl \
             writes as is and the kernel rejects with EINVAL",
            v,
            &v[digits.len()..]
        ));
    }
    let want = numbers(live?)?;
    match numbers(v) {
        Some(got) if got.len() == want.len() => None,
        Some(got) => Some(format!(
            "the kernel expects {} number(s) here and the line has {}",
            want.len(),
            got.len()
        )),
        None => Some(format!(
            "the kernel expects {} number(s) here and '{v}' is not one",
            want.len()
        )),
    }
}

fn location(s: &ConfigSetting) -> String {
    format!("{}:{}", s.file, s.line)
}

/// Where a recommendation's persistence goes: the file that sets the key now,
/// else the drop-in `tune` writes (one name, so advice and tune agree).
pub(super) fn persist_hint(ctx: &Context, key: &str) -> String {
    match set_at(ctx, key) {
        Some(at) => format!("edit {at}"),
        None => format!("persist in /{}", crate::probe::sysctl::OWNED_FILE),
    }
}

/// Why a removed key is gone, for the keys old guides still carry.
const REMOVED: &[(&str, &str)] = &[
    (
        "vm.nr_pdflush_threads",
        "The pdflush threads were replaced by per-device flushers in Linux 2.6.32; tune writeback \
         with vm.dirty_background_bytes / vm.dirty_bytes instead",
    ),
    (
        "fs.xfs.xfsbufd_centisecs",
        "It was removed in Linux 4.0 with xfsbufd; XFS flushes metadata through its log and \
         workqueues",
    ),
    (
        "fs.xfs.age_buffer_centisecs",
        "It was removed in Linux 4.0 with xfsbufd; there is no replacement to set",
    ),
    (
        "net.ipv4.tcp_tw_recycle",
        "It was removed in Linux 4.12 because it broke clients behind NAT; leave TIME-WAIT \
         alone",
    ),
];

static REMOVED_KEY: Rule = Rule {
    info: RuleInfo {
        id: "sysctl-removed-key",
        area: "sysctl",
        title: "sysctl file sets a key this kernel does not have",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "A key assigned in /etc/sysctl.conf or a sysctl.d file is absent from /proc/sys \
                 (removed from the kernel, or a typo): boot logs an error and the line does \
                 nothing.",
        references: &[
            "https://docs.kernel.org/admin-guide/xfs.html#removed-sysctls",
            "https://docs.kernel.org/admin-guide/sysctl/vm.html",
            "https://www.freedesktop.org/software/systemd/man/latest/sysctl.d.html",
        ],
    },
    evaluate: |info, ctx| {
        let Some(s) = sysctl(ctx) else {
            return Vec::new();
        };
        s.absent
            .iter()
            .filter_map(|key| Some((key, s.configured.get(key)?)))
            .flat_map(|(key, settings)| {
                settings
                    .iter()
                    .filter(|c| !c.exclude)
                    .map(move |c| (key, c))
            })
            .map(|(key, c)| {
                let why = REMOVED
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, why)| format!("{why}."))
                    .unwrap_or_else(|| {
                        "This kernel has no such key (removed, not built in, or misspelt).".into()
                    });
                Finding::of(
                    info,
                    format!("{key} is set in {} but does not exist", location(c)),
                    format!(
                        "{} sets {key} = {}, but /proc/sys has no such key on this kernel, so \
                         the line only produces an error at boot. {why} Delete the line.",
                        location(c),
                        c.value
                    ),
                )
                .evidence(format!("{key} configured at"), location(c))
                .evidence(format!("{key} at runtime"), "absent")
                .setting(format!("sysctl:{key}"))
                .change(Change::AdviceOnly {
                    action: format!("delete line {} of {}", c.line, c.file),
                })
            })
            .collect()
    },
};

static OVERRIDDEN_KEY: Rule = Rule {
    info: RuleInfo {
        id: "sysctl-overridden",
        area: "sysctl",
        title: "sysctl key set in several files; the later file silently wins",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "The same key is assigned different values in more than one sysctl file; only \
                 the last one in apply order (sorted file names, /etc/sysctl.conf last) counts.",
        references: &["https://www.freedesktop.org/software/systemd/man/latest/sysctl.d.html"],
    },
    evaluate: |info, ctx| {
        let Some(s) = sysctl(ctx) else {
            return Vec::new();
        };
        s.configured
            .iter()
            .filter_map(|(key, settings)| {
                let set: Vec<&ConfigSetting> = settings.iter().filter(|c| !c.exclude).collect();
                let last = *set.last()?;
                let losers: Vec<&&ConfigSetting> = set[..set.len() - 1]
                    .iter()
                    .filter(|c| c.file != last.file && c.value != last.value)
                    .collect();
                if losers.is_empty() {
                    return None;
                }
                let lost: Vec<String> = losers
                    .iter()
                    .map(|c| format!("{} = {} at {}", key, c.value, location(c)))
                    .collect();
                let mut f = Finding::of(
                    info,
                    format!("{key} is set in {} files; {} wins", set.len(), last.file),
                    format!(
                        "{} is applied after the other file(s), so its {key} = {} replaces {}. \
                         Whoever edits the earlier file sees no effect. Keep one assignment.",
                        location(last),
                        last.value,
                        lost.join(", ")
                    ),
                )
                .evidence(format!("{key} effective at"), location(last))
                .setting(format!("sysctl:{key}"))
                .change(Change::AdviceOnly {
                    action: format!("keep {key} in one file only (now {} wins)", location(last)),
                });
                for c in &losers {
                    f = f.evidence(format!("{key} overridden at"), location(c));
                }
                Some(f)
            })
            .collect()
    },
};

/// Each configured key with the assignment boot applies and the kernel's value.
fn boot_settings<'a>(
    ctx: &Context<'a>,
) -> impl Iterator<Item = (&'a str, &'a ConfigSetting, Option<&'a str>)> {
    let s = sysctl(ctx);
    s.into_iter().flat_map(|s| {
        s.configured.iter().filter_map(|(key, settings)| {
            let c = settings.iter().rfind(|c| !c.exclude)?;
            Some((key.as_str(), c, s.values.get(key).map(String::as_str)))
        })
    })
}

/// A finding that sets a file's line against the kernel's value, with the fix
/// left to the person (which of the two is right is theirs to say).
fn file_vs_kernel(
    info: &RuleInfo,
    (key, c, live): (&str, &ConfigSetting, &str),
    title: String,
    rationale: String,
    action: String,
) -> Finding {
    Finding::of(info, title, rationale)
        .evidence(format!("{key} in {}", location(c)), &c.value)
        .evidence(format!("{key} in the kernel"), live)
        .setting(format!("sysctl:{key}"))
        .change(Change::AdviceOnly { action })
}

static INVALID_VALUE: Rule = Rule {
    info: RuleInfo {
        id: "sysctl-invalid-value",
        area: "sysctl",
        title: "sysctl file sets a value the kernel rejects",
        severity: Severity::Warning,
        risk: Risk::AdviceOnly,
        checks: "A sysctl file assigns a value with a unit suffix (64K, 2M) or a value whose \
                 shape differs from the kernel's (words for a number, two numbers for three): \
                 the write fails at boot and the key keeps its old value.",
        references: &[
            "https://www.freedesktop.org/software/systemd/man/latest/sysctl.d.html",
            "https://docs.kernel.org/admin-guide/sysctl/index.html",
        ],
    },
    evaluate: |info, ctx| {
        boot_settings(ctx)
            .filter_map(|(key, c, live)| {
                let why = invalid_because(&c.value, live)?;
                let live = live.unwrap_or("not read");
                Some(file_vs_kernel(
                    info,
                    (key, c, live),
                    format!(
                        "{key} = {} at {} is not a valid value",
                        c.value,
                        location(c)
                    ),
                    format!(
                        "{} sets {key} = {}; {why}. systemd-sysctl logs the failure at boot \
                         and {key} keeps '{live}'. Write the value in plain numbers (bytes for \
                         sizes: 64K is 65536).",
                        location(c),
                        c.value
                    ),
                    format!("fix line {} of {}", c.line, c.file),
                ))
            })
            .collect()
    },
};

static FILE_NOT_APPLIED: Rule = Rule {
    info: RuleInfo {
        id: "sysctl-file-not-applied",
        area: "sysctl",
        title: "sysctl file says one value, the kernel has another",
        severity: Severity::Notice,
        risk: Risk::AdviceOnly,
        checks: "The value boot applies for a key (the last assignment in apply order) differs \
                 from the kernel's: the file was edited and not applied, or something after \
                 boot (sysctl -w, an rc script, a daemon) overrode it. Values the kernel \
                 rejects are the sysctl-invalid-value rule's.",
        references: &["https://www.freedesktop.org/software/systemd/man/latest/sysctl.d.html"],
    },
    evaluate: |info, ctx| {
        boot_settings(ctx)
            .filter_map(|(key, c, live)| {
                let live = live?;
                if same_value(&c.value, live) || invalid_because(&c.value, Some(live)).is_some() {
                    return None;
                }
                Some(file_vs_kernel(
                    info,
                    (key, c, live),
                    format!(
                        "{key}: file says {}, kernel has {live} — not applied or overridden",
                        c.value
                    ),
                    format!(
                        "{} sets {key} = {}, but the kernel has {live}. Either the file changed \
                         since boot and was not applied ('sysctl --system' applies it now), or \
                         something later set {live} (sysctl -w, /etc/rc.local, a daemon, a \
                         tuning tool). Until one of them goes, the file does not say what the \
                         box runs with, and the next boot changes it.",
                        location(c),
                        c.value
                    ),
                    format!(
                        "decide which value is right: apply the file with 'sysctl --system', or \
                         change line {} of {} to {live}",
                        c.line, c.file
                    ),
                ))
            })
            .collect()
    },
};

/// Snapshot edits for the net, vm and sysctl rule tests.
#[cfg(test)]
pub(super) mod test_edit {
    use crate::probe::sysctl::{ConfigSetting, Sysctl};
    use crate::probe::{Outcome, Snapshot};

    fn sysctl_mut(snap: &mut Snapshot) -> &mut Sysctl {
        match &mut snap.sysctl {
            Outcome::Ok { data } => data,
            _ => panic!("fixture has no sysctl section"),
        }
    }

    /// Sets a runtime value.
    pub fn set(snap: &mut Snapshot, key: &str, value: &str) {
        sysctl_mut(snap).values.insert(key.into(), value.into());
    }

    /// Marks a key as missing from this kernel.
    pub fn remove(snap: &mut Snapshot, key: &str) {
        let s = sysctl_mut(snap);
        s.values.remove(key);
        s.absent.push(key.into());
    }

    /// Adds a config-file assignment.
    pub fn configure(snap: &mut Snapshot, key: &str, file: &str, line: u32, value: &str) {
        sysctl_mut(snap)
            .configured
            .entry(key.to_string())
            .or_default()
            .push(ConfigSetting {
                file: file.into(),
                line,
                value: value.into(),
                ignore_failure: false,
                exclude: false,
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::test_support::snapshot_of;
    use crate::probe::Snapshot;
    use test_edit::{configure, remove, set};

    fn run(rule: &Rule, snap: &Snapshot) -> Vec<Finding> {
        rule.run(&Context::unmeasured(snap))
    }

    #[test]
    fn removed_key_fires_only_when_configured_and_absent() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(run(&REMOVED_KEY, &snap).is_empty());
        configure(
            &mut snap,
            "vm.nr_pdflush_threads",
            "/etc/sysctl.conf",
            7,
            "4",
        );
        remove(&mut snap, "vm.nr_pdflush_threads");
        // Absent but not configured: no finding either.
        remove(&mut snap, "vm.zone_reclaim_mode");
        // Present at runtime: an existing key set in a file is not a finding.
        configure(&mut snap, "vm.swappiness", "/etc/sysctl.conf", 8, "60");
        let f = run(&REMOVED_KEY, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].title,
            "vm.nr_pdflush_threads is set in /etc/sysctl.conf:7 but does not exist"
        );
        assert!(f[0].rationale.contains("2.6.32"), "{}", f[0].rationale);
    }

    #[test]
    fn probe_checks_removed_keys_only_where_configured() {
        let old = snapshot_of("oldguide");
        let absent = &old.sysctl.data().expect("sysctl").absent;
        for key in ["vm.nr_pdflush_threads", "fs.xfs.xfsbufd_centisecs"] {
            assert!(absent.iter().any(|a| a == key), "{key} not in {absent:?}");
        }
        let stock = snapshot_of("rk3399-raid5");
        assert!(stock.sysctl.data().expect("sysctl").absent.is_empty());
    }

    /// advise once said 90-nastune.conf while tune wrote 99-zz-nastune.conf.
    #[test]
    fn persist_hint_names_the_file_tune_writes() {
        let mut snap = snapshot_of("rk3399-raid5");
        let ctx = Context::unmeasured(&snap);
        assert_eq!(
            persist_hint(&ctx, "vm.swappiness"),
            "persist in /etc/sysctl.d/99-zz-nastune.conf"
        );
        configure(
            &mut snap,
            "vm.swappiness",
            "/etc/sysctl.d/60-nas.conf",
            2,
            "10",
        );
        let ctx = Context::unmeasured(&snap);
        assert_eq!(
            persist_hint(&ctx, "vm.swappiness"),
            "edit /etc/sysctl.d/60-nas.conf:2"
        );
    }

    /// `64K` was once not flagged: sysctl does not read unit suffixes.
    #[test]
    fn unit_suffix_and_wrong_shape_are_invalid() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(run(&INVALID_VALUE, &snap).is_empty());
        configure(&mut snap, "net.core.rmem_max", "/etc/sysctl.conf", 3, "64K");
        configure(
            &mut snap,
            "net.ipv4.tcp_rmem",
            "/etc/sysctl.conf",
            4,
            "4096 87380",
        );
        let f = run(&INVALID_VALUE, &snap);
        let titles: Vec<&str> = f.iter().map(|f| f.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "net.core.rmem_max = 64K at /etc/sysctl.conf:3 is not a valid value",
                "net.ipv4.tcp_rmem = 4096 87380 at /etc/sysctl.conf:4 is not a valid value"
            ]
        );
        assert!(
            f[0].rationale.contains("unit suffix 'K'"),
            "{}",
            f[0].rationale
        );
        assert!(
            f[1].rationale.contains("expects 3 number(s)"),
            "{}",
            f[1].rationale
        );
        // Invalid lines are not also reported as "not applied".
        assert!(run(&FILE_NOT_APPLIED, &snap).is_empty());
        // Words are fine where the kernel has words.
        configure(
            &mut snap,
            "net.core.default_qdisc",
            "/etc/sysctl.conf",
            5,
            "fq_codel",
        );
        assert_eq!(run(&INVALID_VALUE, &snap).len(), 2);
    }

    /// The runtime value was once attributed to a file that sets another.
    #[test]
    fn file_value_live_value_and_the_disagreement() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(run(&FILE_NOT_APPLIED, &snap).is_empty());
        set(&mut snap, "net.core.rmem_max", "1048576");
        configure(
            &mut snap,
            "net.core.rmem_max",
            "/etc/sysctl.d/sysctl.conf",
            1,
            "2801664",
        );
        set(&mut snap, "net.ipv4.tcp_rmem", "4096 131072 6291456");
        configure(
            &mut snap,
            "net.ipv4.tcp_rmem",
            "/etc/sysctl.conf",
            2,
            "4096\t131072  6291456",
        );
        let f = run(&FILE_NOT_APPLIED, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].title,
            "net.core.rmem_max: file says 2801664, kernel has 1048576 — not applied or overridden"
        );
        let ctx = Context::unmeasured(&snap);
        assert_eq!(
            attribution(&ctx, "net.core.rmem_max").as_deref(),
            Some(
                "/etc/sysctl.d/sysctl.conf:1 sets '2801664', which is not live: not applied or \
                 overridden"
            )
        );
        assert_eq!(
            attribution(&ctx, "net.ipv4.tcp_rmem").as_deref(),
            Some("set at /etc/sysctl.conf:2")
        );
    }

    #[test]
    fn overridden_key_names_both_files() {
        let mut snap = snapshot_of("pogoplug-v4");
        assert!(run(&OVERRIDDEN_KEY, &snap).is_empty());
        configure(&mut snap, "vm.swappiness", "/etc/sysctl.conf", 3, "60");
        let f = run(&OVERRIDDEN_KEY, &snap);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].rationale.contains("/etc/sysctl.d/60-nas.conf:2")
                && f[0].rationale.contains("/etc/sysctl.conf:3"),
            "{}",
            f[0].rationale
        );
    }
}
