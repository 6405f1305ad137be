//! `tune try` of network device and mount changes, for real: a veth pair in
//! two namespaces shaped by tbf, judged by bench net to a `net serve` peer
//! (txqueuelen, an offload feature, the root qdisc), and an fstab mount
//! option on a loop device's file system, remounted between runs. After each
//! trial the device or mount is as it was, compared as the tools show it.

use std::process::{Command, Output};

use crate::netns_pair::{Netns, serve, sh, shaped_pair_or_skip};
use crate::tune::{PrivateEtc, QUICK_TRIAL, assert_same_tree, json_of, tree_state};
use crate::tune_try_judges::mounted_loop;
use crate::util::*;

/// What a tool prints in the client namespace.
fn ns_out(ns: &Netns, args: &[&str]) -> String {
    let o = Command::new("ip")
        .args(["netns", "exec", &ns.client])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

/// The client end's settings a trial could leave behind.
fn device_state(ns: &Netns, dev: &str) -> String {
    [
        ns_out(ns, &["cat", &format!("/sys/class/net/{dev}/tx_queue_len")]),
        ns_out(ns, &["tc", "qdisc", "show", "dev", dev]),
        ns_out(ns, &["ethtool", "-k", dev]),
    ]
    .join("")
}

/// A trial in the client namespace, judged by bench net to the server's end.
fn try_in_client(ns: &Netns, etc: &PrivateEtc, set: &str, extra: &[&str]) -> Output {
    let exec = ["ip", "netns", "exec", ns.client.as_str()];
    let args = ["tune", "try", "--yes", "--json", "--set", set];
    let judge = ["--bench", "net:10.77.0.1"];
    etc.run(&exec, &[&args[..], &judge, &QUICK_TRIAL, extra].concat())
}

/// The trial measured and reverted (or kept, when it won): the verdict
/// agrees with the interval, and a reverted change left the device as it was.
fn assert_tried(doc: &serde_json::Value, set: &str, before: &str, after: &str) {
    assert_eq!(doc["workload"], "net:10.77.0.1:5201", "{doc}");
    assert_eq!(doc["runs"].as_array().unwrap().len(), 4, "{doc}");
    let keep = doc["verdict"] == "keep";
    assert_eq!(keep, doc["effect"] == "helps", "{set}: {doc}");
    if !keep {
        assert_eq!(after, before, "{set} reverted: {doc}");
    }
}

#[test]
fn try_netdev_settings_with_a_net_judge_over_a_shaped_veth() {
    if !require(&[Need::Tool("ethtool")]) {
        return;
    }
    let Some(ns) = shaped_pair_or_skip("dev", "100mbit", "32kb") else {
        return;
    };
    let _server = serve(&ns, 1000);
    let dev = format!("vcdev{}", std::process::id() % 100_000);
    let etc = PrivateEtc::new();

    // The tbf on the client's end was set up with tc: a qdisc trial would
    // lose its rate, so it is refused and the tbf stays.
    let before = device_state(&ns, &dev);
    let o = try_in_client(&ns, &etc, &format!("ethtool:{dev}:qdisc=fq_codel"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("the root qdisc of '{dev}' is 'tbf' (handle "))
            && stderr(&o).contains("set up with tc and its own parameters"),
        "{}",
        stderr(&o)
    );
    assert_eq!(device_state(&ns, &dev), before);

    // Below the tbf: the transmit queue length and segmentation offload.
    // Judged by throughput, by the p99 of request/response transactions, and
    // by this box's CPU per GB (kept only with throughput kept, and saying so).
    for (set, extra, metric) in [
        ("txqueuelen=5000", &[][..], "mb_per_sec"),
        ("gso=off", &[][..], "mb_per_sec"),
        ("txqueuelen=5000", &["--rr", "--metric", "p99"][..], "p99"),
        ("gso=off", &["--metric", "cpu_per_gb"][..], "cpu"),
    ] {
        let set = format!("ethtool:{dev}:{set}");
        let before = device_state(&ns, &dev);
        let doc = json_of(&try_in_client(&ns, &etc, &set, extra));
        let name = doc["metric"]["name"].as_str().unwrap();
        assert!(name.contains(metric), "{set} {extra:?}: {doc}");
        assert_tried(&doc, &set, &before, &device_state(&ns, &dev));
        if doc["verdict"] == "keep" && metric == "cpu" {
            let reason = doc["reason"].as_str().unwrap();
            assert!(
                reason.starts_with("kept for its lower CPU per GB"),
                "{reason}"
            );
        }
    }

    // Without the tbf the root is the kernel's own noqueue: a plain FIFO (the
    // one other qdisc this kernel is sure to have) is tried in its place, and
    // the revert gives noqueue back.
    let exec = ["ip", "netns", "exec", ns.client.as_str()];
    sh(&[&exec[..], &["tc", "qdisc", "del", "dev", &dev, "root"]].concat()).unwrap();
    let before = device_state(&ns, &dev);
    assert!(before.contains("qdisc noqueue 0: root"), "{before}");
    let set = format!("ethtool:{dev}:qdisc=pfifo");
    let doc = json_of(&try_in_client(&ns, &etc, &set, &[]));
    assert_tried(&doc, &set, &before, &device_state(&ns, &dev));
    // A FIFO the judge found better beyond the noise stays (seen once in a
    // fresh-clone run), and a qdisc left in place is one a trial refuses to
    // replace: back to noqueue by hand for the next trial.
    if doc["verdict"] == "keep" {
        sh(&[&exec[..], &["tc", "qdisc", "del", "dev", &dev, "root"]].concat()).unwrap();
        assert_eq!(device_state(&ns, &dev), before);
    }
    // A qdisc this kernel may lack (fq_codel is a module many kernels leave
    // out): either tried like the FIFO, or refused as missing with nothing left over.
    let set = format!("ethtool:{dev}:qdisc=fq_codel");
    let o = try_in_client(&ns, &etc, &set, &[]);
    if o.status.success() {
        assert_tried(&json_of(&o), &set, &before, &device_state(&ns, &dev));
    } else {
        let e = stderr(&o);
        // Refused by the plan when the kernel's config says so, else by the kernel.
        assert!(
            e.contains("this kernel has no fq_codel: CONFIG_NET_SCH_FQ_CODEL is not set")
                || e.contains("this kernel has no such qdisc"),
            "{e}"
        );
        assert!(!e.contains("reverting failed"), "{e}");
        assert_eq!(device_state(&ns, &dev), before);
    }
    // Nothing was persisted for a runtime-only device setting.
    assert_eq!(std::fs::read_dir(etc.sysctl_d()).unwrap().count(), 0);
}

/// `noatime` tried on a loop device's ext4 through a tree's fstab: the mount
/// is remounted between runs, and after the revert both the fstab and the
/// mount's options are as before. The kernel keeps the atime mode on a plain
/// remount, so this fails unless the revert names `relatime` again.
#[test]
fn try_an_fstab_option_remounts_and_gives_the_mount_back() {
    let t = tempfile::tempdir().unwrap();
    let Some(m) = mounted_loop(t.path()) else {
        return;
    };
    let mp = m.dir.path().to_str().unwrap().to_string();
    let data = format!("{mp}/data");
    std::fs::write(&data, vec![7u8; 8 << 20]).unwrap();
    let tree = t.path().join("root");
    std::fs::create_dir_all(tree.join("etc")).unwrap();
    std::fs::write(
        tree.join("etc/fstab"),
        format!("# data\n{}\t{mp}\text4\tdefaults\t0 2\n", m.dev),
    )
    .unwrap();
    let mounted = || {
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        info.lines()
            .filter(|l| l.split(' ').nth(4) == Some(mp.as_str()))
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                format!("{} {}", f[5], f.last().unwrap())
            })
            .collect::<Vec<_>>()
    };
    let before_tree = tree_state(&tree);
    let before_mount = mounted();
    assert!(
        before_mount[0].starts_with("rw,relatime "),
        "{before_mount:?}"
    );
    let set = format!("fstab:{mp}=noatime");
    let run = |bench: &str| {
        let args = [
            "tune", "try", "--yes", "--json", "--set", &set, "--bench", bench,
        ];
        // Never kept, whatever it measures: the revert is what is tested.
        let never = ["--min-gain", "1000", "--root", tree.to_str().unwrap()];
        run_with_db(t.path(), &[&args[..], &never, &QUICK_TRIAL].concat())
    };
    let doc = json_of(&run(&format!("rand-read:{data}")));
    assert_eq!(doc["change"]["setting"], format!("fstab:{mp}"), "{doc}");
    assert_eq!(doc["verdict"], "revert", "{doc}");
    assert_eq!(doc["runs"].as_array().unwrap().len(), 4, "{doc}");
    assert_same_tree(&before_tree, &tree, "a reverted fstab trial");
    assert_eq!(mounted(), before_mount, "the mount after the trial");

    // A judge on another file system does not exercise the option.
    let elsewhere = t.path().join("elsewhere");
    std::fs::write(&elsewhere, vec![1u8; 1 << 20]).unwrap();
    let o = run(&format!("rand-read:{}", elsewhere.display()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let dev = m.dev.trim_start_matches("/dev/");
    assert!(
        stderr(&o).contains(&format!("'fstab:{mp}' changes '{dev}'")),
        "{}",
        stderr(&o)
    );
    assert_same_tree(&before_tree, &tree, "a refused fstab trial");
    assert_eq!(mounted(), before_mount);
}
