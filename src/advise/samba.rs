//! Samba rules: SMB1, parameters from the SMB1 era, socket buffers that disable
//! autotuning, aio switched off or thresholded, oplocks and leases switched off,
//! and settings that matter on small RAM. Each rule is a row of the Samba part of
//! the tuning fact check (smb.conf(5) of Samba 4.x).

use super::{Change, Context, Finding, Risk, Rule, RuleInfo, Severity};
use crate::probe::smb::SmbParam;
use crate::probe::smb::params::parse_bool;

pub static RULES: &[&Rule] = &[
    &SMB1_ENABLED,
    &OBSOLETE_PARAMS,
    &SOCKET_BUFFERS,
    &AIO_THRESHOLD,
    &OPLOCKS_OFF,
    &STRICT_LOCKING,
    &MIN_RECEIVEFILE,
    &USE_SENDFILE,
    &DEADTIME_LOW_RAM,
    &MAX_CONNECTIONS,
];

const SMB_CONF_REF: &str = "smb.conf(5), Samba 4.17";
const MIB: u64 = 1024 * 1024;
/// At or below this RAM, idle smbd processes are worth reaping.
const LOW_RAM_BYTES: u64 = 512 * MIB;
/// Samba's default deadtime (minutes): one week.
const DEADTIME_DEFAULT_MIN: u64 = 10080;
/// What we recommend on small boxes: idle sessions go after a quarter hour.
const DEADTIME_RECOMMENDED_MIN: u64 = 15;
/// Protocol names that mean SMB1 (or older).
const SMB1_PROTOCOLS: &[&str] = &["CORE", "COREPLUS", "LANMAN1", "LANMAN2", "NT1"];
/// SMB1-only parameters the manual says to leave alone.
const OBSOLETE: &[&str] = &["read raw", "write raw", "max xmit"];

fn global<'a>(ctx: &'a Context) -> &'a [SmbParam] {
    ctx.snapshot
        .file_services
        .data()
        .and_then(|f| f.samba.as_ref())
        .map_or(&[], |s| s.global.as_slice())
}

fn param<'a>(ctx: &'a Context, name: &str) -> Option<&'a SmbParam> {
    global(ctx).iter().find(|p| p.name == name)
}

fn at(p: &SmbParam) -> String {
    format!("{}:{}", p.file, p.line)
}

/// A finding about one `[global]` parameter, with evidence and setting filled in.
fn about(info: &RuleInfo, p: &SmbParam, title: String, rationale: String) -> Finding {
    Finding::of(info, title, rationale)
        .evidence(format!("{} at {}", p.name, at(p)), &p.value)
        .setting(format!("smb.conf:[global]:{}", p.name))
}

fn remove(section: &str, name: &str) -> Change {
    Change::SmbConf {
        section: section.into(),
        parameter: name.into(),
        value: None,
    }
}

static SMB1_ENABLED: Rule = Rule {
    info: RuleInfo {
        id: "smb1-enabled",
        area: "samba",
        title: "SMB1 is enabled",
        severity: Severity::Critical,
        risk: Risk::AdviceOnly,
        checks: "server min protocol is NT1 or older, or server max protocol is NT1 or older: \
                 SMB1 has no encryption, weak signing and was the vector of WannaCry.",
        references: &[SMB_CONF_REF, "https://wiki.samba.org/index.php/SMB1"],
    },
    evaluate: |info, ctx| {
        let mut out = Vec::new();
        for name in ["server min protocol", "server max protocol"] {
            let Some(p) = param(ctx, name) else { continue };
            if !SMB1_PROTOCOLS.contains(&p.value.to_ascii_uppercase().as_str()) {
                continue;
            }
            let fix = if name == "server min protocol" {
                remove("global", name)
            } else {
                Change::SmbConf {
                    section: "global".into(),
                    parameter: name.into(),
                    value: Some("SMB3".into()),
                }
            };
            out.push(
                about(
                    info,
                    p,
                    format!("{name} = {} allows SMB1", p.value),
                    "SMB1 lacks encryption and pre-authentication integrity and is the \
                     protocol WannaCry spread through; Samba disables it by default since \
                     4.11 (server min protocol = SMB2_02). Every client of the last decade \
                     speaks SMB2 or later. Re-enable it only for a device that cannot be \
                     replaced, and then on a separate instance."
                        .into(),
                )
                .change(fix),
            );
        }
        out
    },
};

static OBSOLETE_PARAMS: Rule = Rule {
    info: RuleInfo {
        id: "smb-obsolete-parameter",
        area: "samba",
        title: "SMB1-era parameter in smb.conf",
        severity: Severity::Notice,
        risk: Risk::NeedsRestart,
        checks: "read raw, write raw or max xmit is set. They only affect SMB1 ('very, very old \
                 clients'; 'never need to change') and do nothing for SMB2/3.",
        references: &[SMB_CONF_REF],
    },
    evaluate: |info, ctx| {
        global(ctx)
            .iter()
            .filter(|p| OBSOLETE.contains(&p.name.as_str()))
            .map(|p| {
                about(
                    info,
                    p,
                    format!("{} = {} is an SMB1-only setting", p.name, p.value),
                    format!(
                        "'{}' applies only to SMB1 raw/ReadX transfers; SMB2 and SMB3 \
                         negotiate their own sizes (up to 8 MiB per request). Remove it.",
                        p.name
                    ),
                )
                .change(remove("global", &p.name))
            })
            .collect()
    },
};

static SOCKET_BUFFERS: Rule = Rule {
    info: RuleInfo {
        id: "smb-socket-buffer-sizes",
        area: "samba",
        title: "socket options fix buffer sizes and disable TCP autotuning",
        severity: Severity::Warning,
        risk: Risk::NeedsRestart,
        checks: "socket options sets SO_RCVBUF or SO_SNDBUF. A fixed buffer turns off the \
                 kernel's receive/send autotuning for every smbd connection.",
        references: &[
            SMB_CONF_REF,
            "https://docs.kernel.org/networking/ip-sysctl.html (tcp_moderate_rcvbuf)",
        ],
    },
    evaluate: |info, ctx| {
        let Some(p) = param(ctx, "socket options") else {
            return Vec::new();
        };
        let sizes: Vec<(&str, u64)> = p
            .value
            .split_whitespace()
            .filter_map(|o| {
                let (k, v) = o.split_once('=')?;
                let k = ["SO_RCVBUF", "SO_SNDBUF"]
                    .into_iter()
                    .find(|x| x.eq_ignore_ascii_case(k))?;
                Some((k, v.parse().ok()?))
            })
            .collect();
        if sizes.is_empty() {
            return Vec::new();
        }
        let rest: Vec<&str> = p
            .value
            .split_whitespace()
            .filter(|o| !o.to_ascii_uppercase().starts_with("SO_RCVBUF"))
            .filter(|o| !o.to_ascii_uppercase().starts_with("SO_SNDBUF"))
            .filter(|o| !o.eq_ignore_ascii_case("TCP_NODELAY"))
            .collect();
        let fixed = sizes
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let smallest = sizes.iter().map(|(_, v)| *v).min().unwrap_or(0);
        // 1 Gbit/s × 1 ms LAN round trip = 125,000 bytes in flight.
        let bdp: u64 = 125_000;
        let change = if rest.is_empty() {
            remove("global", "socket options")
        } else {
            Change::SmbConf {
                section: "global".into(),
                parameter: "socket options".into(),
                value: Some(rest.join(" ")),
            }
        };
        vec![
            about(
                info,
                p,
                format!("socket options sets {fixed}"),
                format!(
                    "Setting SO_RCVBUF/SO_SNDBUF pins the buffer (the kernel doubles it for \
                     bookkeeping) and switches off autotuning, which otherwise grows it up to \
                     tcp_rmem[2]/tcp_wmem[2] (MiB range). A gigabit LAN with 1 ms RTT needs \
                     1 Gbit/s × 1 ms = {bdp} B in flight; {smallest} B {} that. TCP_NODELAY \
                     is Samba's default already. Remove the buffer sizes.",
                    if smallest < bdp {
                        "caps the window below"
                    } else {
                        "may cover"
                    }
                ),
            )
            .change(change),
        ]
    },
};

static AIO_THRESHOLD: Rule = Rule {
    info: RuleInfo {
        id: "smb-aio-size-threshold",
        area: "samba",
        title: "aio read/write size switches async I/O off (0) or sets a byte threshold",
        severity: Severity::Notice,
        risk: Risk::NeedsRestart,
        checks: "aio read size or aio write size is not 1. Since Samba 4.8 the default is 1 \
                 (every request async); 0 forces synchronous I/O, and a byte threshold makes \
                 every smaller request synchronous.",
        references: &[SMB_CONF_REF],
    },
    evaluate: |info, ctx| {
        global(ctx)
            .iter()
            .filter(|p| p.name == "aio read size" || p.name == "aio write size")
            .filter(|p| p.value.trim() != "1")
            .map(|p| {
                let why = if p.value.trim() == "0" {
                    "0 switches asynchronous I/O off: every request is served synchronously, \
                     so the smbd process waits on the disk and cannot read the next request \
                     from the client meanwhile (a slow USB disk stalls the whole session)."
                        .to_string()
                } else {
                    format!(
                        "Requests smaller than {} bytes are served synchronously, blocking the \
                         smbd process on the disk; old guides used thresholds because aio \
                         used to be costly.",
                        p.value
                    )
                };
                about(
                    info,
                    p,
                    format!("{} = {}", p.name, p.value),
                    format!(
                        "{why} Samba's threadpool aio is the default (1) now; remove the line."
                    ),
                )
                .change(remove("global", &p.name))
            })
            .collect()
    },
};

/// Global switches that turn off oplocks or leases, with the default each line hides.
const OPLOCK_SWITCHES: &[(&str, bool, &str)] = &[
    (
        "oplocks",
        false,
        "Without oplocks every client must go to the server for each read and write instead \
         of caching the file; the manual puts the gain of oplocks near 30 %. Disable them per \
         share (or with 'veto oplock files') only where NFS or local processes write the same \
         files.",
    ),
    (
        "smb2 leases",
        false,
        "Leases are the SMB2/3 form of oplocks (directory and handle caching too); without \
         them SMB2/3 clients fall back to plain oplocks and re-open files more often.",
    ),
    (
        "kernel oplocks",
        true,
        "Kernel oplocks (for NFS or local writers) make Samba refuse SMB2 leases, which need \
         kernel oplocks = no; clients lose lease caching on every share.",
    ),
];

static OPLOCKS_OFF: Rule = Rule {
    info: RuleInfo {
        id: "smb-oplocks-off",
        area: "samba",
        title: "oplocks or SMB2 leases switched off for every share",
        severity: Severity::Notice,
        risk: Risk::NeedsRestart,
        checks: "[global] sets oplocks = no, smb2 leases = no, or kernel oplocks = yes (which \
                 disables leases). The defaults (oplocks yes, smb2 leases yes, kernel oplocks \
                 no) let clients cache; per-share exceptions are not flagged.",
        references: &[SMB_CONF_REF],
    },
    evaluate: |info, ctx| {
        OPLOCK_SWITCHES
            .iter()
            .filter_map(|(name, bad, why)| {
                let p = param(ctx, name)?;
                (parse_bool(&p.value)? == *bad).then(|| {
                    about(info, p, format!("{} = {} in [global]", p.name, p.value), {
                        format!("{why} Remove the line to get the default back.")
                    })
                    .change(remove("global", name))
                })
            })
            .collect()
    },
};

/// Rules that only flag a parameter's presence with a fixed explanation.
fn flag_param(
    info: &RuleInfo,
    ctx: &Context,
    name: &str,
    fires: fn(&str) -> bool,
    rationale: &str,
) -> Vec<Finding> {
    param(ctx, name)
        .filter(|p| fires(&p.value))
        .map(|p| {
            about(
                info,
                p,
                format!("{} = {}", p.name, p.value),
                rationale.into(),
            )
            .change(remove("global", name))
        })
        .into_iter()
        .collect()
}

static STRICT_LOCKING: Rule = Rule {
    info: RuleInfo {
        id: "smb-strict-locking-no",
        area: "samba",
        title: "strict locking = no is moot",
        severity: Severity::Info,
        risk: Risk::NeedsRestart,
        checks: "strict locking is set to no. The default Auto checks locks only on \
                 non-oplocked files; the manual calls Auto or no acceptable.",
        references: &[SMB_CONF_REF],
    },
    evaluate: |info, ctx| {
        flag_param(
            info,
            ctx,
            "strict locking",
            |v| parse_bool(v) == Some(false),
            "Old guides set 'no' when the default was 'yes'; the default is now Auto, which \
             gives the same speed on oplocked files. Remove the line and keep the default.",
        )
    },
};

static MIN_RECEIVEFILE: Rule = Rule {
    info: RuleInfo {
        id: "smb-min-receivefile-size",
        area: "samba",
        title: "min receivefile size is niche",
        severity: Severity::Info,
        risk: Risk::NeedsRestart,
        checks: "min receivefile size is non-zero. It applies to SMB1 SMBwriteX only, not to \
                 signed connections, with a 128 KiB maximum.",
        references: &[SMB_CONF_REF],
    },
    evaluate: |info, ctx| {
        flag_param(
            info,
            ctx,
            "min receivefile size",
            |v| v != "0",
            "The manual describes it for SMBwriteX (SMB1) only; it does nothing for signed \
             connections, and every SMB2/3 connection with signing required is one. Leave it \
             at the default 0.",
        )
    },
};

static USE_SENDFILE: Rule = Rule {
    info: RuleInfo {
        id: "smb-use-sendfile",
        area: "samba",
        title: "use sendfile: keep only if an A/B test shows a gain",
        severity: Severity::Info,
        risk: Risk::NeedsRestart,
        checks: "use sendfile = yes. The default is no; its gain depends on the NIC, the \
                 filesystem and signing, so it is worth a measured A/B test, not a rule.",
        references: &[SMB_CONF_REF],
    },
    evaluate: |info, ctx| {
        param(ctx, "use sendfile")
            .filter(|p| parse_bool(&p.value) == Some(true))
            .map(|p| {
                about(
                    info,
                    p,
                    "use sendfile = yes".into(),
                    "sendfile skips a copy for reads of exclusively oplocked files, but not \
                     on signed or encrypted connections, and some NIC drivers handle it \
                     badly. Measure smbd CPU and throughput both ways ('nastune bench') and \
                     keep the faster."
                        .into(),
                )
                .change(Change::AdviceOnly {
                    action: "A/B test use sendfile = yes/no with a large file copy".into(),
                })
            })
            .into_iter()
            .collect()
    },
};

static DEADTIME_LOW_RAM: Rule = Rule {
    info: RuleInfo {
        id: "smb-deadtime-low-ram",
        area: "samba",
        title: "Idle smbd processes linger for a week on a small box",
        severity: Severity::Notice,
        risk: Risk::NeedsRestart,
        checks: "RAM ≤ 512 MiB and deadtime is unset (10080 min) or above 15 min: each \
                 disconnected client keeps its own smbd process in memory.",
        references: &[SMB_CONF_REF],
    },
    evaluate: |info, ctx| {
        let Some(ram) = ctx.snapshot.memory.data().map(|m| m.total_bytes) else {
            return Vec::new();
        };
        if ram > LOW_RAM_BYTES
            || ctx
                .snapshot
                .file_services
                .data()
                .is_none_or(|f| f.samba.is_none())
        {
            return Vec::new();
        }
        let p = param(ctx, "deadtime");
        let minutes = match p {
            Some(p) => match p.value.parse::<u64>() {
                Ok(m) => m,
                Err(_) => return Vec::new(),
            },
            None => DEADTIME_DEFAULT_MIN,
        };
        // 0 means never; treat it like the default's week.
        let effective = if minutes == 0 { u64::MAX } else { minutes };
        if effective <= DEADTIME_RECOMMENDED_MIN {
            return Vec::new();
        }
        let shown = if minutes == 0 {
            "0 (never)".to_string()
        } else {
            format!("{minutes} min ({:.1} days)", minutes as f64 / 1440.0)
        };
        let mut f = Finding::of(
            info,
            format!("deadtime is {shown} on a {} MiB box", ram / MIB),
            format!(
                "Each client gets its own smbd process; one whose laptop slept or left keeps \
                 it until deadtime ends: {shown}. With {} MiB of RAM every such process \
                 competes with the page cache. deadtime = {DEADTIME_RECOMMENDED_MIN} drops \
                 sessions that have no open files after a quarter hour (clients reconnect \
                 transparently); verify with smbstatus.",
                ram / MIB
            ),
        )
        .evidence("memory total MiB", ram / MIB)
        .evidence("deadtime", &shown)
        .setting("smb.conf:[global]:deadtime")
        .change(Change::SmbConf {
            section: "global".into(),
            parameter: "deadtime".into(),
            value: Some(DEADTIME_RECOMMENDED_MIN.to_string()),
        });
        if let Some(p) = p {
            f = f.evidence("set at", at(p));
        }
        vec![f]
    },
};

static MAX_CONNECTIONS: Rule = Rule {
    info: RuleInfo {
        id: "smb-max-connections",
        area: "samba",
        title: "max connections is a refusal limit, not a performance knob",
        severity: Severity::Info,
        risk: Risk::NeedsRestart,
        checks: "A share sets max connections > 0: clients beyond it are refused.",
        references: &[SMB_CONF_REF],
    },
    evaluate: |info, ctx| {
        let Some(samba) = ctx
            .snapshot
            .file_services
            .data()
            .and_then(|f| f.samba.as_ref())
        else {
            return Vec::new();
        };
        let shares = samba
            .shares
            .iter()
            .flat_map(|s| s.params.iter().map(move |p| (s.name.as_str(), p)));
        let globals = samba.global.iter().map(|p| ("global", p));
        globals
            .chain(shares)
            .filter(|(_, p)| p.name == "max connections" && p.value != "0")
            .map(|(section, p)| {
                Finding::of(
                    info,
                    format!("[{section}] max connections = {}", p.value),
                    format!(
                        "Connection {} and later to [{section}] are refused with an error; it \
                         saves no resources for the others. To bound memory on a tiny board, \
                         size a global 'max smbd processes' from free RAM ÷ RSS per smbd \
                         instead.",
                        p.value.parse::<u64>().map_or(0, |v| v + 1)
                    ),
                )
                .evidence(format!("max connections at {}", at(p)), &p.value)
                .setting(format!("smb.conf:[{section}]:max connections"))
                .change(remove(section, "max connections"))
            })
            .collect()
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advise::test_support::{run_rule as run, snapshot_of};

    fn ids_on(boxname: &str) -> Vec<String> {
        let snap = snapshot_of(boxname);
        RULES
            .iter()
            .flat_map(|r| run(r, &snap))
            .map(|f| f.rule_id)
            .collect()
    }

    #[test]
    fn oldguide_smb_conf_flagged_with_replacements() {
        let snap = snapshot_of("oldguide");
        let f = run(&SMB1_ENABLED, &snap);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Critical);
        assert_eq!(
            f[0].recommendation[0],
            remove("global", "server min protocol")
        );
        let names: Vec<_> = run(&OBSOLETE_PARAMS, &snap)
            .iter()
            .map(|f| f.settings[0].clone())
            .collect();
        assert_eq!(
            names,
            [
                "smb.conf:[global]:read raw",
                "smb.conf:[global]:write raw",
                "smb.conf:[global]:max xmit"
            ]
        );
        let f = run(&SOCKET_BUFFERS, &snap);
        assert!(
            f[0].rationale.contains("131072 B may cover"),
            "{}",
            f[0].rationale
        );
        assert_eq!(
            f[0].recommendation[0],
            Change::SmbConf {
                section: "global".into(),
                parameter: "socket options".into(),
                value: Some("IPTOS_LOWDELAY".into())
            }
        );
        assert_eq!(run(&AIO_THRESHOLD, &snap).len(), 2);
        for r in [
            &STRICT_LOCKING,
            &MIN_RECEIVEFILE,
            &USE_SENDFILE,
            &MAX_CONNECTIONS,
        ] {
            assert_eq!(run(r, &snap).len(), 1, "{}", r.info.id);
        }
        assert!(
            run(&DEADTIME_LOW_RAM, &snap).is_empty(),
            "1 GiB is not low RAM"
        );
    }

    #[test]
    fn pogoplug_old_samba_and_low_ram() {
        let ids = ids_on("pogoplug-v4");
        assert_eq!(
            ids,
            [
                "smb-obsolete-parameter",
                "smb-obsolete-parameter",
                "smb-obsolete-parameter",
                "smb-socket-buffer-sizes",
                "smb-use-sendfile",
                "smb-deadtime-low-ram"
            ]
        );
        let snap = snapshot_of("pogoplug-v4");
        let f = run(&SOCKET_BUFFERS, &snap);
        assert!(f[0].rationale.contains("8192 B caps the window below"));
        assert_eq!(f[0].recommendation[0], remove("global", "socket options"));
        let f = run(&DEADTIME_LOW_RAM, &snap);
        assert!(
            f[0].rationale.contains("10080 min (7.0 days)"),
            "{}",
            f[0].rationale
        );
    }

    #[test]
    fn clean_configs_stay_quiet() {
        assert!(
            ids_on("rk3399-raid5").is_empty(),
            "{:?}",
            ids_on("rk3399-raid5")
        );
        assert!(ids_on("rpi2-luks").is_empty(), "{:?}", ids_on("rpi2-luks"));
        assert!(ids_on("buildhost").is_empty());
    }

    /// Adds or replaces a `[global]` parameter, as the probe would report it.
    fn set_global(snap: &mut crate::probe::Snapshot, name: &str, value: &str) {
        let crate::probe::Outcome::Ok { data } = &mut snap.file_services else {
            panic!("fixture has no file services");
        };
        let s = data.samba.as_mut().expect("fixture has Samba");
        s.global.retain(|p| p.name != name);
        let mut p = s.global[0].clone();
        p.name = name.into();
        p.value = value.into();
        s.global.push(p);
    }

    /// 0 forces synchronous I/O and was once not flagged.
    #[test]
    fn aio_size_zero_is_flagged_as_synchronous() {
        let mut snap = snapshot_of("rk3399-raid5");
        assert!(run(&AIO_THRESHOLD, &snap).is_empty(), "1 is the default");
        set_global(&mut snap, "aio read size", "0");
        set_global(&mut snap, "aio write size", "0");
        let f = run(&AIO_THRESHOLD, &snap);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(f[0].title, "aio read size = 0");
        assert!(
            f[0].rationale.contains("synchronously"),
            "{}",
            f[0].rationale
        );
        assert_eq!(f[1].recommendation[0], remove("global", "aio write size"));
    }

    /// Every boolean spelling Samba accepts counts, not only yes/no.
    #[test]
    fn booleans_in_any_spelling() {
        let mut snap = snapshot_of("rk3399-raid5");
        set_global(&mut snap, "strict locking", "False");
        set_global(&mut snap, "use sendfile", "true");
        assert_eq!(run(&STRICT_LOCKING, &snap).len(), 1);
        assert_eq!(run(&USE_SENDFILE, &snap).len(), 1);
        set_global(&mut snap, "strict locking", "auto");
        set_global(&mut snap, "use sendfile", "off");
        assert!(run(&STRICT_LOCKING, &snap).is_empty());
        assert!(run(&USE_SENDFILE, &snap).is_empty());
    }

    #[test]
    fn oplocks_and_leases_off_globally() {
        let mut snap = snapshot_of("rk3399-raid5");
        // The fixture says kernel oplocks = no: the default, no finding.
        assert!(run(&OPLOCKS_OFF, &snap).is_empty());
        set_global(&mut snap, "oplocks", "no");
        set_global(&mut snap, "smb2 leases", "0");
        set_global(&mut snap, "kernel oplocks", "yes");
        let f = run(&OPLOCKS_OFF, &snap);
        let titles: Vec<&str> = f.iter().map(|f| f.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "oplocks = no in [global]",
                "smb2 leases = 0 in [global]",
                "kernel oplocks = yes in [global]"
            ]
        );
        assert_eq!(f[2].recommendation[0], remove("global", "kernel oplocks"));
        set_global(&mut snap, "oplocks", "yes");
        set_global(&mut snap, "smb2 leases", "yes");
        set_global(&mut snap, "kernel oplocks", "no");
        assert!(run(&OPLOCKS_OFF, &snap).is_empty());
    }

    #[test]
    fn smb1_via_max_protocol() {
        let mut snap = snapshot_of("rk3399-raid5");
        if let crate::probe::Outcome::Ok { data } = &mut snap.file_services
            && let Some(s) = data.samba.as_mut()
        {
            let mut p = s.global[0].clone();
            p.name = "server max protocol".into();
            p.value = "NT1".into();
            s.global.push(p);
        }
        let f = run(&SMB1_ENABLED, &snap);
        assert_eq!(f.len(), 1);
        assert!(matches!(
            &f[0].recommendation[0],
            Change::SmbConf { value: Some(v), .. } if v == "SMB3"
        ));
    }
}
