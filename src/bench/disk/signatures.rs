//! Naming what a device holds, from its first and last MiB and from the
//! places partitions usually start. The decision to write never rests on this
//! table (a table always misses something: see [`super::safety`], which also
//! demands zeros); it says *what* was found, so the refusal tells the user
//! which data they would lose. It covers what `wipefs` erases on the disks our
//! users have: partition tables (both GPT headers), filesystems, volume
//! managers, caches, encryption and ZFS labels at both ends; and, as testdisk
//! does when the partition table is gone, the start of each partition that a
//! usual layout puts there.

/// How much of each end is read and must be blank.
pub const SPAN: u64 = 1 << 20;

/// A magic string at a fixed offset from the start of the device.
struct Magic {
    what: &'static str,
    offset: usize,
    bytes: &'static [u8],
}

const fn m(what: &'static str, offset: usize, bytes: &'static [u8]) -> Magic {
    Magic {
        what,
        offset,
        bytes,
    }
}

/// Offsets and magics as libblkid probes them (superblocks/*.c, partitions/*.c).
const AT_START: &[Magic] = &[
    m("an ext2/3/4 filesystem", 1080, &[0x53, 0xef]),
    m("an XFS filesystem", 0, b"XFSB"),
    m("a btrfs filesystem", 0x10040, b"_BHRfS_M"),
    m("a LUKS (dm-crypt) header", 0, b"LUKS\xba\xbe"),
    m("a LUKS (dm-crypt) header", 0, b"SKUL\xba\xbe"),
    m("an LVM2 physical volume", 0, b"LABELONE"),
    m("an LVM2 physical volume", 512, b"LABELONE"),
    m("an LVM2 physical volume", 1024, b"LABELONE"),
    m("an LVM2 physical volume", 1536, b"LABELONE"),
    m(
        "a bcache device",
        4096 + 24,
        &[
            0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba,
            0x6d, 0x81,
        ],
    ),
    m("a VDO volume", 0, b"dmvdo001"),
    m(
        "a Stratis pool member",
        512 + 4,
        b"!Stra0tis\x86\xff\x02^\x41rh",
    ),
    m(
        "a Stratis pool member",
        4096 + 4,
        b"!Stra0tis\x86\xff\x02^\x41rh",
    ),
    m("an f2fs filesystem", 1024, &0xf2f5_2010_u32.to_le_bytes()),
    m("an exFAT filesystem", 3, b"EXFAT   "),
    m("an NTFS filesystem", 3, b"NTFS    "),
    m("a FAT filesystem", 0x36, b"FAT12   "),
    m("a FAT filesystem", 0x36, b"FAT16   "),
    m("a FAT filesystem", 0x52, b"FAT32   "),
    m("an ISO 9660 filesystem", 0x8001, b"CD001"),
    m("a UDF filesystem", 0x8001, b"BEA01"),
    m("a squashfs image", 0, b"hsqs"),
    m("a squashfs image", 0, b"sqsh"),
    m("a ReiserFS filesystem", 0x10034, b"ReIsEr"),
    m("a JFS filesystem", 0x8000, b"JFS1"),
    m("a bitlocker volume", 3, b"-FVE-FS-"),
    m("an md RAID superblock", 0, &MD_MAGIC),
    m("an md RAID superblock", 4096, &MD_MAGIC),
    m("a GPT partition table", 512, b"EFI PART"),
    m("a GPT partition table", 4096, b"EFI PART"),
];

/// Where partitions usually start, in bytes: a partition table cleared or
/// zapped (`sgdisk --zap` zeroes the first 34 and last 33 sectors, `wipefs`
/// the magics) leaves its partitions whole, and "zeros in the first and last
/// MiB" would call that disk blank. In 512-byte sectors: 34 (GPT's first
/// usable sector with 128 entries), 40 (macOS), 63 (DOS cylinder alignment),
/// 64, 128 and 256; in 4096-byte sectors: 6 (GPT's first usable one) and 63
/// (DOS on a 4Kn disk); then every MiB up to 16 MiB (1 MiB is what fdisk,
/// parted and Windows have used since 2008; NAS and EFI layouts use 2, 4 and
/// 8 MiB), 32 and 64 MiB.
pub fn partition_starts(size: u64) -> Vec<u64> {
    let mut out: Vec<u64> = [34u64, 40, 63, 64, 128, 256]
        .iter()
        .map(|s| s * 512)
        .chain([6u64, 63].iter().map(|s| s * 4096))
        .chain((1..=16u64).chain([32, 64]).map(|mib| mib << 20))
        .filter(|&at| at + 4096 <= size)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// How much is read at each partition start: every start-anchored magic in
/// [`AT_START`] lies in it (btrfs's at 64 KiB + 64 is the deepest), and so
/// does the uberblock ring of ZFS's first label (128 to 256 KiB).
pub const WINDOW: u64 = 256 << 10;

const MD_MAGIC: [u8; 4] = 0xa92b_4efc_u32.to_le_bytes();
/// ZFS uberblock magic, either byte order.
const ZFS_UB: [[u8; 8]; 2] = [0x00ba_b10c_u64.to_le_bytes(), 0x00ba_b10c_u64.to_be_bytes()];
const ZFS_LABEL: u64 = 256 << 10;

/// `head` is the device's first bytes, `tail` its last, `size` its length.
pub fn detect(head: &[u8], tail: &[u8], size: u64) -> Vec<&'static str> {
    let at = |buf: &[u8], off: usize, magic: &[u8]| buf.get(off..off + magic.len()) == Some(magic);
    let tail_start = size.saturating_sub(tail.len() as u64);
    // A magic at an absolute offset that may lie in the tail buffer.
    let at_abs = |off: u64, magic: &[u8]| {
        (off < head.len() as u64 && at(head, off as usize, magic))
            || off
                .checked_sub(tail_start)
                .is_some_and(|o| at(tail, o as usize, magic))
    };
    let mut out: Vec<&'static str> = Vec::new();
    for what in detect_start(head) {
        add(&mut out, what);
    }
    // The backup GPT header sits in the last logical block (512 or 4096 bytes):
    // the disk whose primary header was damaged still holds a partition table.
    if size >= 8192 && (at_abs(size - 512, b"EFI PART") || at_abs(size - 4096, b"EFI PART")) {
        add(&mut out, "a GPT partition table");
    }
    // md v1.0 sits 8 KiB before the end; v0.90 in the last 64 KiB-aligned block.
    let v10 = ((size / 512).saturating_sub(16) & !7) * 512;
    let v090 = (size & !0xffff).saturating_sub(0x10000);
    if size >= 0x20000 && (at_abs(v10, &MD_MAGIC) || at_abs(v090, &MD_MAGIC)) {
        add(&mut out, "an md RAID superblock");
    }
    // ZFS keeps four 256 KiB labels, two at each end (the first two are
    // looked for by `detect_start`).
    let end_labels = (size & !(ZFS_LABEL - 1)).saturating_sub(2 * ZFS_LABEL);
    let zfs = size >= 4 * ZFS_LABEL
        && [end_labels, end_labels + ZFS_LABEL]
            .iter()
            .any(|&l| zfs_label(|off, magic| at_abs(l + off, magic)));
    if zfs {
        add(&mut out, "a ZFS pool member label");
    }
    out
}

fn add(out: &mut Vec<&'static str>, what: &'static str) {
    if !out.contains(&what) {
        out.push(what);
    }
}

/// Whether a ZFS label holds an uberblock: its ring is the label's second
/// half, one slot per KiB at least. `at(offset in the label, magic)`.
fn zfs_label(at: impl Fn(u64, &[u8]) -> bool) -> bool {
    (0..128u64).any(|k| {
        let off = ZFS_LABEL / 2 + k * 1024;
        ZFS_UB.iter().any(|magic| at(off, magic))
    })
}

/// What starts at the first byte of `buf`: the start of a device, or of a
/// partition whose table is gone.
pub fn detect_start(buf: &[u8]) -> Vec<&'static str> {
    let at = |off: usize, magic: &[u8]| buf.get(off..off + magic.len()) == Some(magic);
    let mut out: Vec<&'static str> = Vec::new();
    for s in AT_START {
        if at(s.offset, s.bytes) {
            add(&mut out, s.what);
        }
    }
    let fat_or_gpt = out.iter().any(|w| w.contains("GPT") || w.contains("FAT"));
    if at(510, &[0x55, 0xaa]) && !fat_or_gpt {
        add(&mut out, "an MBR partition table (or boot sector)");
    }
    let swap = [4096usize, 8192, 16384, 65536]
        .iter()
        .any(|&p| at(p - 10, b"SWAPSPACE2") || at(p - 10, b"SWAP-SPACE"));
    if swap {
        add(&mut out, "a swap area");
    }
    if [0, ZFS_LABEL]
        .iter()
        .any(|&l| zfs_label(|off, magic| at((l + off) as usize, magic)))
    {
        add(&mut out, "a ZFS pool member label");
    }
    out
}

/// The first non-zero byte's offset on the device, if any, in `head` then `tail`.
pub fn first_data(head: &[u8], tail: &[u8], size: u64) -> Option<u64> {
    if let Some(i) = head.iter().position(|&b| b != 0) {
        return Some(i as u64);
    }
    let tail_start = size.saturating_sub(tail.len() as u64);
    tail.iter()
        .position(|&b| b != 0)
        .map(|i| tail_start + i as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: u64 = 64 << 20;

    fn blank() -> Vec<u8> {
        vec![0u8; SPAN as usize]
    }

    fn head_with(off: usize, magic: &[u8]) -> Vec<&'static str> {
        let mut h = blank();
        h[off..off + magic.len()].copy_from_slice(magic);
        detect(&h, &blank(), SIZE)
    }

    fn tail_with(from_end: usize, magic: &[u8]) -> Vec<&'static str> {
        let mut t = blank();
        let off = t.len() - from_end;
        t[off..off + magic.len()].copy_from_slice(magic);
        detect(&blank(), &t, SIZE)
    }

    #[test]
    fn blank_ends_hold_nothing() {
        assert!(detect(&blank(), &blank(), SIZE).is_empty());
        assert_eq!(first_data(&blank(), &blank(), SIZE), None);
        let mut t = blank();
        t[100] = 1;
        assert_eq!(first_data(&blank(), &t, SIZE), Some(SIZE - SPAN + 100));
    }

    #[test]
    fn each_signature_at_its_offset() {
        for (off, magic, want) in [
            (512, &b"EFI PART"[..], "GPT"),
            (510, &[0x55, 0xaa][..], "MBR"),
            (1080, &[0x53, 0xef][..], "ext2/3/4"),
            (0, b"XFSB", "XFS"),
            (0x10040, b"_BHRfS_M", "btrfs"),
            (0, b"LUKS\xba\xbe", "LUKS"),
            (4086, b"SWAPSPACE2", "swap"),
            (4096, &[0xfc, 0x4e, 0x2b, 0xa9][..], "md RAID"),
            (512, b"LABELONE", "LVM2"),
            (4120, AT_START[9].bytes, "bcache"),
            (0, b"dmvdo001", "VDO"),
            (516, b"!Stra0tis\x86\xff\x02^\x41rh", "Stratis"),
            (1024, &[0x10, 0x20, 0xf5, 0xf2][..], "f2fs"),
            (3, b"EXFAT   ", "exFAT"),
            (3, b"NTFS    ", "NTFS"),
            (0x52, b"FAT32   ", "FAT"),
            (0x8001, b"CD001", "ISO 9660"),
            (0, b"hsqs", "squashfs"),
        ] {
            let found = head_with(off, magic);
            assert!(found.iter().any(|w| w.contains(want)), "{want}: {found:?}");
        }
    }

    #[test]
    fn backup_gpt_md_and_zfs_at_the_end() {
        // The primary GPT header damaged: the backup in the last sector remains.
        assert!(tail_with(512, b"EFI PART")[0].contains("GPT"));
        assert!(tail_with(4096, b"EFI PART")[0].contains("GPT"));
        // md v1.0: 8 KiB before the end.
        assert!(tail_with(8192, &MD_MAGIC)[0].contains("md RAID"));
        // ZFS uberblock in the last label (L3 starts 256 KiB before the end).
        let ub = 0x00ba_b10c_u64.to_le_bytes();
        assert!(tail_with(128 << 10, &ub)[0].contains("ZFS"));
        // …and in L1 at the start, big-endian, in a later slot.
        let be = 0x00ba_b10c_u64.to_be_bytes();
        assert!(head_with((256 + 128 + 5) << 10, &be)[0].contains("ZFS"));
        // The same bytes off the uberblock grid are not ZFS.
        assert!(head_with(((256 + 128 + 5) << 10) + 8, &be).is_empty());
    }

    #[test]
    fn what_starts_a_partition_and_where_partitions_start() {
        let starts = partition_starts(64 << 20);
        for want in [
            34 * 512,
            63 * 512,
            2048 * 512,
            6 * 4096,
            63 * 4096,
            4 << 20,
            64 << 20,
        ] {
            // 64 MiB itself is past the end of a 64 MiB device.
            assert_eq!(starts.contains(&want), want < (64 << 20), "{want}");
        }
        assert!(starts.windows(2).all(|w| w[0] < w[1]), "sorted, once each");
        assert!(partition_starts(1 << 20).iter().all(|&s| s < 1 << 20));
        let mut w = vec![0u8; WINDOW as usize];
        assert!(detect_start(&w).is_empty());
        // btrfs is the deepest start-anchored magic: it fits the window.
        w[0x10040..0x10048].copy_from_slice(b"_BHRfS_M");
        assert_eq!(detect_start(&w), vec!["a btrfs filesystem"]);
        // A ZFS label at a partition start: its uberblock ring in the window.
        let mut w = vec![0u8; WINDOW as usize];
        w[(128 + 3) << 10..((128 + 3) << 10) + 8].copy_from_slice(&ZFS_UB[0]);
        assert_eq!(detect_start(&w), vec!["a ZFS pool member label"]);
        // A short read at the end of the device is no panic.
        assert!(detect_start(&[0u8; 100]).is_empty());
    }
}
