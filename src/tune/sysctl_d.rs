//! Persistence of sysctls: one drop-in owned by nastune, named to sort after the
//! usual files (`99-sysctl.conf` included), and a check of every other source
//! that boot applies after it, so a value that would not win is reported.

use std::collections::BTreeMap;

pub use crate::probe::sysctl::OWNED_FILE;
use crate::probe::sysctl::{config_files, parse_sysctl_conf};
use crate::root::Root;

const HEADER: &str = "# Written by nastune ('nastune tune apply'); every key here is owned by nastune.\n\
# Undo with 'nastune tune rollback'; a change by hand shows as drift in 'nastune tune verify'.\n";

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "'/{0}' exists but was not written by nastune; move it aside or merge it into another file, then retry"
)]
pub struct NotOurs(pub String);

/// The owned file with `set` merged in: existing keys keep their place and take
/// the new value, new keys are appended.
pub fn render(existing: Option<&str>, set: &[(String, String)]) -> Result<String, NotOurs> {
    let mut keys: Vec<String> = Vec::new();
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    if let Some(text) = existing {
        if !text.starts_with(HEADER.lines().next().unwrap_or_default()) {
            return Err(NotOurs(OWNED_FILE.to_string()));
        }
        for a in parse_sysctl_conf(text).0 {
            if values.insert(a.key.clone(), a.value).is_none() {
                keys.push(a.key);
            }
        }
    }
    for (k, v) in set {
        if values.insert(k.clone(), v.clone()).is_none() {
            keys.push(k.clone());
        }
    }
    let mut out = HEADER.to_string();
    for k in &keys {
        out.push_str(&format!("{k} = {}\n", values[k]));
    }
    Ok(out)
}

/// Sources that boot applies after the owned file and that set `key` too (so
/// they win), as sentences that name file, line and value.
pub fn later_sources(root: &Root, key: &str) -> Vec<String> {
    let ours = format!("/{OWNED_FILE}");
    let our_name = name_of(&ours);
    let files = match config_files(root) {
        Ok(f) => f,
        Err(e) => return vec![format!("cannot list the sysctl.d files: {e}")],
    };
    let mut out = Vec::new();
    for file in files.iter().filter(|f| **f != ours) {
        let last = file == "/etc/sysctl.conf";
        if !last && name_of(file) <= our_name {
            continue;
        }
        let Ok(text) = root.read_string(file.trim_start_matches('/')) else {
            continue;
        };
        for a in parse_sysctl_conf(&text).0 {
            if !a.exclude && super::udev_rules::glob_match(&a.key, key) {
                let when = if last {
                    "'sysctl --system' applies it last"
                } else {
                    "it sorts after ours"
                };
                out.push(format!(
                    "'{file}' line {} sets '{} = {}' and {when}, so boot keeps that value; remove the line to let nastune's value stand",
                    a.line, a.key, a.value
                ));
            }
        }
    }
    out
}

fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_keys_and_refuses_foreign_files() {
        let a = render(None, &[("vm.swappiness".into(), "10".into())]).unwrap();
        assert!(a.starts_with("# Written by nastune"));
        assert!(a.ends_with("vm.swappiness = 10\n"));
        let b = render(
            Some(&a),
            &[
                ("net.core.default_qdisc".into(), "fq_codel".into()),
                ("vm.swappiness".into(), "20".into()),
            ],
        )
        .unwrap();
        assert!(
            b.ends_with("vm.swappiness = 20\nnet.core.default_qdisc = fq_codel\n"),
            "{b}"
        );
        assert!(render(Some("vm.swappiness = 1\n"), &[]).is_err());
    }

    #[test]
    fn reports_sources_applied_after_ours() {
        let d = tempfile::tempdir().unwrap();
        for (p, t) in [
            ("etc/sysctl.d/50-early.conf", "vm.swappiness = 5\n"),
            (
                "usr/lib/sysctl.d/zzz-late.conf",
                "net.ipv4.conf.*.rp_filter = 2\n",
            ),
            ("etc/sysctl.conf", "# x\nvm.swappiness = 7\n"),
        ] {
            std::fs::create_dir_all(d.path().join(p).parent().unwrap()).unwrap();
            std::fs::write(d.path().join(p), t).unwrap();
        }
        let root = Root::tree(d.path()).unwrap();
        let s = later_sources(&root, "vm.swappiness");
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(s[0].contains("'/etc/sysctl.conf' line 2"), "{s:?}");
        let r = later_sources(&root, "net.ipv4.conf.all.rp_filter");
        assert!(r[0].contains("zzz-late.conf"), "{r:?}");
        assert!(later_sources(&root, "vm.dirty_ratio").is_empty());
    }
}
