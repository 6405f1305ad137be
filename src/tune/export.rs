//! Export of changes to files other tools apply at boot or across a fleet: a
//! sysctl.d file, a udev rules file, a TuneD profile, or Ansible tasks. A change
//! a format cannot express is listed in a comment at the top of the file, with
//! the command a person would type for it, never dropped silently.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::kinds::{ChangeKind, kind};
use crate::advise::Change;

/// sysctl.d files apply in name order and the last one wins; `99-sysctl.conf`
/// (Debian's link to /etc/sysctl.conf) sorts before this name.
pub const SYSCTL_FILE: &str = super::sysctl_d::OWNED_FILE;
pub const UDEV_FILE: &str = super::udev_rules::OWNED_FILE;
/// A TuneD profile is a directory; `tuned-adm profile nastune` activates it.
pub const TUNED_FILE: &str = "nastune/tuned.conf";
pub const ANSIBLE_FILE: &str = "nastune-tasks.yml";
pub const SMB_CONF: &str = "/etc/samba/smb.conf";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// A sysctl.d drop-in (sysctl settings only)
    Sysctl,
    /// udev rules that set block and network device attributes at add/change
    Udev,
    /// A TuneD profile directory: [sysctl], [sysfs], [disk], [net]
    Tuned,
    /// Ansible tasks: ansible.posix.sysctl, community.general.ini_file, udev lines
    Ansible,
}

/// One file to write, relative to wherever the user wants it (`/` to install).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportFile {
    pub path: PathBuf,
    pub contents: String,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExportError {
    #[error(
        "cannot export {what} '{text}': names and values must be one line without quotes or '=' in names"
    )]
    Unwritable { what: &'static str, text: String },
}

/// Renders `changes` as the files of `format`, in the order given. Changes the
/// format cannot express become comments that say so.
pub fn render(changes: &[Change], format: ExportFormat) -> Result<Vec<ExportFile>, ExportError> {
    for c in changes {
        check(c)?;
    }
    let (path, contents) = match format {
        ExportFormat::Sysctl => (
            SYSCTL_FILE,
            line_file(changes, "sysctl.d settings", "sysctl.d", |k| {
                k.sysctl_line()
            }),
        ),
        ExportFormat::Udev => (
            UDEV_FILE,
            line_file(changes, "udev rules", "udev rules", |k| k.udev_line()),
        ),
        ExportFormat::Tuned => (TUNED_FILE, tuned(changes)),
        ExportFormat::Ansible => (ANSIBLE_FILE, ansible(changes)),
    };
    Ok(vec![ExportFile {
        path: PathBuf::from(path),
        contents,
    }])
}

/// Refuses text that would break out of its line or field in any format.
fn check(change: &Change) -> Result<(), ExportError> {
    let bad_value = |t: &str| t.contains(['\n', '\r', '"']);
    let bad_name = |t: &str| bad_value(t) || t.contains(['=', ' ', '\t']) || t.is_empty();
    let k = kind(change);
    match k
        .export_fields()
        .into_iter()
        .find(|&(_, t, name)| if name { bad_name(t) } else { bad_value(t) })
    {
        Some((what, text, _)) => Err(ExportError::Unwritable {
            what,
            text: text.to_string(),
        }),
        None => Ok(()),
    }
}

/// The comment block for changes a format leaves out; `prefix` is `#`.
fn not_expressed(out: &mut String, format: &str, left: &[&Change]) {
    if left.is_empty() {
        return;
    }
    let _ = writeln!(out, "# Not expressible as {format}; apply these by hand:");
    for c in left {
        let _ = writeln!(out, "#   {}", super::kinds::describe(c));
    }
}

fn header(out: &mut String, what: &str) {
    let _ = writeln!(
        out,
        "# {what} written by nastune {}; 'nastune advise' explains each setting.",
        env!("CARGO_PKG_VERSION")
    );
}

/// A file of one line per change (sysctl.d, udev rules): `line` gives a
/// change's line, `None` when the format cannot express it.
fn line_file(
    changes: &[Change],
    what: &str,
    format: &str,
    line: fn(&dyn ChangeKind) -> Option<String>,
) -> String {
    let mut lines = Vec::new();
    let mut left = Vec::new();
    for c in changes {
        match line(&*kind(c)) {
            Some(l) => lines.push(l),
            None => left.push(c),
        }
    }
    let mut out = String::new();
    header(&mut out, what);
    not_expressed(&mut out, format, &left);
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
    out
}

/// TuneD's section for one network interface: ethtool-style option strings.
#[derive(Default)]
pub struct NetSection {
    pub ring: Vec<String>,
    /// `ethtool -C` pairs (`adaptive-rx off`) of the plugin's `coalesce=`.
    pub coalesce: Vec<String>,
    pub features: Vec<String>,
    pub mtu: Option<String>,
    pub txqueuelen: Option<String>,
}

/// A TuneD profile as change kinds fill it in, before it is written.
#[derive(Default)]
pub struct Tuned {
    /// `key=value` lines of the [sysctl] plugin.
    pub sysctl: Vec<String>,
    /// `/sys/…=value` lines of the [sysfs] plugin.
    pub sysfs: Vec<String>,
    /// (device pattern) -> [(option, value)] for the disk plugin.
    pub disk: BTreeMap<String, Vec<(String, String)>>,
    /// Interface -> its net plugin section.
    pub net: BTreeMap<String, NetSection>,
}

fn tuned(changes: &[Change]) -> String {
    let mut profile = Tuned::default();
    let mut left = Vec::new();
    for c in changes {
        if !kind(c).tuned(&mut profile) {
            left.push(c);
        }
    }
    let Tuned {
        sysctl,
        sysfs,
        disk,
        net,
    } = profile;
    let mut out = String::new();
    header(&mut out, "TuneD profile");
    not_expressed(&mut out, "a TuneD profile", &left);
    let _ = writeln!(
        out,
        "\n[main]\nsummary=Settings measured and chosen by nastune"
    );
    if !sysctl.is_empty() {
        let _ = writeln!(out, "\n[sysctl]\n{}", sysctl.join("\n"));
    }
    if !sysfs.is_empty() {
        let _ = writeln!(out, "\n[sysfs]\n{}", sysfs.join("\n"));
    }
    for (dev, options) in &disk {
        let _ = writeln!(
            out,
            "\n[disk_{}]\ntype=disk\ndevices={dev}",
            section_name(dev)
        );
        for (o, v) in options {
            let _ = writeln!(out, "{o}={v}");
        }
    }
    for (dev, s) in &net {
        let _ = writeln!(
            out,
            "\n[net_{}]\ntype=net\ndevices={dev}",
            section_name(dev)
        );
        for (o, v) in [
            ("ring", s.ring.join(" ")),
            ("coalesce", s.coalesce.join(" ")),
            ("features", s.features.join(" ")),
        ] {
            if !v.is_empty() {
                let _ = writeln!(out, "{o}={v}");
            }
        }
        for (o, v) in [("mtu", &s.mtu), ("txqueuelen", &s.txqueuelen)] {
            if let Some(v) = v {
                let _ = writeln!(out, "{o}={v}");
            }
        }
    }
    out
}

/// A device pattern (`sd[a-z]`) as a plain section-name suffix.
fn section_name(dev: &str) -> String {
    dev.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// A YAML double-quoted scalar (values were checked to hold no newline).
pub fn yaml_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn ansible(changes: &[Change]) -> String {
    let mut tasks = String::new();
    let mut left = Vec::new();
    for c in changes {
        let name = yaml_str(&super::kinds::describe(c));
        if !kind(c).ansible(&name, &mut tasks) {
            left.push(c);
        }
    }
    let mut out = String::new();
    header(&mut out, "Ansible tasks");
    // ansible.posix.mount needs the source and type of the entry, which a
    // change does not carry, so mount options stay in the comment.
    not_expressed(&mut out, "Ansible tasks", &left);
    out.push_str("---");
    if tasks.is_empty() {
        out.push_str(" []\n");
    } else {
        out.push_str(&tasks);
    }
    out
}

/// A udev rule line kept in nastune's rules file (applied at the next add/change
/// event, or `udevadm trigger`).
pub fn udev_task(tasks: &mut String, name: &str, line: &str) {
    let _ = write!(
        tasks,
        "\n- name: {name}\n  ansible.builtin.lineinfile:\n    path: /{UDEV_FILE}\n    line: '{}'\n    \
         create: true\n    mode: \"0644\"\n",
        line.replace('\'', "''")
    );
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn s(x: &str) -> String {
        x.to_string()
    }

    /// One change of every kind, as advise produces them.
    pub(crate) fn changes() -> Vec<Change> {
        vec![
            Change::Sysctl {
                key: s("vm.swappiness"),
                value: s("10"),
            },
            Change::Sysctl {
                key: s("net.ipv4.tcp_rmem"),
                value: s("4096 131072 6291456"),
            },
            Change::SysfsAttribute {
                path: s("block/sda/queue/scheduler"),
                value: s("bfq"),
            },
            Change::SysfsAttribute {
                path: s("kernel/mm/transparent_hugepage/enabled"),
                value: s("madvise"),
            },
            Change::UdevRule {
                subsystem: s("block"),
                matches: vec![(s("KERNEL"), s("sd[a-z]"))],
                attribute: s("queue/read_ahead_kb"),
                value: s("1024"),
            },
            Change::UdevRule {
                subsystem: s("block"),
                matches: vec![(s("KERNEL"), s("md*")), (s("ATTR{md/level}"), s("raid5"))],
                attribute: s("md/stripe_cache_size"),
                value: s("1024"),
            },
            Change::MountOption {
                mount_point: s("/srv/data"),
                add: vec![s("noatime")],
                remove: vec![s("relatime")],
            },
            Change::SmbConf {
                section: s("global"),
                parameter: s("use sendfile"),
                value: Some(s("yes")),
            },
            Change::SmbConf {
                section: s("global"),
                parameter: s("socket options"),
                value: None,
            },
            Change::Ethtool {
                interface: s("eth0"),
                setting: s("rx"),
                value: s("4096"),
            },
            Change::Ethtool {
                interface: s("eth0"),
                setting: s("rx-gro"),
                value: s("on"),
            },
            Change::Ethtool {
                interface: s("eth0"),
                setting: s("txqueuelen"),
                value: s("1000"),
            },
            Change::Ethtool {
                interface: s("eth0"),
                setting: s("adaptive-rx"),
                value: s("off"),
            },
            Change::IrqAffinity {
                irq: s("eth0"),
                cpus: s("1"),
            },
            Change::QueueCpus {
                interface: s("eth0"),
                queue: s("rx-0"),
                mask: s("3"),
            },
            Change::DmCryptFlag {
                name: s("data"),
                flag: s("no_read_workqueue"),
                on: true,
            },
            Change::AdviceOnly {
                action: s("move the swap file off the SD card"),
            },
        ]
    }

    fn one(format: ExportFormat) -> ExportFile {
        let mut files = render(&changes(), format).unwrap();
        assert_eq!(files.len(), 1);
        files.remove(0)
    }

    /// Compares with `tests/fixtures/export/NAME` (the version written as
    /// `VERSION`); UPDATE_GOLDEN=1 rewrites the file after review.
    fn assert_golden(name: &str, actual: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/export")
            .join(name);
        let actual = actual.replace(env!("CARGO_PKG_VERSION"), "VERSION");
        if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &actual).unwrap();
            return;
        }
        let expected = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            actual,
            expected,
            "{} differs; UPDATE_GOLDEN=1 rewrites it",
            path.display()
        );
    }

    /// sysctl.d holds only sysctls; udev also mtu and txqueuelen; TuneD uses its
    /// sysctl, sysfs, disk and net plugins; Ansible its sysctl and ini_file modules.
    #[test]
    fn every_format_matches_its_golden_file() {
        for (format, path, golden) in [
            (ExportFormat::Sysctl, SYSCTL_FILE, "99-zz-nastune.conf"),
            (ExportFormat::Udev, UDEV_FILE, "99-zz-nastune.rules"),
            (ExportFormat::Tuned, TUNED_FILE, "tuned.conf"),
            (ExportFormat::Ansible, ANSIBLE_FILE, "nastune-tasks.yml"),
        ] {
            let f = one(format);
            assert_eq!(f.path, PathBuf::from(path));
            assert_golden(golden, &f.contents);
        }
    }

    /// Every change appears in every format: as a setting or in the comment.
    #[test]
    fn nothing_is_dropped() {
        for format in [
            ExportFormat::Sysctl,
            ExportFormat::Udev,
            ExportFormat::Tuned,
            ExportFormat::Ansible,
        ] {
            let text = one(format).contents;
            for c in changes() {
                let comment = format!("#   {}\n", super::super::kinds::describe(&c));
                let value = match &c {
                    Change::Sysctl { value, .. }
                    | Change::SysfsAttribute { value, .. }
                    | Change::UdevRule { value, .. }
                    | Change::Ethtool { value, .. } => value.clone(),
                    Change::SmbConf { parameter, .. } => parameter.clone(),
                    Change::MountOption { mount_point, .. } => mount_point.clone(),
                    Change::AdviceOnly { action } => action.clone(),
                    Change::IrqAffinity { irq, .. } => irq.clone(),
                    Change::QueueCpus { queue, .. } => queue.clone(),
                    Change::DmCryptFlag { flag, .. } => flag.clone(),
                };
                let lines_with_value = text
                    .lines()
                    .filter(|l| !l.starts_with('#') && l.contains(&value))
                    .count();
                assert!(
                    text.contains(&comment) || lines_with_value > 0,
                    "{format:?} lost {c:?}"
                );
            }
        }
    }

    /// The tasks parse as YAML (PyYAML, the parser Ansible uses) into the
    /// expected modules, and quoted udev lines come back intact.
    #[test]
    fn ansible_yaml_parses() {
        let f = one(ExportFormat::Ansible);
        let script = "import json, sys, yaml\n\
                      print(json.dumps(yaml.safe_load(sys.stdin.read())))";
        let mut child = std::process::Command::new("python3")
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 with PyYAML (Debian python3-yaml, in .ci/apt-packages)");
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(f.contents.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let tasks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let tasks = tasks.as_array().unwrap();
        let modules: Vec<&str> = tasks
            .iter()
            .map(|t| {
                let keys: Vec<&String> = t.as_object().unwrap().keys().collect();
                assert_eq!(keys.len(), 2, "{t}");
                keys.into_iter().find(|k| *k != "name").unwrap().as_str()
            })
            .collect();
        assert_eq!(
            modules,
            [
                "ansible.posix.sysctl",
                "ansible.posix.sysctl",
                "ansible.builtin.lineinfile",
                "ansible.builtin.lineinfile",
                "ansible.builtin.lineinfile",
                "community.general.ini_file",
                "community.general.ini_file",
                "ansible.builtin.lineinfile",
                "ansible.builtin.lineinfile",
            ]
        );
        assert_eq!(
            tasks[4]["ansible.builtin.lineinfile"]["line"],
            "ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"md*\", \
             ATTR{md/level}==\"raid5\", ATTR{md/stripe_cache_size}=\"1024\""
        );
        assert_eq!(tasks[0]["ansible.posix.sysctl"]["value"], "10");
        assert_eq!(tasks[6]["community.general.ini_file"]["state"], "absent");
        assert_eq!(
            tasks[3]["name"],
            "udev: SUBSYSTEM==\"block\", KERNEL==\"sd[a-z]\", ATTR{queue/read_ahead_kb}=\"1024\""
        );
        // No changes: still a valid, empty task list.
        let empty = render(&[], ExportFormat::Ansible).unwrap().remove(0);
        assert!(empty.contents.ends_with("---\n[]\n") || empty.contents.ends_with("--- []\n"));
    }

    #[test]
    fn text_that_would_break_a_line_is_refused() {
        let bad = [
            Change::Sysctl {
                key: s("vm.swappiness"),
                value: s("10\nkernel.panic = 1"),
            },
            Change::Sysctl {
                key: s("vm swappiness"),
                value: s("10"),
            },
            Change::UdevRule {
                subsystem: s("block"),
                matches: vec![(s("KERNEL"), s("sda\", RUN+=\"/bin/sh"))],
                attribute: s("queue/read_ahead_kb"),
                value: s("1024"),
            },
        ];
        for c in bad {
            let e = render(std::slice::from_ref(&c), ExportFormat::Udev).unwrap_err();
            assert!(e.to_string().starts_with("cannot export "), "{e}");
        }
        assert_eq!(
            render(&bad_key(), ExportFormat::Tuned).unwrap_err(),
            ExportError::Unwritable {
                what: "key",
                text: s("a=b")
            }
        );
    }

    fn bad_key() -> Vec<Change> {
        vec![Change::Sysctl {
            key: s("a=b"),
            value: s("1"),
        }]
    }
}
