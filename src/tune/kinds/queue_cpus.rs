//! The CPU mask of one network queue: RPS (`rps:IFACE:rx-N=MASK`, the CPUs that
//! process what receive queue N brings in) and XPS (`xps:IFACE:tx-N=MASK`, the
//! CPUs that send on transmit queue N). A runtime sysfs value, checked against
//! the CPUs the box has, written as the kernel prints it back, and persisted
//! as a udev rule on the interface like any net device attribute.

use super::ChangeKind;
use crate::advise::Change;
use crate::root::Root;
use crate::tune::cpuset;
use crate::tune::export::Tuned;
use crate::tune::plan::{Persist, PlanItem, read_text};
use crate::tune::udev_rules::{self, Rule};

pub struct QueueCpus<'a> {
    pub interface: &'a str,
    pub queue: &'a str,
    pub mask: &'a str,
}

/// `--set rps:IFACE:rx-N=MASK` (`steering` is `rps`) or `xps:IFACE:tx-N=MASK`.
pub fn parse_set(steering: &str, rest: &str, mask: String) -> Option<Change> {
    let (interface, queue) = rest.split_once(':')?;
    let prefix = if steering == "rps" { "rx-" } else { "tx-" };
    let n = queue.strip_prefix(prefix)?;
    (!interface.is_empty() && !interface.contains('/') && n.parse::<u32>().is_ok()).then(|| {
        Change::QueueCpus {
            interface: interface.to_string(),
            queue: queue.to_string(),
            mask,
        }
    })
}

pub fn parse_rps(rest: &str, mask: String) -> Option<Change> {
    parse_set("rps", rest, mask)
}

pub fn parse_xps(rest: &str, mask: String) -> Option<Change> {
    parse_set("xps", rest, mask)
}

impl QueueCpus<'_> {
    /// `rps` for a receive queue, `xps` for a transmit queue.
    fn steering(&self) -> &'static str {
        if self.queue.starts_with("tx-") {
            "xps"
        } else {
            "rps"
        }
    }

    /// The attribute below the interface's sysfs directory.
    fn attribute(&self) -> String {
        format!("queues/{}/{}_cpus", self.queue, self.steering())
    }

    fn rule(&self, value: &str) -> Rule {
        Rule {
            subsystem: "net".into(),
            matches: vec![("KERNEL".into(), self.interface.to_string())],
            attribute: self.attribute(),
            value: value.to_string(),
        }
    }
}

impl ChangeKind for QueueCpus<'_> {
    fn setting(&self) -> String {
        format!("{}:{}:{}", self.steering(), self.interface, self.queue)
    }

    fn describe(&self) -> String {
        format!(
            "echo '{}' > /sys/class/net/{}/{}",
            self.mask,
            self.interface,
            self.attribute()
        )
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        let rel = format!("sys/class/net/{}/{}", self.interface, self.attribute());
        let current = read_text(root, &rel)?.ok_or_else(|| {
            format!(
                "'/{rel}' does not exist: '{}' has no queue '{}' (ls /sys/class/net/{}/queues lists them)",
                self.interface, self.queue, self.interface
            )
        })?;
        let cpus = cpuset::parse_mask(self.mask)?;
        let count = cpuset::count(root)?;
        // An all-zero mask turns steering off, which is a valid thing to ask.
        if !cpus.is_empty() {
            cpuset::check(&cpus, count, self.mask)?;
        }
        let new = cpuset::format_mask(&cpus, count);
        let old = cpuset::parse_mask(&current).map(|c| cpuset::format_mask(&c, count));
        item.set_old_new(&old.unwrap_or(current), &new)?;
        item.network = true;
        item.runtime.push((rel, Some(new.clone())));
        let rule = self.rule(&new);
        item.persisted_in = Some(format!("/{}", udev_rules::OWNED_FILE));
        item.warnings
            .extend(udev_rules::overriding_hooks(root, &rule));
        item.persist = Persist::Udev(rule);
        Ok(())
    }

    fn as_applied(&self, new: &str) -> Option<Change> {
        Some(Change::QueueCpus {
            interface: self.interface.to_string(),
            queue: self.queue.to_string(),
            mask: new.to_string(),
        })
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        vec![
            ("interface", self.interface, true),
            ("queue", self.queue, true),
            ("mask", self.mask, true),
        ]
    }

    fn udev_line(&self) -> Option<String> {
        Some(self.rule(self.mask).line())
    }

    fn tuned(&self, profile: &mut Tuned) -> bool {
        profile.sysfs.push(format!(
            "/sys/class/net/{}/{}={}",
            self.interface,
            self.attribute(),
            self.mask
        ));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::plan::{build, manual, parse_set as plan_set};
    use crate::tune::test_tree::tree;

    #[test]
    fn set_syntax_names_the_queue_direction() {
        assert_eq!(
            parse_rps("eth0:rx-0", "3".into()),
            Some(Change::QueueCpus {
                interface: "eth0".into(),
                queue: "rx-0".into(),
                mask: "3".into(),
            })
        );
        assert!(parse_xps("eth0:tx-1", "1".into()).is_some());
        assert_eq!(parse_rps("eth0:tx-0", "3".into()), None);
        assert_eq!(parse_xps("eth0:rx-0", "3".into()), None);
        assert_eq!(parse_rps("eth0:rx-x", "3".into()), None);
        assert_eq!(parse_rps(":rx-0", "3".into()), None);
    }

    #[test]
    fn masks_are_checked_against_the_cpus_and_normalised() {
        let d = tree(&[
            ("sys/devices/system/cpu/possible", "0-3\n"),
            ("sys/class/net/eth0/queues/rx-0/rps_cpus", "0\n"),
            ("sys/class/net/eth0/queues/tx-0/xps_cpus", "0\n"),
        ]);
        let root = Root::tree(d.path()).unwrap();
        let plan = build(
            &root,
            [
                "rps:eth0:rx-0=0x3",
                "xps:eth0:tx-0=10",
                "rps:eth0:rx-7=1",
                "xps:eth0:tx-0=0",
            ]
            .iter()
            .map(|s| manual(plan_set(s).unwrap()))
            .collect(),
        );
        let i = &plan.items;
        assert_eq!(
            (i[0].old.as_deref(), i[0].new.as_deref()),
            (Some("0"), Some("3"))
        );
        assert!(i[0].network);
        assert_eq!(
            i[1].reason.as_deref(),
            Some("'10' names CPU 4, but this box has CPUs 0-3 only")
        );
        assert!(
            i[2].reason
                .as_deref()
                .unwrap()
                .contains("has no queue 'rx-7'")
        );
        assert_eq!(i[3].reason.as_deref(), Some("already '0'"));
        assert!(
            plan.files[0]
                .content
                .contains("SUBSYSTEM==\"net\", KERNEL==\"eth0\", ATTR{queues/rx-0/rps_cpus}=\"3\"")
        );
    }
}
