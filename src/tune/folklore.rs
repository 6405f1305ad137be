//! The folklore `tune try --folklore` measures: the settings tuning guides and
//! profiles have recommended for years, each as one typed recipe (the change,
//! who recommends it, what holds on a 6.x kernel and Samba 4.x, the judge
//! that exercises it, and when it applies to this box). `now` cites the
//! fact check of 2011-2021 NAS advice against 6.x kernels and Samba 4.x that
//! the advise rules flagging these values were written from.
//! Only changes `tune try` can switch at runtime are here: sysctls, sysfs
//! attributes and smb.conf parameters.

use serde::{Deserialize, Serialize};

use crate::advise::Change;
use crate::root::Root;
use crate::tune::kinds::sysctl::sysctl_path;
use crate::tune::trial::TryReport;
use crate::tune::trial::judge::Judge;
use crate::tune::trial::workload::WorkloadKind;

/// What a recipe changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Sysctl(&'static str),
    /// `sys/block/DEV/queue/ATTR` of every block device that has it.
    BlockQueue(&'static str),
    /// `sys/class/net/IFACE/ATTR` of every network interface but `lo`.
    NetDevice(&'static str),
    /// A `[global]` smb.conf parameter.
    SmbGlobal(&'static str),
}

/// Which judge exercises a recipe's change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Needs {
    /// Reads through the page cache (read-ahead): buffered-seq-read.
    BufferedRead,
    /// Writes through the page cache (dirty limits): rand-write-fsync,
    /// buffered-seq-write, or an
    /// smb judge (smbd writes through this box's page cache).
    BufferedWrite,
    /// The page cache at all (reclaim balance): a buffered disk workload.
    PageCache,
    /// Any I/O on the changed device (the I/O scheduler).
    Disk,
    /// TCP traffic: a net, smb or http judge.
    Net,
    /// This box's smbd: an smb judge.
    Smb,
}

impl Needs {
    /// Why `judge` cannot exercise this, or `None` when it can (the device or
    /// interface it passes through is checked by the trial itself).
    pub fn unmet_by(self, judge: &Judge, smb_read: bool) -> Option<&'static str> {
        let disk = match judge {
            Judge::Disk(w) => Some(w.kind),
            _ => None,
        };
        let ok = match self {
            Needs::BufferedRead => disk == Some(WorkloadKind::BufferedSeqRead),
            Needs::BufferedWrite => {
                matches!(
                    disk,
                    Some(WorkloadKind::RandWriteFsync | WorkloadKind::BufferedSeqWrite)
                ) || (matches!(judge, Judge::Smb(_)) && !smb_read)
            }
            Needs::PageCache => matches!(
                disk,
                Some(
                    WorkloadKind::BufferedSeqRead
                        | WorkloadKind::RandWriteFsync
                        | WorkloadKind::BufferedSeqWrite
                )
            ),
            Needs::Disk => disk.is_some(),
            Needs::Net => !matches!(judge, Judge::Disk(_)),
            Needs::Smb => matches!(judge, Judge::Smb(_)),
        };
        (!ok).then(|| self.wants())
    }

    /// The judges that exercise it, for a skip reason.
    pub fn wants(self) -> &'static str {
        match self {
            Needs::BufferedRead => {
                "read-ahead acts on buffered reads only: judge it with buffered-seq-read:PATH"
            }
            Needs::BufferedWrite => {
                "dirty limits act on buffered writes only: judge it with rand-write-fsync:DIR, \
                 buffered-seq-write:DIR or an smb://HOST/SHARE write"
            }
            Needs::PageCache => {
                "it acts on the page cache: judge it with buffered-seq-read:PATH or \
                 rand-write-fsync:DIR"
            }
            Needs::Disk => "it acts on block I/O: judge it with a disk workload on that device",
            Needs::Net => "it acts on TCP: judge it with net:HOST, smb://HOST/SHARE or http:URL",
            Needs::Smb => "it acts on this box's Samba: judge it with smb://127.0.0.1/SHARE",
        }
    }
}

/// When a recipe applies besides "the setting exists and differs".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Differs,
    /// Only raises the value (TuneD's `>N`): a larger one is left alone.
    Raises,
    /// Only while this sysctl reads 0: writing a `*_ratio` zeroes its `*_bytes`
    /// twin, which reverting the ratio would not bring back.
    Zero(&'static str),
}

/// One well-known recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recipe {
    pub name: &'static str,
    /// The advise rule that flags this setting on a box that has it.
    pub rule: Option<&'static str>,
    pub target: Target,
    pub value: &'static str,
    pub when: When,
    pub needs: Needs,
    /// Who recommends it.
    pub source: &'static str,
    /// What holds on a 6.x kernel / Samba 4.x, with its reference.
    pub now: &'static str,
}

/// Every recipe, in the order they are tried.
pub const RECIPES: &[Recipe] = &[
    Recipe {
        name: "read-ahead-512k",
        rule: Some("readahead-in-rc-local"),
        target: Target::BlockQueue("read_ahead_kb"),
        value: "512",
        when: When::Raises,
        needs: Needs::BufferedRead,
        source: "NAS guides: 'hdparm -a 1024' (1024 sectors = 512 KiB)",
        now: "partly: the kernel already picks max(2 x io_opt, 128 KiB); the value is recomputed \
              when queue limits change (ABI sysfs-block read_ahead_kb; hdparm(8))",
    },
    Recipe {
        name: "read-ahead-4m",
        rule: Some("readahead-oversized"),
        target: Target::BlockQueue("read_ahead_kb"),
        value: "4096",
        when: When::Raises,
        needs: Needs::BufferedRead,
        source: "TuneD throughput-performance profile: readahead=>4096 \
                 (https://github.com/redhat-performance/tuned)",
        now: "keep the smallest value that saturates the link; at most 512 KiB on 128-256 MiB \
              boards (block/blk-settings.c)",
    },
    Recipe {
        name: "scheduler-none",
        rule: None,
        target: Target::BlockQueue("scheduler"),
        value: "none",
        when: When::Differs,
        needs: Needs::Disk,
        source: "guides: 'noop for SSD/flash' (noop is gone; none is its blk-mq successor)",
        now: "keep the default (mq-deadline on single-queue devices); none on flash only after \
              an A/B test (https://docs.kernel.org/block/switching-sched.html)",
    },
    Recipe {
        name: "scheduler-mq-deadline",
        rule: Some("scheduler-legacy-name"),
        target: Target::BlockQueue("scheduler"),
        value: "mq-deadline",
        when: When::Differs,
        needs: Needs::Disk,
        source: "guides: 'I/O scheduler deadline via udev' (deadline is an alias of mq-deadline)",
        now: "already the kernel's default for SATA/USB/SD/eMMC (block/elevator.c)",
    },
    Recipe {
        name: "scheduler-bfq",
        rule: Some("bfq-on-flash"),
        target: Target::BlockQueue("scheduler"),
        value: "bfq",
        when: When::Differs,
        needs: Needs::Disk,
        source: "guides: 'cfq/bfq for spinning disks'",
        now: "only for HDDs when interactive latency matters and the CPU can pay \
              (https://docs.kernel.org/block/bfq-iosched.html)",
    },
    Recipe {
        name: "dirty-ratio-40",
        rule: Some("dirty-limit-for-usb-disk"),
        target: Target::Sysctl("vm.dirty_ratio"),
        value: "40",
        when: When::Zero("vm.dirty_bytes"),
        needs: Needs::BufferedWrite,
        source: "TuneD throughput-performance profile: vm.dirty_ratio = 40",
        now: "size writeback in bytes, a few seconds of the disk's throughput on slow USB disks \
              (https://docs.kernel.org/admin-guide/sysctl/vm.html)",
    },
    Recipe {
        name: "dirty-background-ratio-10",
        rule: Some("dirty-limit-for-usb-disk"),
        target: Target::Sysctl("vm.dirty_background_ratio"),
        value: "10",
        when: When::Zero("vm.dirty_background_bytes"),
        needs: Needs::BufferedWrite,
        source: "TuneD throughput-performance profile: vm.dirty_background_ratio = 10",
        now: "size it in bytes (vm.dirty_background_bytes), a few seconds of the disk's \
              throughput (https://docs.kernel.org/admin-guide/sysctl/vm.html)",
    },
    Recipe {
        name: "swappiness-10",
        rule: Some("swappiness-for-swap-kind"),
        target: Target::Sysctl("vm.swappiness"),
        value: "10",
        when: When::Differs,
        needs: Needs::PageCache,
        source: "TuneD throughput-performance profile and NAS guides: vm.swappiness = 10",
        now: "depends on the swap: 100-180 for zram, 10-30 for swap on flash \
              (https://docs.kernel.org/admin-guide/sysctl/vm.html)",
    },
    Recipe {
        name: "core-rmem-max-2m",
        rule: Some("core-buffer-max-raised"),
        target: Target::Sysctl("net.core.rmem_max"),
        value: "2097152",
        when: When::Raises,
        needs: Needs::Net,
        source: "gigabit guides: net.core.rmem_max = 2 MiB",
        now: "no: it caps only an explicit SO_RCVBUF, TCP autotuning ignores it \
              (https://docs.kernel.org/networking/ip-sysctl.html)",
    },
    Recipe {
        name: "core-wmem-max-2m",
        rule: Some("core-buffer-max-raised"),
        target: Target::Sysctl("net.core.wmem_max"),
        value: "2097152",
        when: When::Raises,
        needs: Needs::Net,
        source: "gigabit guides: net.core.wmem_max = 2 MiB",
        now: "no: it caps only an explicit SO_SNDBUF (ip-sysctl.rst)",
    },
    Recipe {
        name: "tcp-rmem-2m",
        rule: Some("tcp-buffer-max-lowered"),
        target: Target::Sysctl("net.ipv4.tcp_rmem"),
        value: "4096 87380 2097152",
        when: When::Differs,
        needs: Needs::Net,
        source: "gigabit guides: 'TCP maximums can be no larger than core': tcp_rmem max = 2 MiB",
        now: "no: the default (up to 6 MiB, scaled by RAM) is far above a LAN's BDP; a 2 MiB \
              max only lowers it (ip-sysctl.rst tcp_rmem)",
    },
    Recipe {
        name: "tcp-wmem-2m",
        rule: Some("tcp-buffer-max-lowered"),
        target: Target::Sysctl("net.ipv4.tcp_wmem"),
        value: "4096 65536 2097152",
        when: When::Differs,
        needs: Needs::Net,
        source: "gigabit guides: tcp_wmem max = 2 MiB",
        now: "no: the default (up to 4 MiB) already covers a LAN (ip-sysctl.rst tcp_wmem)",
    },
    Recipe {
        name: "txqueuelen-10000",
        rule: Some("txqueuelen-large"),
        target: Target::NetDevice("tx_queue_len"),
        value: "10000",
        when: When::Differs,
        needs: Needs::Net,
        source: "forum guides: 'ifconfig eth0 txqueuelen 10000' (or 5000)",
        now: "no: it adds bufferbloat; BQL, TSQ and fq_codel make 1000 enough (systemd \
              50-default.conf; TuneD never sets it)",
    },
    Recipe {
        name: "smb-socket-options",
        rule: Some("smb-socket-buffer-sizes"),
        target: Target::SmbGlobal("socket options"),
        value: "TCP_NODELAY SO_RCVBUF=131072 SO_SNDBUF=131072",
        when: When::Differs,
        needs: Needs::Smb,
        source: "'fast Samba' guides: socket options = TCP_NODELAY SO_RCVBUF=... SO_SNDBUF=...",
        now: "no: fixed socket buffers turn TCP autotuning off; leave it unset (smb.conf(5) \
              socket options)",
    },
    Recipe {
        name: "smb-use-sendfile",
        rule: Some("smb-use-sendfile"),
        target: Target::SmbGlobal("use sendfile"),
        value: "yes",
        when: When::Differs,
        needs: Needs::Smb,
        source: "'fast Samba' guides: use sendfile = yes",
        now: "conditional: the default is no; worth it only as a measured A/B test \
              (https://www.samba.org/samba/docs/current/man-html/smb.conf.5.html)",
    },
    Recipe {
        name: "smb-aio-read-size",
        rule: Some("smb-aio-size-threshold"),
        target: Target::SmbGlobal("aio read size"),
        value: "16384",
        when: When::Differs,
        needs: Needs::Smb,
        source: "'fast Samba' guides: aio read size = 16384",
        now: "changed: the default is 1 (always asynchronous); 0 and 1 are the only sensible \
              values (smb.conf(5))",
    },
    Recipe {
        name: "smb-aio-write-size",
        rule: Some("smb-aio-size-threshold"),
        target: Target::SmbGlobal("aio write size"),
        value: "16384",
        when: When::Differs,
        needs: Needs::Smb,
        source: "'fast Samba' guides: aio write size = 16384",
        now: "changed: the default is 1 (always asynchronous) (smb.conf(5))",
    },
    Recipe {
        name: "smb-min-receivefile-size",
        rule: Some("smb-min-receivefile-size"),
        target: Target::SmbGlobal("min receivefile size"),
        value: "16384",
        when: When::Differs,
        needs: Needs::Smb,
        source: "'fast Samba' guides: min receivefile size = 16384",
        now: "niche: SMBwriteX only, no effect on signed connections; leave it at 0 \
              (smb.conf(5))",
    },
];

/// One recipe on one device or interface (or the box).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub recipe: &'static Recipe,
    /// The device or interface (empty for a sysctl or smb.conf recipe).
    pub on: String,
    pub change: Change,
}

impl Candidate {
    /// Why it does not apply to `root` now, before any plan is built (the
    /// plan adds its own reasons: a missing setting, the value already there,
    /// a scheduler this kernel lacks).
    pub fn skip(&self, root: &Root) -> Option<String> {
        self.recipe.skip(root, &self.on)
    }
}

impl Recipe {
    fn change(&self, what: &str) -> Change {
        let value = self.value.to_string();
        match self.target {
            Target::Sysctl(key) => Change::Sysctl {
                key: key.into(),
                value,
            },
            Target::BlockQueue(attr) => Change::SysfsAttribute {
                path: format!("block/{what}/queue/{attr}"),
                value,
            },
            Target::NetDevice(attr) => Change::SysfsAttribute {
                path: format!("class/net/{what}/{attr}"),
                value,
            },
            Target::SmbGlobal(parameter) => Change::SmbConf {
                section: "global".into(),
                parameter: parameter.into(),
                value: Some(value),
            },
        }
    }

    /// The file (relative to the root) whose current value `When` looks at.
    fn current_path(&self, what: &str) -> Option<String> {
        match self.target {
            Target::Sysctl(key) => Some(sysctl_path(key)),
            Target::BlockQueue(attr) => Some(format!("sys/block/{what}/queue/{attr}")),
            Target::NetDevice(attr) => Some(format!("sys/class/net/{what}/{attr}")),
            Target::SmbGlobal(_) => None,
        }
    }

    /// Why it does not apply (beyond what the plan itself says: missing
    /// setting, already the value, a name the kernel lacks).
    fn skip(&self, root: &Root, what: &str) -> Option<String> {
        match self.when {
            When::Differs => None,
            When::Raises => {
                let now = root.read_value(&self.current_path(what)?).ok()?;
                let above = |s: &str| s.split_whitespace().next()?.parse::<u64>().ok();
                match (above(&now), above(self.value)) {
                    (Some(n), Some(v)) if n >= v => Some(format!(
                        "already '{now}', at least the recipe's '{}' (it only raises it)",
                        self.value
                    )),
                    _ => None,
                }
            }
            When::Zero(key) => {
                let now = root.read_value(&sysctl_path(key)).ok()?;
                (now.trim() != "0").then(|| {
                    format!(
                        "'{key}' is '{now}': writing the ratio would zero it, and reverting the \
                         ratio would not bring it back"
                    )
                })
            }
        }
    }

    /// This recipe on this box: one candidate per device or interface it
    /// targets (none when the box has none).
    pub fn candidates(&'static self, root: &Root) -> Vec<Candidate> {
        let targets: Vec<String> = match self.target {
            Target::Sysctl(_) | Target::SmbGlobal(_) => vec![String::new()],
            Target::BlockQueue(attr) => root
                .read_dir_optional("sys/block")
                .unwrap_or_default()
                .into_iter()
                .filter(|d| root.exists(&format!("sys/block/{d}/queue/{attr}")))
                .collect(),
            Target::NetDevice(attr) => root
                .read_dir_optional("sys/class/net")
                .unwrap_or_default()
                .into_iter()
                .filter(|d| d != "lo" && root.exists(&format!("sys/class/net/{d}/{attr}")))
                .collect(),
        };
        targets
            .iter()
            .map(|t| Candidate {
                recipe: self,
                change: self.change(t),
                on: t.clone(),
            })
            .collect()
    }
}

/// Every recipe's candidates on this box, in registry order; a recipe with
/// no device to act on comes back as its name and why.
pub fn candidates(root: &Root) -> (Vec<Candidate>, Vec<(&'static Recipe, String)>) {
    let mut out = Vec::new();
    let mut absent = Vec::new();
    for r in RECIPES {
        let c = r.candidates(root);
        if c.is_empty() {
            let why = match r.target {
                Target::BlockQueue(attr) => format!("no block device here has queue/{attr}"),
                Target::NetDevice(attr) => format!("no network interface here has {attr}"),
                Target::Sysctl(_) | Target::SmbGlobal(_) => "nothing to change here".into(),
            };
            absent.push((r, why));
        }
        out.extend(c);
    }
    (out, absent)
}

/// One row of the folklore table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub recipe: String,
    /// The advise rule that flags the setting, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Canonical setting name (`sysctl:vm.swappiness`); absent when the
    /// recipe found nothing on this box to act on.
    pub setting: Option<String>,
    /// The device or interface it was tried on, for a per-device recipe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    pub old: Option<String>,
    pub new: String,
    pub source: String,
    pub now: String,
    #[serde(flatten)]
    pub result: RowResult,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RowResult {
    /// Tried: the trial as stored in its `tune-try` run.
    Measured {
        trial: Box<TryReport>,
    },
    Skipped {
        reason: String,
    },
}

/// What `tune try --folklore` prints and returns as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FolkloreReport {
    /// Every judge given, as written.
    pub judges: Vec<String>,
    /// Whether recipes that helped were kept (`--keep-helpful`).
    pub keep_helpful: bool,
    pub rows: Vec<Row>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::test_tree::tree;

    fn judge(s: &str) -> Judge {
        s.parse().unwrap()
    }

    #[test]
    fn names_are_unique_and_every_recipe_says_where_it_comes_from() {
        let mut names: Vec<&str> = RECIPES.iter().map(|r| r.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), RECIPES.len());
        let rules: Vec<&str> = crate::advise::rules().iter().map(|r| r.info.id).collect();
        for r in RECIPES {
            assert!(!r.source.is_empty() && !r.now.is_empty(), "{}", r.name);
            if let Some(id) = r.rule {
                assert!(rules.contains(&id), "{}: no advise rule '{id}'", r.name);
            }
        }
    }

    #[test]
    fn each_recipe_needs_a_judge_that_exercises_it() {
        let buffered = judge("buffered-seq-read:/srv/f");
        let direct = judge("seq-read:/srv/f");
        let fsync = judge("rand-write-fsync:/srv");
        let smb = judge("smb://127.0.0.1/data");
        let net = judge("net:10.0.0.2");
        assert_eq!(Needs::BufferedRead.unmet_by(&buffered, false), None);
        assert_eq!(
            Needs::BufferedRead.unmet_by(&direct, false),
            Some("read-ahead acts on buffered reads only: judge it with buffered-seq-read:PATH")
        );
        assert_eq!(Needs::BufferedWrite.unmet_by(&fsync, false), None);
        assert_eq!(Needs::BufferedWrite.unmet_by(&smb, false), None);
        assert!(Needs::BufferedWrite.unmet_by(&smb, true).is_some());
        assert!(Needs::BufferedWrite.unmet_by(&buffered, false).is_some());
        assert_eq!(Needs::PageCache.unmet_by(&buffered, false), None);
        assert!(Needs::PageCache.unmet_by(&direct, false).is_some());
        assert_eq!(Needs::Disk.unmet_by(&direct, false), None);
        assert!(Needs::Disk.unmet_by(&net, false).is_some());
        assert_eq!(Needs::Net.unmet_by(&net, false), None);
        assert_eq!(Needs::Net.unmet_by(&smb, false), None);
        assert!(Needs::Net.unmet_by(&buffered, false).is_some());
        assert_eq!(Needs::Smb.unmet_by(&smb, true), None);
        assert!(Needs::Smb.unmet_by(&net, false).is_some());
    }

    fn recipe(name: &str) -> &'static Recipe {
        RECIPES.iter().find(|r| r.name == name).unwrap()
    }

    #[test]
    fn candidates_follow_the_box() {
        let d = tree(&[
            ("sys/block/sda/queue/read_ahead_kb", "128\n"),
            ("sys/block/sda/queue/scheduler", "[mq-deadline] none\n"),
            ("sys/block/md0/queue/read_ahead_kb", "8192\n"),
            ("sys/class/net/lo/tx_queue_len", "1000\n"),
            ("sys/class/net/eth0/tx_queue_len", "1000\n"),
            ("proc/sys/vm/dirty_ratio", "0\n"),
            ("proc/sys/vm/dirty_bytes", "67108864\n"),
            ("proc/sys/vm/dirty_background_ratio", "10\n"),
            ("proc/sys/vm/dirty_background_bytes", "0\n"),
        ]);
        let root = Root::tree(d.path()).unwrap();
        let ra = recipe("read-ahead-4m").candidates(&root);
        let skips: Vec<Option<String>> = ra.iter().map(|c| c.skip(&root)).collect();
        let on: Vec<(&Change, Option<&str>)> = ra
            .iter()
            .zip(&skips)
            .map(|(c, s)| (&c.change, s.as_deref()))
            .collect();
        assert_eq!(
            on,
            [
                (
                    &Change::SysfsAttribute {
                        path: "block/md0/queue/read_ahead_kb".into(),
                        value: "4096".into()
                    },
                    Some("already '8192', at least the recipe's '4096' (it only raises it)")
                ),
                (
                    &Change::SysfsAttribute {
                        path: "block/sda/queue/read_ahead_kb".into(),
                        value: "4096".into()
                    },
                    None
                ),
            ]
        );
        // md0 has no scheduler file; lo is never a target.
        assert_eq!(recipe("scheduler-bfq").candidates(&root).len(), 1);
        let tx = recipe("txqueuelen-10000").candidates(&root);
        assert_eq!(tx.len(), 1);
        assert_eq!(
            tx[0].change,
            Change::SysfsAttribute {
                path: "class/net/eth0/tx_queue_len".into(),
                value: "10000".into()
            }
        );
        // The ratio is 0 because dirty_bytes rules: writing it would lose that.
        let dirty = recipe("dirty-ratio-40").candidates(&root);
        assert_eq!(
            dirty[0].skip(&root).as_deref(),
            Some(
                "'vm.dirty_bytes' is '67108864': writing the ratio would zero it, and reverting \
                 the ratio would not bring it back"
            )
        );
        assert_eq!(
            recipe("dirty-background-ratio-10").candidates(&root)[0].skip(&root),
            None
        );
        let (all, absent) = candidates(&root);
        assert!(all.iter().any(|c| c.recipe.name == "smb-use-sendfile"));
        assert!(absent.is_empty(), "{absent:?}");
        let empty = tree(&[("proc/sys/vm/swappiness", "60\n")]);
        let (_, absent) = candidates(&Root::tree(empty.path()).unwrap());
        let why: Vec<(&str, &str)> = absent.iter().map(|(r, w)| (r.name, w.as_str())).collect();
        assert!(
            why.contains(&("scheduler-none", "no block device here has queue/scheduler")),
            "{why:?}"
        );
    }
}
