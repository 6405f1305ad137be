//! A real probe of a shaped veth pair inside a throw-away network namespace:
//! MTU, root qdisc (rtnetlink), ethtool features (ioctl) and carrier must be what
//! `ip` and `tc` set. Needs root; skips with the reason otherwise.

use std::process::Command;

use crate::util::*;

/// Deletes the namespace (and the veth pair in it) even when the test fails.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// One command, its failure as text (shared with the shaped pairs).
use crate::netns_pair::sh as run;

/// Creates the namespace, or None after saying why this machine cannot.
fn setup(ns: &str, tools: &[&str]) -> Option<Netns> {
    let needs: Vec<Need> = [Need::Root]
        .into_iter()
        .chain(["ip", "tc"].iter().chain(tools).map(|t| Need::Tool(t)))
        .collect();
    if !require(&needs) {
        return None;
    }
    try_setup(ns).map_err(|why| skip(&why)).ok()
}

fn try_setup(ns: &str) -> Result<Netns, String> {
    run(&["ip", "netns", "add", ns])?;
    let guard = Netns(ns.to_string());
    run(&[
        "ip", "-n", ns, "link", "add", "nsa0", "type", "veth", "peer", "name", "nsb0",
    ])
    .map_err(|e| format!("veth unavailable: {e}"))?;
    run(&["ip", "-n", ns, "link", "set", "nsa0", "mtu", "1400"])?;
    run(&["ip", "-n", ns, "link", "set", "nsa0", "up"])?;
    run(&["ip", "-n", ns, "link", "set", "nsb0", "up"])?;
    run(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
    run(&[
        "tc", "-n", ns, "qdisc", "add", "dev", "nsa0", "root", "tbf", "rate", "100mbit", "burst",
        "32kbit", "latency", "50ms",
    ])
    .map_err(|e| format!("tbf unavailable: {e}"))?;
    Ok(guard)
}

/// `nastune probe --json` run inside the namespace.
fn probe_in(ns: &str) -> serde_json::Value {
    let o = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(env!("CARGO_BIN_EXE_nastune"))
        .args(["probe", "--json", "--no-store"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn probe_sees_a_shaped_veth_in_a_namespace() {
    let ns = format!("nastune-test-{}", std::process::id());
    let Some(_guard) = setup(&ns, &[]) else {
        return;
    };
    let v = probe_in(&ns);
    assert_eq!(v["network"]["status"], "ok", "{}", v["network"]);
    let ifaces = v["network"]["data"]["interfaces"].as_array().unwrap();
    let names: Vec<&str> = ifaces.iter().map(|i| i["name"].as_str().unwrap()).collect();
    // Only this namespace's devices: sysfs was remounted by `ip netns exec`.
    assert_eq!(names, vec!["lo", "nsa0", "nsb0"]);
    let a = &ifaces[1];
    assert_eq!(a["mtu_bytes"], 1400, "{a}");
    assert_eq!(a["qdisc"], "tbf", "{a}");
    assert_eq!(a["carrier"], true, "{a}");
    assert_eq!(a["is_virtual"], true, "{a}");
    assert_eq!(a["operstate"], "up", "{a}");
    // veth reports 10000 Mbit/s full duplex since 4.x.
    assert!(a["speed_mbit_per_sec"].as_u64().is_some(), "{a}");
    let eth = &a["ethtool"]["data"];
    assert_eq!(eth["driver_info"]["data"]["driver"], "veth", "{a}");
    let features = eth["features"]["data"].as_array().expect("features read");
    let find = |name: &str| {
        features
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {features:?}"))
    };
    // veth's defaults: checksums and scatter-gather on and changeable.
    assert_eq!(find("tx-scatter-gather")["active"], true);
    assert_eq!(find("tx-scatter-gather")["fixed"], false);
    assert_eq!(find("rx-checksum")["active"], true);
    // The other end and lo: qdisc noqueue (veth has no queue by default).
    assert_eq!(ifaces[2]["qdisc"], "noqueue", "{}", ifaces[2]);
    assert_eq!(ifaces[0]["qdisc"], "noqueue", "{}", ifaces[0]);
    assert_eq!(ifaces[0]["is_virtual"], true);
    // Counters: the namespace is fresh, and a 64-bit build host has 64-bit counters.
    assert!(a["counters"]["rx_bytes"].as_u64().is_some(), "{a}");
    assert_eq!(a["counters"]["source"], "sysfs");
}

/// `ethtool -k` line names for the features it prints under another name.
const ETHTOOL_K_NAMES: &[(&str, &str)] = &[
    ("rx-checksumming", "rx-checksum"),
    ("generic-segmentation-offload", "tx-generic-segmentation"),
    ("generic-receive-offload", "rx-gro"),
    ("large-receive-offload", "rx-lro"),
    ("receive-hashing", "rx-hashing"),
];

/// `(kernel feature name, on, fixed)` from `ethtool -k` output.
fn parse_ethtool_k(text: &str) -> Vec<(String, bool, bool)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let (name, state) = l.trim().split_once(':')?;
            let name = ETHTOOL_K_NAMES
                .iter()
                .find(|(k, _)| *k == name)
                .map_or(name, |(_, kernel)| kernel);
            let state = state.trim();
            Some((
                name.to_string(),
                state.starts_with("on"),
                state.contains("[fixed]"),
            ))
        })
        .collect()
}

/// The ioctl reader against the peer tool, feature by feature, on the veth and lo.
#[test]
fn ethtool_features_match_ethtool_k() {
    let ns = format!("nastune-k-{}", std::process::id());
    let Some(_guard) = setup(&ns, &["ethtool"]) else {
        return;
    };
    let v = probe_in(&ns);
    for iface in v["network"]["data"]["interfaces"].as_array().unwrap() {
        let name = iface["name"].as_str().unwrap();
        let k = Command::new("ip")
            .args(["netns", "exec", &ns, "ethtool", "-k", name])
            .output()
            .unwrap();
        assert!(k.status.success(), "{}", stderr(&k));
        let peer = parse_ethtool_k(&stdout(&k));
        let ours = iface["ethtool"]["data"]["features"]["data"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no features: {iface}"));
        assert!(ours.len() >= 8, "{name}: {ours:?}");
        for f in ours {
            let fname = f["name"].as_str().unwrap();
            let (_, on, fixed) = peer
                .iter()
                .find(|(n, _, _)| n == fname)
                .unwrap_or_else(|| panic!("{name}: ethtool -k has no '{fname}'"));
            assert_eq!(f["active"], *on, "{name} {fname}: ours {f}, ethtool {on}");
            assert_eq!(
                f["fixed"], *fixed,
                "{name} {fname}: ours {f}, ethtool fixed {fixed}"
            );
        }
    }
}

/// What `rx-dropped-unknown-protocol` and the watch alert rely on: frames of an
/// ethertype nobody handles raise the receiver's rx_dropped, not rx_nohandler
/// (that one counts only frames on devices taking exact delivery, such as an
/// inactive bond port), so unknown protocols are known only by elimination.
#[test]
fn unknown_ethertype_frames_raise_rx_dropped_not_rx_nohandler() {
    let ns = format!("nastune-drop-{}", std::process::id());
    let Some(_guard) = setup(&ns, &["python3"]) else {
        return;
    };
    // Broadcast frames of the local experimental ethertype 0x88b5 from nsa0.
    let send = "import socket\n\
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n\
                s.bind(('nsa0', 0))\n\
                frame = b'\\xff' * 6 + b'\\x02\\x00\\x00\\x00\\x00\\x01' + b'\\x88\\xb5' + b'x' * 50\n\
                for _ in range(7): s.send(frame)\n";
    run(&["ip", "netns", "exec", &ns, "python3", "-c", send]).unwrap();
    let v = probe_in(&ns);
    let b = v["network"]["data"]["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "nsb0")
        .unwrap()
        .clone();
    assert!(b["counters"]["rx_dropped"].as_u64().unwrap() >= 7, "{b}");
    assert_eq!(b["counters"]["rx_nohandler"], 0, "{b}");
}
