//! The network, sysctl and kernel-crypto sections on the board fixture boxes:
//! what each board's kernel exposes must come through, including the captured
//! ethtool and qdisc answers (so their JSON layout matches `Root::captured`).

use serde_json::Value;

use crate::util::*;

fn probe(name: &str) -> Value {
    let o = nastune()
        .args(["probe", "--json", "--no-store", "--root"])
        .arg(fixtures().join("boxes").join(name))
        .output()
        .unwrap();
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// The text summary of a board's probe.
fn probe_text(name: &str) -> String {
    let o = nastune()
        .args(["probe", "--no-store", "--root"])
        .arg(fixtures().join("boxes").join(name))
        .output()
        .unwrap();
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    stdout(&o)
}

/// The element of a JSON array whose "name" is `name`.
fn named<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("no '{name}' in {list}"))
}

fn iface<'a>(v: &'a Value, name: &str) -> &'a Value {
    named(&v["network"]["data"]["interfaces"], name)
}

fn algorithm<'a>(v: &'a Value, name: &str) -> &'a Value {
    named(&v["kernel_crypto"]["data"]["algorithms"], name)
}

struct Board {
    name: &'static str,
    driver: &'static str,
    ethtool_driver: &'static str,
    speed: u64,
    qdisc: &'static str,
    counter_bits: u64,
    has_rings: bool,
    cbc_aes: &'static str,
    cbc_engine: &'static str,
}

const BOARDS: &[Board] = &[
    Board {
        name: "pogoplug-v4",
        driver: "mv643xx_eth_port",
        ethtool_driver: "mv643xx_eth",
        speed: 1000,
        qdisc: "pfifo_fast",
        counter_bits: 32,
        has_rings: true,
        cbc_aes: "mv-cbc-aes",
        cbc_engine: "hardware",
    },
    Board {
        name: "rpi2-luks",
        driver: "smsc95xx",
        ethtool_driver: "smsc95xx",
        speed: 100,
        qdisc: "pfifo_fast",
        counter_bits: 32,
        has_rings: false,
        cbc_aes: "cbc-aes-neonbs",
        cbc_engine: "cpu",
    },
    Board {
        name: "rk3399-raid5",
        driver: "rk_gmac-dwmac",
        ethtool_driver: "st_gmac",
        speed: 1000,
        qdisc: "mq",
        counter_bits: 64,
        has_rings: true,
        cbc_aes: "cbc-aes-rk",
        cbc_engine: "hardware",
    },
];

#[test]
fn boards_show_their_nic_qdisc_counters_and_crypto() {
    for b in BOARDS {
        let board = b.name;
        let v = probe(board);
        let eth0 = iface(&v, "eth0");
        assert_eq!(eth0["driver"], b.driver, "{board}");
        assert_eq!(eth0["is_virtual"], false, "{board}");
        assert_eq!(eth0["speed_mbit_per_sec"], b.speed, "{board}");
        assert_eq!(eth0["duplex"], "full", "{board}");
        assert_eq!(eth0["carrier"], true, "{board}");
        assert_eq!(eth0["qdisc"], b.qdisc, "{board}");
        assert_eq!(eth0["counter_bits"], b.counter_bits, "{board}");
        let e = &eth0["ethtool"];
        assert_eq!(e["status"], "ok", "{board}: {e}");
        assert_eq!(
            e["data"]["driver_info"]["data"]["driver"], b.ethtool_driver,
            "{board}"
        );
        assert_eq!(e["data"]["features"]["status"], "ok", "{board}");
        let ring_status = if b.has_rings { "ok" } else { "unsupported" };
        assert_eq!(e["data"]["rings"]["status"], ring_status, "{board}");
        assert_eq!(eth0["counters"]["source"], "sysfs", "{board}");

        let lo = iface(&v, "lo");
        assert_eq!(lo["is_virtual"], true, "{board}");
        assert_eq!(lo["qdisc"], "noqueue", "{board}");
        // EINVAL on lo's speed was captured as a read error and means "unknown".
        assert_eq!(lo["speed_mbit_per_sec"], Value::Null, "{board}");
        assert_eq!(lo["ethtool"]["data"]["rings"]["status"], "unsupported");

        let cbc_aes = algorithm(&v, "cbc(aes)");
        assert_eq!(cbc_aes["selected_driver"], b.cbc_aes, "{board}");
        assert_eq!(cbc_aes["selected_engine"], b.cbc_engine, "{board}");
        // CESA and the RK3399 engine have no XTS: LUKS2's default runs on the CPU.
        assert_eq!(
            algorithm(&v, "xts(aes)")["selected_engine"],
            "cpu",
            "{board}"
        );
        assert!(
            v["network"]["data"]["softnet"]["data"][0]["processed"]
                .as_u64()
                .unwrap()
                > 0
        );
    }
}

#[test]
fn pogoplug_sysctl_values_and_the_files_that_set_them() {
    let v = probe("pogoplug-v4");
    let s = &v["sysctl"]["data"];
    assert_eq!(s["values"]["vm.swappiness"], "10");
    assert_eq!(s["values"]["net.ipv4.tcp_mem"], "1263 1687 2526");
    // ARM32 kernels without NUMA have no zone_reclaim_mode.
    assert_eq!(s["absent"], serde_json::json!(["vm.zone_reclaim_mode"]));
    let set = &s["configured"]["vm.dirty_background_ratio"][0];
    assert_eq!(set["file"], "/etc/sysctl.d/60-nas.conf");
    assert_eq!(set["value"], "5");
    assert_eq!(
        s["configured"]["net.core.rmem_max"][0]["ignore_failure"],
        true
    );
    assert_eq!(s["config_problems"], serde_json::json!([]));
    let files = s["config_files"].as_array().unwrap();
    assert_eq!(files.last().unwrap(), "/etc/sysctl.conf");
}

#[test]
fn text_summary_names_engines_and_links() {
    let text = probe_text("pogoplug-v4");
    assert!(
        text.contains("mv-cbc-aes (hardware engine, priority 300, marvell_cesa)"),
        "{text}"
    );
    assert!(text.contains("link 1000 Mbit/s full"), "{text}");
    assert!(text.contains("32-bit counters"), "{text}");
    assert!(
        text.contains(
            "vm.swappiness                              10  (set by /etc/sysctl.d/60-nas.conf:2)"
        ),
        "{text}"
    );
}

#[test]
fn a_wrapped_byte_counter_is_said_to_have_wrapped() {
    // Values read from the fixture, not from nastune's output.
    let stats = fixtures().join(
        "boxes/rpi2-luks/sys/devices/platform/soc/3f980000.usb/usb1/1-1/1-1.1/1-1.1:1.0/net/eth0/statistics",
    );
    let read = |f: &str| -> u64 {
        std::fs::read_to_string(stats.join(f))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let avg = read("rx_bytes") as f64 / read("rx_packets") as f64;
    assert!(
        avg < 20.0,
        "the fixture's counters are no longer wrapped: {avg}"
    );
    let text = probe_text("rpi2-luks");
    assert!(
        text.contains(&format!(
            "rx bytes evidently wrapped: {avg:.1} B a packet is smaller than any packet"
        )),
        "{text}"
    );
    // A plausible direction is not accused.
    let tx_avg = read("tx_bytes") as f64 / read("tx_packets").max(1) as f64;
    assert_eq!(
        text.contains("tx bytes evidently wrapped"),
        tx_avg < 20.0,
        "{text}"
    );
}
