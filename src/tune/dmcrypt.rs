//! dm-crypt performance flags (`no_read_workqueue`, `no_write_workqueue`) on an
//! open mapping, through the device-mapper ioctls on /dev/mapper/control, the
//! way `cryptsetup refresh` does it: read the live table (DM_TABLE_STATUS),
//! load it again with the flag added or removed (DM_TABLE_LOAD) and resume
//! (DM_DEV_SUSPEND without the suspend flag swaps the new table in). And the
//! same flag in /etc/crypttab (`no-read-workqueue`), edited in place.
//!
//! The table rewriting and the crypttab edit are pure and tested on literal
//! text; the ioctls need a kernel with device-mapper.

use std::io;

/// The flags this module sets, by their dm table names.
pub const FLAGS: [&str; 2] = ["no_read_workqueue", "no_write_workqueue"];

/// Where the device-mapper control node lives, relative to the root.
pub const CONTROL: &str = "dev/mapper/control";

#[derive(Debug, thiserror::Error)]
pub enum DmError {
    #[error(
        "'/{CONTROL}' is absent: this kernel has no device-mapper (CONFIG_BLK_DEV_DM), so there is no dm-crypt mapping to change"
    )]
    NoDeviceMapper,
    #[error("no device-mapper mapping '{0}' here; 'dmsetup ls' lists them")]
    NoMapping(String),
    #[error("'{name}' is not a plain dm-crypt mapping: {reason}")]
    NotCrypt { name: String, reason: String },
    #[error(
        "unknown dm-crypt flag '{0}'; use no_read_workqueue or no_write_workqueue (kernel 5.9 and newer)"
    )]
    UnknownFlag(String),
    #[error(
        "the key of '{0}' lives in the kernel keyring only while cryptsetup opens it, so its table cannot be reloaded without the passphrase; use 'cryptsetup refresh --perf-no_read_workqueue --perf-no_write_workqueue {0}' instead"
    )]
    KeyInKeyring(String),
    #[error("{what} of '{name}' failed: {cause}")]
    Io {
        name: String,
        what: &'static str,
        cause: io::Error,
    },
}

/// The flag's name in /etc/crypttab (`no-read-workqueue`).
pub fn crypttab_option(flag: &str) -> String {
    flag.replace('_', "-")
}

/// One `START LENGTH TYPE PARAMS` line of a table.
struct Target<'a> {
    start: &'a str,
    length: &'a str,
    kind: &'a str,
    params: Vec<&'a str>,
}

fn targets<'a>(name: &str, table: &'a str) -> Result<Vec<Target<'a>>, DmError> {
    let not = |reason: String| DmError::NotCrypt {
        name: name.to_string(),
        reason,
    };
    let mut out = Vec::new();
    for line in table.lines().filter(|l| !l.trim().is_empty()) {
        let mut f = line.split_whitespace();
        let (Some(start), Some(length), Some(kind)) = (f.next(), f.next(), f.next()) else {
            return Err(not(format!("table line '{line}' has no target type")));
        };
        out.push(Target {
            start,
            length,
            kind,
            params: f.collect(),
        });
    }
    if out.is_empty() || out.iter().any(|t| t.kind != "crypt") {
        let kinds: Vec<&str> = out.iter().map(|t| t.kind).collect();
        return Err(not(format!("its targets are '{}'", kinds.join(" "))));
    }
    Ok(out)
}

/// A crypt target's parameters split into the five fixed ones
/// (`cipher key iv_offset device offset`) and the optional flags.
fn split_params<'a>(
    name: &str,
    params: &[&'a str],
) -> Result<(Vec<&'a str>, Vec<&'a str>), DmError> {
    let not = |reason: &str| DmError::NotCrypt {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    if params.len() < 5 {
        return Err(not("a crypt target has five parameters before its flags"));
    }
    let (fixed, rest) = params.split_at(5);
    let flags = match rest {
        [] => Vec::new(),
        [count, flags @ ..] if count.parse() == Ok(flags.len()) => flags.to_vec(),
        _ => return Err(not("the count of optional parameters does not match them")),
    };
    Ok((fixed.to_vec(), flags))
}

fn check_flag(flag: &str) -> Result<(), DmError> {
    if FLAGS.contains(&flag) {
        Ok(())
    } else {
        Err(DmError::UnknownFlag(flag.to_string()))
    }
}

/// Whether every target of the table has `flag`.
pub fn has_flag(name: &str, table: &str, flag: &str) -> Result<bool, DmError> {
    check_flag(flag)?;
    let mut all = true;
    for t in targets(name, table)? {
        let (_, flags) = split_params(name, &t.params)?;
        all &= flags.contains(&flag);
    }
    Ok(all)
}

/// The table with `flag` added (`on`) or removed on every target; every other
/// parameter, and the order of the flags, kept.
pub fn set_flag(name: &str, table: &str, flag: &str, on: bool) -> Result<String, DmError> {
    check_flag(flag)?;
    let mut lines = Vec::new();
    for t in targets(name, table)? {
        let (fixed, mut flags) = split_params(name, &t.params)?;
        flags.retain(|f| *f != flag);
        if on {
            flags.push(flag);
        }
        let mut line = format!("{} {} {} {}", t.start, t.length, t.kind, fixed.join(" "));
        if !flags.is_empty() {
            line.push_str(&format!(" {} {}", flags.len(), flags.join(" ")));
        }
        lines.push(line);
    }
    Ok(lines.join("\n"))
}

/// /etc/crypttab with `option` added to (`on`) or removed from the options of
/// the entry named `name`; comments, blank lines, other entries and the
/// spacing of the line are kept. An entry without an options field gets one
/// (and `none` as its key file when it has none).
pub fn edit_crypttab(text: &str, name: &str, option: &str, on: bool) -> Result<String, String> {
    let mut found = false;
    let mut out = String::with_capacity(text.len() + option.len() + 1);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let fields: Vec<&str> = body.split_whitespace().collect();
        if found || body.trim_start().starts_with('#') || fields.first() != Some(&name) {
            out.push_str(line);
            continue;
        }
        found = true;
        out.push_str(&edit_entry(body, &fields, option, on));
        out.push_str(&line[body.len()..]);
    }
    if !found {
        return Err(format!(
            "'/etc/crypttab' has no entry '{name}'; add the mapping there first, then retry"
        ));
    }
    Ok(out)
}

/// One crypttab entry line with its options field changed.
fn edit_entry(body: &str, fields: &[&str], option: &str, on: bool) -> String {
    let Some(options) = fields.get(3) else {
        if !on {
            return body.to_string();
        }
        let key = if fields.len() < 3 { " none" } else { "" };
        return format!("{body}{key} {option}");
    };
    let mut opts: Vec<&str> = options.split(',').filter(|o| *o != option).collect();
    if on {
        opts.push(option);
    }
    if opts.is_empty() {
        opts.push("luks");
    }
    // The options field is the fourth run of non-blanks: replace it there.
    let mut start = 0;
    for (i, f) in fields.iter().enumerate() {
        let at = start + body[start..].find(f).unwrap_or(0);
        if i == 3 {
            return format!("{}{}{}", &body[..at], opts.join(","), &body[at + f.len()..]);
        }
        start = at + f.len();
    }
    body.to_string()
}

// ---- the live mapping, through the device-mapper ioctls ----

/// `struct dm_ioctl` from include/uapi/linux/dm-ioctl.h (312 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct DmIoctl {
    version: [u32; 3],
    data_size: u32,
    data_start: u32,
    target_count: u32,
    open_count: i32,
    flags: u32,
    event_nr: u32,
    padding: u32,
    dev: u64,
    name: [u8; 128],
    uuid: [u8; 129],
    data: [u8; 7],
}

/// `struct dm_target_spec` (40 bytes); the parameter string follows it.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct DmTargetSpec {
    sector_start: u64,
    length: u64,
    status: i32,
    next: u32,
    target_type: [u8; 16],
}

const DM_IOCTL_SIZE: usize = size_of::<DmIoctl>();
const SPEC_SIZE: usize = size_of::<DmTargetSpec>();
/// _IOWR(0xfd, nr, struct dm_ioctl).
const fn dm_request(nr: u32) -> libc::c_ulong {
    (3 << 30 | (DM_IOCTL_SIZE as u32) << 16 | 0xfd << 8 | nr) as libc::c_ulong
}
const DM_DEV_SUSPEND: libc::c_ulong = dm_request(6);
const DM_TABLE_LOAD: libc::c_ulong = dm_request(9);
const DM_TABLE_STATUS: libc::c_ulong = dm_request(12);
const DM_READONLY_FLAG: u32 = 1 << 0;
const DM_STATUS_TABLE_FLAG: u32 = 1 << 4;
const DM_BUFFER_FULL_FLAG: u32 = 1 << 8;
/// Asks the kernel to wipe its copies of the buffers (they hold the key).
const DM_SECURE_DATA_FLAG: u32 = 1 << 15;
/// Tables of a NAS's mappings are a few hundred bytes; this is plenty.
const BUF_LEN: usize = 16 * 1024;

/// A u64-aligned buffer wiped on drop: the table it holds carries the key.
struct Buf(Vec<u64>);

impl Buf {
    fn new() -> Self {
        Buf(vec![0; BUF_LEN / 8])
    }
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: a u64 slice viewed as bytes, same length in bytes.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast(), BUF_LEN) }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        self.bytes().fill(0);
    }
}

fn header(name: &str, flags: u32) -> Result<DmIoctl, DmError> {
    let mut h = DmIoctl {
        version: [4, 0, 0],
        data_size: BUF_LEN as u32,
        data_start: DM_IOCTL_SIZE as u32,
        target_count: 0,
        open_count: 0,
        flags: flags | DM_SECURE_DATA_FLAG,
        event_nr: 0,
        padding: 0,
        dev: 0,
        name: [0; 128],
        uuid: [0; 129],
        data: [0; 7],
    };
    if name.is_empty() || name.len() >= h.name.len() || name.contains(['/', '\0']) {
        return Err(DmError::NoMapping(name.to_string()));
    }
    h.name[..name.len()].copy_from_slice(name.as_bytes());
    Ok(h)
}

struct Control(std::fs::File);

impl Control {
    fn open() -> Result<Self, DmError> {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("/{CONTROL}"))
            .map(Control)
            .map_err(|_| DmError::NoDeviceMapper)
    }

    /// Runs one command on `buf` (a dm_ioctl header followed by its data).
    fn call(
        &self,
        name: &str,
        what: &'static str,
        request: libc::c_ulong,
        buf: &mut Buf,
    ) -> Result<DmIoctl, DmError> {
        use std::os::fd::AsRawFd;
        // SAFETY: buf is BUF_LEN bytes, starts with a dm_ioctl whose data_size
        // says so; the kernel writes within data_size.
        // `as _`: glibc declares the request c_ulong, musl c_int (the static builds).
        let rc = unsafe { libc::ioctl(self.0.as_raw_fd(), request as _, buf.bytes().as_mut_ptr()) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::ENXIO) => DmError::NoMapping(name.to_string()),
                Some(libc::ENOKEY) => DmError::KeyInKeyring(name.to_string()),
                _ => DmError::Io {
                    name: name.to_string(),
                    what,
                    cause: e,
                },
            });
        }
        // SAFETY: the buffer starts with a dm_ioctl and is u64-aligned.
        Ok(unsafe { std::ptr::read(buf.bytes().as_ptr().cast::<DmIoctl>()) })
    }

    /// The live table of `name` (keys included) and its read-only flag.
    fn table(&self, name: &str) -> Result<(String, u32), DmError> {
        let mut buf = Buf::new();
        let h = header(name, DM_STATUS_TABLE_FLAG)?;
        // SAFETY: DmIoctl is plain data and fits the buffer.
        unsafe { std::ptr::write(buf.bytes().as_mut_ptr().cast(), h) };
        let out = self.call(name, "reading the table", DM_TABLE_STATUS, &mut buf)?;
        if out.flags & DM_BUFFER_FULL_FLAG != 0 {
            return Err(DmError::NotCrypt {
                name: name.to_string(),
                reason: "its table is larger than 16 KiB".into(),
            });
        }
        let data = buf.bytes();
        let mut lines = Vec::new();
        let mut at = out.data_start as usize;
        let base = at;
        for _ in 0..out.target_count {
            if at + SPEC_SIZE > BUF_LEN {
                break;
            }
            // SAFETY: in bounds; read_unaligned makes no alignment assumption.
            let spec: DmTargetSpec =
                unsafe { std::ptr::read_unaligned(data[at..].as_ptr().cast()) };
            let params = &data[at + SPEC_SIZE..];
            let end = params.iter().position(|b| *b == 0).unwrap_or(0);
            let kind_end = spec.target_type.iter().position(|b| *b == 0).unwrap_or(16);
            lines.push(format!(
                "{} {} {} {}",
                spec.sector_start,
                spec.length,
                String::from_utf8_lossy(&spec.target_type[..kind_end]),
                String::from_utf8_lossy(&params[..end])
            ));
            at = base + spec.next as usize;
        }
        if lines.is_empty() {
            return Err(DmError::NotCrypt {
                name: name.to_string(),
                reason: "it has no live table".into(),
            });
        }
        Ok((lines.join("\n"), out.flags & DM_READONLY_FLAG))
    }

    /// Loads `table` as the inactive table of `name` and resumes it, which
    /// swaps it in (suspending I/O for the moment of the swap).
    fn reload(&self, name: &str, table: &str, readonly: u32) -> Result<(), DmError> {
        let mut buf = Buf::new();
        let mut h = header(name, readonly)?;
        let mut at = DM_IOCTL_SIZE;
        for line in table.lines() {
            let mut f = line.splitn(4, ' ');
            let (Some(start), Some(length), Some(kind), params) =
                (f.next(), f.next(), f.next(), f.next().unwrap_or(""))
            else {
                continue;
            };
            // The next spec starts 8-aligned after this one's NUL-terminated params.
            let next = (SPEC_SIZE + params.len() + 1).next_multiple_of(8);
            if at + next > BUF_LEN {
                return Err(DmError::NotCrypt {
                    name: name.to_string(),
                    reason: "its table is larger than 16 KiB".into(),
                });
            }
            let mut spec = DmTargetSpec {
                sector_start: start.parse().unwrap_or(0),
                length: length.parse().unwrap_or(0),
                next: next as u32,
                ..Default::default()
            };
            let k = kind.as_bytes();
            spec.target_type[..k.len().min(15)].copy_from_slice(&k[..k.len().min(15)]);
            let data = buf.bytes();
            // SAFETY: in bounds (checked above).
            unsafe { std::ptr::write_unaligned(data[at..].as_mut_ptr().cast(), spec) };
            data[at + SPEC_SIZE..at + SPEC_SIZE + params.len()].copy_from_slice(params.as_bytes());
            at += next;
            h.target_count += 1;
        }
        // SAFETY: DmIoctl is plain data and fits the buffer.
        unsafe { std::ptr::write(buf.bytes().as_mut_ptr().cast(), h) };
        self.call(name, "loading the new table", DM_TABLE_LOAD, &mut buf)?;
        let mut resume = Buf::new();
        let h = header(name, 0)?;
        // SAFETY: as above.
        unsafe { std::ptr::write(resume.bytes().as_mut_ptr().cast(), h) };
        self.call(
            name,
            "resuming with the new table",
            DM_DEV_SUSPEND,
            &mut resume,
        )?;
        Ok(())
    }
}

/// Whether the live mapping `name` has `flag`: `on` or `off`.
pub fn get(name: &str, flag: &str) -> Result<String, DmError> {
    let control = Control::open()?;
    let (table, _) = control.table(name)?;
    Ok(if has_flag(name, &table, flag)? {
        "on"
    } else {
        "off"
    }
    .to_string())
}

/// Sets `flag` on the live mapping `name` (`value` `on` or `off`) and reads it back.
pub fn set(name: &str, flag: &str, value: &str) -> Result<(), DmError> {
    let control = Control::open()?;
    let (table, readonly) = control.table(name)?;
    let new = set_flag(name, &table, flag, value == "on")?;
    if new != table {
        control.reload(name, &new, readonly)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str =
        "0 3907029168 crypt aes-xts-plain64 :64:logon:cryptsetup:3c1e-d0 0 8:17 32768";
    const FLAGGED: &str =
        "0 409600 crypt aes-cbc-essiv:sha256 0123abcd 0 7:0 4096 2 allow_discards sector_size:4096";

    #[test]
    fn structs_match_the_kernel_abi() {
        assert_eq!(size_of::<DmIoctl>(), 312);
        assert_eq!(std::mem::offset_of!(DmIoctl, dev), 40);
        assert_eq!(std::mem::offset_of!(DmIoctl, name), 48);
        assert_eq!(size_of::<DmTargetSpec>(), 40);
        assert_eq!(DM_TABLE_LOAD, 0xC138_FD09);
        assert_eq!(DM_TABLE_STATUS, 0xC138_FD0C);
        assert_eq!(DM_DEV_SUSPEND, 0xC138_FD06);
    }

    #[test]
    fn flags_are_added_and_removed_keeping_the_rest() {
        let on = set_flag("c", PLAIN, "no_read_workqueue", true).unwrap();
        assert_eq!(on, format!("{PLAIN} 1 no_read_workqueue"));
        assert!(has_flag("c", &on, "no_read_workqueue").unwrap());
        assert!(!has_flag("c", &on, "no_write_workqueue").unwrap());
        assert_eq!(
            set_flag("c", &on, "no_read_workqueue", false).unwrap(),
            PLAIN
        );
        let both = set_flag("c", FLAGGED, "no_write_workqueue", true).unwrap();
        assert_eq!(
            both,
            "0 409600 crypt aes-cbc-essiv:sha256 0123abcd 0 7:0 4096 3 allow_discards sector_size:4096 no_write_workqueue"
        );
        // Already there: the same table.
        assert_eq!(
            set_flag("c", &both, "no_write_workqueue", true).unwrap(),
            both
        );
    }

    #[test]
    fn other_tables_and_flags_are_refused_with_the_reason() {
        let e = set_flag("v", "0 100 linear 8:1 0", "no_read_workqueue", true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "'v' is not a plain dm-crypt mapping: its targets are 'linear'"
        );
        let e = set_flag("c", PLAIN, "same_cpu_crypt", true).unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown dm-crypt flag 'same_cpu_crypt'")
        );
        assert!(set_flag("c", "0 1 crypt a b 0 8:1 0 3 x", "no_read_workqueue", true).is_err());
        assert!(set_flag("c", "0 1 crypt a b", "no_read_workqueue", true).is_err());
        assert!(set_flag("c", "", "no_read_workqueue", true).is_err());
    }

    #[test]
    fn crypttab_edits_keep_comments_and_spacing() {
        let text = "# <name> <device> <key> <options>\n\
                    data   UUID=1234   none   luks,discard\n\
                    swap /dev/sdb2 /dev/urandom swap\n\
                    bare UUID=5678\n";
        let on = edit_crypttab(text, "data", "no-read-workqueue", true).unwrap();
        assert_eq!(
            on,
            "# <name> <device> <key> <options>\n\
             data   UUID=1234   none   luks,discard,no-read-workqueue\n\
             swap /dev/sdb2 /dev/urandom swap\n\
             bare UUID=5678\n"
        );
        assert_eq!(
            edit_crypttab(&on, "data", "no-read-workqueue", false).unwrap(),
            text
        );
        let bare = edit_crypttab(text, "bare", "no-write-workqueue", true).unwrap();
        assert!(
            bare.ends_with("bare UUID=5678 none no-write-workqueue\n"),
            "{bare}"
        );
        assert_eq!(
            edit_crypttab(text, "bare", "no-write-workqueue", false).unwrap(),
            text
        );
        let e = edit_crypttab(text, "nope", "no-read-workqueue", true).unwrap_err();
        assert!(e.contains("no entry 'nope'"), "{e}");
        assert_eq!(crypttab_option("no_read_workqueue"), "no-read-workqueue");
    }
}
