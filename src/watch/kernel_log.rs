//! Kernel-log events as counters: per class and device, the events since boot.
//! Live, /dev/kmsg stays open between samples and each sample reads only what
//! was written since the last (the first sample reads since boot: the
//! baseline); a replayed tree's `.nastune/kmsg` is counted whole.

use std::collections::BTreeMap;

use super::sample::{Reading, Sample};
use crate::probe::kernel_log::{self, Bounded, Class, Event, kmsg::Follower};
use crate::root::Root;

/// The counter of each class: `kernel_log_<class>`.
pub fn metric(class: Class) -> &'static str {
    const NAMES: [&str; 11] = [
        "kernel_log_ata_link_reset",
        "kernel_log_usb_reset",
        "kernel_log_uas_abort",
        "kernel_log_io_error",
        "kernel_log_fs_error",
        "kernel_log_oom",
        "kernel_log_undervoltage_throttle",
        "kernel_log_nic_link",
        "kernel_log_nic_driver_error",
        "kernel_log_md_raid",
        "kernel_log_crypto_driver",
    ];
    let i = Class::ALL.iter().position(|c| *c == class).unwrap_or(0);
    NAMES[i]
}

/// Kernel-log series exist only once a line was seen, so one that appears
/// after the first sample counts from 0, not from a new baseline.
pub fn counted_from_zero(metric: &str) -> bool {
    metric.starts_with("kernel_log_")
}

#[derive(Default)]
pub struct KernelLogCounter {
    follower: Option<Result<Follower, String>>,
    counts: BTreeMap<(Class, String), u64>,
}

impl KernelLogCounter {
    /// Adds the kernel-log counters to `s`: live from /dev/kmsg, or from the tree.
    pub fn add(&mut self, root: &Root, s: &mut Sample) {
        let read = if root.is_live() {
            let follower = self.follower.get_or_insert_with(Follower::open);
            let mut read = Bounded::default();
            match follower {
                Ok(f) => f.drain(&mut read).map(|()| read),
                Err(e) => Err(e.clone()),
            }
        } else {
            self.counts.clear();
            root.read_string(".nastune/kmsg")
                .map(|t| kernel_log::parse_dmesg(&t))
                .map_err(|e| e.to_string())
        };
        match read {
            Ok(read) => {
                for e in read.lines.iter().filter_map(Event::of) {
                    *self
                        .counts
                        .entry((e.class, e.device.unwrap_or_default()))
                        .or_default() += 1;
                }
            }
            Err(e) if root.is_live() || !e.contains("does not exist") => {
                s.problems.push(format!("kernel log: {e}"))
            }
            Err(_) => {}
        }
        for ((class, device), n) in &self.counts {
            s.counters.push(Reading {
                metric: metric(*class),
                // Lines that name no device (OOM, under-voltage) have no label.
                labels: if device.is_empty() {
                    Vec::new()
                } else {
                    vec![("device", device.clone())]
                },
                identity: format!("kmsg {device}"),
                stable_identity: format!("kmsg {device}"),
                boot_scoped: true,
                resets_only: true,
                value: *n,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_follow_the_class_names() {
        for c in Class::ALL {
            assert_eq!(metric(c), format!("kernel_log_{}", c.name()));
        }
    }

    #[test]
    fn a_tree_is_counted_whole_each_time() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".nastune")).unwrap();
        std::fs::write(
            dir.path().join(".nastune/kmsg"),
            "[ 1.0] ata1: hard resetting link\n[ 2.0] ata1: hard resetting link\n[ 3.0] random: crng init done\n",
        )
        .unwrap();
        let root = Root::tree(dir.path()).unwrap();
        let mut c = KernelLogCounter::default();
        for _ in 0..2 {
            let mut s = crate::watch::sample::read_replayed(&root, Some(0.0)).unwrap();
            c.add(&root, &mut s);
            let r: Vec<_> = s
                .counters
                .iter()
                .filter(|r| r.metric.starts_with("kernel_log_"))
                .collect();
            assert_eq!(r.len(), 1);
            assert_eq!((r[0].metric, r[0].value), ("kernel_log_ata_link_reset", 2));
            assert_eq!(r[0].key(), "kernel_log_ata_link_reset{device=\"ata1\"}");
        }
    }

    fn sample(time: f64, class: Class, n: u64) -> Sample {
        Sample {
            time_unix_s: time,
            boot_id: "b".into(),
            counters: vec![Reading {
                metric: metric(class),
                labels: vec![("device", "x".into())],
                identity: "kmsg x".into(),
                stable_identity: "kmsg x".into(),
                boot_scoped: true,
                resets_only: true,
                value: n,
            }],
            gauges: Vec::new(),
            problems: Vec::new(),
            smart_read: false,
        }
    }

    fn alerts(class: Class, values: &[u64]) -> Vec<String> {
        let mut w = crate::watch::Watcher::new(Default::default(), Default::default());
        values
            .iter()
            .enumerate()
            .flat_map(|(i, v)| w.step(sample(i as f64 * 60.0, class, *v)).alerts)
            .map(|a| a.series)
            .collect()
    }

    #[test]
    fn a_new_problem_line_alerts_at_once_a_link_down_only_when_repeated() {
        // The first sample is the baseline (events before watching began).
        assert!(alerts(Class::IoError, &[4]).is_empty());
        // A series first seen after watching began counts from 0.
        let mut w = crate::watch::Watcher::new(Default::default(), Default::default());
        let mut empty = sample(0.0, Class::Oom, 0);
        empty.counters.clear();
        assert!(w.step(empty).alerts.is_empty());
        let a = w.step(sample(60.0, Class::Oom, 1)).alerts;
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!(a[0].series, "kernel_log_oom{device=\"x\"}");
        assert_eq!(
            alerts(Class::IoError, &[4, 5]),
            vec!["kernel_log_io_error{device=\"x\"}"]
        );
        assert!(alerts(Class::NicLink, &[0, 1, 1, 2]).is_empty());
        assert_eq!(alerts(Class::NicLink, &[0, 1, 2, 3]).len(), 1);
    }
}
