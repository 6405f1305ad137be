//! The VM lab (`lab/run`): one boot of Debian's cloud kernel under QEMU runs the
//! raid5-crypt, luks-usb, afalg, netem, fileserve and livechain scenarios with this
//! build of nastune inside, and `bench smb` on the host against the guest's forwarded
//! smbd.
//! The chains are checked with the kernel's own tools (mdstat, dmsetup, tune2fs), and
//! nastune's probe JSON from inside the VM is checked for what the probe reports today.
//!
//! Skips with a printed reason when QEMU or the kernel cannot be obtained, unless
//! NASTUNE_LAB_REQUIRED=1 (the lab alone) or NASTUNE_REQUIRE_ALL=1 (every
//! test's needs), where a missing lab is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// lab/run's exit status for a missing prerequisite.
const LAB_PREREQUISITE_MISSING: i32 = 77;

/// The scenarios the one boot runs, in this order.
const SCENARIOS: &[&str] = &[
    "raid5-crypt",
    "luks-usb",
    "afalg",
    "netem",
    "fileserve",
    "livechain",
];

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
    // cmd-3: every known-answer vector through AF_ALG as well as user space.
    "@afalg nastune bench crypto --self-test --json",
    // cmd-4: kernel cipher figures with the driver that served them.
    "@afalg nastune bench crypto --no-kdf --size 4k --duration 0.05 --json --no-store",
    // cmd-5: a direct write benchmark on ext4 over raid5 over dm-crypt.
    "@raid5-crypt nastune bench disk --rw write --bs 1m --iodepth 4 --direct --runtime 2s \
     --ramp-time 0 --size 24M --json --no-store /mnt/md0",
    // cmd-6: request/response latency across the netem link (server in lab-b).
    "@netem { ip netns exec $LAB_NS_B nastune net serve --sessions 1 --allow 10.0.0.0/8 >/dev/null & } && \
     sleep 1 && ip netns exec $LAB_NS_A nastune bench net $LAB_ADDR_B --rr -t 2 --json --no-store; \
     rc=$?; kill %1 2>/dev/null; exit $rc",
    // cmd-7, cmd-8: direct writes through the guest's own cifs and nfs4 mounts of the
    // encrypted ext4 (smbd and nfsd on the same box, like a NAS copying to itself).
    "@fileserve nastune bench disk --rw write --bs 1m --iodepth 4 --direct --runtime 2s \
     --ramp-time 0 --size 16M --json --no-store $LAB_CIFS_MNT",
    "@fileserve nastune bench disk --rw write --bs 1m --iodepth 4 --direct --runtime 2s \
     --ramp-time 0 --size 16M --json --no-store $LAB_NFS_MNT",
    // cmd-9: bench smb inside the guest, where smbd is local: the server's per-stage CPU.
    "@fileserve NASTUNE_SMB_PASSWORD=$LAB_SMB_PASSWORD nastune bench smb $LAB_SMB_UNC \
     --user $LAB_SMB_USER --size 16M --files 16 --json --no-store",
];

/// Run on the host while the guest waits after fileserve's setup (host-1): bench smb
/// through QEMU's forwarded port to the guest's smbd, plain, signed and encrypted
/// (sequential only: small files three ways would add half a minute of guest time).
const HOST_COMMANDS: &[&str] = &[
    "@fileserve NASTUNE_SMB_PASSWORD=lab-secret $LAB_NASTUNE bench smb \
     //127.0.0.1:$LAB_FWD_445/share --user lab --size 16M --workload seq-write,seq-read \
     --compare-security --json --no-store",
];

enum Lab {
    Ran(PathBuf),
    Skipped(String),
    Failed(String),
}

static LAB: OnceLock<Lab> = OnceLock::new();

/// Boots the lab once for every test in this file (lab/run also holds a file lock, so
/// no two lab VMs ever share the two cores).
fn lab() -> Option<&'static Path> {
    let lab = LAB.get_or_init(boot);
    match lab {
        Lab::Ran(out) => Some(out),
        Lab::Skipped(reason) => {
            if std::env::var_os("NASTUNE_LAB_REQUIRED").is_some_and(|v| v == "1") {
                panic!("the VM lab is required here (NASTUNE_LAB_REQUIRED=1) but: {reason}");
            }
            crate::util::skip(&format!("VM lab unavailable: {reason}"));
            None
        }
        Lab::Failed(why) => panic!("{why}"),
    }
}

fn boot() -> Lab {
    // The results outlive every test that reads them, so they cannot sit in a TempDir
    // (a static is never dropped: each run left a directory in /tmp). Cargo's per-target
    // scratch directory holds them instead; lab/run empties --out on each boot.
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lab-out");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/run");
    let mut cmd = Command::new("bash");
    cmd.arg(&script);
    for c in HOST_COMMANDS {
        cmd.args(["--host-command", c]);
    }
    let o = cmd
        .arg("--nastune")
        .arg(env!("CARGO_BIN_EXE_nastune"))
        .arg("--quiet")
        // A hung guest is killed after 420 + 90 s: the lab stage stays under 10 minutes.
        .args(["--timeout", "420"])
        .arg("--out")
        .arg(&out)
        .args(SCENARIOS)
        .arg("--")
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
        Some(0) => Lab::Ran(out),
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

/// The scenario's dm-crypt mapping NAME sits on one virtio disk, keyless in its table.
fn assert_crypt_on_one_disk(out: &Path, scenario: &str, name: &str) {
    assert_crypt_line(
        &read(out, &format!("{scenario}/dmsetup-table.txt")),
        name,
        None,
    );
    let stack = stack(&read(out, &format!("{scenario}/stack.txt")));
    let (_, _, below) = slaves_of(&stack, name);
    assert!(below.len() == 1 && below[0].starts_with("vd"), "{below:?}");
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

/// The probe's own view of both orders of the chain, inside the VM: md0 raid5 chunk
/// 64 KiB over four LUKS2 members (aes-xts-plain64, 4096-byte sectors) on the virtio
/// disks, ext4 stride 16 / stripe width 48 on /mnt/md0; and LUKS2 on top of md1 (raid5
/// chunk 128 KiB over the raw disks), ext4 32/96 on /mnt/md1.
fn assert_probe_sees_raid5_crypt_chain(probe: &Value) {
    assert_eq!(probe["storage"]["status"], "ok", "{}", probe["storage"]);
    assert_eq!(
        probe["filesystems"]["status"], "ok",
        "{}",
        probe["filesystems"]
    );
    let storage = &probe["storage"]["data"];
    let md = |name: &str| {
        storage["md_arrays"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {}", storage["md_arrays"]))
            .clone()
    };
    let dm_of = |dev: &str| {
        storage["dm_devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["device"] == dev)
            .unwrap_or_else(|| panic!("no dm device {dev}"))
            .clone()
    };
    let assert_crypt = |dm: &Value| {
        assert_eq!(dm["target_type"], "crypt", "{dm}");
        assert_eq!(dm["format"], "luks2", "{dm}");
        assert_eq!(dm["crypt"]["cipher"], "aes-xts-plain64", "{dm}");
        assert_eq!(dm["crypt"]["sector_bytes"], 4096, "{dm}");
    };
    let mount = |point: &str| {
        probe["filesystems"]["data"]["mounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["mount_point"] == point)
            .unwrap_or_else(|| panic!("{point} not mounted"))
            .clone()
    };
    let chains_of = |point: &str| -> Vec<Vec<String>> {
        storage["chains"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| {
                c["mount_points"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m == point)
            })
            .map(|c| {
                c["devices"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_str().unwrap().to_string())
                    .collect()
            })
            .collect()
    };

    // Order 1: ext4 -> md0 (raid5, 64 KiB) -> four crypt members -> virtio disks.
    let md0 = md("md0");
    assert_eq!(md0["level"], "raid5");
    assert_eq!(md0["chunk_bytes"], 64 * 1024);
    assert_eq!(md0["raid_disks"], 4);
    assert_eq!(md0["degraded"], false);
    let members = md0["members"].as_array().unwrap();
    assert_eq!(members.len(), 4, "{md0}");
    for m in members {
        let dm = dm_of(m["device"].as_str().unwrap());
        assert_crypt(&dm);
    }
    let chains = chains_of("/mnt/md0");
    assert_eq!(chains.len(), 4, "one chain per member: {chains:?}");
    for c in &chains {
        assert_eq!(c[0], "md0", "{c:?}");
        assert!(c[1].starts_with("dm-"), "{c:?}");
        assert!(c.last().unwrap().starts_with("vd"), "{c:?}");
    }
    let fs0 = mount("/mnt/md0");
    assert_eq!(fs0["fs_type"], "ext4");
    assert_eq!(fs0["device"], "md0");
    assert_eq!(fs0["geometry"]["ext4_raid_stride_blocks"], 16, "{fs0}");
    assert_eq!(
        fs0["geometry"]["ext4_raid_stripe_width_blocks"], 48,
        "{fs0}"
    );

    // Order 2: ext4 -> crypt -> md1 (raid5, 128 KiB) -> virtio disks.
    let md1 = md("md1");
    assert_eq!(md1["level"], "raid5");
    assert_eq!(md1["chunk_bytes"], 128 * 1024);
    assert_eq!(md1["members"].as_array().unwrap().len(), 4);
    let fs1 = mount("/mnt/md1");
    let top = fs1["device"].as_str().unwrap().to_string();
    assert!(top.starts_with("dm-"), "{fs1}");
    let crypt_md1 = dm_of(&top);
    assert_crypt(&crypt_md1);
    assert_eq!(crypt_md1["slaves"][0], "md1", "{crypt_md1}");
    let chains = chains_of("/mnt/md1");
    assert_eq!(chains.len(), 4, "{chains:?}");
    for c in &chains {
        assert_eq!(&c[..2], &[top.clone(), "md1".to_string()], "{c:?}");
    }
    assert_eq!(fs1["geometry"]["ext4_raid_stride_blocks"], 32, "{fs1}");
    assert_eq!(
        fs1["geometry"]["ext4_raid_stripe_width_blocks"], 96,
        "{fs1}"
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
    assert_crypt_on_one_disk(out, "luks-usb", "usbcrypt");
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

fn cmd_json(out: &Path, scenario: &str, n: u32) -> Value {
    let rc = read(out, &format!("{scenario}/cmd-{n}.rc"));
    let text = read(out, &format!("{scenario}/cmd-{n}.out"));
    assert_eq!(
        rc.trim(),
        "0",
        "{scenario} cmd-{n} failed:\n{text}\n{}",
        std::fs::read_to_string(out.join(format!("{scenario}/cmd-{n}.err"))).unwrap_or_default()
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{scenario} cmd-{n}: {e}\n{text}"))
}

#[test]
fn lab_afalg_known_answers_and_kernel_figures() {
    let Some(out) = lab() else { return };
    // Exit 0: no vector mismatched on any path.
    let kat = cmd_json(out, "afalg", 3);
    let kernel: Vec<&Value> = kat
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["path"].as_str().unwrap().starts_with("kernel"))
        .collect();
    // The IEEE 1619 XTS and NIST CBC vectors pass through the kernel's drivers. A
    // template the guest cannot load (no modprobe in the initramfs) may only be
    // skipped with ENOENT, never silently.
    let passed = |prefix: &str| {
        kernel
            .iter()
            .filter(|r| r["vector"].as_str().unwrap().starts_with(prefix))
            .filter(|r| r["status"] == "pass")
            .count()
    };
    assert!(passed("XTS-AES") >= 4, "{kernel:?}");
    assert_eq!(passed("AES-128-CBC NIST"), 1, "{kernel:?}");
    assert_eq!(passed("AES-256-CBC NIST"), 1, "{kernel:?}");
    for r in &kernel {
        if r["status"] == "skip" {
            assert!(r["reason"].as_str().unwrap().contains("ENOENT"), "{r}");
        }
    }
    let v = cmd_json(out, "afalg", 4);
    assert_eq!(v["afalg"]["available"], true, "{}", v["afalg"]);
    let xts = v["kernel"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cipher"] == "aes-xts-plain64" && c["key_bits"] == 512)
        .expect("kernel aes-xts-plain64 512");
    assert!(xts["not_measured"].is_null(), "{xts}");
    assert!(
        xts["driver"]["name"].as_str().unwrap().contains("aes"),
        "{xts}"
    );
    assert!(
        xts["points"][0]["encrypt"]["bytes_per_sec"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn lab_disk_bench_sees_raid_and_crypt_threads_and_members() {
    let Some(out) = lab() else { return };
    let v = cmd_json(out, "raid5-crypt", 5);
    let test = &v["tests"][0];
    assert_eq!(test["status"], "ok", "{test}");
    let threads: Vec<&str> = test["cpu"]["kernel_threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["comm"].as_str().unwrap())
        .collect();
    // dm-crypt's work shows as kcryptd threads or as kworkers running kcryptd work
    // ("kworker/u4:0-kcryptd/252:1").
    assert!(
        threads
            .iter()
            .any(|t| t.contains("kcryptd") || t.starts_with("md0_raid5")),
        "no kcryptd or md0_raid5 among {threads:?}"
    );
    let devices = test["devices"].as_array().unwrap();
    let written = |prefix: &str| {
        devices
            .iter()
            .filter(|d| d["name"].as_str().unwrap().starts_with(prefix))
            .map(|d| d["write_bytes"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert!(written("md0") > 0, "{devices:?}");
    assert!(
        written("dm-") > 0,
        "crypt members moved nothing: {devices:?}"
    );
    assert!(written("vd") > 0, "member disks moved nothing: {devices:?}");
    // RAID5 parity: the members together write more than the array was given.
    assert!(written("vd") > written("md0"), "{devices:?}");
}

/// `bench disk` on md and device-mapper chains, which a test host's kernel may not
/// have: every case of lab/scenarios/livechain.sh as it expects (a write to a live use
/// refused even with --destroy-data, naming the array or mapping; reads and unused
/// arrays and mappings allowed), and the refusals that name what sits on the bytes.
#[test]
fn lab_livechain_write_guard_follows_md_and_dm_stacks() {
    let Some(out) = lab() else { return };
    let cases = read(out, "livechain/cases.txt");
    let lines: Vec<&str> = cases.lines().collect();
    assert_eq!(lines.len(), 17, "{cases}");
    assert!(lines.iter().all(|l| l.starts_with("ok ")), "{cases}");
    let err = |name: &str| read(out, &format!("livechain/case-{name}.err"));
    // Written before: a mapping sharing its partition with a mounted mapping, and a
    // mapping over a loop device whose file another loop device has mounted.
    let e = err("dm-sibling-mounted");
    assert!(
        e.contains("device-mapper mapping 'lc-lin-a'")
            && e.contains("held by device-mapper mapping 'lc-lin-b'")
            && e.contains("is mounted at '/mnt/lc-linb'"),
        "{e}"
    );
    let e = err("dm-over-loop-sibling");
    assert!(e.contains("is mounted at '/mnt/lc-loop'"), "{e}");
    // Named as the user knows them, up the stack.
    let e = err("md-member");
    assert!(
        e.contains(
            "is held by md array 'md20' (raid1); 'md20' is held by dm-crypt mapping 'lc-mdcrypt'"
        ),
        "{e}"
    );
    let e = err("luks-disk");
    assert!(
        e.contains("dm-crypt mapping 'lc-crypt'") && e.contains("luks2)"),
        "{e}"
    );
    let e = err("partition-of-held-disk");
    assert!(
        e.contains("held by device-mapper mapping 'lc-whole'"),
        "{e}"
    );
    // A stopped array's member: data, not a use; --destroy-data naming it writes it.
    let e = err("stopped-member");
    assert!(
        e.contains("md RAID superblock") && e.contains("pass --destroy-data"),
        "{e}"
    );
}

#[test]
fn lab_rr_latency_tracks_the_netem_delay() {
    let Some(out) = lab() else { return };
    let v = cmd_json(out, "netem", 6);
    let rr = &v["end"]["rr"];
    let p50_ms = rr["latency_p50_ns"].as_f64().unwrap() / 1e6;
    // 20 ms of netem delay on each end: a round trip cannot be shorter than 40 ms.
    assert!(
        p50_ms >= 40.0,
        "p50 {p50_ms} ms below the added 40 ms: {rr}"
    );
    assert!(
        p50_ms < 40.0 + 200.0,
        "p50 {p50_ms} ms far above the delay: {rr}"
    );
    assert!(rr["transactions"].as_u64().unwrap() > 0);
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

#[test]
fn lab_fileserve_exports_encrypted_ext4_over_smb_and_nfs() {
    let Some(out) = lab() else { return };
    let log = read(out, "fileserve/setup.log");
    assert!(log.contains("encrypted: sharecrypt"), "{log}");
    // A file written through each mount was read back from the ext4 below.
    assert!(log.contains("both mounts reach /srv/share"), "{log}");
    let mounts = read(out, "fileserve/mounts.txt");
    for m in [
        "/dev/mapper/sharecrypt /srv/share ext4",
        "//127.0.0.1/share /mnt/cifs cifs",
        "127.0.0.1:/ /mnt/nfs nfs4",
    ] {
        assert!(mounts.contains(m), "no '{m}' in\n{mounts}");
    }
    let versions = read(out, "fileserve/nfsd-versions.txt");
    assert!(
        versions.contains("-3") && versions.contains("+4.2"),
        "{versions}"
    );
    assert_crypt_on_one_disk(out, "fileserve", "sharecrypt");
    // What the scenario adds to the lab's boot, for the CI budget.
    let console = read(out, "console.log");
    let at = |prefix: &str| -> Option<f64> {
        console
            .lines()
            .find_map(|l| l.strip_prefix(prefix)?.strip_suffix('s')?.parse().ok())
    };
    if let (Some(begin), Some(end)) = (
        at("vmlab: begin fileserve at "),
        at("vmlab: end fileserve at "),
    ) {
        eprintln!("lab fileserve: {:.0} s of guest time", end - begin);
    }
    assert_probe_basics(out, "fileserve");
}

/// `bench disk` on a network mount names the protocol and the mount's parameters, and
/// with --direct the bytes went through the protocol, not the client's page cache.
#[test]
fn lab_disk_bench_on_cifs_and_nfs4_mounts_reports_network_fs() {
    let Some(out) = lab() else { return };
    for (n, fs_type, version, mnt) in [
        (7, "cifs", "3.1.1", "/mnt/cifs"),
        (8, "nfs4", "4.2", "/mnt/nfs"),
    ] {
        let v = cmd_json(out, "fileserve", n);
        let net = &v["target"]["network_fs"];
        assert_eq!(net["fs_type"], fs_type, "{net}");
        assert_eq!(net["version"], version, "{net}");
        assert_eq!(net["mount_point"], mnt, "{net}");
        for size in ["rsize_bytes", "wsize_bytes"] {
            let b = net[size]
                .as_u64()
                .unwrap_or_else(|| panic!("no {size}: {net}"));
            assert!(b >= 4096 && b.is_power_of_two(), "{net}");
        }
        let test = &v["tests"][0];
        assert_eq!(test["workload"]["direct"], true, "{}", test["workload"]);
        assert_eq!(test["status"], "ok", "{test}");
        assert_eq!(test["page_cache"], false, "{fs_type}: {test}");
        let bw = test["write"]["bw_bytes"].as_f64().unwrap();
        // More than nothing, and less than 1 GB/s, which two emulated vCPUs cannot move
        // through smbd or nfsd and dm-crypt: a figure above it came from a cache.
        assert!(bw > 100e3 && bw < 1e9, "{fs_type}: {bw} B/s");
        eprintln!(
            "lab fileserve: bench disk --direct write on {fs_type}: {:.1} MB/s",
            bw / 1e6
        );
    }
}

fn stage_cpu_ns(result: &Value, stage: &str) -> u64 {
    result["server"]["stages"]
        .as_array()
        .unwrap_or_else(|| panic!("no server stages: {result}"))
        .iter()
        .find(|s| s["stage"] == stage)
        .and_then(|s| s["cpu_ns"].as_u64())
        .unwrap_or_else(|| panic!("no {stage} stage: {result}"))
}

/// Inside the guest smbd is local: each data workload's server CPU is measured, and
/// smbd itself spent CPU moving the bytes.
#[test]
fn lab_bench_smb_in_the_guest_measures_the_server_stages() {
    let Some(out) = lab() else { return };
    let v = cmd_json(out, "fileserve", 9);
    assert_eq!(v["server_local"], true);
    let run = &v["runs"][0];
    assert_eq!(run["session"]["dialect"], "3.1.1", "{}", run["session"]);
    for r in run["results"].as_array().unwrap() {
        if r["workload"] == "seq-write" || r["workload"] == "seq-read" {
            assert_eq!(r["bytes"], 16 << 20, "{r}");
            assert!(stage_cpu_ns(r, "smbd") > 0, "{r}");
            eprintln!(
                "lab fileserve: in the guest {}: {:.1} MB/s, smbd {:.1} CPU-s/GB",
                r["workload"],
                r["bw_bytes"].as_f64().unwrap() / 1e6,
                r["server"]["stages"][0]["cpu_seconds_per_gb"]
                    .as_f64()
                    .unwrap_or(0.0)
            );
        }
    }
}

/// From the host through QEMU's hostfwd: the port is local but QEMU owns it, so the
/// server is not sampled here; signing and encryption are negotiated and their
/// slowdowns on the emulated CPU printed.
#[test]
fn lab_bench_smb_from_the_host_through_the_forwarded_port() {
    let Some(out) = lab() else { return };
    let rc = read(out, "fileserve/host-1.rc");
    let text = read(out, "fileserve/host-1.out");
    assert_eq!(
        rc.trim(),
        "0",
        "{text}\n{}",
        read(out, "fileserve/host-1.err")
    );
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("host-1: {e}\n{text}"));
    assert_eq!(
        v["server_local"], false,
        "QEMU's port taken for this box's smbd"
    );
    let runs = v["runs"].as_array().unwrap();
    let security: Vec<&str> = runs
        .iter()
        .map(|r| r["security"].as_str().unwrap())
        .collect();
    assert_eq!(security, ["plain", "sign", "encrypt"]);
    assert_eq!(runs[1]["session"]["signing"], "aes-gmac");
    assert_eq!(runs[2]["session"]["cipher"], "aes128-gcm");
    for run in runs {
        for r in run["results"].as_array().unwrap() {
            assert!(r["server"].is_null(), "{r}");
            assert!(r["iops"].as_f64().unwrap() > 0.0, "{r}");
            if r["workload"] == "seq-write" || r["workload"] == "seq-read" {
                eprintln!(
                    "lab fileserve: host -> guest smbd {} {}: {:.1} MB/s",
                    run["security"],
                    r["workload"],
                    r["bw_bytes"].as_f64().unwrap() / 1e6
                );
            }
        }
    }
    let slow = v["slowdowns"].as_array().unwrap();
    assert!(!slow.is_empty());
    for s in slow {
        assert!(s["factor"].as_f64().unwrap() > 0.0, "{s}");
        eprintln!("lab fileserve: slowdown {s}");
    }
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
    for s in SCENARIOS {
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
                // The guest has no smartctl and virtio disks have no SMART. The
                // captures predate the kernel_log and irq sections (no
                // .nastune/kmsg, no proc/interrupts): they must say so; 'lab/run
                // capture-fixtures' brings them in.
                let expected = match key.as_str() {
                    "smart" => "unsupported",
                    "kernel_log" if !root.join(".nastune/kmsg").exists() => {
                        let reason = section["reason"].as_str().unwrap_or_default();
                        assert!(reason.contains("capture"), "lab-{scenario}: {reason}");
                        "unsupported"
                    }
                    "irq" if !root.join("proc/interrupts").exists() => {
                        let reason = section["reason"].as_str().unwrap_or_default();
                        assert!(
                            reason.contains("/proc/interrupts"),
                            "lab-{scenario}: {reason}"
                        );
                        "unsupported"
                    }
                    _ => "ok",
                };
                assert_eq!(
                    status, expected,
                    "lab-{scenario}: section '{key}' is {section}"
                );
            }
        }
        if scenario == "raid5-crypt" {
            assert_probe_sees_raid5_crypt_chain(&v);
        }
        let json = v.to_string();
        assert!(json.contains("-cloud-amd64"), "lab-{scenario}: {json}");
        assert!(
            json.contains(&format!("lab-{scenario}")),
            "lab-{scenario}: hostname"
        );
    }
}
