//! The kernel's message without what a logger put in front of it. The same
//! line reaches us as a /dev/kmsg record, from `dmesg` (plain, `-T`, `-r`, `-x`,
//! `--time-format iso`), from syslog or busybox/OpenWrt logread, from
//! `journalctl` (short, short-precise, short-iso, short-full, short-monotonic)
//! or from an installer's log; the classifier's formats start where the
//! kernel's own text starts.

/// Words a logger puts before its `kernel:` tag: date, time, host, facility.
/// `Sat May 11 14:46:16 2024 kern.info kernel:` (OpenWrt logread) has 6.
const MAX_WORDS_BEFORE_TAG: usize = 8;

/// `line` without its logger and timestamp prefixes, each taken off in turn
/// until none is left: `/dev/kmsg` record headers (`6,1234,5678,-;`), `<N>`
/// priorities, `[ 1234.567890]` and `[Mon Oct  2 15:08:51 2023]` dmesg stamps
/// (and `[    T1]` caller ids), ISO 8601 stamps, `dmesg -x`'s `kern  :err   : `,
/// and everything up to a syslog or journal `kernel:` tag.
pub fn strip_prefixes(line: &str) -> &str {
    let mut s = line.trim_start();
    loop {
        let next = kmsg_header(s)
            .or_else(|| priority(s))
            .or_else(|| bracketed_stamp(s))
            .or_else(|| iso_stamp(s))
            .or_else(|| dmesg_facility(s))
            .or_else(|| through_kernel_tag(s));
        match next {
            Some(rest) => s = rest.trim_start(),
            None => return s,
        }
    }
}

/// `prio,seq,usec,flags[,…];` of a /dev/kmsg record.
fn kmsg_header(s: &str) -> Option<&str> {
    let (head, rest) = s.split_once(';')?;
    let mut fields = head.split(',');
    let numeric =
        |f: Option<&str>| f.is_some_and(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    (numeric(fields.next())
        && numeric(fields.next())
        && numeric(fields.next())
        && fields.next().is_some())
    .then_some(rest)
}

/// `<3>`: a syslog priority (`dmesg -r`, console logs).
fn priority(s: &str) -> Option<&str> {
    let (n, rest) = s.strip_prefix('<')?.split_once('>')?;
    (!n.is_empty() && n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit())).then_some(rest)
}

/// `[ 1234.567890]`, `[ 1234.567890 <    0.000123>]` (dmesg -d),
/// `[Mon Oct  2 15:08:51 2023]` (dmesg -T), `[    T1]`/`[C0]` (printk caller).
fn bracketed_stamp(s: &str) -> Option<&str> {
    let (inner, rest) = s.strip_prefix('[')?.split_once(']')?;
    let t = inner.trim();
    let seconds = t.starts_with(|c: char| c.is_ascii_digit())
        && t.bytes()
            .all(|b| b.is_ascii_digit() || b" .,<>".contains(&b));
    let caller = t.len() > 1
        && (t.starts_with('T') || t.starts_with('C'))
        && t[1..].bytes().all(|b| b.is_ascii_digit());
    let ctime = is_weekday(t.split_whitespace().next().unwrap_or("")) && t.contains(':');
    (seconds || caller || ctime).then_some(rest)
}

fn is_weekday(w: &str) -> bool {
    ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].contains(&w)
}

/// `2023-10-02T15:08:51.123456+02:00 ` or `2023-10-02 15:08:51,123 `
/// (dmesg --time-format iso, journalctl -o short-iso, RFC 3339 syslog).
fn iso_stamp(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let date = digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10);
    let time = matches!(b.get(10), Some(b'T' | b' '))
        && digits(11..13)
        && b.get(13) == Some(&b':')
        && digits(14..16);
    if !(date && time) {
        return None;
    }
    // Seconds, fraction and zone up to the next space.
    let end = s[16..].find(char::is_whitespace)? + 16;
    let tail = &s[16..end];
    tail.bytes()
        .all(|c| c.is_ascii_digit() || b":.,+-Z".contains(&c))
        .then_some(&s[end..])
}

/// `kern  :err   : ` (dmesg -x).
fn dmesg_facility(s: &str) -> Option<&str> {
    let rest = s.strip_prefix("kern")?.trim_start().strip_prefix(':')?;
    let (level, rest) = rest.split_once(':')?;
    let level = level.trim();
    (!level.is_empty() && level.bytes().all(|b| b.is_ascii_lowercase())).then_some(rest)
}

/// Everything up to a `kernel:` (or `kernel[0]:`) tag among the first words,
/// when none of the words before it ends in ':' the way a kernel subsystem's
/// name does ("Memory: … kernel code" is a message, not a tag). The tag may
/// run into the message (`INFO kernel:md/raid1:md0: …`, anaconda's log).
fn through_kernel_tag(s: &str) -> Option<&str> {
    let mut rest = s;
    for _ in 0..=MAX_WORDS_BEFORE_TAG {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..word_end];
        if let Some(after) = kernel_tag(word) {
            // The text from just after the tag (inside the word or after it).
            return Some(&rest[word_end - after.len()..]);
        }
        if word.is_empty() || word.ends_with(':') {
            return None;
        }
        rest = rest[word_end..].trim_start();
    }
    None
}

/// What follows `kernel:`/`kernel[N]:` in `word`, if it is that tag.
fn kernel_tag(word: &str) -> Option<&str> {
    let after = word.strip_prefix("kernel")?;
    let after = match after.strip_prefix('[') {
        Some(r) => {
            let (n, r) = r.split_once(']')?;
            n.bytes().all(|b| b.is_ascii_digit()).then_some(r)?
        }
        None => after,
    };
    after.strip_prefix(':')
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSG: &str = "ata1: hard resetting link";

    #[test]
    fn every_logger_prefix_comes_off() {
        for line in [
            "ata1: hard resetting link",
            "6,1234,5678,-;ata1: hard resetting link",
            "3,1234,98765432,c,caller=T12;ata1: hard resetting link",
            "<3>ata1: hard resetting link",
            "<3>[ 1234.567890] ata1: hard resetting link",
            "[    2.404694] ata1: hard resetting link",
            "[    2.404694 <    0.000123>] ata1: hard resetting link",
            "[    2.404694][    T1] ata1: hard resetting link",
            "[Mon Oct  2 15:08:51 2023] ata1: hard resetting link",
            "Oct  2 15:08:51 host kernel: ata1: hard resetting link",
            "Oct  2 15:08:51 host kernel: [   12.300000] ata1: hard resetting link",
            "Oct 02 15:08:51.123456 host kernel: ata1: hard resetting link",
            "<4>Oct  2 15:08:51 host kernel: ata1: hard resetting link",
            "2023-10-02T15:08:51.123456+02:00 host kernel: ata1: hard resetting link",
            "2023-10-02T15:08:51+0200 host kernel: ata1: hard resetting link",
            "2023-10-02T15:08:51,123456+02:00 ata1: hard resetting link",
            "Mon 2023-10-02 15:08:51 CEST host kernel: ata1: hard resetting link",
            "[  12.300000] host kernel: ata1: hard resetting link",
            "Sat May 11 14:46:16 2024 kern.info kernel: [    2.446288] ata1: hard resetting link",
            "Oct  2 15:08:51 host kernel[0]: ata1: hard resetting link",
            "23:54:39,681 INFO kernel:ata1: hard resetting link",
            "kern  :err   : [   12.300000] ata1: hard resetting link",
            "kernel: ata1: hard resetting link",
            "  kernel:  ata1: hard resetting link",
        ] {
            assert_eq!(strip_prefixes(line), MSG, "{line}");
        }
    }

    #[test]
    fn the_message_itself_stays() {
        for line in [
            "Memory: 3982028K/4194304K available (12288K kernel code, 2022K rwdata)",
            "sd 0:0:0:0: [sda] Attached SCSI disk",
            "[drm] Initialized vc4 0.0.0",
            "<unknown> thing",
            "md/raid1:md0: active with 2 out of 2 mirrors",
            "usb 1-1: new high-speed USB device number 2 using xhci_hcd",
            "2023 was a year",
        ] {
            assert_eq!(strip_prefixes(line), line, "{line}");
        }
    }
}
