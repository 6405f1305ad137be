//! The VM lab (`lab/run`): one boot of Debian's cloud kernel under QEMU runs the
//! raid5-crypt, luks-usb, afalg and netem scenarios with this build of nastune inside.
//! The chains are checked with the kernel's own tools (mdstat, dmsetup, tune2fs), and
//! nastune's probe JSON from inside the VM is checked for what the probe reports today.
//!
//! Skips with a printed reason when QEMU or the kernel cannot be obtained, unless
//! NASTUNE_LAB_REQUIRED=1 (set by .ci/run), where a missing lab is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// lab/run's exit status for a missing prerequisite.
const LAB_PREREQUISITE_MISSING: i32 = 77;

/// The commands every scenario runs after its setup; numbered cmd-1, cmd-2, ...
const COMMANDS: &[&str] = &[
    // cmd-1: the probe as the storage chain stands.
    "nastune probe --json --no-store",
    // cmd-2: 300000 bytes over HTTP across the shaped veth link, server in lab-b, client
    // in lab-a (busybox httpd and wget).
    "@netem mkdir -p /tmp/www && head -c 300000 /dev/urandom >/tmp/www/blob && \
     cp /tmp/www/blob $LAB_OUT/sent && \
     { ip netns exec $LAB_NS_B httpd -f -p $LAB_ADDR_B:8080 -h /tmp/www & } && sleep 1 && \
     ip netns exec $LAB_NS_A wget -q -O $LAB_OUT/received http://$LAB_ADDR_B:8080/blob; \
     rc=$?; kill %1; [ $rc = 0 ] && ip netns exec $LAB_NS_A tc -s qdisc show dev $LAB_DEV_A",
];

enum Lab {
    Ran(PathBuf, #[allow(dead_code)] tempfile::TempDir),
    Skipped(String),
    Failed(String),
}

static LAB: OnceLock<Lab> = OnceLock::new();

/// Boots the lab once for every test in this file (lab/run also holds a file lock, so
/// no two lab VMs ever share the two cores).
fn lab() -> Option<&'static Path> {
    let lab = LAB.get_or_init(boot);
    match lab {
        Lab::Ran(out, _) => Some(out),
        Lab::Skipped(reason) => {
            if std::env::var_os("NASTUNE_LAB_REQUIRED").is_some_and(|v| v == "1") {
                panic!("the VM lab is required here (NASTUNE_LAB_REQUIRED=1) but: {reason}");
            }
            eprintln!("SKIPPED: VM lab unavailable: {reason}");
            None
        }
        Lab::Failed(why) => panic!("{why}"),
    }
}

fn boot() -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/run");
    let o = Command::new("bash")
        .arg(&script)
        .arg("--nastune")
        .arg(env!("CARGO_BIN_EXE_nastune"))
        .arg("--quiet")
        // A hung guest is killed after 420 + 90 s: the lab stage stays under 10 minutes.
        .args(["--timeout", "420"])
        .arg("--out")
        .arg(&out)
        .args(["raid5-crypt", "luks-usb", "afalg", "netem", "--"])
        .args(COMMANDS)
        .output();
    let o = match o {
        Ok(o) => o,
        Err(e) => return Lab::Skipped(format!("cannot run bash '{}': {e}", script.display())),
    };
    let text = format!(
        "lab/run exited with {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    match o.status.code() {
        Some(0) => Lab::Ran(out, dir),
        Some(LAB_PREREQUISITE_MISSING) => Lab::Skipped(text),
        _ => Lab::Failed(text),
    }
}

fn read(out: &Path, rel: &str) -> String {
    std::fs::read_to_string(out.join(rel))
        .unwrap_or_else(|e| panic!("lab result '{rel}' unreadable: {e}"))
}

/// The lines of a `NAME: value` style report whose name matches, values trimmed.
fn field<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim() == name)
        .map(|(_, v)| v.trim())
        .collect()
}

/// `dev name=NAME sectors=N slaves=a,b` lines of stack.txt, keyed by device.
fn stack(text: &str) -> Vec<(String, String, Vec<String>)> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let dev = parts.next()?.to_string();
            let mut name = String::new();
            let mut slaves = Vec::new();
            for p in parts {
                if let Some(n) = p.strip_prefix("name=") {
                    name = n.to_string();
                } else if let Some(s) = p.strip_prefix("slaves=") {
                    slaves = s
                        .split(',')
                        .filter(|s| *s != "-")
                        .map(str::to_string)
                        .collect();
                }
            }
            Some((dev, name, slaves))
        })
        .collect()
}

fn slaves_of<'a>(
    stack: &'a [(String, String, Vec<String>)],
    dev: &str,
) -> &'a (String, String, Vec<String>) {
    stack
        .iter()
        .find(|(d, n, _)| d == dev || n == dev)
        .unwrap_or_else(|| panic!("'{dev}' not in the block stack: {stack:?}"))
}

/// One crypt target line of `dmsetup table`: the cipher, and that the key is not shown.
fn assert_crypt_line(table: &str, name: &str, sector_size: Option<u32>) {
    let line = table
        .lines()
        .find(|l| l.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no '{name}' in dmsetup table:\n{table}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[3], "crypt", "{line}");
    assert_eq!(fields[4], "aes-xts-plain64", "{line}");
    // LUKS2 keeps the key in the kernel keyring (":64:logon:..."); a plain table is
    // masked with zeros. Either way no key material is printed.
    let key = fields[5];
    assert!(
        key.starts_with(':') || key.chars().all(|c| c == '0'),
        "dmsetup table shows key material: {line}"
    );
    if let Some(size) = sector_size {
        assert!(
            line.contains(&format!("sector_size:{size}")),
            "no sector_size:{size} in {line}"
        );
    }
}

fn probe_json(out: &Path, scenario: &str) -> Value {
    let text = read(out, &format!("{scenario}/cmd-1.out"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{scenario} probe JSON: {e}\n{text}"))
}

/// What the probe reports today, checked against the guest; and the scenario's
/// teardown undid its setup, so the scenarios after it in the same boot start clean.
fn assert_probe_basics(out: &Path, scenario: &str) -> Value {
    assert_eq!(
        read(out, &format!("{scenario}/teardown.rc")).trim(),
        "0",
        "{}",
        read(out, &format!("{scenario}/teardown.log"))
    );
    let v = probe_json(out, scenario);
    for section in ["host", "cpu", "memory"] {
        assert_eq!(
            v[section]["status"], "ok",
            "{scenario}: {section}: {}",
            v[section]
        );
    }
    let release = read(out, "kernel-release");
    let release = release.trim();
    assert!(release.ends_with("-cloud-amd64"), "{release}");
    let json = v.to_string();
    assert!(
        json.contains(release),
        "{scenario}: probe lacks kernel '{release}'"
    );
    assert_eq!(v["source"], "live");
    v
}

/// LEAD: the place for probe-JSON storage-chain assertions once the storage probe is
/// merged (md0 raid5 chunk 64 KiB over four crypt members on vda..vdd, md1 raid5
/// chunk 128 KiB under crypt-md1, aes-xts-plain64 with 4096-byte sectors, ext4 stride
/// 16/stripe width 48 on md0 and 32/96 on crypt-md1; the guest's own view of the same
/// chain is asserted in lab_raid5_crypt_chain_as_the_kernel_sees_it). Until then it
/// fails when a storage section shows up, so the assertions cannot be forgotten.
fn assert_probe_sees_raid5_crypt_chain(probe: &Value) {
    let storage_keys: Vec<&String> = probe
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| {
            [
                "storage",
                "block",
                "md",
                "dm",
                "raid",
                "crypt",
                "filesystem",
            ]
            .iter()
            .any(|s| k.contains(s))
        })
        .collect();
    assert!(
        storage_keys.is_empty(),
        "the probe now reports {storage_keys:?}: add the raid5-crypt chain assertions in tests/cli/lab.rs"
    );
}

#[test]
fn lab_raid5_crypt_chain_as_the_kernel_sees_it() {
    let Some(out) = lab() else { return };
    let mdstat = read(out, "raid5-crypt/mdstat.txt");
    let md0 = mdstat.lines().find(|l| l.starts_with("md0 :")).unwrap();
    let md1 = mdstat.lines().find(|l| l.starts_with("md1 :")).unwrap();
    assert!(md0.contains("active raid5"), "{mdstat}");
    assert!(md1.contains("active raid5"), "{mdstat}");
    assert!(mdstat.contains("level 5, 64k chunk"), "{mdstat}");
    assert!(mdstat.contains("level 5, 128k chunk"), "{mdstat}");
    assert_eq!(mdstat.matches("[4/4] [UUUU]").count(), 2, "{mdstat}");
    assert!(
        !mdstat.contains("resync"),
        "arrays still resyncing:\n{mdstat}"
    );

    for (md, chunk) in [("md0", "64K"), ("md1", "128K")] {
        let detail = read(out, &format!("raid5-crypt/mdadm-detail-{md}.txt"));
        assert_eq!(field(&detail, "Raid Level"), ["raid5"], "{detail}");
        assert_eq!(field(&detail, "Chunk Size"), [chunk], "{detail}");
        assert_eq!(field(&detail, "Raid Devices"), ["4"], "{detail}");
        assert_eq!(field(&detail, "Active Devices"), ["4"], "{detail}");
    }

    // The chains: md0 <- 4 x dm-crypt <- vd*, and crypt-md1 <- md1 <- 4 x vd*.
    let stack = stack(&read(out, "raid5-crypt/stack.txt"));
    let md0_members = &slaves_of(&stack, "md0").2;
    assert_eq!(md0_members.len(), 4, "{stack:?}");
    for m in md0_members {
        let (_, name, below) = slaves_of(&stack, m);
        assert!(name.starts_with("crypt-m"), "md0 member {m} is '{name}'");
        assert_eq!(below.len(), 1, "{m}: {below:?}");
        assert!(below[0].starts_with("vd"), "{m} sits on {below:?}");
    }
    let md1_members = &slaves_of(&stack, "md1").2;
    assert_eq!(md1_members.len(), 4, "{stack:?}");
    assert!(
        md1_members.iter().all(|m| m.starts_with("vd")),
        "{md1_members:?}"
    );
    assert_eq!(slaves_of(&stack, "crypt-md1").2, ["md1"]);

    let table = read(out, "raid5-crypt/dmsetup-table.txt");
    for name in ["crypt-m0", "crypt-m1", "crypt-m2", "crypt-m3", "crypt-md1"] {
        assert_crypt_line(&table, name, Some(4096));
    }

    for (fs, stride, width) in [("md0", "16", "48"), ("md1", "32", "96")] {
        let t = read(out, &format!("raid5-crypt/tune2fs-{fs}.txt"));
        assert_eq!(field(&t, "RAID stride"), [stride], "{fs}:\n{t}");
        assert_eq!(field(&t, "RAID stripe width"), [width], "{fs}:\n{t}");
        assert_eq!(field(&t, "Block size"), ["4096"], "{fs}:\n{t}");
    }
    let mounts = read(out, "raid5-crypt/mounts.txt");
    assert!(mounts.contains("/dev/md0 /mnt/md0 ext4"), "{mounts}");
    assert!(
        mounts.contains("/dev/mapper/crypt-md1 /mnt/md1 ext4"),
        "{mounts}"
    );
    // The setup's own checks: read-back through the stack, ciphertext below each crypt.
    let log = read(out, "raid5-crypt/setup.log");
    assert_eq!(log.matches("read-back ok").count(), 2, "{log}");
    assert_eq!(log.matches("encrypted: crypt-").count(), 5, "{log}");
}

#[test]
fn lab_probe_inside_raid5_crypt() {
    let Some(out) = lab() else { return };
    let v = assert_probe_basics(out, "raid5-crypt");
    assert_probe_sees_raid5_crypt_chain(&v);
}

#[test]
fn lab_luks_usb_as_the_kernel_sees_it() {
    let Some(out) = lab() else { return };
    let dump = read(out, "luks-usb/luks-dump.txt");
    assert_eq!(field(&dump, "Version"), ["2"], "{dump}");
    assert!(
        field(&dump, "cipher").contains(&"aes-xts-plain64"),
        "{dump}"
    );
    assert!(field(&dump, "PBKDF").contains(&"argon2id"), "{dump}");
    assert!(field(&dump, "Memory").contains(&"32768"), "{dump}");
    assert_crypt_line(&read(out, "luks-usb/dmsetup-table.txt"), "usbcrypt", None);
    let stack = stack(&read(out, "luks-usb/stack.txt"));
    let (_, _, below) = slaves_of(&stack, "usbcrypt");
    assert!(below.len() == 1 && below[0].starts_with("vd"), "{below:?}");
    let t = read(out, "luks-usb/tune2fs.txt");
    assert_eq!(field(&t, "Block size"), ["4096"], "{t}");
    assert!(read(out, "luks-usb/mounts.txt").contains("/dev/mapper/usbcrypt /mnt/usb ext4"));
    assert_probe_basics(out, "luks-usb");
}

#[test]
fn lab_afalg_ciphers_work() {
    let Some(out) = lab() else { return };
    let env = read(out, "afalg/env");
    assert!(env.contains("xts(aes)"), "{env}");
    assert!(env.contains("cbc(aes)"), "{env}");
    let crypto = read(out, "afalg/proc-crypto.txt");
    // TCG's -cpu max emulates AES-NI, so the kernel picks the same driver as real x86.
    assert!(
        crypto.contains("xts-aes-aesni"),
        "no xts-aes-aesni in /proc/crypto"
    );
    if Path::new(out)
        .join("afalg/bench-xchacha12,aes-adiantum.txt")
        .exists()
    {
        assert!(env.contains("adiantum"), "{env}");
    }
    assert_probe_basics(out, "afalg");
}

#[test]
fn lab_netem_shapes_the_veth_link() {
    let Some(out) = lab() else { return };
    let env = read(out, "netem/env");
    let ms = |name: &str| -> f64 {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}='")))
            .and_then(|v| v.trim_end_matches('\'').parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {env}"))
    };
    // Default netem delay 20 ms on each end: no round trip under 40 ms.
    assert!(ms("LAB_MIN_RTT_AFTER_MS") >= 40.0, "{env}");
    assert!(
        ms("LAB_MIN_RTT_BEFORE_MS") < ms("LAB_MIN_RTT_AFTER_MS"),
        "{env}"
    );
    let qdisc = read(out, "netem/qdisc-a.txt");
    assert!(qdisc.contains("netem 1: root"), "{qdisc}");
    assert!(qdisc.contains("delay 20ms"), "{qdisc}");
    assert!(qdisc.contains("tbf 2: parent 1:"), "{qdisc}");
    assert!(qdisc.contains("rate 50Mbit"), "{qdisc}");
    // cmd-2 moved 300000 bytes from lab-b to lab-a through the shaped link intact.
    assert_eq!(
        read(out, "netem/cmd-2.rc").trim(),
        "0",
        "{}",
        read(out, "netem/cmd-2.err")
    );
    let sent = std::fs::read(out.join("netem/files/sent")).unwrap();
    assert_eq!(sent.len(), 300_000);
    assert_eq!(
        std::fs::read(out.join("netem/files/received")).unwrap(),
        sent
    );
    assert!(
        !out.join("raid5-crypt/cmd-2.rc").exists(),
        "@netem ran elsewhere"
    ); // The transfer went through netem: the counters on lab-a's end are shown.
    let shown = read(out, "netem/cmd-2.out");
    assert!(shown.contains("qdisc netem 1: root"), "{shown}");
    assert_probe_basics(out, "netem");
}

fn lab_script(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/run"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn lab_without_qemu_names_the_package_and_exits_77() {
    let o = lab_script(
        &["--nastune", env!("CARGO_BIN_EXE_nastune"), "afalg"],
        &[("LAB_QEMU", "/nonexistent/qemu-system-x86_64")],
    );
    assert_eq!(o.status.code(), Some(LAB_PREREQUISITE_MISSING));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("'/nonexistent/qemu-system-x86_64'"), "{err}");
    assert!(err.contains("apt-get install qemu-system-x86"), "{err}");
}

#[test]
fn lab_rejects_unknown_scenarios_and_options() {
    let o = lab_script(&["no-such-scenario"], &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("'no-such-scenario'") && err.contains("raid5-crypt"),
        "{err}"
    );
    let o = lab_script(&["--frobnicate", "afalg"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("'--frobnicate'"));
    let o = lab_script(&["--list"], &[]);
    let list = String::from_utf8_lossy(&o.stdout);
    for s in ["raid5-crypt", "luks-usb", "afalg", "netem"] {
        assert!(list.contains(s), "{list}");
    }
}

/// The boxes `lab/run capture-fixtures` captured inside the VM read back with every
/// section ok and the guest's identity (the lab's cloud kernel, the scenario's hostname).
#[test]
fn lab_fixture_boxes_read_back() {
    for scenario in ["raid5-crypt", "luks-usb"] {
        let root = crate::util::fixtures().join(format!("boxes/lab-{scenario}"));
        let o = crate::util::nastune()
            .args(["probe", "--json", "--no-store", "--root"])
            .arg(&root)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", crate::util::stderr(&o));
        let v: Value = serde_json::from_str(&crate::util::stdout(&o)).unwrap();
        for (key, section) in v.as_object().unwrap() {
            if let Some(status) = section.get("status") {
                assert_eq!(status, "ok", "lab-{scenario}: section '{key}' is {section}");
            }
        }
        let json = v.to_string();
        assert!(json.contains("-cloud-amd64"), "lab-{scenario}: {json}");
        assert!(
            json.contains(&format!("lab-{scenario}")),
            "lab-{scenario}: hostname"
        );
    }
}
