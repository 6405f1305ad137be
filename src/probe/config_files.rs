//! Boot-time configuration that old tuning guides edit: /etc/fstab, udev rules
//! that set block/net attributes or run tuning commands (`RUN+=`), and tuning
//! commands in /etc/rc.local. Parsed
//! leniently: a line we cannot read becomes a problem with file:line, never an
//! error for the whole section.

use serde::{Deserialize, Serialize};

use super::ProbeError;
use super::file_services::ConfigProblem;
use crate::root::Root;

pub const FSTAB: &str = "etc/fstab";
pub const RC_LOCAL: &str = "etc/rc.local";
/// Later directories override files of the same name in earlier ones.
pub const UDEV_RULE_DIRS: &[&str] = &["lib/udev/rules.d", "etc/udev/rules.d"];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ConfigFiles {
    /// `None` when /etc/fstab does not exist.
    pub fstab: Option<Vec<FstabEntry>>,
    pub fstab_comments: Vec<Comment>,
    pub udev_assignments: Vec<UdevAssignment>,
    /// `RUN+=` programs of udev rules that are tuning commands (hdparm, ethtool,
    /// ifconfig/ip txqueuelen, blockdev, echo to /sys). Older snapshots lack it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub udev_runs: Vec<UdevRun>,
    /// `None` when /etc/rc.local does not exist.
    pub rc_local: Option<Vec<RcCommand>>,
    pub problems: Vec<ConfigProblem>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Comment {
    pub line: usize,
    pub text: String,
}

/// One fstab line, octal escapes (`\040`) decoded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FstabEntry {
    pub line: usize,
    pub spec: String,
    pub mount_point: String,
    pub fs_type: String,
    pub options: Vec<String>,
    pub dump: Option<u32>,
    pub pass: Option<u32>,
}

/// One `ATTR{...}=` assignment in a udev rule that concerns block, net or USB
/// power attributes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UdevAssignment {
    pub file: String,
    pub line: usize,
    /// The rule's match keys (`KERNEL==sd[a-z]`, `SUBSYSTEM==block`), operator kept.
    pub matches: Vec<String>,
    pub attribute: String,
    pub value: String,
}

impl UdevAssignment {
    /// The value of a `KEY==value` match, if the rule has one.
    pub fn match_value(&self, key: &str) -> Option<&str> {
        self.matches
            .iter()
            .find_map(|m| m.strip_prefix(key)?.strip_prefix("=="))
    }
}

/// A tuning command a udev rule runs (`RUN+="/sbin/hdparm -M 254 /dev/%k"`),
/// with `%k`/`$kernel` replaced by the rule's KERNEL match when it has one.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UdevRun {
    pub file: String,
    pub line: usize,
    pub matches: Vec<String>,
    /// The program as written in the rule.
    pub command: String,
    #[serde(flatten)]
    pub kind: RcKind,
}

/// A line of rc.local that looks like tuning.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RcCommand {
    pub line: usize,
    pub text: String,
    #[serde(flatten)]
    pub kind: RcKind,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RcKind {
    /// `echo VALUE > /sys/PATH`; path relative to /sys.
    SysfsWrite { path: String, value: String },
    /// `hdparm -a 1024 -M 254 /dev/sda`: flags with their values, devices.
    Hdparm {
        flags: Vec<(String, Option<String>)>,
        devices: Vec<String>,
    },
    /// `blockdev --setra N /dev/X` (N in 512-byte sectors).
    BlockdevSetra { sectors: u64, devices: Vec<String> },
    /// `ifconfig eth0 txqueuelen N` or `ip link set eth0 txqueuelen N`.
    Txqueuelen { interface: String, value: u64 },
    /// `ethtool -K eth0 tso off gso on`: offload features and their values.
    EthtoolFeatures {
        interface: String,
        features: Vec<(String, String)>,
    },
}

impl RcKind {
    /// The device attributes the command sets, as udev would name them:
    /// (device kernel name, attribute below the device, value).
    pub fn attributes(&self) -> Vec<(String, String, String)> {
        let dev = |d: &str| d.trim_start_matches("/dev/").to_string();
        match self {
            RcKind::SysfsWrite { path, value } => {
                let parts: Vec<&str> = path.splitn(4, '/').collect();
                match parts.as_slice() {
                    ["block", d, rest @ ..] if !rest.is_empty() => {
                        vec![(d.to_string(), rest.join("/"), value.clone())]
                    }
                    ["class", _, d, attr] => vec![(d.to_string(), attr.to_string(), value.clone())],
                    _ => Vec::new(),
                }
            }
            // hdparm -a and blockdev --setra count 512-byte sectors.
            RcKind::Hdparm { flags, devices } => flags
                .iter()
                .filter(|(f, _)| f == "a")
                .filter_map(|(_, v)| v.as_ref()?.parse::<u64>().ok())
                .flat_map(|sectors| {
                    devices.iter().map(move |d| {
                        (
                            dev(d),
                            "queue/read_ahead_kb".into(),
                            (sectors / 2).to_string(),
                        )
                    })
                })
                .collect(),
            RcKind::BlockdevSetra { sectors, devices } => devices
                .iter()
                .map(|d| {
                    (
                        dev(d),
                        "queue/read_ahead_kb".into(),
                        (sectors / 2).to_string(),
                    )
                })
                .collect(),
            RcKind::Txqueuelen { interface, value } => {
                vec![(interface.clone(), "tx_queue_len".into(), value.to_string())]
            }
            RcKind::EthtoolFeatures { .. } => Vec::new(),
        }
    }
}

/// Reads the three sources; each missing file is simply absent.
pub fn read_config_files(root: &Root) -> Result<ConfigFiles, ProbeError> {
    let mut out = ConfigFiles::default();
    if let Some(text) = read_text_optional(root, FSTAB)? {
        let (entries, comments, problems) = parse_fstab(&text);
        out.fstab = Some(entries);
        out.fstab_comments = comments;
        out.problems.extend(problems);
    }
    let mut files: Vec<(String, String)> = Vec::new();
    for dir in UDEV_RULE_DIRS {
        for name in root.read_dir_optional(dir)? {
            if name.ends_with(".rules") {
                files.retain(|(n, _)| *n != name);
                files.push((name.clone(), format!("{dir}/{name}")));
            }
        }
    }
    files.sort();
    for (_, rel) in files {
        if let Some(text) = read_text_optional(root, &rel)? {
            let file = format!("/{rel}");
            out.udev_assignments.extend(parse_udev_rules(&file, &text));
            out.udev_runs.extend(parse_udev_runs(&file, &text));
        }
    }
    if let Some(text) = read_text_optional(root, RC_LOCAL)? {
        out.rc_local = Some(parse_rc_local(&text));
    }
    Ok(out)
}

fn read_text_optional(root: &Root, rel: &str) -> Result<Option<String>, ProbeError> {
    match root.read_string(rel) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Decodes fstab's octal escapes (`\040` = space).
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn parse_fstab(text: &str) -> (Vec<FstabEntry>, Vec<Comment>, Vec<ConfigProblem>) {
    let (mut entries, mut comments, mut problems) = (Vec::new(), Vec::new(), Vec::new());
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(c) = t.strip_prefix('#') {
            comments.push(Comment {
                line,
                text: c.trim().to_string(),
            });
            continue;
        }
        let f: Vec<&str> = t.split_whitespace().collect();
        if f.len() < 3 || f.len() > 6 {
            problems.push(ConfigProblem {
                file: "/etc/fstab".into(),
                line,
                message: format!("expected 3 to 6 fields, found {}: '{t}'", f.len()),
            });
            continue;
        }
        let num = |k: usize| f.get(k).and_then(|v| v.parse().ok());
        entries.push(FstabEntry {
            line,
            spec: unescape_octal(f[0]),
            mount_point: unescape_octal(f[1]),
            fs_type: f[2].to_string(),
            options: f
                .get(3)
                .map(|o| o.split(',').map(str::to_string).collect())
                .unwrap_or_else(|| vec!["defaults".into()]),
            dump: num(4),
            pass: num(5),
        });
    }
    (entries, comments, problems)
}

/// Attributes worth reporting even without a block/net SUBSYSTEM match.
fn is_tuning_attribute(attr: &str) -> bool {
    attr.starts_with("queue/")
        || attr.starts_with("md/")
        || attr.starts_with("bdi/")
        || attr == "power/control"
        || attr == "power/autosuspend"
        || attr == "power/autosuspend_delay_ms"
        || attr == "tx_queue_len"
        || attr == "mtu"
}

/// Splits one udev rule line into its comma-separated keys, quotes respected.
fn split_udev_keys(rule: &str) -> Vec<String> {
    let mut keys: Vec<String> = split_unquoted_commas(rule)
        .into_iter()
        .map(|k| k.trim().to_string())
        .collect();
    if keys.last().is_some_and(|k| k.is_empty()) {
        keys.pop();
    }
    keys
}

/// Splits on commas outside double quotes (udev keys; fstab options such as
/// SELinux `context="system_u:object_r:t:s0:c1,c2"`), pieces as written.
pub fn split_unquoted_commas(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// Each rule of a udev rules file with its first line number, continuation
/// lines joined, comments and blank lines left out.
fn udev_rule_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending = String::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate() {
        if pending.is_empty() {
            start = i + 1;
        }
        let t = raw.trim();
        if let Some(cont) = t.strip_suffix('\\') {
            pending.push_str(cont);
            pending.push(' ');
            continue;
        }
        pending.push_str(t);
        let rule = std::mem::take(&mut pending);
        let rule = rule.trim();
        if !rule.is_empty() && !rule.starts_with('#') {
            out.push((start, rule.to_string()));
        }
    }
    out
}

/// A rule's match keys (`KERNEL==sda`, operator kept, quotes dropped).
fn udev_matches(keys: &[String]) -> Vec<String> {
    keys.iter()
        .filter_map(|k| {
            let unq = k.replace('"', "");
            let p = unq.find("==").or_else(|| unq.find("!="))?;
            let (key, rest) = unq.split_at(p);
            Some(format!("{}{}", key.trim(), rest.trim()))
        })
        .collect()
}

/// The tuning commands of `RUN+=` keys; a `sh -c '…'` wrapper is looked into.
pub fn parse_udev_runs(file: &str, text: &str) -> Vec<UdevRun> {
    let mut out = Vec::new();
    for (line, rule) in udev_rule_lines(text) {
        let keys = split_udev_keys(&rule);
        let matches = udev_matches(&keys);
        let kernel = matches
            .iter()
            .find_map(|m| m.strip_prefix("KERNEL=="))
            .map(str::to_string);
        for k in &keys {
            let Some((name, value)) = k.split_once('=') else {
                continue;
            };
            let name = name.trim_end_matches(['+', ':']).trim();
            if name != "RUN" && name != "RUN{program}" {
                continue;
            }
            let command = value.trim().trim_matches('"').to_string();
            let mut program = command.clone();
            if let Some(k) = &kernel {
                for var in ["%k", "$kernel", "$name", "%n"] {
                    program = program.replace(var, k);
                }
            }
            let words: Vec<&str> = program.split_whitespace().collect();
            let inner = match words.as_slice() {
                [sh, "-c", ..] if ["sh", "bash"].contains(&sh.rsplit('/').next().unwrap_or(sh)) => {
                    program
                        .split_once("-c")
                        .map_or("", |(_, rest)| rest)
                        .trim()
                        .trim_matches(['\'', '"'])
                        .to_string()
                }
                _ => program,
            };
            for part in inner.split([';', '&', '|']) {
                if let Some(kind) = parse_rc_command(part.trim()) {
                    out.push(UdevRun {
                        file: file.to_string(),
                        line,
                        matches: matches.clone(),
                        command: command.clone(),
                        kind,
                    });
                }
            }
        }
    }
    out
}

pub fn parse_udev_rules(file: &str, text: &str) -> Vec<UdevAssignment> {
    let mut out = Vec::new();
    for (start, rule) in udev_rule_lines(text) {
        let keys = split_udev_keys(&rule);
        let matches = udev_matches(&keys);
        let mut assigns = Vec::new();
        for k in &keys {
            let unq = k.replace('"', "");
            if unq.contains("==") || unq.contains("!=") {
                continue;
            } else if let Some(rest) = unq.strip_prefix("ATTR{")
                && let Some((attr, val)) = rest.split_once('}')
            {
                let val = val.trim_start_matches([':', '+', '=']).trim().to_string();
                assigns.push((attr.to_string(), val));
            }
        }
        let subsystem_ok = matches.iter().any(|m| {
            m.starts_with("SUBSYSTEM==block")
                || m.starts_with("SUBSYSTEM==net")
                || m.starts_with("SUBSYSTEMS==scsi")
        });
        for (attribute, value) in assigns {
            if subsystem_ok || is_tuning_attribute(&attribute) {
                out.push(UdevAssignment {
                    file: file.to_string(),
                    line: start,
                    matches: matches.clone(),
                    attribute,
                    value,
                });
            }
        }
    }
    out
}

/// Recognises tuning commands; other lines are ignored.
pub fn parse_rc_local(text: &str) -> Vec<RcCommand> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        // `cmd1; cmd2` and `cmd || true` are common; look at each part.
        for part in t.split([';', '&', '|']) {
            if let Some(kind) = parse_rc_command(part.trim()) {
                out.push(RcCommand {
                    line: i + 1,
                    text: t.to_string(),
                    kind,
                });
            }
        }
    }
    out
}

fn parse_rc_command(cmd: &str) -> Option<RcKind> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let first = words.first()?.rsplit('/').next()?;
    match first {
        "echo" => {
            let (lhs, path) = cmd.split_once('>')?;
            let path = path
                .trim_start_matches('>')
                .split_whitespace()
                .next()?
                .trim_matches('"');
            let path = path.strip_prefix("/sys/")?;
            let value = lhs
                .trim()
                .strip_prefix("echo")?
                .trim()
                .trim_matches(['"', '\''])
                .to_string();
            Some(RcKind::SysfsWrite {
                path: path.to_string(),
                value,
            })
        }
        "hdparm" => {
            let mut flags = Vec::new();
            let mut devices = Vec::new();
            let mut it = words[1..].iter().peekable();
            while let Some(w) = it.next() {
                if let Some(f) = w.strip_prefix('-') {
                    // `-a1024` and `-a 1024` both occur.
                    let (name, inline) = f.split_at(f.len().min(1));
                    let value = if !inline.is_empty() {
                        Some(inline.to_string())
                    } else if it.peek().is_some_and(|n| n.parse::<u64>().is_ok()) {
                        it.next().map(|s| s.to_string())
                    } else {
                        None
                    };
                    flags.push((name.to_string(), value));
                } else if w.starts_with("/dev/") {
                    devices.push(w.to_string());
                }
            }
            Some(RcKind::Hdparm { flags, devices })
        }
        "blockdev" => {
            let p = words.iter().position(|w| *w == "--setra")?;
            let sectors = words.get(p + 1)?.parse().ok()?;
            let devices = words
                .iter()
                .filter(|w| w.starts_with("/dev/"))
                .map(|s| s.to_string())
                .collect();
            Some(RcKind::BlockdevSetra { sectors, devices })
        }
        "ethtool" => {
            let p = words
                .iter()
                .position(|w| *w == "-K" || *w == "--features" || *w == "--offload")?;
            let interface = words.get(p + 1)?.to_string();
            let features = words[p + 2..]
                .chunks(2)
                .filter_map(|c| match c {
                    [name, value] => Some((name.to_string(), value.to_string())),
                    _ => None,
                })
                .collect::<Vec<_>>();
            (!features.is_empty()).then_some(RcKind::EthtoolFeatures {
                interface,
                features,
            })
        }
        "ifconfig" | "ip" => {
            let p = words
                .iter()
                .position(|w| *w == "txqueuelen" || *w == "txqlen")?;
            let value = words.get(p + 1)?.parse().ok()?;
            let interface = if first == "ifconfig" {
                words.get(1)?
            } else {
                let d = words
                    .iter()
                    .position(|w| *w == "dev")
                    .or_else(|| words.iter().position(|w| *w == "set"))?;
                words.get(d + 1)?
            };
            Some(RcKind::Txqueuelen {
                interface: interface.to_string(),
                value,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RUN+= hooks were once not read at all, so their tuning went unseen.
    #[test]
    fn udev_run_hooks_are_tuning_too() {
        let text = "ACTION==\"add\", KERNEL==\"sd[a-z]\", RUN+=\"/sbin/hdparm -M 254 -a 1024 /dev/%k\"\n\
                    # a comment\n\
                    ACTION==\"add\", SUBSYSTEM==\"net\", KERNEL==\"eth0\", \\\n  \
                    RUN+=\"/sbin/ifconfig eth0 txqueuelen 5000\"\n\
                    SUBSYSTEM==\"net\", KERNEL==\"eth1\", RUN+=\"/bin/sh -c '/sbin/ethtool -K $kernel tso off gso on; ip link set dev $kernel txqueuelen 2000'\"\n\
                    KERNEL==\"sda\", RUN+=\"/usr/bin/logger hello\"\n";
        let runs = parse_udev_runs("/etc/udev/rules.d/50-nas.rules", text);
        let got: Vec<(usize, &RcKind)> = runs.iter().map(|r| (r.line, &r.kind)).collect();
        assert_eq!(
            got,
            [
                (
                    1,
                    &RcKind::Hdparm {
                        flags: vec![
                            ("M".into(), Some("254".into())),
                            ("a".into(), Some("1024".into()))
                        ],
                        devices: vec!["/dev/sd[a-z]".into()],
                    }
                ),
                (
                    3,
                    &RcKind::Txqueuelen {
                        interface: "eth0".into(),
                        value: 5000
                    }
                ),
                (
                    5,
                    &RcKind::EthtoolFeatures {
                        interface: "eth1".into(),
                        features: vec![("tso".into(), "off".into()), ("gso".into(), "on".into())],
                    }
                ),
                (
                    5,
                    &RcKind::Txqueuelen {
                        interface: "eth1".into(),
                        value: 2000
                    }
                ),
            ]
        );
        assert_eq!(runs[0].command, "/sbin/hdparm -M 254 -a 1024 /dev/%k");
        assert_eq!(
            runs[0].kind.attributes(),
            [("sd[a-z]".into(), "queue/read_ahead_kb".into(), "512".into())]
        );
        assert_eq!(
            runs[1].kind.attributes(),
            [("eth0".into(), "tx_queue_len".into(), "5000".into())]
        );
        // The ATTR parser is unchanged by the shared line splitter.
        assert!(parse_udev_rules("/x.rules", text).is_empty());
    }

    #[test]
    fn udev_runs_round_trip_byte_for_byte_with_their_kind_in_line() {
        let text = "KERNEL==\"sda\", RUN+=\"/sbin/hdparm -M 254 /dev/%k\"\n\
                    KERNEL==\"eth0\", RUN+=\"/sbin/ethtool -K eth0 tso off\"\n";
        let runs = parse_udev_runs("/etc/udev/rules.d/50-nas.rules", text);
        assert_eq!(runs.len(), 2);
        let json = serde_json::to_string(&runs).unwrap();
        assert!(json.contains(r#""command":"/sbin/hdparm -M 254 /dev/%k","kind":"hdparm""#));
        let back: Vec<UdevRun> = serde_json::from_str(&json).expect("decodes");
        assert_eq!(back, runs);
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        let e =
            serde_json::from_str::<UdevRun>(r#"{"kind": "hdparm", "flags": [], "devices": []}"#)
                .expect_err("no file");
        assert!(e.to_string().starts_with("missing field `file`"), "{e}");
    }

    #[test]
    fn fstab_fields_escapes_and_comments() {
        let text = "# /etc/fstab: static file system information.\n\
                    UUID=abc / ext4 errors=remount-ro 0 1\n\
                    /dev/md0 /srv/my\\040share ext4 defaults,noatime,nodiratime,nobh 0 2\n\
                    broken-line\n\
                    tmpfs /tmp tmpfs\n";
        let (e, c, p) = parse_fstab(text);
        assert_eq!(c[0].line, 1);
        assert_eq!(e.len(), 3);
        assert_eq!(e[1].mount_point, "/srv/my share");
        assert_eq!(e[1].options, ["defaults", "noatime", "nodiratime", "nobh"]);
        assert_eq!((e[1].line, e[1].pass), (3, Some(2)));
        assert_eq!(e[2].options, ["defaults"]);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].line, 4);
        assert!(p[0].message.contains("'broken-line'"));
    }

    #[test]
    fn udev_attr_assignments_with_matches() {
        let text = "# old guide\n\
                    ACTION==\"add|change\", KERNEL==\"sd[a-z]\", ATTR{queue/scheduler}=\"deadline\"\n\
                    ACTION==\"add\", SUBSYSTEM==\"usb\", \\\n  ATTR{power/control}=\"auto\"\n\
                    KERNEL==\"ttyS0\", ATTR{foo}=\"bar\"\n";
        let a = parse_udev_rules("/etc/udev/rules.d/60-x.rules", text);
        assert_eq!(a.len(), 2, "{a:?}");
        assert_eq!(a[0].attribute, "queue/scheduler");
        assert_eq!(a[0].value, "deadline");
        assert_eq!(a[0].line, 2);
        assert_eq!(a[0].match_value("KERNEL"), Some("sd[a-z]"));
        assert_eq!(a[1].attribute, "power/control");
        assert_eq!(a[1].line, 3);
    }

    #[test]
    fn rc_local_tuning_commands() {
        let text = "#!/bin/sh -e\n\
                    hdparm -a 1024 -M 254 /dev/sda\n\
                    echo 8192 > /sys/block/md0/md/stripe_cache_size\n\
                    blockdev --setra 4096 /dev/md0 || true\n\
                    ifconfig eth0 txqueuelen 5000\n\
                    ip link set dev eth0 txqueuelen 5000\n\
                    /usr/bin/logger started\n\
                    exit 0\n";
        let c = parse_rc_local(text);
        assert_eq!(c.len(), 5, "{c:?}");
        assert_eq!(
            c[0].kind,
            RcKind::Hdparm {
                flags: vec![
                    ("a".into(), Some("1024".into())),
                    ("M".into(), Some("254".into()))
                ],
                devices: vec!["/dev/sda".into()]
            }
        );
        assert_eq!(
            c[1].kind,
            RcKind::SysfsWrite {
                path: "block/md0/md/stripe_cache_size".into(),
                value: "8192".into()
            }
        );
        assert_eq!(c[1].line, 3);
        assert!(matches!(
            c[2].kind,
            RcKind::BlockdevSetra { sectors: 4096, .. }
        ));
        for k in [&c[3].kind, &c[4].kind] {
            assert_eq!(
                *k,
                RcKind::Txqueuelen {
                    interface: "eth0".into(),
                    value: 5000
                }
            );
        }
    }

    #[test]
    fn rc_commands_of_every_kind_round_trip_byte_for_byte() {
        let text = "hdparm -a 1024 -M 254 /dev/sda\n\
                    echo 8192 > /sys/block/md0/md/stripe_cache_size\n\
                    blockdev --setra 4096 /dev/md0\n\
                    ip link set dev eth0 txqueuelen 5000\n\
                    ethtool -K eth0 tso off gso on\n";
        let c = parse_rc_local(text);
        let kinds: Vec<String> = c
            .iter()
            .map(|c| serde_json::to_value(&c.kind).unwrap()["kind"].to_string())
            .collect();
        assert_eq!(
            kinds,
            [
                "\"hdparm\"",
                "\"sysfs_write\"",
                "\"blockdev_setra\"",
                "\"txqueuelen\"",
                "\"ethtool_features\""
            ]
        );
        let json = serde_json::to_string(&c).unwrap();
        let back: Vec<RcCommand> = serde_json::from_str(&json).expect("decodes");
        assert_eq!(back, c);
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }

    #[test]
    fn an_rc_command_of_the_wrong_shape_says_so() {
        let err = |json: &str| {
            serde_json::from_str::<RcCommand>(json)
                .expect_err(json)
                .to_string()
        };
        let head = r#"{"line": 1, "text": "t", "#;
        assert!(
            err(&format!(
                r#"{head}"kind": "txqueuelen", "interface": "eth0", "value": "x"}}"#
            ))
            .starts_with("invalid type: string \"x\", expected u64"),
        );
        assert!(
            err(&format!(
                r#"{head}"kind": "sysfs_write", "path": "p", "value": 1}}"#
            ))
            .starts_with("invalid type: integer `1`, expected a string"),
        );
        assert!(
            err(&format!(r#"{head}"kind": "hdparm", "devices": []}}"#))
                .starts_with("missing field `flags`")
        );
        assert!(
            err(&format!(r#"{head}"kind": "reboot"}}"#)).starts_with("unknown variant `reboot`")
        );
    }
}
