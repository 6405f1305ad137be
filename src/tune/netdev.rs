//! Network device settings by the names `advise` uses in
//! `Change::Ethtool { interface, setting, value }`: ring sizes `rx` and `tx`,
//! offload features by their kernel names as `ethtool -k` lists them
//! (`rx-gro`, `tx-tcp-segmentation`; a few one-to-one short names such as
//! `gro` are accepted too), `mtu`, `txqueuelen`, interrupt coalescing by
//! `ethtool -C`'s names (`rx-usecs`, `rx-frames`, `tx-usecs`, `tx-frames`,
//! `adaptive-rx`, `adaptive-tx`), and `qdisc` (the root qdisc's
//! kind, through rtnetlink). Through the same ioctls as
//! the probe ([`crate::probe::ethtool`]), so it works on old vendor kernels, in
//! the caller's network namespace.

use std::io;

use crate::probe::ethtool::{COALESCE_SETTINGS, Request, Socket};
use crate::probe::qdisc::RootQdisc;

#[derive(Debug, thiserror::Error)]
pub enum NetdevError {
    #[error("no network interface '{interface}' here; 'ip link' lists them")]
    NoInterface { interface: String },
    #[error("'{interface}': {reason}")]
    BadInterface { interface: String, reason: String },
    #[error(
        "unknown setting '{setting}' for '{interface}'; use rx, tx, mtu, txqueuelen, qdisc, a coalescing setting (rx-usecs, rx-frames, tx-usecs, tx-frames, adaptive-rx, adaptive-tx) or a feature name from 'ethtool -k {interface}'"
    )]
    UnknownSetting { interface: String, setting: String },
    #[error("'{setting}' cannot be set to '{value}' on '{interface}': {reason}")]
    BadValue {
        interface: String,
        setting: String,
        value: String,
        reason: String,
    },
    #[error("the driver of '{interface}' does not support {what} (EOPNOTSUPP)")]
    Unsupported { interface: String, what: String },
    #[error(
        "feature '{feature}' of '{interface}' is fixed by the driver ('[fixed]' in ethtool -k)"
    )]
    Fixed { interface: String, feature: String },
    #[error("'{interface}' has '{setting}' at '{now}' after being asked for '{wanted}'{hint}")]
    NotTaken {
        interface: String,
        setting: String,
        wanted: String,
        now: String,
        /// Why that may be, when there is a likely reason.
        hint: &'static str,
    },
    #[error("{what} on '{interface}' failed: {cause}")]
    Io {
        interface: String,
        what: String,
        cause: io::Error,
    },
}

/// What a setting name refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Setting {
    RxRing,
    TxRing,
    Mtu,
    TxQueueLen,
    /// The root qdisc's kind (rtnetlink, not ethtool: `tc qdisc replace … root`).
    Qdisc,
    /// One of [`COALESCE_SETTINGS`] (ETHTOOL_GCOALESCE/SCOALESCE).
    Coalesce(&'static str),
    Feature(String),
}

/// Root qdiscs the kernel attaches by itself; restoring one deletes the root
/// first, so the kernel's own default (with its handle 0:) comes back.
const DEFAULT_ROOTS: [&str; 3] = ["noqueue", "pfifo_fast", "mq"];

/// ethtool's short names with exactly one kernel feature behind them. Group
/// names (`tso`, `sg`, `tx`) stand for several features and are not taken, and
/// `rx` is the ring.
const FEATURE_ALIASES: &[(&str, &str)] = &[
    ("gro", "rx-gro"),
    ("generic-receive-offload", "rx-gro"),
    ("lro", "rx-lro"),
    ("large-receive-offload", "rx-lro"),
    ("gso", "tx-generic-segmentation"),
    ("generic-segmentation-offload", "tx-generic-segmentation"),
    ("rx-checksumming", "rx-checksum"),
    ("rxhash", "rx-hashing"),
    ("receive-hashing", "rx-hashing"),
    ("ntuple", "rx-ntuple-filter"),
    ("ntuple-filters", "rx-ntuple-filter"),
];

fn parse_setting(name: &str) -> Setting {
    match name {
        "rx" => Setting::RxRing,
        "tx" => Setting::TxRing,
        "mtu" => Setting::Mtu,
        "txqueuelen" | "tx_queue_len" => Setting::TxQueueLen,
        "qdisc" => Setting::Qdisc,
        other => match COALESCE_SETTINGS.iter().find(|c| **c == other) {
            Some(c) => Setting::Coalesce(c),
            None => Setting::Feature(other.to_string()),
        },
    }
}

/// The kernel's name for a feature setting, if the driver has it.
fn feature_index(names: &[String], wanted: &str) -> Option<usize> {
    names.iter().position(|n| n == wanted).or_else(|| {
        let (_, kernel) = FEATURE_ALIASES.iter().find(|(a, _)| *a == wanted)?;
        names.iter().position(|n| n == kernel)
    })
}

/// An open request for one interface.
struct Device<'a> {
    interface: &'a str,
    req: Request<'a>,
}

impl Device<'_> {
    fn io(&self, what: &str, e: io::Error) -> NetdevError {
        match e.raw_os_error() {
            Some(libc::ENODEV) => NetdevError::NoInterface {
                interface: self.interface.to_string(),
            },
            Some(libc::EOPNOTSUPP) => NetdevError::Unsupported {
                interface: self.interface.to_string(),
                what: what.to_string(),
            },
            _ => NetdevError::Io {
                interface: self.interface.to_string(),
                what: what.to_string(),
                cause: e,
            },
        }
    }

    fn rings(&self) -> Result<crate::probe::ethtool::Rings, NetdevError> {
        self.req.rings().map_err(|e| self.io("ring sizes", e))
    }

    fn features(
        &self,
    ) -> Result<(Vec<String>, Vec<crate::probe::ethtool::FeaturesBlock>), NetdevError> {
        self.req
            .feature_bits()
            .map_err(|e| self.io("offload features", e))
    }

    fn int(&self, request: libc::c_ulong, what: &str) -> Result<i32, NetdevError> {
        self.req.get_int(request).map_err(|e| self.io(what, e))
    }

    fn ifindex(&self) -> Result<i32, NetdevError> {
        let name =
            std::ffi::CString::new(self.interface).map_err(|_| NetdevError::NoInterface {
                interface: self.interface.to_string(),
            })?;
        // SAFETY: name is a valid NUL-terminated string.
        match unsafe { libc::if_nametoindex(name.as_ptr()) } {
            0 => Err(NetdevError::NoInterface {
                interface: self.interface.to_string(),
            }),
            i => Ok(i as i32),
        }
    }

    /// The root qdisc as dumped; `None` when the kernel shows none (noqueue).
    fn root_qdisc(&self) -> Result<Option<RootQdisc>, NetdevError> {
        let ifindex = self.ifindex()?;
        let roots = crate::probe::qdisc::live_root_qdiscs().map_err(|e| NetdevError::Io {
            interface: self.interface.to_string(),
            what: "reading the root qdisc".into(),
            cause: io::Error::other(e),
        })?;
        Ok(roots.into_iter().find(|q| q.ifindex == ifindex))
    }

    fn qdisc(&self) -> Result<String, NetdevError> {
        Ok(self
            .root_qdisc()?
            .map_or_else(|| "noqueue".to_string(), |q| q.kind))
    }

    fn set_qdisc(&self, kind: &str) -> Result<(), NetdevError> {
        let ifindex = self.ifindex()?;
        let change = |k: Option<&str>| {
            crate::probe::qdisc::change_root_qdisc(ifindex, k).map_err(|e| match e.raw_os_error() {
                Some(libc::ENOENT) => NetdevError::BadValue {
                    interface: self.interface.to_string(),
                    setting: "qdisc".into(),
                    value: kind.to_string(),
                    reason: "this kernel has no such qdisc (module not built or not loaded)".into(),
                },
                _ => self.io("changing the root qdisc", e),
            })
        };
        if DEFAULT_ROOTS.contains(&kind) {
            // Deleting a default root fails (ENOENT, EINVAL): nothing to delete.
            let _ = change(None);
            if self.qdisc()? == kind {
                return Ok(());
            }
        }
        change(Some(kind))
    }
}

fn with_device<T>(
    interface: &str,
    f: impl FnOnce(&Device<'_>) -> Result<T, NetdevError>,
) -> Result<T, NetdevError> {
    let bad = |reason: String| NetdevError::BadInterface {
        interface: interface.to_string(),
        reason,
    };
    let sock = Socket::new().map_err(bad)?;
    let req = Request::new(&sock, interface).map_err(bad)?;
    let dev = Device { interface, req };
    // The MTU ioctl works on every interface: use it to tell "no such interface"
    // apart from "the driver lacks this".
    dev.int(libc::SIOCGIFMTU, "reading the MTU")?;
    f(&dev)
}

/// The number `ETHTOOL_SCOALESCE` takes for a coalescing setting: µs or
/// frames as a whole number, adaptive-rx/tx as on (1) or off (0).
fn coalesce_value(setting: &str, value: &str) -> Result<u32, String> {
    let value = value.trim();
    if setting.starts_with("adaptive-") {
        return match value {
            "on" => Ok(1),
            "off" => Ok(0),
            _ => Err("use 'on' or 'off'".into()),
        };
    }
    let unit = if setting.ends_with("usecs") {
        "microseconds"
    } else {
        "frames"
    };
    value
        .parse()
        .map_err(|_| format!("use a whole number of {unit}, e.g. 50"))
}

fn on_off(active: bool) -> String {
    if active { "on" } else { "off" }.to_string()
}

/// The current value of `setting` on `interface`, as `set` takes it: ring sizes
/// and lengths as numbers, features as `on`/`off`.
pub fn get(interface: &str, setting: &str) -> Result<String, NetdevError> {
    with_device(interface, |dev| match parse_setting(setting) {
        Setting::RxRing => Ok(dev.rings()?.rx_pending.to_string()),
        Setting::TxRing => Ok(dev.rings()?.tx_pending.to_string()),
        Setting::Mtu => Ok(dev.int(libc::SIOCGIFMTU, "reading the MTU")?.to_string()),
        Setting::TxQueueLen => Ok(dev
            .int(libc::SIOCGIFTXQLEN, "reading the transmit queue length")?
            .to_string()),
        Setting::Qdisc => dev.qdisc(),
        Setting::Coalesce(name) => Ok(dev
            .req
            .coalesce()
            .map_err(|e| dev.io("interrupt coalescing", e))?
            .get(name)
            .unwrap_or_default()),
        Setting::Feature(name) => {
            let (names, blocks) = dev.features()?;
            let i = feature_index(&names, &name).ok_or_else(|| NetdevError::UnknownSetting {
                interface: interface.to_string(),
                setting: name.clone(),
            })?;
            let active = blocks
                .get(i / 32)
                .is_some_and(|b| b.active & (1 << (i % 32)) != 0);
            Ok(on_off(active))
        }
    })
}

/// The root qdisc of `interface`: its kind and handle (`0:` when the kernel
/// attached it itself, with default parameters).
pub fn root_qdisc(interface: &str) -> Result<(String, String), NetdevError> {
    with_device(interface, |dev| {
        Ok(dev.root_qdisc()?.map_or_else(
            || ("noqueue".to_string(), "0:".to_string()),
            |q| (q.kind, q.handle),
        ))
    })
}

/// Sets `setting` on `interface` after checking `value` against what the
/// driver allows (ring maxima, fixed features), then reads it back: a value the
/// kernel did not take is an error, not a silent success.
pub fn set(interface: &str, setting: &str, value: &str) -> Result<(), NetdevError> {
    let bad = |reason: String| NetdevError::BadValue {
        interface: interface.to_string(),
        setting: setting.to_string(),
        value: value.to_string(),
        reason,
    };
    let number = |max: u32| -> Result<u32, NetdevError> {
        match value.trim().parse::<u32>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(bad(format!("use a whole number from 1 to {max}"))),
        }
    };
    with_device(interface, |dev| {
        match parse_setting(setting) {
            s @ (Setting::RxRing | Setting::TxRing) => {
                let r = dev.rings()?;
                let (rx, tx) = if s == Setting::RxRing {
                    (number(r.rx_max)?, r.tx_pending)
                } else {
                    (r.rx_pending, number(r.tx_max)?)
                };
                dev.req
                    .set_rings(rx, tx)
                    .map_err(|e| dev.io("setting ring sizes", e))?;
            }
            Setting::Mtu => {
                // 68 is IPv4's minimum; the driver's own limits are checked by the kernel.
                let mtu = number(65535)?;
                if mtu < 68 {
                    return Err(bad("the MTU must be at least 68".into()));
                }
                dev.req.set_int(libc::SIOCSIFMTU, mtu as i32).map_err(|e| {
                    match e.raw_os_error() {
                        Some(libc::EINVAL) => bad("outside the driver's MTU range (EINVAL)".into()),
                        _ => dev.io("setting the MTU", e),
                    }
                })?;
            }
            Setting::TxQueueLen => {
                let len = match value.trim().parse::<u32>() {
                    Ok(n) if n <= i32::MAX as u32 => n,
                    _ => return Err(bad("use a whole number of packets, e.g. 1000".into())),
                };
                dev.req
                    .set_int(libc::SIOCSIFTXQLEN, len as i32)
                    .map_err(|e| dev.io("setting the transmit queue length", e))?;
            }
            Setting::Qdisc => {
                let kind = value.trim();
                if kind.is_empty() || !kind.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    return Err(bad(
                        "use a qdisc kind such as fq_codel, cake or pfifo_fast".into()
                    ));
                }
                dev.set_qdisc(kind)?;
            }
            Setting::Coalesce(name) => {
                let v = coalesce_value(name, value).map_err(bad)?;
                let mut c = dev
                    .req
                    .coalesce_raw()
                    .map_err(|e| dev.io("interrupt coalescing", e))?;
                c.set(name, v);
                dev.req
                    .set_coalesce(c)
                    .map_err(|e| match e.raw_os_error() {
                        Some(libc::EINVAL) => {
                            bad("outside what the driver accepts (EINVAL)".into())
                        }
                        _ => dev.io("setting interrupt coalescing", e),
                    })?;
            }
            Setting::Feature(name) => {
                let on = match value.trim() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(bad("use 'on' or 'off'".into())),
                };
                let (names, blocks) = dev.features()?;
                let i =
                    feature_index(&names, &name).ok_or_else(|| NetdevError::UnknownSetting {
                        interface: interface.to_string(),
                        setting: name.clone(),
                    })?;
                let block = blocks.get(i / 32).copied().unwrap_or_default();
                let bit = 1u32 << (i % 32);
                if block.available & bit == 0 || block.never_changed & bit != 0 {
                    return Err(NetdevError::Fixed {
                        interface: interface.to_string(),
                        feature: names[i].clone(),
                    });
                }
                dev.req
                    .set_feature(i, blocks.len() as u32, on)
                    .map_err(|e| dev.io("setting offload features", e))?;
            }
        }
        Ok(())
    })?;
    let now = get(interface, setting)?;
    let same = match (now.parse::<u64>(), value.trim().parse::<u64>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => now == value.trim(),
    };
    if !same {
        let hint = match parse_setting(setting) {
            Setting::Feature(_) => "; a feature it depends on may be off",
            Setting::RxRing | Setting::TxRing => "; some drivers round ring sizes",
            _ => "",
        };
        return Err(NetdevError::NotTaken {
            interface: interface.to_string(),
            setting: setting.to_string(),
            wanted: value.to_string(),
            now,
            hint,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn setting_names_and_aliases() {
        assert_eq!(parse_setting("rx"), Setting::RxRing);
        assert_eq!(parse_setting("tx_queue_len"), Setting::TxQueueLen);
        assert_eq!(parse_setting("rx-gro"), Setting::Feature("rx-gro".into()));
        let names: Vec<String> = ["tx-scatter-gather", "rx-gro", "rx-lro"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(feature_index(&names, "rx-gro"), Some(1));
        assert_eq!(feature_index(&names, "gro"), Some(1));
        assert_eq!(feature_index(&names, "large-receive-offload"), Some(2));
        assert_eq!(feature_index(&names, "tso"), None);
        assert_eq!(parse_setting("rx-usecs"), Setting::Coalesce("rx-usecs"));
        assert_eq!(
            parse_setting("adaptive-tx"),
            Setting::Coalesce("adaptive-tx")
        );
    }

    #[test]
    fn coalescing_values() {
        assert_eq!(coalesce_value("rx-usecs", " 50 "), Ok(50));
        assert_eq!(coalesce_value("adaptive-rx", "off"), Ok(0));
        assert_eq!(coalesce_value("adaptive-rx", "on"), Ok(1));
        assert_eq!(
            coalesce_value("rx-usecs", "-1"),
            Err("use a whole number of microseconds, e.g. 50".into())
        );
        assert_eq!(
            coalesce_value("tx-frames", "x"),
            Err("use a whole number of frames, e.g. 50".into())
        );
        assert!(coalesce_value("adaptive-tx", "1").is_err());
    }

    /// Deletes the namespace, and the veth pair in it, even when the test fails.
    struct Netns(String);

    impl Drop for Netns {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
        }
    }

    fn ip(args: &[&str]) {
        let o = Command::new("ip").args(args).output().expect("run ip");
        assert!(
            o.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// Runs `f` on a thread that has entered namespace `ns` (setns is per thread).
    fn in_netns(ns: &str, f: impl FnOnce() + Send + 'static) {
        let path = format!("/run/netns/{ns}");
        std::thread::spawn(move || {
            use std::os::fd::AsRawFd;
            let file = std::fs::File::open(&path).expect("namespace file");
            // SAFETY: setns on a namespace fd moves only this thread.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", io::Error::last_os_error());
            f();
        })
        .join()
        .expect("the test thread panicked");
    }

    /// A veth pair in a throw-away namespace: MTU, transmit queue length and a
    /// changeable feature are set and read back; a fixed feature, bad values,
    /// an unknown setting and a missing interface are refused with the reason.
    #[test]
    fn veth_settings_in_a_namespace() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            println!("SKIP: network namespaces need root");
            return;
        }
        let ns = format!("nastune-netdev-{}", std::process::id());
        ip(&["netns", "add", &ns]);
        let _guard = Netns(ns.clone());
        ip(&[
            "-n", &ns, "link", "add", "nva0", "type", "veth", "peer", "name", "nvb0",
        ]);
        in_netns(&ns, || {
            assert_eq!(get("nva0", "mtu").unwrap(), "1500");
            set("nva0", "mtu", "1400").unwrap();
            assert_eq!(get("nva0", "mtu").unwrap(), "1400");
            let e = set("nva0", "mtu", "67").unwrap_err();
            assert_eq!(
                e.to_string(),
                "'mtu' cannot be set to '67' on 'nva0': the MTU must be at least 68"
            );
            assert!(matches!(
                set("nva0", "mtu", "big"),
                Err(NetdevError::BadValue { .. })
            ));

            assert_eq!(get("nva0", "txqueuelen").unwrap(), "1000");
            set("nva0", "txqueuelen", "500").unwrap();
            assert_eq!(get("nva0", "txqueuelen").unwrap(), "500");

            // veth has GRO changeable and off by default; `gro` is the same bit.
            let before = get("nva0", "rx-gro").unwrap();
            let flipped = if before == "on" { "off" } else { "on" };
            set("nva0", "rx-gro", flipped).unwrap();
            assert_eq!(get("nva0", "gro").unwrap(), flipped);
            set("nva0", "gro", &before).unwrap();
            assert_eq!(get("nva0", "rx-gro").unwrap(), before);
            assert!(matches!(
                set("nva0", "rx-gro", "yes"),
                Err(NetdevError::BadValue { .. })
            ));

            let e = set("nva0", "rx-lro", "on").unwrap_err();
            assert_eq!(
                e.to_string(),
                "feature 'rx-lro' of 'nva0' is fixed by the driver ('[fixed]' in ethtool -k)"
            );
            // Rings: recent kernels give veth none; where they exist, they read back.
            match get("nva0", "rx") {
                Ok(n) => assert!(n.parse::<u32>().is_ok(), "{n}"),
                Err(e) => assert!(matches!(e, NetdevError::Unsupported { .. }), "{e}"),
            }
            // veth has no interrupts to coalesce: a clear "unsupported".
            let e = get("nva0", "rx-usecs").unwrap_err();
            assert_eq!(
                e.to_string(),
                "the driver of 'nva0' does not support interrupt coalescing (EOPNOTSUPP)"
            );
            let e = set("nva0", "rx-usecs", "50").unwrap_err();
            assert!(matches!(e, NetdevError::Unsupported { .. }), "{e}");
            let e = get("nva0", "frobnicate").unwrap_err();
            assert!(matches!(e, NetdevError::UnknownSetting { .. }), "{e}");
            let e = get("nosuch0", "mtu").unwrap_err();
            assert_eq!(
                e.to_string(),
                "no network interface 'nosuch0' here; 'ip link' lists them"
            );
            assert!(matches!(
                get("a-name-longer-than-15", "mtu"),
                Err(NetdevError::BadInterface { .. })
            ));
        });
        // The peer outside the namespace was never touched: the host has no nva0.
        assert!(matches!(
            get("nva0", "mtu"),
            Err(NetdevError::NoInterface { .. })
        ));
    }
}
