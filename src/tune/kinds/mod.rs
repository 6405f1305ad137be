//! Tuning change kinds: one module per kind of [`Change`] (sysctl, sysfs
//! attribute, udev rule, fstab mount option, smb.conf parameter, network device
//! setting, interrupt coalescing, root qdisc, IRQ affinity, RPS/XPS mask,
//! dm-crypt flag, advice), each implementing [`ChangeKind`]: its name,
//! the line a person would type, how `tune plan` reads, validates and applies
//! it (the runtime writes and what persists it), how `tune apply --reload`
//! makes it take effect, and how `tune export` writes it for other tools.
//!
//! [`kind`] is the one place a `Change` is matched to its kind; everything else
//! asks the kind. Apply, verify and rollback work on the journaled writes
//! ([`super::action::Action`]) each kind's plan turns into, so they need no kind.

use super::export::Tuned;
use super::plan::{PlanItem, read_text};
use crate::advise::{Change, Risk};
use crate::root::Root;

mod advice;
mod coalesce;
mod dmcrypt;
mod fstab;
mod irq;
mod netdev;
mod qdisc;
mod queue_cpus;
mod smbconf;
pub mod sysctl;
mod sysfs;
mod udev;

/// One kind of tuning change, seen through a borrowed view of its fields.
pub trait ChangeKind {
    /// Canonical setting name: `sysctl:vm.swappiness`, `fstab:/srv`, …; two
    /// changes with the same name set the same thing.
    fn setting(&self) -> String;

    /// One line, as a person would type it.
    fn describe(&self) -> String;

    /// How risky it is when asked for with `--set` (rules say it themselves).
    fn manual_risk(&self) -> Risk {
        Risk::RuntimeSafe
    }

    /// Reads the current value, validates the new one and fills in the item:
    /// old and new, the runtime writes, what persists it, warnings. The error
    /// says why the item is skipped.
    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String>;

    /// The change with the value apply writes (`new`, validated and
    /// normalised), when that can differ from the value asked for.
    fn as_applied(&self, _new: &str) -> Option<Change> {
        None
    }

    /// What the change gives up in security when it lowers it (SMB signing or
    /// encryption weaker, TCP timestamps off), judged against the current
    /// setting under `root`; `tune try` keeps such a change only when asked.
    fn lowers_security(&self, _root: &Root) -> Option<String> {
        None
    }

    /// The file an in-place edit changes, relative to the root.
    fn edited_file(&self) -> Option<&'static str> {
        None
    }

    /// The edited text of [`ChangeKind::edited_file`]; the error says why the
    /// edit cannot be made.
    fn edit(&self, _text: &str) -> Result<String, String> {
        Err(format!("'{}' is not a file edit", self.setting()))
    }

    /// What makes an applied change take effect now.
    fn reload(&self) -> Option<super::reload::Step> {
        None
    }

    /// Every piece of text an export writes: (what it is, text, is a name).
    /// Names may hold no blank or '='; nothing may hold a newline or '"'.
    fn export_fields(&self) -> Vec<(&'static str, &str, bool)>;

    /// The sysctl.d line, if it is a sysctl.
    fn sysctl_line(&self) -> Option<String> {
        None
    }

    /// The udev rule line, if it sets a device attribute.
    fn udev_line(&self) -> Option<String> {
        None
    }

    /// Adds itself to a TuneD profile; `false` when TuneD cannot express it.
    fn tuned(&self, _profile: &mut Tuned) -> bool {
        false
    }

    /// Appends its Ansible task (named `name`); `false` when there is none.
    fn ansible(&self, name: &str, tasks: &mut String) -> bool {
        match self.udev_line() {
            Some(line) => {
                super::export::udev_task(tasks, name, &line);
                true
            }
            None => false,
        }
    }
}

/// The kind of a change: the one `match` on [`Change`] outside the kind modules.
pub fn kind(c: &Change) -> Box<dyn ChangeKind + '_> {
    match c {
        Change::Sysctl { key, value } => Box::new(sysctl::Sysctl { key, value }),
        Change::SysfsAttribute { path, value } => Box::new(sysfs::Sysfs { path, value }),
        Change::UdevRule {
            subsystem,
            matches,
            attribute,
            value,
        } => Box::new(udev::Udev {
            subsystem,
            matches,
            attribute,
            value,
        }),
        Change::MountOption {
            mount_point,
            add,
            remove,
        } => Box::new(fstab::MountOption {
            mount_point,
            add,
            remove,
        }),
        Change::SmbConf {
            section,
            parameter,
            value,
        } => Box::new(smbconf::SmbConf {
            section,
            parameter,
            value: value.as_deref(),
        }),
        Change::Ethtool {
            interface,
            setting,
            value,
        } if setting == qdisc::SETTING => Box::new(qdisc::Qdisc { interface, value }),
        Change::Ethtool {
            interface,
            setting,
            value,
        } if coalesce::is_coalesce(setting) => Box::new(coalesce::Coalesce(netdev::Netdev {
            interface,
            setting,
            value,
        })),
        Change::Ethtool {
            interface,
            setting,
            value,
        } => Box::new(netdev::Netdev {
            interface,
            setting,
            value,
        }),
        Change::IrqAffinity { irq, cpus } => Box::new(irq::IrqAffinity { irq, cpus }),
        Change::QueueCpus {
            interface,
            queue,
            mask,
        } => Box::new(queue_cpus::QueueCpus {
            interface,
            queue,
            mask,
        }),
        Change::DmCryptFlag { name, flag, on } => Box::new(dmcrypt::DmCryptFlag {
            name,
            flag,
            on: *on,
        }),
        Change::AdviceOnly { action } => Box::new(advice::Advice { action }),
    }
}

/// One line per change, as a person would type it.
pub fn describe(c: &Change) -> String {
    kind(c).describe()
}

/// `c` with the value apply writes (`new` of its plan item).
pub fn as_applied(c: &Change, new: Option<&str>) -> Change {
    new.and_then(|n| kind(c).as_applied(n))
        .unwrap_or_else(|| c.clone())
}

/// Parses what follows `KIND:` in `--set`, given the trimmed value.
type ParseSet = fn(&str, String) -> Option<Change>;

/// The `--set` syntax of each kind: the prefix before the first ':' and the
/// parser of the rest (`None`: not valid for that kind). Qdisc is an ethtool
/// setting there.
const SET_SYNTAX: [(&str, ParseSet); 9] = [
    ("sysctl", sysctl::parse_set),
    ("irq", irq::parse_set),
    ("rps", queue_cpus::parse_rps),
    ("xps", queue_cpus::parse_xps),
    ("sysfs", sysfs::parse_set),
    ("fstab", fstab::parse_set),
    ("smb.conf", smbconf::parse_set),
    ("ethtool", netdev::parse_set),
    ("dmcrypt", dmcrypt::parse_set),
];

/// The change of `--set PREFIX:REST=VALUE`, given `PREFIX:REST` and the trimmed
/// value; `None` when no kind takes it.
pub fn parse_set(setting: &str, value: String) -> Option<Change> {
    let (prefix, rest) = setting.split_once(':')?;
    let (_, parse) = SET_SYNTAX.iter().find(|(p, _)| *p == prefix)?;
    parse(rest, value)
}

/// Plans an in-place edit on its own (the edits of one file are combined when
/// the plan's files are built): old and new are the lines that change.
fn plan_edit(root: &Root, item: &mut PlanItem, k: &dyn ChangeKind) -> Result<(), String> {
    let edit = super::edit_file::Edit::of(&item.change)
        .ok_or_else(|| format!("'{}' is not a file edit", item.setting))?;
    let file = edit.file();
    let text = read_text(root, file)?.ok_or_else(|| format!("'/{file}' does not exist"))?;
    let new = k.edit(&text)?;
    let (old_lines, new_lines) = changed_lines(&text, &new);
    if old_lines.is_empty() && new_lines.is_empty() {
        item.in_place = true;
        return Err("already set that way".into());
    }
    item.old = Some(or_absent(old_lines));
    item.new = Some(or_absent(new_lines));
    item.persisted_in = Some(format!("/{file}"));
    item.persist = super::plan::Persist::Edit(edit);
    Ok(())
}

fn or_absent(lines: String) -> String {
    if lines.is_empty() {
        "(no line)".into()
    } else {
        lines
    }
}

/// The lines between the common head and the common tail of two texts, each
/// side joined with " / ". The lines are walked, not collected: a 4 MiB file's
/// 400 000 line slices took 6 MiB per side.
fn changed_lines(a: &str, b: &str) -> (String, String) {
    let head = a.lines().zip(b.lines()).take_while(|(x, y)| x == y).count();
    let (na, nb) = (a.lines().count() - head, b.lines().count() - head);
    let tail = a
        .lines()
        .rev()
        .zip(b.lines().rev())
        .take(na.min(nb))
        .take_while(|(x, y)| x == y)
        .count();
    let join = |t: &str, n: usize| {
        t.lines()
            .skip(head)
            .take(n - tail)
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" / ")
    };
    (join(a, na), join(b, nb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_are_between_the_common_head_and_tail() {
        let a = "a\nb\n  c\nd\n";
        assert_eq!(changed_lines(a, "a\nb\n  C\nd\n"), (s("c"), s("C")));
        assert_eq!(changed_lines(a, "a\nb\nd\n"), (s("c"), s("")));
        assert_eq!(
            changed_lines(a, "a\nb\n  c\nx\ny\nd\n"),
            (s(""), s("x / y"))
        );
        assert_eq!(changed_lines(a, a), (s(""), s("")));
        // Head and tail do not overlap when a line repeats.
        assert_eq!(changed_lines("x\nx\n", "x\nx\nx\n"), (s(""), s("x")));
    }

    fn s(x: &str) -> String {
        x.to_string()
    }

    fn eth(setting: &str, value: &str) -> Change {
        Change::Ethtool {
            interface: s("eth0"),
            setting: s(setting),
            value: s(value),
        }
    }

    /// A setting name followed by `=VALUE` is the `--set` that makes the same
    /// change, for every kind `--set` can make.
    #[test]
    fn setting_names_are_set_syntax() {
        for (c, value) in [
            (
                Change::Sysctl {
                    key: s("vm.swappiness"),
                    value: s("10"),
                },
                "10",
            ),
            (
                Change::SysfsAttribute {
                    path: s("block/sda/queue/scheduler"),
                    value: s("bfq"),
                },
                "bfq",
            ),
            (
                Change::MountOption {
                    mount_point: s("/srv"),
                    add: vec![s("noatime")],
                    remove: vec![s("relatime")],
                },
                "noatime,-relatime",
            ),
            (
                Change::SmbConf {
                    section: s("global"),
                    parameter: s("use sendfile"),
                    value: Some(s("yes")),
                },
                "yes",
            ),
            (eth("rx-gro", "off"), "off"),
            (eth("qdisc", "fq_codel"), "fq_codel"),
        ] {
            let setting = kind(&c).setting();
            assert_eq!(parse_set(&setting, s(value)), Some(c), "{setting}");
        }
        assert_eq!(parse_set("fstab:srv", s("noatime")), None);
        assert_eq!(parse_set("tc:eth0:qdisc", s("cake")), None);
    }

    /// Only file edits need a reload, only runtime values can be tried, and
    /// only sysctl and sysfs values are normalised by the plan.
    #[test]
    fn kinds_differ_where_they_should() {
        let mount = Change::MountOption {
            mount_point: s("/srv"),
            add: vec![s("noatime")],
            remove: vec![],
        };
        assert_eq!(
            kind(&mount).reload(),
            Some(crate::tune::reload::Step::Remount(s("/srv")))
        );
        assert_eq!(kind(&mount).edited_file(), Some("etc/fstab"));
        let sysctl = Change::Sysctl {
            key: s("net.ipv4.tcp_rmem"),
            value: s("4096  131072 6291456"),
        };
        assert_eq!(kind(&sysctl).reload(), None);
        assert_eq!(
            as_applied(&sysctl, Some("4096 131072 6291456")),
            Change::Sysctl {
                key: s("net.ipv4.tcp_rmem"),
                value: s("4096 131072 6291456"),
            }
        );
        assert_eq!(as_applied(&mount, Some("(no line)")), mount);
        let advice = Change::AdviceOnly {
            action: s("add RAM"),
        };
        // The device kinds parse to the setting they name.
        for set in [
            "irq:eth0=0",
            "rps:eth0:rx-0=1",
            "xps:eth0:tx-0=1",
            "dmcrypt:data:no_read_workqueue=on",
            "ethtool:eth0:rx-usecs=50",
        ] {
            let (setting, value) = set.split_once('=').unwrap();
            let c = parse_set(setting, s(value)).unwrap();
            assert_eq!(kind(&c).setting(), setting, "{set}");
        }
        assert!(kind(&advice).edit("x").is_err());
    }

    /// mtu is a device attribute udev can set; a qdisc is not, and ethtool
    /// cannot set one: it is shown as the tc command (a plan once said to
    /// persist a qdisc as an ethtool line, which does nothing).
    #[test]
    fn qdisc_is_its_own_kind() {
        assert!(kind(&eth("mtu", "9000")).udev_line().is_some());
        assert_eq!(kind(&eth("qdisc", "fq_codel")).udev_line(), None);
        assert_eq!(
            describe(&eth("qdisc", "fq_codel")),
            "tc qdisc replace dev eth0 root fq_codel"
        );
    }
}
