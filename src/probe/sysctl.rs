//! The sysctls tuning touches, as the kernel has them now, and which sysctl.d
//! file sets each key at boot (precedence is judged later, by advise/tune).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ProbeError;
use crate::root::Root;

/// Keys nastune reads, advises on or tunes.
pub const KEYS: &[&str] = &[
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.core.netdev_max_backlog",
    "net.core.default_qdisc",
    "net.core.somaxconn",
    "net.core.netdev_budget",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_mem",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_no_metrics_save",
    "vm.swappiness",
    "vm.vfs_cache_pressure",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_bytes",
    "vm.dirty_background_bytes",
    "vm.dirty_expire_centisecs",
    "vm.dirty_writeback_centisecs",
    "vm.min_free_kbytes",
    "vm.overcommit_memory",
    "vm.zone_reclaim_mode",
];

/// Keys removed from the kernel that old guides still set; read only when a
/// config file sets them, so `absent` then proves the line does nothing.
pub const REMOVED_KEYS: &[&str] = &[
    "vm.nr_pdflush_threads",
    "fs.xfs.xfsbufd_centisecs",
    "fs.xfs.age_buffer_centisecs",
    "net.ipv4.tcp_tw_recycle",
];

/// The sysctl.d file nastune owns, relative to the root: tune writes it, and
/// advise names it as where a value is persisted.
pub const OWNED_FILE: &str = "etc/sysctl.d/99-zz-nastune.conf";

/// Directories of sysctl.d drop-ins, highest precedence first: a file name in an
/// earlier directory hides the same name in later ones (systemd-sysctl, procps).
pub const CONFIG_DIRS: &[&str] = &[
    "etc/sysctl.d",
    "run/sysctl.d",
    "usr/local/lib/sysctl.d",
    "usr/lib/sysctl.d",
    "lib/sysctl.d",
];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Sysctl {
    /// Current value per key; whitespace runs (tcp_rmem's tabs) become one space.
    pub values: BTreeMap<String, String>,
    /// Keys this kernel does not have (built without the feature, or too old).
    pub absent: Vec<String>,
    /// Config files in the order they are applied (later wins).
    pub config_files: Vec<String>,
    /// Every key a config file sets, with each file that sets it, in apply order;
    /// the last one is what boot applies.
    pub configured: BTreeMap<String, Vec<ConfigSetting>>,
    /// Lines that are not `key = value`, with file and line number.
    pub config_problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConfigSetting {
    pub file: String,
    pub line: u32,
    pub value: String,
    /// The `-key` form: a failure to set it is ignored.
    pub ignore_failure: bool,
    /// `-key` with no value (systemd 249+): this key is left out of an earlier
    /// glob assignment such as `net.ipv4.conf.*.rp_filter = 2`.
    pub exclude: bool,
}

/// One parsed `key = value` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    pub key: String,
    pub value: String,
    pub line: u32,
    pub ignore_failure: bool,
    /// `-key` with no value: leave this key out of an earlier glob assignment.
    pub exclude: bool,
}

pub fn read_sysctl(root: &Root) -> Result<Sysctl, ProbeError> {
    let mut values = BTreeMap::new();
    let mut absent = Vec::new();
    for key in KEYS {
        read_key(root, key, &mut values, &mut absent)?;
    }
    let config_files = config_files(root)?;
    let mut configured: BTreeMap<String, Vec<ConfigSetting>> = BTreeMap::new();
    let mut config_problems = Vec::new();
    for file in &config_files {
        let text = match root.read_string(file.trim_start_matches('/')) {
            Ok(t) => t,
            Err(e) => {
                config_problems.push(e.to_string());
                continue;
            }
        };
        let (assignments, problems) = parse_sysctl_conf(&text);
        config_problems.extend(problems.into_iter().map(|p| format!("'{file}' {p}")));
        for a in assignments {
            configured.entry(a.key).or_default().push(ConfigSetting {
                file: file.clone(),
                line: a.line,
                value: a.value,
                ignore_failure: a.ignore_failure,
                exclude: a.exclude,
            });
        }
    }
    for key in REMOVED_KEYS.iter().filter(|k| configured.contains_key(**k)) {
        read_key(root, key, &mut values, &mut absent)?;
    }
    Ok(Sysctl {
        values,
        absent,
        config_files,
        configured,
        config_problems,
    })
}

/// Records a key's current value, or that this kernel lacks it.
fn read_key(
    root: &Root,
    key: &str,
    values: &mut BTreeMap<String, String>,
    absent: &mut Vec<String>,
) -> Result<(), ProbeError> {
    match root.read_optional(&format!("proc/sys/{}", key.replace('.', "/")))? {
        Some(v) => {
            values.insert(
                key.to_string(),
                v.split_whitespace().collect::<Vec<_>>().join(" "),
            );
        }
        None => absent.push(key.to_string()),
    }
    Ok(())
}

/// The `*.conf` files of all drop-in directories, de-duplicated by name (the
/// earlier directory wins) and sorted by name, then /etc/sysctl.conf last as
/// `sysctl --system` does. Paths are absolute as on the box.
pub fn config_files(root: &Root) -> Result<Vec<String>, ProbeError> {
    let mut by_name: BTreeMap<String, String> = BTreeMap::new();
    for dir in CONFIG_DIRS {
        for name in root.read_dir_optional(dir)? {
            if name.ends_with(".conf") && !by_name.contains_key(&name) {
                by_name.insert(name.clone(), format!("/{dir}/{name}"));
            }
        }
    }
    let mut files: Vec<String> = by_name.into_values().collect();
    if root.exists("etc/sysctl.conf") {
        files.push("/etc/sysctl.conf".into());
    }
    Ok(files)
}

/// Parses a sysctl.conf / sysctl.d file: `key = value`, `#` and `;` comments,
/// a leading `-` to ignore failures (alone, without a value: a glob exclusion), and keys written with `/` (normalised to
/// dots, with any dots inside a component becoming slashes, as sysctl(8) does).
/// Bad lines come back as problems rather than failing the whole file.
pub fn parse_sysctl_conf(text: &str) -> (Vec<Assignment>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i as u32 + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            // `-key` alone excludes the key from an earlier glob (systemd 249+).
            if let Some(key) = line
                .strip_prefix('-')
                .map(str::trim)
                .filter(|k| !k.is_empty())
            {
                out.push(Assignment {
                    key: normalize_key(key),
                    value: String::new(),
                    line: line_no,
                    ignore_failure: true,
                    exclude: true,
                });
            } else {
                problems.push(format!("line {line_no}: no '=' in '{line}'"));
            }
            continue;
        };
        let (key, ignore_failure) = match key.trim().strip_prefix('-') {
            Some(k) => (k.trim(), true),
            None => (key.trim(), false),
        };
        if key.is_empty() {
            problems.push(format!("line {line_no}: empty key in '{line}'"));
            continue;
        }
        out.push(Assignment {
            key: normalize_key(key),
            value: value.trim().to_string(),
            line: line_no,
            ignore_failure,
            exclude: false,
        });
    }
    (out, problems)
}

/// `net/ipv4/conf/eth0.100/rp_filter` → `net.ipv4.conf.eth0/100.rp_filter`: when
/// the first separator is a slash, slashes separate and dots are literal.
pub fn normalize_key(key: &str) -> String {
    let first_sep = key.find(['.', '/']);
    match first_sep {
        Some(i) if key.as_bytes()[i] == b'/' => key
            .chars()
            .map(|c| match c {
                '/' => '.',
                '.' => '/',
                other => other,
            })
            .collect(),
        _ => key.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_syntax_of_a_sysctl_d_file() {
        let text = "# comment\n; also a comment\n\n\
                    net.core.rmem_max = 4194304\n\
                    vm/swappiness=10\n\
                    -net.ipv4.conf.all.rp_filter = 2\n\
                    net.ipv4.conf.*.promote_secondaries = 1\n\
                    -net.ipv4.conf.all.promote_secondaries\n\
                    net/ipv4/conf/eth0.100/rp_filter = 1\n\
                    net.ipv4.tcp_rmem = 4096\t131072  6291456\n\
                    kernel.core_pattern = |/bin/x %p = y\n\
                    this line is broken\n\
                    = 3\n";
        let (a, problems) = parse_sysctl_conf(text);
        let keys: Vec<_> = a.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(
            keys,
            vec![
                "net.core.rmem_max",
                "vm.swappiness",
                "net.ipv4.conf.all.rp_filter",
                "net.ipv4.conf.*.promote_secondaries",
                "net.ipv4.conf.all.promote_secondaries",
                "net.ipv4.conf.eth0/100.rp_filter",
                "net.ipv4.tcp_rmem",
                "kernel.core_pattern",
            ]
        );
        assert_eq!(a[0].value, "4194304");
        assert_eq!(a[0].line, 4);
        assert_eq!(a[1].value, "10");
        assert!(a[2].ignore_failure && !a[0].ignore_failure);
        assert!(a[4].exclude && a[4].value.is_empty() && !a[3].exclude);
        assert_eq!(a[6].value, "4096\t131072  6291456");
        assert_eq!(a[7].value, "|/bin/x %p = y");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("line 12") && problems[0].contains("'this line is broken'"),
            "{problems:?}"
        );
    }

    #[test]
    fn keys_with_dots_first_stay() {
        assert_eq!(normalize_key("vm.swappiness"), "vm.swappiness");
        assert_eq!(normalize_key("vm/dirty_ratio"), "vm.dirty_ratio");
    }

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        for (path, text) in [
            ("proc/sys/vm/swappiness", "60\n"),
            ("proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n"),
            (
                "usr/lib/sysctl.d/50-default.conf",
                "net.core.default_qdisc = fq_codel\nvm.swappiness = 30\n",
            ),
            ("usr/lib/sysctl.d/60-nas.conf", "vm.swappiness = 1\n"),
            ("etc/sysctl.d/60-nas.conf", "vm.swappiness = 10\n"),
            ("etc/sysctl.d/README.sysctl", "vm.swappiness = 99\n"),
            ("etc/sysctl.conf", "#vm.swappiness = 5\nbroken\n"),
        ] {
            std::fs::create_dir_all(p.join(path).parent().unwrap()).unwrap();
            std::fs::write(p.join(path), text).unwrap();
        }
        d
    }

    #[test]
    fn reads_values_and_which_file_sets_them() {
        let d = tree();
        let s = read_sysctl(&Root::tree(d.path()).unwrap()).unwrap();
        assert_eq!(s.values["vm.swappiness"], "60");
        assert_eq!(s.values["net.ipv4.tcp_rmem"], "4096 131072 6291456");
        assert!(s.absent.contains(&"vm.dirty_ratio".to_string()));
        assert_eq!(
            s.config_files,
            vec![
                "/usr/lib/sysctl.d/50-default.conf",
                "/etc/sysctl.d/60-nas.conf",
                "/etc/sysctl.conf"
            ]
        );
        let sw = &s.configured["vm.swappiness"];
        assert_eq!(sw.len(), 2);
        assert_eq!(sw[1].file, "/etc/sysctl.d/60-nas.conf");
        assert_eq!(sw[1].value, "10");
        assert_eq!(s.config_problems.len(), 1);
        assert!(s.config_problems[0].contains("/etc/sysctl.conf"));
    }
}
