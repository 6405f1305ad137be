//! Matching a kernel message against the printf format the kernel printed it
//! with, so a pattern is the format string copied from the source (with the
//! file named beside it) rather than an example line: every device name, number
//! and speed the format leaves open matches.
//!
//! A conversion matches what printk can print for it: `%s` and the `%p`
//! extensions (`%pg`, `%pV`, `%pU`, …) any text, shortest first, so the literal
//! after it decides (at the end of a format: the rest of the word); `%d`/`%i` a
//! signed decimal, `%u` an unsigned one, `%x`/`%X` hex digits (`0x` too with
//! `#`), `%c` one character; flags, width and length modifiers are skipped. A
//! space matches one or more whitespace characters. The format may start at any
//! word of the message (after the `driver device: ` that dev_printk puts in
//! front) and the message may go on after it: a format here is cut after the
//! words that decide the class.

/// Conversions captured at most; no format here has more.
pub const MAX_ARGS: usize = 8;

/// Where a format matched and what its conversions captured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Match<'a> {
    /// Byte where the format starts in the message.
    pub start: usize,
    /// Byte after the last one the format matched.
    pub end: usize,
    args: [&'a str; MAX_ARGS],
    n: usize,
}

impl<'a> Match<'a> {
    /// Conversion `i`'s text, `None` past the last or when it is empty.
    pub fn arg(&self, i: usize) -> Option<&'a str> {
        self.args[..self.n]
            .get(i)
            .copied()
            .filter(|a| !a.is_empty())
    }

    /// The last conversion's text.
    pub fn last(&self) -> Option<&'a str> {
        self.arg(self.n.checked_sub(1)?)
    }

    /// Conversion `i` as a number (decimal, or hex with its `0x`).
    pub fn number(&self, i: usize) -> Option<i64> {
        let a = self.arg(i)?;
        match a.strip_prefix("0x") {
            Some(h) => i64::from_str_radix(h, 16).ok(),
            None => a.parse().ok(),
        }
    }
}

/// Where `fmt` first matches `msg`, trying each word start from the left.
#[cfg(test)]
pub fn scan<'a>(msg: &'a str, fmt: &'static str) -> Option<Match<'a>> {
    Pattern::new(fmt).scan(msg)
}

fn scan_from_words<'a>(msg: &'a str, fmt: &str) -> Option<Match<'a>> {
    let bytes = msg.as_bytes();
    // A format that opens with a literal can only start where its first byte is.
    let first = fmt.as_bytes().first().copied().filter(|&b| b != b'%');
    (0..bytes.len())
        .filter(|&i| i == 0 || bytes[i - 1].is_ascii_whitespace())
        .filter(|&i| !bytes[i].is_ascii_whitespace())
        .filter(|&i| first.is_none_or(|f| bytes[i] == f))
        .find_map(|start| {
            let mut m = Match {
                start,
                end: start,
                args: [""; MAX_ARGS],
                n: 0,
            };
            let fmt = fmt.as_bytes();
            m.end = match fmt.strip_prefix(b"%s") {
                // A format that opens with %s names one word ("%s: probe of");
                // every word start is tried anyway.
                Some(rest) => {
                    let word = msg[start..]
                        .find(char::is_whitespace)
                        .map_or(msg.len(), |w| start + w);
                    text(rest, msg, start, word, &mut m)?
                }
                None => at(fmt, msg, start, &mut m)?,
            };
            Some(m)
        })
}

/// A kernel printf format with its longest literal run, found once (at
/// compile time) so a line is refused by one `contains` before any matching.
#[derive(Debug, Clone, Copy)]
pub struct Pattern {
    fmt: &'static str,
    needle: (usize, usize),
}

impl Pattern {
    pub const fn new(fmt: &'static str) -> Pattern {
        Pattern {
            fmt,
            needle: needle(fmt.as_bytes()),
        }
    }

    /// Where the format first matches `msg`, trying each word start from the left.
    pub fn scan<'a>(&self, msg: &'a str) -> Option<Match<'a>> {
        if !msg.contains(&self.fmt[self.needle.0..self.needle.1]) {
            return None;
        }
        scan_from_words(msg, self.fmt)
    }
}

/// The longest run of `fmt` without a conversion or a space, as a byte range.
const fn needle(fmt: &[u8]) -> (usize, usize) {
    let (mut best, mut start, mut i) = ((0, 0), 0, 0);
    while i <= fmt.len() {
        let end_of_run = i == fmt.len() || fmt[i] == b' ' || fmt[i] == b'%';
        if end_of_run {
            if i - start > best.1 - best.0 {
                best = (start, i);
            }
            if i < fmt.len() && fmt[i] == b'%' {
                // Skip the spec: flags, width, length, the conversion and a
                // %p extension's letters.
                i += 1;
                while i < fmt.len() && !fmt[i].is_ascii_alphabetic() && fmt[i] != b'%' {
                    i += 1;
                }
                if i < fmt.len() && fmt[i] == b'p' {
                    while i + 1 < fmt.len() && fmt[i + 1].is_ascii_alphabetic() {
                        i += 1;
                    }
                } else {
                    while i < fmt.len() && is_length(fmt[i]) {
                        i += 1;
                    }
                }
            }
            start = i + 1;
        }
        i += 1;
    }
    best
}

const fn is_length(b: u8) -> bool {
    matches!(b, b'h' | b'l' | b'L' | b'q' | b'j' | b'z' | b't')
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Conv {
    Text,
    Signed,
    Unsigned,
    Hex { alt: bool },
    Char,
    Percent,
}

/// The conversion spec starting at `fmt[i]` (just after '%'): its kind and length.
fn spec(fmt: &[u8], i: usize) -> Option<(Conv, usize)> {
    let mut j = i;
    let mut alt = false;
    while j < fmt.len() && b"-+ #0".contains(&fmt[j]) {
        alt |= fmt[j] == b'#';
        j += 1;
    }
    while j < fmt.len() && (fmt[j].is_ascii_digit() || fmt[j] == b'.' || fmt[j] == b'*') {
        j += 1;
    }
    while j < fmt.len() && b"hlLqjzt".contains(&fmt[j]) {
        j += 1;
    }
    let conv = match *fmt.get(j)? {
        b'%' if j == i => Conv::Percent,
        b's' => Conv::Text,
        b'p' => {
            // %pg, %pV, %pOF, %pM, …: the letters after p belong to it.
            while j + 1 < fmt.len() && fmt[j + 1].is_ascii_alphabetic() {
                j += 1;
            }
            Conv::Text
        }
        b'd' | b'i' => Conv::Signed,
        b'u' => Conv::Unsigned,
        b'x' | b'X' => Conv::Hex { alt },
        b'c' => Conv::Char,
        _ => return None,
    };
    Some((conv, j + 1 - i))
}

/// Matches `fmt` against `msg` from byte `pos`; the byte after the match.
fn at<'a>(fmt: &[u8], msg: &'a str, pos: usize, m: &mut Match<'a>) -> Option<usize> {
    let bytes = msg.as_bytes();
    let Some(&f) = fmt.first() else {
        return Some(pos);
    };
    if f == b' ' {
        let n = bytes[pos..]
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        return if n == 0 {
            None
        } else {
            at(&fmt[1..], msg, pos + n, m)
        };
    }
    if f != b'%' {
        return (bytes.get(pos) == Some(&f))
            .then(|| at(&fmt[1..], msg, pos + 1, m))
            .flatten();
    }
    let (conv, len) = spec(fmt, 1)?;
    let rest = &fmt[1 + len..];
    let digits = |from: usize, hex: bool| {
        from + bytes[from..]
            .iter()
            .take_while(|b| {
                if hex {
                    b.is_ascii_hexdigit()
                } else {
                    b.is_ascii_digit()
                }
            })
            .count()
    };
    let end = match conv {
        Conv::Percent => {
            return (bytes.get(pos) == Some(&b'%')).then(|| at(rest, msg, pos + 1, m))?;
        }
        Conv::Char => msg[pos..].chars().next().map(|c| pos + c.len_utf8())?,
        Conv::Signed | Conv::Unsigned => {
            let from = if conv == Conv::Signed && bytes.get(pos) == Some(&b'-') {
                pos + 1
            } else {
                pos
            };
            let end = digits(from, false);
            if end == from {
                return None;
            }
            end
        }
        Conv::Hex { alt } => {
            let from = if alt && msg[pos..].starts_with("0x") {
                pos + 2
            } else {
                pos
            };
            let end = digits(from, true);
            if end == from {
                return None;
            }
            end
        }
        Conv::Text => return text(rest, msg, pos, msg.len(), m),
    };
    let before = m.n;
    capture(m, &msg[pos..end]);
    at(rest, msg, end, m).or_else(|| {
        m.n = before;
        None
    })
}

/// `%s` at `pos`, ending by `max_end`: the shortest text after which the rest
/// of the format matches; at the end of the format, the rest of the word.
fn text<'a>(
    rest: &[u8],
    msg: &'a str,
    pos: usize,
    max_end: usize,
    m: &mut Match<'a>,
) -> Option<usize> {
    if rest.is_empty() {
        let end = pos
            + msg.as_bytes()[pos..]
                .iter()
                .take_while(|b| !b.is_ascii_whitespace())
                .count();
        capture(m, &msg[pos..end]);
        return Some(end);
    }
    let saved = m.n;
    // Only where the literal after the %s could start (any end before a '%').
    let next = rest.first().copied().filter(|&b| b != b'%');
    let bytes = msg.as_bytes();
    let fits = |e: usize| match next {
        Some(b' ') => bytes.get(e).is_some_and(u8::is_ascii_whitespace),
        Some(b) => bytes.get(e) == Some(&b),
        None => msg.is_char_boundary(e),
    };
    for end in (pos..=max_end).filter(|&e| fits(e)) {
        m.n = saved;
        capture(m, &msg[pos..end]);
        if let Some(after) = at(rest, msg, end, m) {
            return Some(after);
        }
    }
    m.n = saved;
    None
}

fn capture<'a>(m: &mut Match<'a>, s: &'a str) {
    if m.n < MAX_ARGS {
        m.args[m.n] = s;
        m.n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args<'a>(msg: &'a str, fmt: &'static str) -> Option<Vec<&'a str>> {
        let m = scan(msg, fmt)?;
        Some(
            (0..MAX_ARGS)
                .map_while(|i| m.args[..m.n].get(i).copied())
                .collect(),
        )
    }

    #[test]
    fn conversions_match_what_printk_prints() {
        assert_eq!(
            args(
                "NETDEV WATCHDOG: eth0 (bcmgenet): transmit queue 3 timed out",
                "NETDEV WATCHDOG: %s (%s): transmit queue %u timed out"
            ),
            Some(vec!["eth0", "bcmgenet", "3"])
        );
        assert_eq!(
            args(
                "ata1: SATA link up 1.5 Gbps (SStatus 113 SControl 310)",
                "SATA link up %s (SStatus %X SControl %X)"
            ),
            Some(vec!["1.5 Gbps", "113", "310"])
        );
        assert_eq!(
            args(
                "usb 1-1: device descriptor read/64, error -71",
                "device descriptor read/%s, error %d"
            ),
            Some(vec!["64", "-71"])
        );
        // %u takes no sign; %#x its 0x.
        assert_eq!(args("queue -1 timed out", "queue %u timed out"), None);
        assert_eq!(
            args("flags 0x80700 phys", "flags %#x phys"),
            Some(vec!["0x80700"])
        );
        assert_eq!(args("100% done", "100%% done"), Some(vec![]));
    }

    #[test]
    fn text_is_shortest_first_and_a_trailing_one_takes_the_word() {
        assert_eq!(
            args(
                "md/raid1:md0: Disk failure on sdb1, disabling device.",
                "md/raid%s:%s: Disk failure on %s, disabling"
            ),
            Some(vec!["1", "md0", "sdb1"])
        );
        assert_eq!(
            args(
                "md/raid:md2: Disk failure on sdb6, disabling device.",
                "md/raid%s:%s: Disk failure on %s,"
            ),
            Some(vec!["", "md2", "sdb6"])
        );
        assert_eq!(
            args(
                "md: resync of RAID array md0 now",
                "md: %s of RAID array %s"
            ),
            Some(vec!["resync", "md0"])
        );
        // Process names may hold spaces and brackets.
        assert_eq!(
            args(
                "Killed process 4242 (smbd[192.168.1.) total-vm:1kB",
                "Killed process %d (%s) total-vm:"
            ),
            Some(vec!["4242", "smbd[192.168.1."])
        );
    }

    #[test]
    fn the_format_starts_at_a_word_after_the_device_prefix() {
        let m = scan(
            "r8169 0000:02:00.0 enp2s0: rtl_rxtx_empty_cond == 0 (loop: 42, delay: 100).",
            "%s == %d (loop: %d, delay: %d)",
        )
        .unwrap();
        assert_eq!(m.arg(0), Some("rtl_rxtx_empty_cond"));
        assert_eq!(m.start, 27);
        assert_eq!(m.number(1), Some(0));
        // Not in the middle of a word, and spaces must be there.
        assert!(scan("xhard resetting link", "hard resetting link").is_none());
        assert!(scan("hardresetting link", "hard resetting link").is_none());
        // Runs of spaces match one.
        assert!(scan("uas-tag 10 inflight: CMD  IN", "inflight: CMD IN").is_some());
    }

    #[test]
    fn needles_skip_conversions() {
        let needle = |fmt: &'static str| {
            let p = Pattern::new(fmt);
            &fmt[p.needle.0..p.needle.1]
        };
        assert_eq!(needle("%s: probe of %s failed with error %d"), "failed");
        assert_eq!(
            needle("NETDEV WATCHDOG: %s (%s): transmit queue %u timed out"),
            "WATCHDOG:"
        );
        assert_eq!(needle("limiting SATA link speed to %s"), "limiting");
        assert_eq!(needle("md/raid%s:%s: Disk failure on %pg"), "md/raid");
        assert_eq!(needle("error: { %lluxyz"), "error:");
    }
}
