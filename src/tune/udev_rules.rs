//! Persistence of block and network device attributes: one udev rules file owned
//! by nastune (`ACTION=="add|change"`, so re-plugged USB disks get it again), and
//! the devices a rule matches now, so the value is also set at runtime.

use crate::root::Root;

/// The file nastune owns, relative to the root.
pub const OWNED_FILE: &str = "etc/udev/rules.d/99-zz-nastune.rules";

const HEADER: &str = "# Written by nastune ('nastune tune apply'); every rule here is owned by nastune.\n\
# Undo with 'nastune tune rollback'.\n";

/// One attribute assignment for matching devices.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub subsystem: String,
    pub matches: Vec<(String, String)>,
    pub attribute: String,
    pub value: String,
}

impl Rule {
    /// Everything but the value: two rules with the same identity set the same thing.
    fn identity(&self) -> String {
        let mut s = format!("ACTION==\"add|change\", SUBSYSTEM==\"{}\"", self.subsystem);
        for (k, v) in &self.matches {
            s.push_str(&format!(", {k}==\"{v}\""));
        }
        s.push_str(&format!(", ATTR{{{}}}=", self.attribute));
        s
    }

    pub fn line(&self) -> String {
        format!("{}\"{}\"", self.identity(), self.value)
    }

    /// Where the devices of this rule's subsystem live, relative to the root.
    pub fn device_dir(&self) -> Option<&'static str> {
        match self.subsystem.as_str() {
            "block" => Some("sys/block"),
            "net" => Some("sys/class/net"),
            _ => None,
        }
    }

    /// Why this rule cannot be applied, if it cannot.
    pub fn unsupported(&self) -> Option<String> {
        if self.device_dir().is_none() {
            return Some(format!(
                "udev rules for subsystem '{}' are not supported (block and net are)",
                self.subsystem
            ));
        }
        let safe = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-/.".contains(c))
                && !s.split('/').any(|p| p == ".." || p.is_empty())
        };
        if !safe(&self.attribute) {
            return Some(format!(
                "attribute '{}' is not a plain path",
                self.attribute
            ));
        }
        for (k, v) in &self.matches {
            let attr_ok = k
                .strip_prefix("ATTR{")
                .and_then(|a| a.strip_suffix('}'))
                .is_some_and(safe);
            if k != "KERNEL" && !attr_ok {
                return Some(format!(
                    "match key '{k}' is not supported (KERNEL and ATTR{{…}} are)"
                ));
            }
            if v.contains(['"', '\n']) {
                return Some(format!("match value '{v}' has a quote or newline"));
            }
        }
        if self.value.contains(['"', '\n']) {
            return Some(format!("value '{}' has a quote or newline", self.value));
        }
        None
    }

    /// The device directories (relative to the root) this rule matches now.
    pub fn matching_devices(&self, root: &Root) -> Result<Vec<String>, String> {
        let dir = self.device_dir().ok_or("unsupported subsystem")?;
        let mut out = Vec::new();
        for name in root.read_dir_optional(dir).map_err(|e| e.to_string())? {
            let dev = format!("{dir}/{name}");
            let all = self.matches.iter().all(|(k, pattern)| {
                if k == "KERNEL" {
                    return glob_match(pattern, &name);
                }
                let attr = k.trim_start_matches("ATTR{").trim_end_matches('}');
                root.read_value(&format!("{dev}/{attr}"))
                    .is_ok_and(|v| glob_match(pattern, &v))
            });
            if all {
                out.push(dev);
            }
        }
        Ok(out)
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("'/{OWNED_FILE}' exists but was not written by nastune; move it aside, then retry")]
pub struct NotOurs;

/// The owned file with `rules` merged in: a rule with the same identity is
/// replaced where it stands, new rules are appended.
pub fn render(existing: Option<&str>, rules: &[Rule]) -> Result<String, NotOurs> {
    let mut lines: Vec<String> = Vec::new();
    if let Some(text) = existing {
        if !text.starts_with(HEADER.lines().next().unwrap_or_default()) {
            return Err(NotOurs);
        }
        lines.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
                .map(str::to_string),
        );
    }
    for r in rules {
        let id = r.identity();
        match lines.iter_mut().find(|l| l.starts_with(&id)) {
            Some(l) => *l = r.line(),
            None => lines.push(r.line()),
        }
    }
    let mut out = HEADER.to_string();
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    Ok(out)
}

/// `RUN+=` hooks of other udev rules that set what `rule` sets on a device it
/// matches. udev runs RUN programs after every rule's ATTR assignments, so such
/// a hook wins over nastune's rule at every boot, whatever the file names.
pub fn overriding_hooks(root: &Root, rule: &Rule) -> Vec<String> {
    let runs = match crate::probe::config_files::read_config_files(root) {
        Ok(c) => c.udev_runs,
        Err(e) => {
            return vec![format!(
                "cannot read the udev rules to look for RUN+= hooks: {e}"
            )];
        }
    };
    let ours = format!("/{OWNED_FILE}");
    let kernel = rule
        .matches
        .iter()
        .find(|(k, _)| k == "KERNEL")
        .map(|(_, v)| v.as_str());
    let mut out = Vec::new();
    for run in runs.iter().filter(|r| r.file != ours) {
        for (dev, attribute, value) in run.kind.attributes() {
            let same_device = kernel.is_none_or(|k| glob_match(&dev, k) || glob_match(k, &dev));
            if attribute == rule.attribute && same_device {
                out.push(format!(
                    "'{}' line {} runs '{}', which sets {attribute} = {value} on {dev}; udev runs \
                     RUN+= programs after all ATTR assignments, so at boot it overrides \
                     nastune's rule: remove the hook to let nastune's value stand",
                    run.file, run.line, run.command
                ));
            }
        }
    }
    out
}

/// udev's (and sysctl.d's) shell-style patterns: `*`, `?`, `[a-z]`, `[!0-9]`,
/// and `|` between alternatives.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    pattern.split('|').any(|alt| {
        let p: Vec<char> = alt.chars().collect();
        let t: Vec<char> = text.chars().collect();
        glob_at(&p, &t)
    })
}

fn glob_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len()).any(|i| glob_at(&p[1..], &t[i..])),
        Some('?') => !t.is_empty() && glob_at(&p[1..], &t[1..]),
        Some('[') => {
            let Some(close) = p.iter().skip(2).position(|c| *c == ']').map(|i| i + 2) else {
                return t.first() == Some(&'[') && glob_at(&p[1..], &t[1..]);
            };
            let Some(c) = t.first() else { return false };
            let set = &p[1..close];
            let (negate, set) = match set.first() {
                Some('!') | Some('^') => (true, &set[1..]),
                _ => (false, set),
            };
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    hit |= set[i] <= *c && *c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == *c;
                    i += 1;
                }
            }
            hit != negate && glob_at(&p[close + 1..], &t[1..])
        }
        Some(c) => t.first() == Some(c) && glob_at(&p[1..], &t[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(kernel: &str, value: &str) -> Rule {
        Rule {
            subsystem: "block".into(),
            matches: vec![("KERNEL".into(), kernel.into())],
            attribute: "queue/read_ahead_kb".into(),
            value: value.into(),
        }
    }

    #[test]
    fn globs_as_udev_has_them() {
        assert!(glob_match("sd[a-z]", "sdb"));
        assert!(!glob_match("sd[a-z]", "sdb1"));
        assert!(glob_match("md[0-9]*", "md127"));
        assert!(glob_match("add|change", "change"));
        assert!(glob_match("loop?", "loop3"));
        assert!(!glob_match("sd[!a]", "sda"));
        assert!(glob_match(
            "net.ipv4.conf.*.rp_filter",
            "net.ipv4.conf.all.rp_filter"
        ));
    }

    #[test]
    fn renders_and_replaces_rules() {
        let a = render(None, &[rule("sda", "512")]).unwrap();
        assert!(a.ends_with(
            "ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"sda\", ATTR{queue/read_ahead_kb}=\"512\"\n"
        ));
        let b = render(Some(&a), &[rule("sdb", "256"), rule("sda", "1024")]).unwrap();
        let rules: Vec<_> = b.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(rules.len(), 2);
        assert!(rules[0].contains("sda") && rules[0].ends_with("=\"1024\""));
        assert!(render(Some("KERNEL==\"x\"\n"), &[]).is_err());
    }

    #[test]
    fn refuses_what_it_cannot_match_or_quote() {
        assert!(rule("sda", "5\"").unsupported().is_some());
        let mut r = rule("sda", "1");
        r.matches.push(("DRIVERS".into(), "usb".into()));
        assert!(r.unsupported().unwrap().contains("'DRIVERS'"));
        r.matches.pop();
        r.attribute = "../../x".into();
        assert!(r.unsupported().is_some());
    }

    #[test]
    fn finds_matching_devices_by_kernel_name_and_attribute() {
        let d = tempfile::tempdir().unwrap();
        for (dev, rot) in [("sda", "1"), ("sdb", "0"), ("md0", "0")] {
            let q = d.path().join(format!("sys/block/{dev}/queue"));
            std::fs::create_dir_all(&q).unwrap();
            std::fs::write(q.join("rotational"), format!("{rot}\n")).unwrap();
        }
        let root = Root::tree(d.path()).unwrap();
        let mut r = rule("sd*", "1");
        assert_eq!(
            r.matching_devices(&root).unwrap(),
            vec!["sys/block/sda", "sys/block/sdb"]
        );
        r.matches
            .push(("ATTR{queue/rotational}".into(), "1".into()));
        assert_eq!(r.matching_devices(&root).unwrap(), vec!["sys/block/sda"]);
    }
}
