//! `bench disk` end to end: the pipeline with the null engine, the engine
//! fallback, Ctrl-C cleanup, and (as root) every raw-device refusal and the
//! byte counts on real loop devices.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

fn bench(args: &[&str]) -> Output {
    nastune()
        .args(["bench", "disk", "--no-store"])
        .args(args)
        .output()
        .unwrap()
}

/// Whitespace-separated options followed by the target.
fn spec(options: &str, target: &str) -> Vec<String> {
    options
        .split_whitespace()
        .chain([target])
        .map(String::from)
        .collect()
}

fn bench_spec(options: &str, target: &str) -> Output {
    nastune()
        .args(["bench", "disk", "--no-store"])
        .args(spec(options, target))
        .output()
        .unwrap()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "exit {:?}: {}", o.status, stderr(o));
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

fn leftover_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

#[test]
fn null_engine_runs_the_whole_pipeline_and_removes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let o = bench_spec(
        "--engine null --rw randrw --iodepth 8 --runtime 300ms --size 4M --json",
        d,
    );
    let v = json(&o);
    assert_eq!(v["engine"]["name"], "null");
    assert_eq!(v["target"]["kind"], "temp_file");
    let t = &v["tests"][0];
    assert_eq!(t["status"], "ok");
    for dir in ["read", "write"] {
        let ios = t[dir]["total_ios"].as_u64().unwrap();
        assert!(ios > 100, "{dir}: {ios} I/Os");
        assert_eq!(t[dir]["io_bytes"].as_u64().unwrap(), ios * 4096);
        let p = &t[dir]["clat_ns"]["percentile"];
        assert!(p["50.000000"].as_u64().unwrap() <= p["99.990000"].as_u64().unwrap());
    }
    assert!(t["usr_cpu"].as_f64().unwrap() > 0.0, "{t}");
    assert!(
        leftover_files(dir.path()).is_empty(),
        "{:?}",
        leftover_files(dir.path())
    );
}

#[test]
fn bad_options_are_refused_before_any_io() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let o = bench(&["--rw", "read", "--bs", "4q", d]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'4q'"), "{}", stderr(&o));
    let o = bench(&["--rw", "randread", "--verify", d]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--verify"), "{}", stderr(&o));
    let o = bench(&["--bs", "8k", d]);
    assert_eq!(o.status.code(), Some(2), "--bs without --rw");
    let o = bench(&["--rw", "read", "/nonexistent/nastune"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    assert!(leftover_files(dir.path()).is_empty());
}

#[test]
fn falls_back_to_psync_when_io_uring_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let args = spec(
        "--rw randread --iodepth 4 --runtime 300ms --size 4M --json",
        d,
    );
    let o = nastune()
        .args(["bench", "disk", "--no-store"])
        .args(&args)
        .env("NASTUNE_URING_ERRNO", "38")
        .output()
        .unwrap();
    let v = json(&o);
    assert_eq!(v["engine"]["name"], "psync");
    assert!(
        stderr(&o).contains("falling back to psync"),
        "{}",
        stderr(&o)
    );
    assert!(v["tests"][0]["read"]["total_ios"].as_u64().unwrap() > 0);
    // Asked for explicitly, io_uring failing is an error, not a silent switch.
    let o = nastune()
        .args(["bench", "disk", "--no-store", "--engine", "io_uring"])
        .args(&args)
        .env("NASTUNE_URING_ERRNO", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("io_uring is not available"),
        "{}",
        stderr(&o)
    );
    // Forced psync works and says it ran at depth 1.
    let v = json(&bench_spec(
        "--engine psync --rw write --iodepth 4 --end-fsync --runtime 300ms --size 4M --json",
        d,
    ));
    assert_eq!(v["engine"]["name"], "psync");
    let t = &v["tests"][0];
    assert!(t["write"]["total_ios"].as_u64().unwrap() > 0);
    assert_eq!(t["sync"]["total_syncs"], 1, "end fsync timed once: {t}");
    assert!(
        t["notes"][0]
            .as_str()
            .unwrap()
            .contains("one I/O at a time")
    );
}

#[test]
fn verify_reads_back_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let v = json(&bench_spec(
        "--rw randwrite --verify --iodepth 4 --runtime 300ms --size 4M --json",
        d,
    ));
    let t = &v["tests"][0];
    assert!(t["verify"]["blocks_checked"].as_u64().unwrap() > 0, "{t}");
    assert_eq!(t["verify"]["mismatches"], 0);
}

#[test]
fn sigint_removes_the_temporary_file_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let child = nastune()
        .args([
            "bench",
            "disk",
            "--no-store",
            "--rw",
            "randread",
            "--runtime",
            "60",
            "--size",
            "8M",
        ])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while leftover_files(dir.path()).is_empty() {
        assert!(Instant::now() < deadline, "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let the layout finish and the test start.
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child by pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        leftover_files(dir.path()).is_empty(),
        "{:?}",
        leftover_files(dir.path())
    );
}

// ---- real loop devices (root) ----

pub use crate::loopdev::{Loop, loop_dev, sh};

fn write_refusal(l: &Loop) -> String {
    let o = bench(&["--rw", "write", "--runtime", "200ms", &l.dev]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "write to {} was allowed: {}",
        l.dev,
        stdout(&o)
    );
    stderr(&o)
}

/// Zeroes the device so nothing survives from the last case: filesystems
/// write past their first MiB, where partitions usually start, and nastune
/// looks there too. Discard punches holes in the image; the ends are zeroed
/// by hand should it not.
fn wipe(l: &Loop) {
    let d = &l.dev;
    sh(&format!(
        "blkdiscard -f {d} 2>/dev/null || blkdiscard {d} 2>/dev/null || true"
    ));
    sh(&format!(
        "dd if=/dev/zero of={d} bs=1M count=1 conv=fsync status=none"
    ));
    sh(&format!(
        "dd if=/dev/zero of={d} bs=1M count=1 seek=$(( $(blockdev --getsize64 {d}) / 1048576 - 1 )) conv=fsync status=none"
    ));
}

#[test]
fn refuses_writes_to_devices_that_carry_each_signature() {
    let Some(l) = loop_dev(
        320,
        &[
            "sfdisk",
            "mkfs.ext4",
            "mkfs.xfs",
            "mkfs.btrfs",
            "cryptsetup",
            "mkswap",
            "blockdev",
        ],
    ) else {
        return;
    };
    let d = l.dev.clone();
    let cases: [(&str, String); 8] = [
        (
            "GPT",
            format!("echo 'label: gpt' | sfdisk -q --no-reread {d} || true"),
        ),
        (
            "MBR",
            format!("echo 'label: dos' | sfdisk -q --no-reread {d} || true"),
        ),
        ("ext2/3/4", format!("mkfs.ext4 -q -F {d}")),
        ("XFS", format!("mkfs.xfs -q -f {d}")),
        ("btrfs", format!("mkfs.btrfs -q -f {d}")),
        (
            "LUKS",
            format!(
                "printf pw | cryptsetup luksFormat --batch-mode --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 {d} -"
            ),
        ),
        // md v1.2 superblock: magic 0xa92b4efc (little-endian) at 4 KiB, major version 1.
        (
            "md RAID",
            format!(
                "printf '\\374\\116\\053\\251\\001\\000\\000\\000' | dd of={d} bs=1 seek=4096 conv=notrunc,fsync status=none"
            ),
        ),
        (
            "swap area",
            format!("mkswap -q {d} || mkswap {d} >/dev/null"),
        ),
    ];
    for (what, cmd) in &cases {
        wipe(&l);
        sh(cmd);
        let err = write_refusal(&l);
        assert!(err.contains(what), "{what}: {err}");
        assert!(err.contains(&format!("--destroy-data {d}")), "{err}");
    }
    // Reads stay allowed on a device that holds data.
    let o = bench(&["--rw", "read", "--runtime", "200ms", &d]);
    assert!(o.status.success(), "{}", stderr(&o));
    // --destroy-data naming another device does not unlock this one…
    let Some(other) = loop_dev(8, &[]) else {
        return;
    };
    let o = write_destroying(&other.dev, &d);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("must name the target device"),
        "{}",
        stderr(&o)
    );
    // …naming this one does.
    let o = write_destroying(&d, &d);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A short write test on `target` with `--destroy-data named`.
fn write_destroying(named: &str, target: &str) -> std::process::Output {
    bench(&[
        "--rw",
        "write",
        "--runtime",
        "200ms",
        "--destroy-data",
        named,
        target,
    ])
}

#[test]
fn refuses_writes_to_mounted_devices_partitions_and_swap() {
    let Some(l) = loop_dev(64, &["sfdisk", "mkfs.ext4", "mkswap", "swapon", "mount"]) else {
        return;
    };
    let (d, mnt) = (l.dev.clone(), l.mountpoint());
    // The whole device mounted.
    sh(&format!(
        "mkfs.ext4 -q -F {d} && mount {d} {}",
        mnt.display()
    ));
    let err = write_refusal(&l);
    assert!(
        err.contains(&format!("'{}' is mounted at '{}'", l.name(), mnt.display())),
        "{err}"
    );
    // Naming the device does not unlock it while it is mounted.
    let o = write_destroying(&d, &d);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("even with --destroy-data") && stderr(&o).contains("Unmount it"),
        "{}",
        stderr(&o)
    );
    sh(&format!("umount {}", mnt.display()));

    // A partition mounted, the whole disk targeted.
    sh(&format!(
        "echo ',32M' | sfdisk -q {d} && partx -u {d} 2>/dev/null; udevadm settle 2>/dev/null; sleep 0.5; test -b {d}p1"
    ));
    sh(&format!(
        "mkfs.ext4 -q -F {d}p1 && mount {d}p1 {}",
        mnt.display()
    ));
    let err = write_refusal(&l);
    assert!(
        err.contains(&format!("'{}p1' is mounted", l.name())),
        "{err}"
    );
    sh(&format!("umount {}", mnt.display()));

    // Active swap on the whole device.
    wipe(&l);
    sh(&format!("mkswap {d} >/dev/null && swapon {d}"));
    let err = write_refusal(&l);
    assert!(err.contains("is active swap"), "{err}");
    sh(&format!("swapoff {d}"));
}

#[test]
fn device_bytes_match_the_loop_devices_diskstats() {
    let Some(l) = loop_dev(64, &[]) else { return };
    let d = l.dev.clone();
    for (rw, dir, key) in [
        ("read", "read", "read_bytes"),
        ("write", "write", "write_bytes"),
    ] {
        let v = json(&bench(&[
            "--rw",
            rw,
            "--bs",
            "64k",
            "--direct",
            "--iodepth",
            "4",
            "--runtime",
            "500ms",
            "--destroy-data",
            &d,
            "--json",
            &d,
        ]));
        let t = &v["tests"][0];
        let ours = t[dir]["io_bytes"].as_u64().unwrap();
        assert!(ours > 0);
        let layer = t["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == l.name())
            .unwrap_or_else(|| panic!("{t}"));
        assert_eq!(layer[key].as_u64().unwrap(), ours, "{rw}: {layer}");
    }
}

/// The warm-up and the read-back of --verify reach the device too: a quiet
/// device must not look used by someone else (the guard once counted a 1 s
/// warm-up as others' I/O and called every direct run of `check` disturbed).
#[test]
fn warm_up_and_verify_count_as_the_benchmarks_own_io() {
    let Some(l) = loop_dev(64, &[]) else { return };
    let d = l.dev.clone();
    let v = json(&bench(&[
        "--rw",
        "write",
        "--bs",
        "64k",
        "--direct",
        "--iodepth",
        "4",
        "--ramp-time",
        "400ms",
        "--runtime",
        "400ms",
        "--verify",
        "--destroy-data",
        &d,
        "--json",
        &d,
    ]));
    let t = &v["tests"][0];
    let target = t["validity"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "target_io")
        .unwrap_or_else(|| panic!("no target_io condition: {t}"))
        .clone();
    assert_eq!(target["verdict"], "clean", "{target}");
    // The warm-up did move data (else this test proves nothing).
    let layer_bytes = t["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == l.name())
        .map(|x| x["write_bytes"].as_u64().unwrap())
        .unwrap();
    assert!(layer_bytes > 0, "{t}");
}

/// sha256 of the whole device: proof that a refused run wrote nothing.
fn device_sum(dev: &str) -> String {
    let o = Command::new("sha256sum").arg(dev).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string()
}

/// Bytes at an offset (negative: from the end) of a device, as `printf` escapes.
fn poke(dev: &str, offset: i64, bytes: &[u8]) {
    let esc: String = bytes.iter().map(|b| format!("\\{b:03o}")).collect();
    let seek = if offset >= 0 {
        offset.to_string()
    } else {
        format!("$(( $(blockdev --getsize64 {dev}) - {} ))", -offset)
    };
    sh(&format!(
        "printf '{esc}' | dd of={dev} bs=1 seek={seek} conv=notrunc,fsync status=none"
    ));
}

#[test]
fn the_held_out_device_set_is_written_zero_times() {
    let tools = [
        "blockdev",
        "sha256sum",
        "pvcreate",
        "mksquashfs",
        "xorriso",
        "sgdisk",
        "mkfs.f2fs",
        "mkfs.exfat",
        "mkfs.ntfs",
        "mkfs.vfat",
    ];
    let Some(l) = loop_dev(64, &tools) else {
        return;
    };
    let d = l.dev.clone();
    let src = l._img.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("photo.jpg"), b"someone's data").unwrap();
    let s = src.display();
    type Make = Box<dyn Fn()>;
    let shell = |cmd: String| -> Make { Box::new(move || sh(&cmd)) };
    let cases: Vec<(&str, Make)> = vec![
        ("LVM2", shell(format!("pvcreate -qq -y {d} 2>/dev/null"))),
        (
            "squashfs",
            shell(format!(
                "mksquashfs {s} {s}.sq -quiet -noappend && dd if={s}.sq of={d} conv=notrunc,fsync status=none"
            )),
        ),
        (
            "ISO 9660",
            shell(format!(
                "xorriso -as mkisofs -quiet -o {s}.iso {s} 2>/dev/null && dd if={s}.iso of={d} conv=notrunc,fsync status=none"
            )),
        ),
        // A GPT disk whose primary header (LBA 1) is damaged: the backup at the end remains.
        (
            "GPT",
            shell(format!(
                "sgdisk -o {d} >/dev/null && dd if=/dev/zero of={d} bs=512 seek=1 count=1 conv=notrunc,fsync status=none"
            )),
        ),
        ("f2fs", shell(format!("mkfs.f2fs -q -f {d}"))),
        ("exFAT", shell(format!("mkfs.exfat {d} >/dev/null"))),
        ("NTFS", shell(format!("mkfs.ntfs -Q -F -q {d}"))),
        ("FAT", shell(format!("mkfs.vfat -I {d} >/dev/null"))),
        // Labels no tool here writes: their magics where libblkid looks.
        (
            "ZFS",
            Box::new({
                let d = d.clone();
                // An uberblock in the last label only (L3: 256 KiB before the end, ring at +128 KiB).
                move || poke(&d, -(128 << 10) + 3 * 1024, &0x00ba_b10c_u64.to_le_bytes())
            }),
        ),
        (
            "bcache",
            Box::new({
                let d = d.clone();
                move || {
                    poke(
                        &d,
                        4096 + 24,
                        &[
                            0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f,
                            0x48, 0xba, 0x6d, 0x81,
                        ],
                    )
                }
            }),
        ),
        (
            "VDO",
            Box::new({
                let d = d.clone();
                move || poke(&d, 0, b"dmvdo001")
            }),
        ),
        (
            "Stratis",
            Box::new({
                let d = d.clone();
                move || poke(&d, 4096 + 4, b"!Stra0tis\x86\xff\x02^\x41rh")
            }),
        ),
        // Data in no format anyone knows, deep in the last MiB.
        (
            "not blank",
            Box::new({
                let d = d.clone();
                move || poke(&d, -300_000, b"journal")
            }),
        ),
    ];
    for (what, make) in &cases {
        wipe(&l);
        make();
        let before = device_sum(&d);
        for rw in ["write", "randwrite", "randrw"] {
            let o = bench(&["--rw", rw, "--runtime", "200ms", &d]);
            assert_eq!(o.status.code(), Some(2), "{what} {rw}: {}", stdout(&o));
            let err = stderr(&o);
            assert!(err.contains(what), "{what}: {err}");
            assert!(err.contains(&format!("--destroy-data {d}")), "{err}");
        }
        assert_eq!(device_sum(&d), before, "{what}: the device changed");
    }
    // A blank device is written without ceremony.
    wipe(&l);
    let o = bench(&["--rw", "write", "--runtime", "200ms", &d]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn live_uses_are_refused_even_with_destroy_data() {
    let Some(l) = loop_dev(16, &["blockdev", "sha256sum"]) else {
        return;
    };
    let d = l.dev.clone();
    wipe(&l);
    // Another loop device backed by this one: no holders entry shows it.
    let o = Command::new("losetup")
        .args(["--find", "--show", &d])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let upper = stdout(&o).trim().to_string();
    let before = device_sum(&d);
    let o = write_destroying(&d, &d);
    let _ = Command::new("losetup").args(["-d", &upper]).output();
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    let upper_name = upper.trim_start_matches("/dev/");
    assert!(
        err.contains(&format!("backs loop device '{upper_name}'")) && err.contains("even with"),
        "{err}"
    );
    assert_eq!(device_sum(&d), before);

    // Another program's exclusive open (as mkfs or a VM holds a disk).
    use std::os::unix::fs::OpenOptionsExt;
    let held = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&d)
        .unwrap();
    let o = write_destroying(&d, &d);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("claimed exclusively"), "{}", stderr(&o));
    drop(held);
    assert_eq!(device_sum(&d), before);
    let o = write_destroying(&d, &d);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn buffered_results_on_a_file_smaller_than_ram_are_labelled_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().to_str().unwrap();
    let options = "--suite cache --size 8M --runtime 200ms --ramp-time 0";
    let v = json(&bench_spec(&format!("{options} --json"), target));
    let tests = v["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 4, "{v}");
    for t in tests {
        let buffered = t["workload"]["direct"] == false;
        // 8 MiB is below any machine's RAM: every buffered figure is the cache.
        assert_eq!(t["page_cache"], buffered, "{t}");
    }
    let o = bench_spec(options, target);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    // The table's rows; the timeline's sparkline rows ('|▇█…|') repeat the labels.
    let labelled: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("buffered (page cache)") && !l.contains('|'))
        .collect();
    assert_eq!(labelled.len(), 2, "{text}");
    assert!(!text.contains("direct (page cache)"), "{text}");
}

/// A directory on a FUSE filesystem (bindfs over a temporary directory): the
/// result names the mount and, unless told otherwise, runs buffered. (cifs and
/// nfs take the same path; their mountinfo options are unit-tested.)
#[test]
fn a_fuse_mount_is_measured_as_a_file_service() {
    if !require(&[Need::Root, Need::Tool("bindfs"), Need::Path("/dev/fuse")]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (src, mnt) = (t.path().join("src"), t.path().join("mnt"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let ok = Command::new("bindfs")
        .arg(&src)
        .arg(&mnt)
        .status()
        .unwrap()
        .success();
    assert!(ok, "bindfs mount");
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _u = Unmount(&mnt);
    let dir = mnt.to_str().unwrap();
    let o = bench_spec(
        "--suite quick --runtime 300ms --ramp-time 0 --size 16M --settle 0 --json",
        dir,
    );
    let doc = json(&o);
    let fs = &doc["target"]["network_fs"];
    assert_eq!(fs["fs_type"], "fuse", "{fs}");
    assert_eq!(fs["mount_point"], dir);
    // Buffered by default on a file service, said on stderr.
    for t in doc["tests"].as_array().unwrap() {
        assert_eq!(t["workload"]["direct"], false, "{t}");
    }
    assert!(stderr(&o).contains("measuring the file service with buffered I/O"));
    let text = stdout(&bench_spec(
        "--rw read --runtime 300ms --size 16M --settle 0",
        dir,
    ));
    assert!(text.contains("file service: fuse"), "{text}");
    assert!(leftover_files(&mnt).is_empty(), "temporary file removed");
}

/// The offset of the first data at or after `from` in `path` (SEEK_DATA), None past the last.
fn next_data(path: &Path, from: u64) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    // SAFETY: a valid descriptor; lseek only moves its offset.
    let at = unsafe { libc::lseek(f.as_raw_fd(), from as libc::off_t, libc::SEEK_DATA) };
    (at >= 0).then_some(at as u64)
}

/// Offsets and sizes past 4 GiB, which a 32-bit usize or off_t would wrap: random
/// 64 KiB writes over the first 8 GiB of a sparse 9 GiB file land above 4 GiB too
/// (half of them, some hundreds even under qemu-user) and none beyond 8 GiB.
/// dist/smoke runs this against the armv7 and armv5te binaries (NASTUNE_TEST_BIN).
#[test]
fn random_writes_reach_offsets_past_4_gib_of_a_sparse_file() {
    const GIB: u64 = 1 << 30;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sparse.img");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(9 * GIB)
        .unwrap();
    let v = json(&bench_spec(
        "--rw randwrite --bs 64k --size 8G --runtime 1 --end-fsync --json",
        file.to_str().unwrap(),
    ));
    assert_eq!(v["target"]["size_bytes"], 8 * GIB, "{}", v["target"]);
    assert!(v["tests"][0]["write"]["total_ios"].as_u64().unwrap() > 0);
    let above = next_data(&file, 4 * GIB).expect("no write landed past 4 GiB");
    assert!(above < 8 * GIB, "data at {above}, past --size 8G");
    assert_eq!(next_data(&file, 8 * GIB), None, "a write past --size 8G");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 9 * GIB);
}

/// `bench disk FILE` refused a FILE that did not exist, where fio creates it. It is
/// created (exclusively), laid out to --size, measured, and removed afterwards; a
/// missing name under /dev is a device that is not there and is never created.
#[test]
fn a_new_file_is_created_measured_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("new.img");
    let o = bench_spec(
        "--rw randread --bs 4k --size 4M --runtime 300ms --json",
        file.to_str().unwrap(),
    );
    let v = json(&o);
    assert_eq!(v["target"]["kind"], "file", "{}", v["target"]);
    assert_eq!(v["target"]["size_bytes"], 4 << 20, "{}", v["target"]);
    let reads = v["tests"][0]["read"]["total_ios"].as_u64().unwrap();
    assert!(reads > 0, "{}", v["tests"][0]);
    assert!(!file.exists(), "the file nastune created was left behind");
    // A file that exists stays, as it was given.
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    let o = bench_spec(
        "--rw read --size 1M --runtime 200ms",
        file.to_str().unwrap(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&file).unwrap(), vec![7u8; 1 << 20]);
    // Never a regular file in devtmpfs.
    let dev = format!("/dev/nastune-test-{}", std::process::id());
    let o = bench(&["--rw", "read", "--size", "1M", &dev]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("'{dev}' does not exist")),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("/dev"), "{}", stderr(&o));
    assert!(!Path::new(&dev).exists(), "{dev} was created");
}
