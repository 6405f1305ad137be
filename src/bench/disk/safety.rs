//! Before writing to a raw block device: is anything using it or stored on it?
//! fio only compares the name with /etc/mtab. A list of signatures always
//! misses something, so the rule is turned round: without `--destroy-data` a
//! device is written only when it looks blank, with no known signature *and*
//! zeros in its first and last MiB and at each place a partition usually
//! starts (a cleared partition table leaves its partitions whole).
//! `--destroy-data` naming that same device overrides what is stored on it
//! (the data the user chose to destroy), never a live use: a mount, a holder
//! (md, dm, LVM), swap, a loop device it backs, another program's exclusive
//! open, or any of those on a device with the same bytes (another loop device
//! over the same file, the device under a loop device, the devices under an md
//! array or a mapping, where another mapping may sit too) or spanning them (the
//! whole disk a partition is on). Writing under those corrupts what is
//! running, and the fix is to stop that use first. A file target is refused
//! while a loop device or swap sits on it, whatever its name.

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::holders;
use super::loops::{self, Backing, LoopDev};
use super::signatures;
use crate::root::Root;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SafetyError {
    #[error(
        "refusing to write to '{}': {}. Writing would destroy it; if that is what you want, pass --destroy-data {}",
        device.display(),
        findings.join("; "),
        device.display()
    )]
    Refused {
        device: PathBuf,
        findings: Vec<String>,
    },
    #[error(
        "--destroy-data names '{}' but the target is '{}'; it must name the target device itself",
        named.display(),
        target.display()
    )]
    Mismatch { named: PathBuf, target: PathBuf },
    #[error(
        "refusing to write to '{}' even with --destroy-data: {}. Unmount it, stop the array, mapping or loop device, swapoff it, or close the program that holds it first",
        device.display(),
        uses.join("; ")
    )]
    InUse { device: PathBuf, uses: Vec<String> },
    #[error("--destroy-data '{}' is only for block-device targets", named.display())]
    NotADevice { named: PathBuf },
    #[error(
        "refusing to write to '{}': {}. Writing the file under them corrupts what runs on them; detach the loop device (losetup -d) or swapoff the file first",
        path.display(),
        uses.join("; ")
    )]
    FileInUse { path: PathBuf, uses: Vec<String> },
}

/// What was found on and around a device.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceFacts {
    /// "'sdb1' is mounted at '/srv'".
    pub mounts: Vec<String>,
    /// "'sdb' is held by md array 'md0' (raid1)", then what sits on md0.
    pub holders: Vec<String>,
    /// "'sdb2' is active swap".
    pub swaps: Vec<String>,
    /// "'sdb' backs loop device 'loop3'".
    pub loop_backings: Vec<String>,
    /// "'loop1' and loop device 'loop0' are both over '/srv/disk.img'": the
    /// same bytes under another device, which the other fields also cover.
    pub shared: Vec<String>,
    /// "'/dev/sdb' is claimed exclusively by another user".
    pub claims: Vec<String>,
    /// "an ext2/3/4 filesystem signature", "… at byte 1048576, where a partition usually starts".
    pub signatures: Vec<String>,
    /// Anything else that stops us: data no signature names, an unreadable end.
    pub other: Vec<String>,
}

impl DeviceFacts {
    /// Live uses of the device: what `--destroy-data` does not override.
    pub fn uses(&self) -> Vec<String> {
        [
            &self.mounts,
            &self.holders,
            &self.swaps,
            &self.loop_backings,
            &self.shared,
            &self.claims,
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect()
    }

    /// What is stored on the device: what `--destroy-data` overrides.
    pub fn contents(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .signatures
            .iter()
            .map(|s| format!("it carries {s}"))
            .collect();
        out.extend(self.other.iter().cloned());
        out
    }
}

/// The decision, on facts already gathered. `destroy_data` is the rdev of the
/// device `--destroy-data` named, with its path.
pub fn decide(
    device: &Path,
    rdev: u64,
    facts: &DeviceFacts,
    destroy_data: Option<(&Path, u64)>,
) -> Result<(), SafetyError> {
    if let Some((named, named_rdev)) = destroy_data
        && named_rdev != rdev
    {
        return Err(SafetyError::Mismatch {
            named: named.to_path_buf(),
            target: device.to_path_buf(),
        });
    }
    let uses = facts.uses();
    if !uses.is_empty() {
        return Err(SafetyError::InUse {
            device: device.to_path_buf(),
            uses,
        });
    }
    let contents = facts.contents();
    if destroy_data.is_some() || contents.is_empty() {
        Ok(())
    } else {
        Err(SafetyError::Refused {
            device: device.to_path_buf(),
            findings: contents,
        })
    }
}

/// Partitions of a disk: the entries of its sysfs directory that have a `partition` file.
pub fn partitions(root: &Root, name: &str) -> Vec<String> {
    root.read_dir_optional(&format!("sys/class/block/{name}"))
        .unwrap_or_default()
        .into_iter()
        .filter(|e| root.exists(&format!("sys/class/block/{name}/{e}/partition")))
        .collect()
}

/// "maj:min" of a device from sysfs.
fn dev_numbers(root: &Root, name: &str) -> Option<String> {
    root.read_optional(&format!("sys/class/block/{name}/dev"))
        .ok()
        .flatten()
}

/// Mounts of any of `devices` (name, "maj:min") in /proc/self/mountinfo. The
/// device numbers catch every mount of a block filesystem; btrfs reports an
/// anonymous 0:N there, so the mount source is compared by name too.
pub fn parse_mounts(mountinfo: &str, devices: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(numbers), Some(point)) = (f.get(2), f.get(4)) else {
            continue;
        };
        let source = line
            .split(" - ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().nth(1))
            .unwrap_or("");
        let source_name = source.strip_prefix("/dev/").unwrap_or("");
        for (name, nums) in devices {
            if (nums == numbers || source_name == name)
                && !out
                    .iter()
                    .any(|m: &String| m.starts_with(&format!("'{name}' ")))
            {
                out.push(format!(
                    "'{name}' is mounted at '{}'",
                    unescape_octal(point)
                ));
            }
        }
    }
    out
}

/// mountinfo escapes spaces and such as `\040`.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An active swap area on a device: its path as /proc/swaps shows it
/// ("/dev/sdb2", "/dev/mapper/cryptswap": the name swapon was given), and on
/// the live system the numbers of the node there.
#[derive(Debug, Clone, PartialEq)]
pub struct SwapDev {
    pub path: String,
    pub numbers: Option<String>,
}

impl SwapDev {
    /// Whether this is device `name` ("maj:min" `numbers`; `mapper`, its
    /// device-mapper name): by kernel name, by numbers (a node of any name,
    /// as dmsetup makes without udev), or by /dev/mapper name.
    pub fn is(&self, name: &str, numbers: &str, mapper: Option<&str>) -> bool {
        self.path.strip_prefix("/dev/") == Some(name)
            || self
                .numbers
                .as_deref()
                .is_some_and(|n| !numbers.is_empty() && n == numbers)
            || mapper.is_some_and(|m| self.path.strip_prefix("/dev/mapper/") == Some(m))
    }
}

/// Reads `len` bytes at `off` (fewer at the end of the device).
fn read_at(file: &File, off: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len as usize];
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], off + got as u64)? {
            0 => break,
            n => got += n,
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// What is stored on the device at `path`: its ends, then each usual
/// partition start, read one [`signatures::WINDOW`] at a time so at most
/// 2 MiB + 256 KiB are held at once.
fn read_contents(path: &Path) -> std::io::Result<(Vec<String>, Vec<String>)> {
    let file = File::open(path)?;
    let size = {
        use std::io::{Seek, SeekFrom};
        let mut f = &file;
        f.seek(SeekFrom::End(0))?
    };
    let span = signatures::SPAN.min(size);
    let head = read_at(&file, 0, span)?;
    let tail = read_at(&file, size - span, span)?;
    let mut windows = Vec::new();
    for start in signatures::partition_starts(size) {
        let w = read_at(&file, start, signatures::WINDOW)?;
        windows.push((start, signatures::detect_start(&w), first_nonzero(&w)));
    }
    Ok(contents_facts(&head, &tail, size, &windows))
}

fn first_nonzero(buf: &[u8]) -> Option<u64> {
    buf.iter().position(|&b| b != 0).map(|i| i as u64)
}

/// Loop devices over any of `devices` (name, "maj:min"), with the device each
/// sits on: a live use that no holders directory shows. Those named in `skip`
/// are left out (the target's own chain, when `devices` is the device under it).
fn loops_over<'a>(
    loops: &'a [LoopDev],
    devices: &'a [(String, String)],
    skip: &[String],
) -> Vec<(&'a str, &'a LoopDev)> {
    let mut out = Vec::new();
    for l in loops.iter().filter(|l| !skip.contains(&l.name)) {
        for (name, nums) in devices {
            if l.is_over(name, nums) {
                out.push((name.as_str(), l));
            }
        }
    }
    out
}

/// Another device with the target's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Alias {
    pub name: String,
    /// "'loop1' and loop device 'loop0' are both over '/srv/disk.img'".
    pub why: String,
    /// Whether its being there is a live use itself (a second loop device
    /// over the same bytes), not only what uses it (the device under a loop).
    pub is_use: bool,
    /// Whether the target holds it already: a device under the md array or
    /// mapping being written, which that array or mapping claimed for itself
    /// (an exclusive open of it fails, and says nothing of anyone else).
    pub held_by_chain: bool,
    /// The device of the target's chain it was found under.
    pub above: String,
}

/// The disk a partition is on; a whole device is its own.
fn disk_of(root: &Root, name: &str) -> String {
    if !root.exists(&format!("sys/class/block/{name}/partition")) {
        return name.to_string();
    }
    root.read_link(&format!("sys/class/block/{name}"))
        .ok()
        .and_then(|t| {
            t.parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
        })
        .filter(|d| !d.is_empty() && d != "block")
        .unwrap_or_else(|| name.to_string())
}

/// Devices a layer is visited at most: a 24-disk array of dm-crypt members,
/// each over a partition, is 73; a fixture whose slaves loop stops.
const MAX_STEPS: usize = 256;

/// Devices whose bytes are `name`'s, found by following the stack down: for
/// an md array or a device-mapper mapping (or a partition of one) the devices
/// under it (its slaves), for a loop device the device under it and every
/// other loop device over the same file or device; again for each device
/// found (a mapping over a loop over a file). Writing `name` writes theirs.
pub fn aliases(root: &Root, name: &str, loops: &[LoopDev]) -> Vec<Alias> {
    let disk = disk_of(root, name);
    let mut seen = vec![name.to_string(), disk.clone()];
    let mut out = Vec::new();
    let mut todo = vec![disk];
    let mut steps = 0;
    // A device found below: an alias, and its own stack (and, for a
    // partition, its disk's) to follow further down.
    let found = |u: String,
                 above: &str,
                 why: String,
                 held_by_chain: bool,
                 seen: &mut Vec<String>,
                 todo: &mut Vec<String>,
                 out: &mut Vec<Alias>| {
        let below = disk_of(root, &u);
        out.push(Alias {
            name: u.clone(),
            why,
            is_use: false,
            held_by_chain,
            above: above.to_string(),
        });
        if below != u && !seen.contains(&below) {
            seen.push(below.clone());
            todo.push(below);
        }
        todo.push(u);
    };
    while let Some(dev) = todo.pop() {
        steps += 1;
        if steps > MAX_STEPS {
            break;
        }
        for s in holders::slaves(root, &dev) {
            if seen.contains(&s) {
                continue;
            }
            seen.push(s.clone());
            let why = format!(
                "{} is over '{s}' (writing it writes there)",
                holders::describe(&holders::read_holder(root, &dev))
            );
            found(s, &dev, why, true, &mut seen, &mut todo, &mut out);
        }
        let Some(l) = loops.iter().find(|l| l.name == dev) else {
            continue;
        };
        for other in loops.iter().filter(|o| o.backing == l.backing) {
            if !seen.contains(&other.name) {
                seen.push(other.name.clone());
                out.push(Alias {
                    name: other.name.clone(),
                    why: format!(
                        "'{dev}' and loop device '{}' are both over '{}' (writing one writes the other)",
                        other.name, l.file
                    ),
                    is_use: true,
                    held_by_chain: false,
                    above: dev.clone(),
                });
            }
        }
        let under = match &l.backing {
            Backing::Device { major, minor } => {
                crate::bench::diskstats::device_name(root, *major, *minor).ok()
            }
            Backing::Named(p) => p
                .strip_prefix("/dev/")
                .filter(|n| root.exists(&format!("sys/class/block/{n}")))
                .map(str::to_string),
            Backing::File { .. } => None,
        };
        if let Some(u) = under.filter(|u| !seen.contains(u)) {
            seen.push(u.clone());
            let why = format!("'{dev}' is a loop device over '{u}'");
            found(u, &dev, why, false, &mut seen, &mut todo, &mut out);
        }
    }
    out
}

/// The system's tables every device's uses are looked up in, read once.
struct Tables {
    mountinfo: String,
    swaps: String,
    swap_devices: Vec<SwapDev>,
    loops: Vec<LoopDev>,
}

impl Tables {
    fn read(root: &Root) -> Self {
        let swaps = root.read_string("proc/swaps").unwrap_or_default();
        let swap_devices = parse_swap_paths(&swaps, "partition")
            .into_iter()
            .map(|path| {
                let numbers = root
                    .is_live()
                    .then(|| std::fs::metadata(&path).ok())
                    .flatten()
                    .map(|m| format!("{}:{}", libc::major(m.rdev()), libc::minor(m.rdev())));
                SwapDev { path, numbers }
            })
            .collect();
        Tables {
            mountinfo: root.read_string("proc/self/mountinfo").unwrap_or_default(),
            swaps,
            swap_devices,
            loops: loops::read_loops(root),
        }
    }
}

/// Device `name` and its partitions.
fn with_partitions(root: &Root, name: &str) -> Vec<String> {
    let mut names = vec![name.to_string()];
    names.extend(partitions(root, name));
    names
}

/// The devices whose uses reach `name`'s bytes: the device, its partitions
/// and, for a partition, its disk itself (a filesystem, mapping or loop device
/// over the whole disk spans every partition), but not the disk's other
/// partitions, which hold other bytes.
fn spanning(root: &Root, name: &str) -> Vec<String> {
    let mut names = with_partitions(root, name);
    let disk = disk_of(root, name);
    if !names.contains(&disk) {
        names.push(disk);
    }
    names
}

/// How many layers up a holder's own uses are followed: disk, partition, md,
/// dm-crypt, LVM and a filesystem are five; a fixture whose holders loop stops.
const STACK_DEPTH: usize = 8;

/// Adds the live uses of `names` (a device and its partitions) to `facts`:
/// mounts, swap, holders and loop devices over them, leaving out the devices
/// in `skip` (the target's own chain: the target itself holds the devices
/// under it). Each holder comes with what sits on it in turn, up to the top
/// of the stack, so the message names what to unmount or close first.
fn add_uses(root: &Root, t: &Tables, names: &[String], skip: &[String], facts: &mut DeviceFacts) {
    add_uses_up_to(root, t, names, skip, facts, STACK_DEPTH);
}

fn add_uses_up_to(
    root: &Root,
    t: &Tables,
    names: &[String],
    skip: &[String],
    facts: &mut DeviceFacts,
    depth: usize,
) {
    let numbered: Vec<(String, String)> = names
        .iter()
        .map(|n| (n.clone(), dev_numbers(root, n).unwrap_or_default()))
        .collect();
    facts.mounts.extend(parse_mounts(&t.mountinfo, &numbered));
    for (n, numbers) in &numbered {
        let mapper = holders::mapper_name(root, n);
        if t.swap_devices
            .iter()
            .any(|sw| sw.is(n, numbers, mapper.as_deref()))
        {
            facts.swaps.push(format!("'{n}' is active swap"));
        }
    }
    for (n, l) in loops_over(&t.loops, &numbered, skip) {
        facts
            .loop_backings
            .push(format!("'{n}' backs loop device '{}'", l.name));
        if depth > 0 {
            let mut above = DeviceFacts::default();
            let over = with_partitions(root, &l.name);
            add_uses_up_to(root, t, &over, skip, &mut above, depth - 1);
            facts.loop_backings.extend(above.uses());
        }
    }
    for n in names {
        for h in holders::holders(root, n) {
            if skip.contains(&h) {
                continue;
            }
            facts.holders.push(format!(
                "'{n}' is held by {}",
                holders::describe(&holders::read_holder(root, &h))
            ));
            if depth > 0 {
                let mut above = DeviceFacts::default();
                add_uses_up_to(
                    root,
                    t,
                    &with_partitions(root, &h),
                    skip,
                    &mut above,
                    depth - 1,
                );
                facts.holders.extend(above.uses());
            }
        }
    }
}

/// Active swap files among /proc/swaps' entries (type `file`), by path.
pub fn parse_swap_files(swaps: &str) -> Vec<String> {
    parse_swap_paths(swaps, "file")
}

/// The paths of /proc/swaps' entries of type `kind` (`file` or `partition`).
fn parse_swap_paths(swaps: &str, kind: &str) -> Vec<String> {
    swaps
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (path, k) = (f.next()?, f.next()?);
            (k == kind).then(|| unescape_octal(path))
        })
        .collect()
}

/// Before writing a regular file in place: a loop device over it (under any
/// of its names: compared by device and inode) or its use as swap is a live
/// use, as for a block device.
pub fn check_file_write(root: &Root, path: &Path) -> Result<(), SafetyError> {
    let t = Tables::read(root);
    let own = loops::stat_backing(path);
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let same = |b: &Backing| match b {
        Backing::Named(n) => Path::new(n) == canonical,
        b => own.as_ref() == Some(b),
    };
    let mut facts = DeviceFacts::default();
    let mut uses = Vec::new();
    for l in t.loops.iter().filter(|l| same(&l.backing)) {
        uses.push(format!(
            "it backs loop device '{}' (as '{}')",
            l.name, l.file
        ));
        add_uses(root, &t, &with_partitions(root, &l.name), &[], &mut facts);
    }
    for swap in parse_swap_files(&t.swaps) {
        let b = if root.is_live() {
            loops::stat_backing(Path::new(&swap))
        } else {
            Some(Backing::Named(swap.clone()))
        };
        if b.as_ref().is_some_and(same) {
            uses.push(format!("it is active swap (as '{swap}')"));
        }
    }
    uses.extend(facts.uses());
    if uses.is_empty() {
        Ok(())
    } else {
        Err(SafetyError::FileInUse {
            path: path.to_path_buf(),
            uses,
        })
    }
}

/// Exclusive opens of the device nodes: the kernel answers EBUSY when anything
/// has claimed one (a mount, md, dm, or another program's O_EXCL open, as mkfs
/// and VMs do). The files are held for the whole run, so nothing can mount or
/// claim the device while we write to it.
#[derive(Debug)]
pub struct Claim {
    _files: Vec<File>,
}

fn claim(paths: &[PathBuf]) -> (Claim, Vec<String>) {
    use std::os::unix::fs::OpenOptionsExt;
    let mut files = Vec::new();
    let mut busy = Vec::new();
    for p in paths {
        match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL | libc::O_CLOEXEC)
            .open(p)
        {
            Ok(f) => files.push(f),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => busy.push(format!(
                "'{}' is claimed exclusively by another user (a mount, an array or mapping, or a program such as mkfs or a VM)",
                p.display()
            )),
            // A partition node udev has not made yet: the other checks cover it.
            Err(_) => {}
        }
    }
    (Claim { _files: files }, busy)
}

/// What the device holds: signatures by name, or the first byte of data no
/// signature names. `windows` are the usual partition starts read: (offset,
/// what starts there, the first non-zero byte in the window).
pub fn contents_facts(
    head: &[u8],
    tail: &[u8],
    size: u64,
    windows: &[(u64, Vec<&'static str>, Option<u64>)],
) -> (Vec<String>, Vec<String>) {
    let mut names: Vec<String> = signatures::detect(head, tail, size)
        .into_iter()
        .map(|w| format!("{w} signature"))
        .collect();
    // What the device's own start or end says is what the user needs to
    // hear; the partition starts are named when those say nothing (inside a
    // filesystem at byte 0 they would only name its own blocks).
    if names.is_empty() {
        let mut seen: Vec<&str> = Vec::new();
        for (start, found, _) in windows {
            // Once each: a filesystem's backup superblocks would repeat it.
            for w in found {
                if seen.contains(w) {
                    continue;
                }
                seen.push(w);
                names.push(format!(
                    "{w} signature at byte {start}, where a partition usually starts (the partition table is gone, the partition may not be)"
                ));
            }
        }
    }
    let mut other = Vec::new();
    let first = signatures::first_data(head, tail, size).or_else(|| {
        windows
            .iter()
            .find_map(|(start, _, nz)| nz.map(|i| start + i))
    });
    if names.is_empty()
        && let Some(off) = first
    {
        other.push(format!(
            "it is not blank: data at byte {off} (nastune reads its first and last MiB and 256 KiB where each partition usually starts), in no format nastune knows (it may still be someone's data)"
        ));
    }
    (names, other)
}

/// Gathers the facts for block device `name` at `path` and decides. On the
/// live system the device, its partitions and the devices with its bytes stay
/// claimed (O_EXCL) until the returned [`Claim`] is dropped.
pub fn check_write(
    root: &Root,
    path: &Path,
    name: &str,
    rdev: u64,
    destroy_data: Option<&Path>,
) -> Result<Claim, SafetyError> {
    let destroy = match destroy_data {
        Some(named) => {
            let meta = std::fs::metadata(named).ok().filter(|m| {
                use std::os::unix::fs::FileTypeExt;
                m.file_type().is_block_device()
            });
            match meta {
                Some(m) => Some((named, m.rdev())),
                None => {
                    return Err(SafetyError::Mismatch {
                        named: named.to_path_buf(),
                        target: path.to_path_buf(),
                    });
                }
            }
        }
        None => None,
    };
    let tables = Tables::read(root);
    let mut facts = DeviceFacts::default();
    add_uses(root, &tables, &spanning(root, name), &[], &mut facts);
    // The same bytes under other names: their uses are this device's.
    let aliases = aliases(root, name, &tables.loops);
    let chain: Vec<String> = std::iter::once(name.to_string())
        .chain(std::iter::once(disk_of(root, name)))
        .chain(aliases.iter().map(|a| a.name.clone()))
        .collect();
    // Whole devices only: the kernel refuses a disk's exclusive open while
    // any of its partitions is claimed, and a partition's while its disk is,
    // so the one claim covers both, and a second one (another holder, even
    // ours) would only find the first.
    let mut claimed: Vec<PathBuf> = vec![path.to_path_buf()];
    for a in &aliases {
        let mut theirs = DeviceFacts::default();
        // Under a mapping: another mapping known to hold other sectors of the
        // same device (another volume of the group) is not a use of these.
        let mut skip = chain.clone();
        if a.held_by_chain {
            let over = holders::read_holder(root, &a.above);
            skip.extend(
                holders::holders(root, &a.name)
                    .into_iter()
                    .filter(|h| holders::apart(&over, &holders::read_holder(root, h))),
            );
        }
        add_uses(root, &tables, &spanning(root, &a.name), &skip, &mut theirs);
        // Why the other device's uses are this one's comes first.
        if a.is_use || !theirs.uses().is_empty() {
            facts.shared.push(a.why.clone());
        }
        facts.shared.extend(theirs.uses());
        if !a.held_by_chain {
            claimed.push(PathBuf::from(format!("/dev/{}", a.name)));
        }
    }
    let held = if root.is_live() {
        let (held, busy) = claim(&claimed);
        // A claim another user holds is news only when nothing above named
        // that user: a mount or holder claims the device itself.
        if facts.uses().is_empty() {
            facts.claims = busy;
        }
        held
    } else {
        Claim { _files: Vec::new() }
    };
    match read_contents(path) {
        Ok((signatures, other)) => (facts.signatures, facts.other) = (signatures, other),
        Err(e) => facts.other.push(format!(
            "its first and last MiB cannot be read to see whether it is blank ({e})"
        )),
    }
    decide(path, rdev, &facts, destroy)?;
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_refuses_with_every_finding_and_honours_the_exact_device() {
        let facts = DeviceFacts {
            holders: vec!["'sdb' is held by 'md0' (md, dm or LVM)".into()],
            signatures: vec!["an md RAID superblock".into()],
            ..Default::default()
        };
        let dev = Path::new("/dev/sdb");
        // In use: refused, and --destroy-data is not offered as the way out.
        let e = decide(dev, 0x810, &facts, None).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("held by 'md0'"), "{msg}");
        assert!(!msg.contains("pass --destroy-data"), "{msg}");
        // Stored data alone: refused, naming what and how to override.
        let stale = DeviceFacts {
            signatures: vec!["an md RAID superblock".into()],
            ..Default::default()
        };
        let msg = decide(dev, 0x810, &stale, None).unwrap_err().to_string();
        assert!(msg.contains("md RAID superblock"), "{msg}");
        assert!(msg.contains("--destroy-data /dev/sdb"), "{msg}");
        // Held by md0: in use, so naming the device does not unlock it.
        let e = decide(dev, 0x810, &facts, Some((dev, 0x810))).unwrap_err();
        assert!(matches!(e, SafetyError::InUse { .. }), "{e}");
        assert!(e.to_string().contains("stop the array"), "{e}");
        // A signature alone is what --destroy-data is for.
        assert_eq!(decide(dev, 0x810, &stale, Some((dev, 0x810))), Ok(()));
        let mounted = DeviceFacts {
            mounts: vec!["'sdb1' is mounted at '/srv'".into()],
            ..Default::default()
        };
        assert!(decide(dev, 0x810, &mounted, Some((dev, 0x810))).is_err());
        for facts in [
            DeviceFacts {
                loop_backings: vec!["'sdb' backs loop device 'loop3'".into()],
                ..Default::default()
            },
            DeviceFacts {
                claims: vec!["'/dev/sdb' is claimed exclusively".into()],
                ..Default::default()
            },
        ] {
            let e = decide(dev, 0x810, &facts, Some((dev, 0x810))).unwrap_err();
            assert!(matches!(e, SafetyError::InUse { .. }), "{e}");
        }
        // Data no signature names is still data.
        let unknown = DeviceFacts {
            other: vec!["it is not blank".into()],
            ..Default::default()
        };
        assert!(matches!(
            decide(dev, 0x810, &unknown, None),
            Err(SafetyError::Refused { .. })
        ));
        assert!(matches!(
            decide(dev, 0x810, &facts, Some((Path::new("/dev/sdc"), 0x820))),
            Err(SafetyError::Mismatch { .. })
        ));
        // Even a blank device must not be written when another device is named.
        assert!(
            decide(
                dev,
                0x810,
                &DeviceFacts::default(),
                Some((Path::new("/dev/sdc"), 0x820))
            )
            .is_err()
        );
        assert_eq!(decide(dev, 0x810, &DeviceFacts::default(), None), Ok(()));
    }

    #[test]
    fn holders_found_through_a_fixture_sys_tree() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("sys/class/block/sdb/holders/md0")).unwrap();
        std::fs::create_dir_all(d.join("sys/class/block/sdb/sdb1/holders/dm-0")).unwrap();
        std::fs::write(d.join("sys/class/block/sdb/sdb1/partition"), "1").unwrap();
        std::fs::create_dir_all(d.join("sys/class/block/sdb1")).unwrap();
        std::fs::create_dir_all(d.join("sys/class/block/sdb1/holders/dm-0")).unwrap();
        std::fs::create_dir_all(d.join("proc/self")).unwrap();
        std::fs::write(d.join("proc/self/mountinfo"), "").unwrap();
        std::fs::write(d.join("proc/swaps"), "Filename Type Size Used Priority\n").unwrap();
        let root = Root::tree(d).unwrap();
        assert_eq!(partitions(&root, "sdb"), vec!["sdb1".to_string()]);
        // The device itself is a plain file here: it has no signature.
        let blank = d.join("blank");
        std::fs::write(&blank, vec![0u8; 8192]).unwrap();
        let e = check_write(&root, &blank, "sdb", 1, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'sdb' is held by 'md0'"), "{e}");
        assert!(e.contains("'sdb1' is held by 'dm-0'"), "{e}");
    }

    #[test]
    fn mounts_by_numbers_or_name_and_swaps() {
        let mi = "36 25 8:17 / /srv\\040data rw,relatime shared:1 - ext4 /dev/sdb1 rw\n\
                  40 25 0:45 / /mnt/b rw - btrfs /dev/sdc rw\n";
        let devs = vec![
            ("sdb".to_string(), "8:16".to_string()),
            ("sdb1".to_string(), "8:17".to_string()),
        ];
        assert_eq!(
            parse_mounts(mi, &devs),
            vec!["'sdb1' is mounted at '/srv data'".to_string()]
        );
        let devs = vec![("sdc".to_string(), "8:32".to_string())];
        assert_eq!(
            parse_mounts(mi, &devs),
            vec!["'sdc' is mounted at '/mnt/b'".to_string()]
        );
        let swaps = "Filename Type Size Used Priority\n/dev/sdb2 partition 1048572 0 -2\n/dev/mapper/crypt\\040swap partition 1 0 -3\n/swapfile file 1 0 -3\n";
        assert_eq!(
            parse_swap_paths(swaps, "partition"),
            vec![
                "/dev/sdb2".to_string(),
                "/dev/mapper/crypt swap".to_string()
            ]
        );
        let sw = |path: &str, numbers: Option<&str>| SwapDev {
            path: path.into(),
            numbers: numbers.map(str::to_string),
        };
        assert!(sw("/dev/sdb2", None).is("sdb2", "8:18", None));
        assert!(!sw("/dev/sdb2", None).is("sdb", "8:16", None));
        // swapon given the mapper name: the kernel name, the numbers or the dm name match.
        let mapped = sw("/dev/mapper/cryptswap", Some("254:3"));
        assert!(mapped.is("dm-3", "254:3", None));
        assert!(sw("/dev/mapper/cryptswap", None).is("dm-3", "", Some("cryptswap")));
        assert!(!mapped.is("dm-4", "254:4", Some("other")));
        assert!(!sw("/dev/x", None).is("dm-4", "", None));
    }

    #[test]
    fn contents_name_signatures_or_unknown_data() {
        let size = 16u64 << 20;
        let blank = vec![0u8; signatures::SPAN as usize];
        assert_eq!(contents_facts(&blank, &blank, size, &[]), (vec![], vec![]));
        let mut h = blank.clone();
        h[0..4].copy_from_slice(b"XFSB");
        let (names, other) = contents_facts(&h, &blank, size, &[]);
        assert_eq!(names, vec!["an XFS filesystem signature".to_string()]);
        assert!(other.is_empty());
        // One stray byte deep in the last MiB is enough to refuse.
        let mut t = blank.clone();
        t[700_000] = 0x42;
        let (names, other) = contents_facts(&blank, &t, size, &[]);
        assert!(names.is_empty());
        let at = size - signatures::SPAN + 700_000;
        assert!(
            other[0].contains(&format!("data at byte {at}")),
            "{other:?}"
        );
    }

    #[test]
    fn partition_starts_are_named_once_and_their_data_counts() {
        let size = 64u64 << 20;
        let blank = vec![0u8; signatures::SPAN as usize];
        let ext = vec!["an ext2/3/4 filesystem"];
        // A cleared table: ext4 at 1 MiB, its backup superblock seen again at 9 MiB.
        let windows = [
            (1u64 << 20, ext.clone(), Some(1080)),
            (9 << 20, ext.clone(), Some(1080)),
        ];
        let (names, other) = contents_facts(&blank, &blank, size, &windows);
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(names[0].contains("ext2/3/4 filesystem signature at byte 1048576"));
        assert!(other.is_empty());
        // Data in no known format where a partition starts: not blank.
        let (names, other) = contents_facts(&blank, &blank, size, &[(4 << 20, vec![], Some(7))]);
        assert!(names.is_empty());
        assert!(other[0].contains(&format!("data at byte {}", (4 << 20) + 7)));
        // What the device's own start says comes alone.
        let mut h = blank.clone();
        h[510..512].copy_from_slice(&[0x55, 0xaa]);
        let (names, _) = contents_facts(&h, &blank, size, &windows);
        assert_eq!(
            names,
            vec!["an MBR partition table (or boot sector) signature".to_string()]
        );
    }

    fn fixture_loop(d: &Path, l: &str, backing: &str) {
        std::fs::create_dir_all(d.join(format!("sys/block/{l}/loop"))).unwrap();
        std::fs::write(d.join(format!("sys/block/{l}/loop/backing_file")), backing).unwrap();
    }

    #[test]
    fn loop_devices_backed_by_the_target_are_found_by_name_or_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fixture_loop(d, "loop0", "/dev/sdb1\n");
        fixture_loop(d, "loop1", "/srv/disk.img (deleted)\n");
        let mut loops = loops::read_loops(&Root::tree(d).unwrap());
        loops.push(LoopDev {
            name: "loop2".into(),
            file: "/dev/disk/by-id/usb-x".into(),
            backing: Backing::Device {
                major: 8,
                minor: 16,
            },
        });
        let devs = vec![
            ("sdb".to_string(), "8:16".to_string()),
            ("sdb1".to_string(), "8:17".to_string()),
        ];
        let found: Vec<(&str, &str)> = loops_over(&loops, &devs, &[])
            .into_iter()
            .map(|(dev, l)| (dev, l.name.as_str()))
            .collect();
        assert_eq!(found, vec![("sdb1", "loop0"), ("sdb", "loop2")]);
        // The target's own chain is not a use of the device under it.
        assert!(loops_over(&loops, &devs, &["loop0".into(), "loop2".into()]).is_empty());
    }

    #[test]
    fn aliases_follow_loop_devices_down_to_files_devices_and_siblings() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // loop0 and loop1 over one file; loop2 over loop0; loop3 over loop1's partition.
        fixture_loop(d, "loop0", "/srv/disk.img\n");
        fixture_loop(d, "loop1", "/srv/disk.img\n");
        fixture_loop(d, "loop2", "/dev/loop0\n");
        fixture_loop(d, "loop3", "/dev/loop1p1\n");
        std::fs::create_dir_all(d.join("sys/class/block")).unwrap();
        for n in ["loop0", "loop1", "loop2", "loop3"] {
            std::fs::create_dir_all(d.join(format!("sys/class/block/{n}"))).unwrap();
        }
        std::os::unix::fs::symlink(
            "../../devices/loop1/loop1p1",
            d.join("sys/class/block/loop1p1"),
        )
        .unwrap();
        std::fs::create_dir_all(d.join("sys/devices/loop1/loop1p1")).unwrap();
        std::fs::write(d.join("sys/devices/loop1/loop1p1/partition"), "1").unwrap();
        let root = Root::tree(d).unwrap();
        let loops = loops::read_loops(&root);
        let names = |target: &str| -> Vec<(String, bool)> {
            aliases(&root, target, &loops)
                .into_iter()
                .map(|a| (a.name, a.is_use))
                .collect()
        };
        // loop2 sits on loop0, which shares its file with loop1.
        assert_eq!(
            names("loop2"),
            vec![("loop0".to_string(), false), ("loop1".to_string(), true)]
        );
        // loop1's partition: its disk's sibling.
        assert_eq!(names("loop1p1"), vec![("loop0".to_string(), true)]);
        // loop3 over loop1p1: that partition, and loop1's sibling below it.
        assert_eq!(
            names("loop3"),
            vec![("loop1p1".to_string(), false), ("loop0".to_string(), true)]
        );
        // A plain file-backed loop with no sibling, and a disk: nothing.
        assert!(names("sda").is_empty());
    }

    /// A sysfs block device at `path` ("sdb", or "sdb/sdb1" for a partition)
    /// with numbers `numbers`, linked from sys/class/block as the kernel does.
    fn sys_block(d: &Path, path: &str, numbers: &str) {
        let dir = d.join("sys/devices/virtual/block").join(path);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("dev"), format!("{numbers}\n")).unwrap();
        if path.contains('/') {
            std::fs::write(dir.join("partition"), "1\n").unwrap();
        }
        let leaf = path.rsplit('/').next().unwrap();
        std::fs::create_dir_all(d.join("sys/class/block")).unwrap();
        std::os::unix::fs::symlink(
            format!("../../devices/virtual/block/{path}"),
            d.join("sys/class/block").join(leaf),
        )
        .unwrap();
    }

    /// `upper` (an array or mapping) built on `lower`: its holders and slaves entries.
    fn sys_hold(d: &Path, lower: &str, upper: &str) {
        let class = d.join("sys/class/block");
        std::fs::create_dir_all(class.join(lower).join("holders").join(upper)).unwrap();
        std::fs::create_dir_all(class.join(upper).join("slaves").join(lower)).unwrap();
    }

    /// A device-mapper device `dev` named `name` with `uuid`.
    fn sys_dm(d: &Path, dev: &str, numbers: &str, name: &str, uuid: &str) {
        sys_block(d, dev, numbers);
        sys_attr(d, dev, "dm/name", name);
        sys_attr(d, dev, "dm/uuid", uuid);
    }

    fn sys_attr(d: &Path, dev: &str, rel: &str, text: &str) {
        let p = d.join("sys/class/block").join(dev).join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{text}\n")).unwrap();
    }

    /// The refusal (or Ok) for writing `name` in the fixture tree at `d`,
    /// whose device node is a blank file: only live uses can refuse it.
    fn write_check(d: &Path, name: &str, mountinfo: &str) -> Result<(), String> {
        std::fs::create_dir_all(d.join("proc/self")).unwrap();
        std::fs::write(d.join("proc/self/mountinfo"), mountinfo).unwrap();
        if !d.join("proc/swaps").exists() {
            std::fs::write(d.join("proc/swaps"), "Filename Type Size Used Priority\n").unwrap();
        }
        let blank = d.join("blank");
        std::fs::write(&blank, vec![0u8; 8192]).unwrap();
        let root = Root::tree(d).unwrap();
        check_write(&root, &blank, name, 1, None)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_mapping_shares_its_partition_with_a_mounted_mapping() {
        // Two dm-linear mappings over sdb1 (dm allows it: one holder for all
        // mappings); lin-b is mounted. Writing lin-a writes lin-b's bytes.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        sys_block(d, "sdb", "8:16");
        sys_block(d, "sdb/sdb1", "8:17");
        for (dm, name) in [("dm-0", "lin-a"), ("dm-1", "lin-b")] {
            sys_dm(d, dm, &format!("254:{}", &dm[3..]), name, "");
            sys_hold(d, "sdb1", dm);
        }
        let mi = "36 25 254:1 / /srv rw - ext4 /dev/mapper/lin-b rw\n";
        let e = write_check(d, "dm-0", mi).unwrap_err();
        assert!(
            e.contains("device-mapper mapping 'lin-a' (dm-0) is over 'sdb1'"),
            "{e}"
        );
        assert!(
            e.contains("'sdb1' is held by device-mapper mapping 'lin-b' (dm-1); 'dm-1' is mounted at '/srv'"),
            "{e}"
        );
        assert!(e.contains("even with --destroy-data"), "{e}");
        // Two volumes of one LVM group (a physical volume's extents each
        // belong to one volume): lin-b's mount is other sectors of sdb1.
        let (vg, other_vg) = ("V".repeat(32), "W".repeat(32));
        sys_attr(d, "dm-0", "dm/uuid", &format!("LVM-{vg}{}", "a".repeat(32)));
        sys_attr(d, "dm-1", "dm/uuid", &format!("LVM-{vg}{}", "b".repeat(32)));
        assert_eq!(write_check(d, "dm-0", mi), Ok(()));
        // Of two groups (which cannot share a physical volume): nothing is known.
        sys_attr(
            d,
            "dm-1",
            "dm/uuid",
            &format!("LVM-{other_vg}{}", "b".repeat(32)),
        );
        assert!(write_check(d, "dm-0", mi).is_err());
        // Its own mapping over sdb1 is not a use of lin-b's: unmounted and
        // alone on sdb1, lin-b is written.
        std::fs::remove_dir(d.join("sys/class/block/sdb1/holders/dm-0")).unwrap();
        assert_eq!(write_check(d, "dm-1", ""), Ok(()));
    }

    #[test]
    fn swap_on_a_mapping_named_by_its_mapper_path() {
        // swapon /dev/mapper/cryptswap: /proc/swaps keeps that name, not dm-6.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        sys_block(d, "sdf", "8:80");
        sys_dm(d, "dm-6", "254:6", "cryptswap", "CRYPT-PLAIN-cryptswap");
        sys_hold(d, "sdf", "dm-6");
        std::fs::create_dir_all(d.join("proc")).unwrap();
        std::fs::write(
            d.join("proc/swaps"),
            "Filename Type Size Used Priority\n/dev/mapper/cryptswap partition 8188 0 -2\n",
        )
        .unwrap();
        let e = write_check(d, "dm-6", "").unwrap_err();
        assert!(e.contains("'dm-6' is active swap"), "{e}");
        let e = write_check(d, "sdf", "").unwrap_err();
        assert!(
            e.contains(
                "'sdf' is held by dm-crypt mapping 'cryptswap' (dm-6, plain); 'dm-6' is active swap"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_mapping_over_a_loop_device_whose_file_another_has_mounted() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fixture_loop(d, "loop0", "/srv/lc.img\n");
        fixture_loop(d, "loop1", "/srv/lc.img\n");
        sys_block(d, "loop0", "7:0");
        sys_block(d, "loop1", "7:1");
        sys_dm(d, "dm-5", "254:5", "lc-loop", "");
        sys_hold(d, "loop1", "dm-5");
        let mi = "36 25 7:0 / /mnt/lc-loop rw - ext4 /dev/loop0 rw\n";
        let e = write_check(d, "dm-5", mi).unwrap_err();
        assert!(
            e.contains("'loop1' and loop device 'loop0' are both over '/srv/lc.img'"),
            "{e}"
        );
        assert!(e.contains("'loop0' is mounted at '/mnt/lc-loop'"), "{e}");
    }

    #[test]
    fn a_partition_whose_disk_a_mapping_holds() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        sys_block(d, "sdc", "8:32");
        sys_block(d, "sdc/sdc1", "8:33");
        sys_dm(d, "dm-4", "254:4", "whole", "");
        sys_hold(d, "sdc", "dm-4");
        let e = write_check(d, "sdc1", "").unwrap_err();
        assert!(
            e.contains("'sdc' is held by device-mapper mapping 'whole' (dm-4)"),
            "{e}"
        );
        // A filesystem on the whole disk spans the partition too.
        std::fs::remove_dir(d.join("sys/class/block/sdc/holders/dm-4")).unwrap();
        let e = write_check(d, "sdc1", "36 25 8:32 / /srv rw - ext4 /dev/sdc rw\n").unwrap_err();
        assert!(e.contains("'sdc' is mounted at '/srv'"), "{e}");
        // Another partition's mount is other bytes.
        sys_block(d, "sdc/sdc2", "8:34");
        assert_eq!(
            write_check(d, "sdc1", "36 25 8:34 / /srv rw - ext4 /dev/sdc2 rw\n"),
            Ok(())
        );
    }

    #[test]
    fn holders_are_named_up_the_stack_and_an_arrays_own_members_are_not_uses() {
        // sdd and sde in RAID1 md0; dm-crypt (plain) over md0, mounted.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        sys_block(d, "sdd", "8:48");
        sys_block(d, "sde", "8:64");
        sys_block(d, "md0", "9:0");
        sys_attr(d, "md0", "md/level", "raid1");
        sys_hold(d, "sdd", "md0");
        sys_hold(d, "sde", "md0");
        sys_dm(d, "dm-3", "254:3", "mdcrypt", "CRYPT-PLAIN-mdcrypt");
        sys_hold(d, "md0", "dm-3");
        let mi = "36 25 254:3 / /srv rw - ext4 /dev/mapper/mdcrypt rw\n";
        let e = write_check(d, "sdd", mi).unwrap_err();
        assert!(
            e.contains(
                "'sdd' is held by md array 'md0' (raid1); 'md0' is held by dm-crypt mapping 'mdcrypt' (dm-3, plain); 'dm-3' is mounted at '/srv'"
            ),
            "{e}"
        );
        let e = write_check(d, "md0", mi).unwrap_err();
        assert!(
            e.contains("'md0' is held by dm-crypt mapping 'mdcrypt' (dm-3, plain)"),
            "{e}"
        );
        // The mapping itself: md0 and its members are its own chain.
        let e = write_check(d, "dm-3", mi).unwrap_err();
        assert!(e.contains("'dm-3' is mounted at '/srv'"), "{e}");
        assert!(!e.contains("held by"), "{e}");
        assert_eq!(write_check(d, "dm-3", ""), Ok(()));
        // Stopping the mapping frees the array: its members are held only by it.
        std::fs::remove_dir(d.join("sys/class/block/md0/holders/dm-3")).unwrap();
        assert_eq!(write_check(d, "md0", ""), Ok(()));
        let root = Root::tree(d).unwrap();
        let below: Vec<(String, bool)> = aliases(&root, "md0", &[])
            .into_iter()
            .map(|a| (a.name, a.held_by_chain))
            .collect();
        assert_eq!(
            below,
            vec![("sdd".to_string(), true), ("sde".to_string(), true)]
        );
    }

    #[test]
    fn swap_files_by_path() {
        let swaps = "Filename Type Size Used Priority\n/dev/sdb2 partition 1 0 -2\n/srv/swap\\040file file 1 0 -3\n";
        assert_eq!(parse_swap_files(swaps), vec!["/srv/swap file".to_string()]);
    }
}
