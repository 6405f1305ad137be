//! What `bench disk` must not write, on real loop devices (root): a disk whose
//! partition table is gone but whose partitions are not, a device whose bytes
//! are another device's in use (two loop devices over one file, a loop over a
//! loop, a partition of a loop, a partition of a disk a loop device sits on), a
//! file under a loop device or swap; and the
//! temporary file a killed run leaves behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::loopdev::{Loop, loop_dev, sh};
use crate::util::*;

fn bench(args: &[&str]) -> Output {
    nastune()
        .args(["bench", "disk", "--no-store"])
        .args(args)
        .output()
        .unwrap()
}

fn write_test(target: &str, destroy: Option<&str>) -> Output {
    let mut args = vec!["--rw", "write", "--size", "8M", "--runtime", "300ms"];
    if let Some(d) = destroy {
        args.extend(["--destroy-data", d]);
    }
    args.push(target);
    bench(&args)
}

/// sha256 of a file or device: proof that a refused run wrote nothing. A
/// device's cached pages go first: another loop device over the same file
/// (written through its own cache) leaves them stale.
fn sum(path: &str) -> String {
    if path.starts_with("/dev/") {
        sh(&format!("blockdev --flushbufs {path}"));
    }
    let o = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).split_whitespace().next().unwrap().to_string()
}

/// The run was refused (exit 2) and changed nothing; its stderr.
fn refused(target: &str, destroy: Option<&str>) -> String {
    let before = sum(target);
    let o = write_test(target, destroy);
    assert_eq!(
        o.status.code(),
        Some(2),
        "writing {target} was allowed: {}",
        stderr(&o)
    );
    assert_eq!(sum(target), before, "{target} changed");
    stderr(&o)
}

/// Zeroes the whole device (discard punches holes in the image file).
fn zero(dev: &str) {
    sh(&format!(
        "blkdiscard -f {dev} 2>/dev/null || blkdiscard {dev}; blockdev --flushbufs {dev}"
    ));
}

/// Another loop device, detached on drop.
struct Attached(String);

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).output();
    }
}

fn attach(backing: &Path, options: &[&str]) -> Attached {
    let o = Command::new("losetup")
        .args(["--find", "--show"])
        .args(options)
        .arg(backing)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    Attached(stdout(&o).trim().to_string())
}

/// A mount, unmounted on drop.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}

fn mount(dev: &str, at: &Path) -> Mounted {
    std::fs::create_dir_all(at).unwrap();
    sh(&format!("mount {dev} {}", at.display()));
    Mounted(at.to_path_buf())
}

fn image(l: &Loop) -> PathBuf {
    l._img.path().join("disk.img")
}

/// What the tests that partition, format and mount a loop device run.
const PARTITION_AND_MOUNT_TOOLS: &[&str] =
    &["mkfs.ext4", "fsck.ext4", "mount", "sha256sum", "sfdisk"];

/// One 32 MiB partition on `dev`, its node `{dev}p1` there.
fn partition_32m(dev: &str) {
    sh(&format!(
        "echo ',32M' | sfdisk -q {dev} && partx -u {dev} 2>/dev/null; udevadm settle 2>/dev/null; sleep 0.5; test -b {dev}p1"
    ));
}

fn fsck_clean(dev: &str) {
    let o = Command::new("fsck.ext4")
        .args(["-n", dev])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn a_cleared_partition_table_leaves_partitions_that_are_not_written() {
    let tools = [
        "blkdiscard",
        "blockdev",
        "sha256sum",
        "sfdisk",
        "sgdisk",
        "blkid",
        "mkfs.ext4",
        "mkfs.xfs",
        "mkfs.btrfs",
        "mkswap",
        "cryptsetup",
        "pvcreate",
    ];
    let Some(l) = loop_dev(400, &tools) else {
        return;
    };
    let d = l.dev.clone();
    let part = l._img.path().join("part.img");
    let p = part.display();
    // A filesystem made in an image file, then put at byte OFFSET: a
    // partition whose table is gone.
    let at = |mib_or_sectors: &str, make: &str| {
        format!(
            "rm -f {p} && truncate -s 320M {p} && {make} && dd if={p} of={d} {mib_or_sectors} conv=notrunc,sparse,fsync status=none"
        )
    };
    let cases: Vec<(&str, String, &str)> = vec![
        // A dos label, ext4 in its partition at 1 MiB, the first MiB zeroed.
        (
            "dos 1 MiB ext4",
            format!(
                "echo 'start=2048, size=64M' | sfdisk -q --no-reread {d} && mkfs.ext4 -q -F -E offset=1048576 {d} 64M && dd if=/dev/zero of={d} bs=1M count=1 conv=notrunc,fsync status=none"
            ),
            "ext2/3/4",
        ),
        // GPT zapped as sgdisk --zap does: the first 34 and last 33 sectors.
        (
            "GPT 2048 zapped ext4",
            format!(
                "sgdisk -n1:2048:+64M {d} >/dev/null && mkfs.ext4 -q -F -E offset=1048576 {d} 64M && dd if=/dev/zero of={d} bs=512 count=34 conv=notrunc,fsync status=none && dd if=/dev/zero of={d} bs=512 count=33 seek=$(( $(blockdev --getsz {d}) - 33 )) conv=notrunc,fsync status=none"
            ),
            "ext2/3/4",
        ),
        // DOS cylinder alignment: sector 63, the label's sector zeroed.
        (
            "dos 63 ext4",
            format!(
                "mkfs.ext4 -q -F -E offset=32256 {d} 64M && dd if=/dev/zero of={d} bs=512 count=63 conv=notrunc,fsync status=none"
            ),
            "ext2/3/4",
        ),
        (
            "XFS at 1 MiB",
            at("bs=1M seek=1", &format!("mkfs.xfs -q -f {p}")),
            "XFS",
        ),
        (
            "btrfs at 2 MiB",
            at("bs=1M seek=2", &format!("mkfs.btrfs -q -f {p}")),
            "btrfs",
        ),
        (
            "swap at 1 MiB",
            at("bs=1M seek=1", &format!("mkswap {p} >/dev/null")),
            "swap",
        ),
        (
            "LUKS at 1 MiB",
            at(
                "bs=1M seek=1",
                &format!(
                    "printf pw | cryptsetup luksFormat -q --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 {p} -"
                ),
            ),
            "LUKS",
        ),
        (
            "LVM2 at 4 MiB",
            at(
                "bs=1M seek=4",
                &format!(
                    "L=$(losetup -f --show {p}) && pvcreate -qq -y $L 2>/dev/null; r=$?; losetup -d $L; [ $r = 0 ]"
                ),
            ),
            "LVM2",
        ),
        // md 1.2 keeps its superblock 4 KiB into its member (a partition at 1 MiB).
        (
            "md 1.2 in a partition at 1 MiB",
            format!(
                "printf '\\374\\116\\053\\251\\001\\000\\000\\000' | dd of={d} bs=1 seek=$(( 1048576 + 4096 )) conv=notrunc,fsync status=none"
            ),
            "md RAID",
        ),
        // Data in no known format where a partition starts.
        (
            "unknown data at 8 MiB",
            format!(
                "printf journal | dd of={d} bs=1 seek=$(( 8 * 1048576 + 100 )) conv=notrunc,fsync status=none"
            ),
            "not blank",
        ),
    ];
    for (name, make, what) in &cases {
        zero(&d);
        sh(make);
        let err = refused(&d, None);
        assert!(err.contains(what), "{name}: {err}");
        assert!(
            err.contains(&format!("--destroy-data {d}")),
            "{name}: {err}"
        );
    }
    // A disk of 4096-byte sectors: GPT's first partition at sector 256,
    // zapped (its label takes sectors 0 to 5, the backup the last 5).
    let img4k = l._img.path().join("4k.img");
    std::fs::File::create(&img4k)
        .unwrap()
        .set_len(128 << 20)
        .unwrap();
    let k = attach(&img4k, &["--sector-size", "4096"]);
    let k4 = &k.0;
    sh(&format!(
        "sgdisk -n1:256:+64M {k4} >/dev/null && mkfs.ext4 -q -F -E offset=1048576 {k4} 64M && dd if=/dev/zero of={k4} bs=4096 count=6 conv=notrunc,fsync status=none && dd if=/dev/zero of={k4} bs=4096 count=5 seek=$(( $(blockdev --getsize64 {k4}) / 4096 - 5 )) conv=notrunc,fsync status=none"
    ));
    let err = refused(k4, None);
    assert!(
        err.contains("ext2/3/4 filesystem signature at byte 1048576"),
        "{err}"
    );
    drop(k);
    // The first case by hand, as reported: still there afterwards.
    zero(&d);
    sh(&cases[0].1);
    refused(&d, None);
    sh(&format!("blkid -p -O 1048576 {d} | grep -q ext4"));
    // Zeros everywhere nastune looks: written without ceremony.
    zero(&d);
    let o = write_test(&d, None);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_loop_device_over_the_file_of_a_mounted_one_is_not_written() {
    let Some(l) = loop_dev(64, PARTITION_AND_MOUNT_TOOLS) else {
        return;
    };
    let d = l.dev.clone();
    // No lazy init: its thread would write the mounted image during the test.
    sh(&format!(
        "mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 {d}"
    ));
    // Two loop devices on one image; the first mounted, the second benched.
    let second = attach(&image(&l), &[]);
    let m = mount(&d, &l.mountpoint());
    std::fs::write(m.0.join("photo.jpg"), b"someone's data").unwrap();
    sh("sync");
    let err = refused(&second.0, Some(&second.0));
    let (first, other) = (l.name(), second.0.trim_start_matches("/dev/"));
    assert!(
        err.contains(&format!(
            "'{other}' and loop device '{first}' are both over"
        )) && err.contains(&format!("'{first}' is mounted at"))
            && err.contains("even with --destroy-data"),
        "{err}"
    );
    // A loop over the mounted loop device.
    let upper = attach(Path::new(&d), &[]);
    let err = refused(&upper.0, Some(&upper.0));
    assert!(
        err.contains(&format!("is a loop device over '{first}'"))
            && err.contains(&format!("'{first}' is mounted at")),
        "{err}"
    );
    drop(upper);
    drop(m);
    fsck_clean(&d);
    // Attached but unused, the other loop device still shares the bytes.
    let err = refused(&second.0, Some(&second.0));
    assert!(err.contains("are both over"), "{err}");
    drop(second);

    // A partition of one loop device mounted (loopNp1), the other benched whole.
    partition_32m(&d);
    sh(&format!(
        "mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 {d}p1"
    ));
    let m = mount(&format!("{d}p1"), &l.mountpoint());
    let second = attach(&image(&l), &[]);
    let err = refused(&second.0, Some(&second.0));
    assert!(err.contains(&format!("'{first}p1' is mounted at")), "{err}");
    drop(second);
    sh(&format!(
        "umount {0} || (sleep 1; umount {0})",
        m.0.display()
    ));
    sh("udevadm settle 2>/dev/null || sleep 1");
    // Alone again: --destroy-data writes it.
    let o = write_test(&d, Some(&d));
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A partition is part of its disk's bytes: a loop device over the whole disk (here
/// with its own partition mounted) is a live use of each partition, as a mapping over
/// the whole disk is (the VM lab's livechain scenario tries that one).
#[test]
fn a_partition_of_a_disk_under_a_mounted_loop_device_is_not_written() {
    let Some(l) = loop_dev(64, PARTITION_AND_MOUNT_TOOLS) else {
        return;
    };
    let d = l.dev.clone();
    partition_32m(&d);
    // A loop device over the whole disk sees its partition table: upper p1 is d p1's
    // bytes. Its own partition scan can miss the table written through d's cache a
    // moment ago; partx reads it again.
    let upper = attach(Path::new(&d), &["--partscan"]);
    let up = upper.0.clone();
    sh(&format!(
        "udevadm settle 2>/dev/null; test -b {up}p1 || partx -a {up}; sleep 0.5; test -b {up}p1 && mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 {up}p1"
    ));
    let m = mount(&format!("{up}p1"), &l.mountpoint());
    std::fs::write(m.0.join("photo.jpg"), b"someone's data").unwrap();
    sh("sync");
    let part = format!("{d}p1");
    let err = refused(&part, Some(&part));
    let (disk, upper_name) = (l.name(), up.trim_start_matches("/dev/"));
    assert!(
        err.contains(&format!("'{disk}' backs loop device '{upper_name}'"))
            && err.contains(&format!("'{upper_name}p1' is mounted at"))
            && err.contains("even with --destroy-data"),
        "{err}"
    );
    drop(m);
    fsck_clean(&format!("{up}p1"));
}

#[test]
fn a_file_under_a_loop_device_or_swap_is_not_written() {
    let Some(l) = loop_dev(
        64,
        &[
            "mkfs.ext4",
            "fsck.ext4",
            "mount",
            "sha256sum",
            "mkswap",
            "swapon",
        ],
    ) else {
        return;
    };
    let d = l.dev.clone();
    // No lazy init: its thread would write the mounted image during the test.
    sh(&format!(
        "mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 {d}"
    ));
    let img = image(&l);
    let file = img.to_str().unwrap();
    let m = mount(&d, &l.mountpoint());
    std::fs::write(m.0.join("photo.jpg"), b"someone's data").unwrap();
    sh("sync");
    let err = refused(file, None);
    assert!(
        err.contains(&format!("it backs loop device '{}'", l.name()))
            && err.contains("is mounted at"),
        "{err}"
    );
    // Under another name: a hardlink is the same file.
    let link = l._img.path().join("other-name.img");
    std::fs::hard_link(&img, &link).unwrap();
    let err = refused(link.to_str().unwrap(), None);
    assert!(err.contains("it backs loop device"), "{err}");
    drop(m);
    fsck_clean(&d);
    // The loop device detached, the file is the user's to overwrite.
    sh(&format!("losetup -d {d}"));
    let o = write_test(file, None);
    assert!(o.status.success(), "{}", stderr(&o));

    // A swap file.
    let swap = l._img.path().join("swapfile");
    sh(&format!(
        "dd if=/dev/zero of={s} bs=1M count=16 status=none && chmod 600 {s} && mkswap {s} >/dev/null && swapon {s}",
        s = swap.display()
    ));
    let s = swap.to_str().unwrap();
    let o = write_test(s, None);
    let _ = Command::new("swapoff").arg(&swap).output();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("it is active swap"), "{}", stderr(&o));
}

#[test]
fn a_killed_runs_temporary_file_is_removed_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut child = nastune()
        .args([
            "bench",
            "disk",
            "--no-store",
            "--rw",
            "read",
            "--runtime",
            "60",
        ])
        .args(["--size", "8M"])
        .arg(d)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let left = d.join(format!("nastune-bench-{}.tmp", child.id()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(&left).map_or(0, |m| m.len()) < 8 << 20 {
        assert!(Instant::now() < deadline, "no laid-out temporary file");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL: nothing of ours runs on the way out.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(left.exists());
    // Files that are not a dead run's own stay: a live pid's, other names.
    let keep = [
        "nastune-bench-1.tmp",
        "nastune-bench-x.tmp",
        "nastune-bench-12.tmp.bak",
        "notes.txt",
    ];
    for k in keep {
        std::fs::write(d.join(k), b"keep").unwrap();
    }
    let o = bench(&[
        "--rw",
        "read",
        "--runtime",
        "200ms",
        "--size",
        "4M",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!left.exists(), "the leftover is still there");
    assert!(
        stderr(&o).contains(&format!("removed '{}' (8 MiB)", left.display())),
        "{}",
        stderr(&o)
    );
    let mut now: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    now.sort();
    let mut want: Vec<String> = keep.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(now, want);
}

#[test]
fn check_refuses_a_block_device_as_dir() {
    let Some(l) = loop_dev(64, &["sha256sum"]) else {
        return;
    };
    let before = sum(&l.dev);
    let o = nastune()
        .args(["check", "--no-store", "--skip-crypto", "--skip-tcp"])
        .args(["--disk-seconds", "1", "--disk-size", "8M", "--dir", &l.dev])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("--dir '{}' is a block device", l.dev))
            && err.contains(&format!("nastune bench disk --rw read {}", l.dev)),
        "{err}"
    );
    assert!(!stdout(&o).contains("read from /"), "{}", stdout(&o));
    assert_eq!(sum(&l.dev), before, "check wrote to the device");
}
