//! A small gzip decoder (RFC 1952 around RFC 1951 inflate) for /proc/config.gz:
//! stored, fixed and dynamic Huffman blocks, the header's optional fields, and the
//! trailer's CRC32 and length checks. Written here rather than pulled in as a crate
//! because the binary is over its size budget (issue 22). Output is bounded, and
//! corrupt input is an error, never a panic. Decoding follows zlib's puff.c: slow
//! (bit by bit) but small, which is right for a ~30 KiB file read once per probe.

/// Most a decoded file may grow to: a kernel config is ~250 KiB; anything past this
/// is not one, and bounded memory matters on a 128 MiB board.
pub const MAX_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GunzipError {
    #[error(
        "not gzip data (it starts with '{0}', not '1f8b08'); is the file compressed another way?"
    )]
    NotGzip(String),
    #[error("the gzip data ends early, near byte {0}; the file is truncated")]
    Truncated(usize),
    #[error("the deflate data is corrupt near byte {at}: {what}")]
    Corrupt { at: usize, what: &'static str },
    #[error("the data inflates to more than {0} bytes; refused to bound memory")]
    TooLarge(usize),
    #[error(
        "the CRC32 check failed (trailer '{stored:08x}', data '{computed:08x}'); the file is corrupt"
    )]
    Crc { stored: u32, computed: u32 },
    #[error("the length check failed (trailer '{stored}', data '{actual}'); the file is corrupt")]
    Length { stored: u32, actual: u32 },
}

/// Decodes the first member of a gzip stream, at most `limit` bytes of output.
pub fn gunzip(data: &[u8], limit: usize) -> Result<Vec<u8>, GunzipError> {
    let body = skip_header(data)?;
    // The trailer's length, when the member ends the file, sizes the output at
    // once: growing by doubling would hold up to twice the text (probe's peak
    // RSS, issue 22). Only a hint, bounded by `limit`; the check comes below.
    let hint = data
        .len()
        .checked_sub(4)
        .and_then(|i| data.get(i..))
        .map_or(0, |t| u32::from_le_bytes([t[0], t[1], t[2], t[3]]) as usize);
    let mut s = Inflate {
        input: data,
        pos: body,
        bits: 0,
        nbits: 0,
        out: Vec::with_capacity(hint.min(limit)),
        limit,
    };
    s.inflate()?;
    // The trailer starts at the next whole byte after the last block.
    let at = s.pos;
    let trailer = data.get(at..at + 8).ok_or(GunzipError::Truncated(at))?;
    let word =
        |i: usize| u32::from_le_bytes([trailer[i], trailer[i + 1], trailer[i + 2], trailer[i + 3]]);
    let computed = crc32(&s.out);
    if word(0) != computed {
        return Err(GunzipError::Crc {
            stored: word(0),
            computed,
        });
    }
    // ISIZE is the length modulo 2^32; the bound keeps it far below that.
    let actual = s.out.len() as u32;
    if word(4) != actual {
        return Err(GunzipError::Length {
            stored: word(4),
            actual,
        });
    }
    Ok(s.out)
}

/// Where the deflate data starts, after the header and its optional fields.
fn skip_header(data: &[u8]) -> Result<usize, GunzipError> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    if data.len() < 3 || data[..3] != [0x1f, 0x8b, 8] {
        let head: String = data.iter().take(3).map(|b| format!("{b:02x}")).collect();
        return Err(GunzipError::NotGzip(head));
    }
    let flags = *data.get(3).ok_or(GunzipError::Truncated(3))?;
    if flags & 0xe0 != 0 {
        return Err(GunzipError::Corrupt {
            at: 3,
            what: "reserved header flags are set",
        });
    }
    // ID1 ID2 CM FLG MTIME(4) XFL OS
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let len = data.get(at..at + 2).ok_or(GunzipError::Truncated(at))?;
        at += 2 + u16::from_le_bytes([len[0], len[1]]) as usize;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let rest = data.get(at..).unwrap_or(&[]);
            let nul = rest
                .iter()
                .position(|b| *b == 0)
                .ok_or(GunzipError::Truncated(data.len()))?;
            at += nul + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    if at >= data.len() {
        return Err(GunzipError::Truncated(data.len()));
    }
    Ok(at)
}

const MAX_BITS: usize = 15;
const MAX_LIT_CODES: usize = 286;
const MAX_DIST_CODES: usize = 30;
const FIXED_LIT_CODES: usize = 288;

/// Length base and extra bits for symbols 257..=285.
const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
/// Distance base and extra bits for symbols 0..=29.
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
/// The order code length code lengths are sent in.
const CLEN_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// A canonical Huffman code: how many codes of each length, and the symbols
/// ordered by code.
struct Huffman {
    count: [u16; MAX_BITS + 1],
    symbol: Vec<u16>,
}

impl Huffman {
    /// Builds the code from each symbol's length (0 = unused). An over-subscribed set
    /// is refused; an incomplete one is allowed (a lone distance code is legal) and a
    /// stream that uses a missing code fails in [`Inflate::decode`].
    fn new(lengths: &[u8]) -> Result<Self, &'static str> {
        let mut count = [0u16; MAX_BITS + 1];
        for &l in lengths {
            count[l as usize] += 1;
        }
        let mut left: i32 = 1;
        for &c in &count[1..] {
            left = (left << 1) - i32::from(c);
            if left < 0 {
                return Err("a Huffman code is over-subscribed");
            }
        }
        let mut offset = [0u16; MAX_BITS + 1];
        for len in 1..MAX_BITS {
            offset[len + 1] = offset[len] + count[len];
        }
        let mut symbol = vec![0u16; lengths.len()];
        for (sym, &l) in lengths.iter().enumerate() {
            if l != 0 {
                symbol[offset[l as usize] as usize] = sym as u16;
                offset[l as usize] += 1;
            }
        }
        Ok(Huffman { count, symbol })
    }
}

struct Inflate<'a> {
    input: &'a [u8],
    /// The next byte to load into `bits`.
    pos: usize,
    bits: u32,
    nbits: u32,
    out: Vec<u8>,
    limit: usize,
}

impl Inflate<'_> {
    fn corrupt(&self, what: &'static str) -> GunzipError {
        GunzipError::Corrupt { at: self.pos, what }
    }

    /// The next `n` (≤ 16) bits, least significant first.
    fn take(&mut self, n: u32) -> Result<u32, GunzipError> {
        while self.nbits < n {
            let b = *self
                .input
                .get(self.pos)
                .ok_or(GunzipError::Truncated(self.pos))?;
            self.pos += 1;
            self.bits |= u32::from(b) << self.nbits;
            self.nbits += 8;
        }
        let v = self.bits & ((1u32 << n) - 1);
        self.bits >>= n;
        self.nbits -= n;
        Ok(v)
    }

    fn inflate(&mut self) -> Result<(), GunzipError> {
        loop {
            let last = self.take(1)? == 1;
            match self.take(2)? {
                0 => self.stored()?,
                1 => {
                    let (lit, dist) = fixed_codes()?;
                    self.codes(&lit, &dist)?;
                }
                2 => {
                    let (lit, dist) = self.dynamic_codes()?;
                    self.codes(&lit, &dist)?;
                }
                _ => return Err(self.corrupt("block type 3 does not exist")),
            }
            if last {
                // Bits left over belong to the last byte read: the trailer follows it.
                self.bits = 0;
                self.nbits = 0;
                return Ok(());
            }
        }
    }

    fn push(&mut self, byte: u8) -> Result<(), GunzipError> {
        if self.out.len() >= self.limit {
            return Err(GunzipError::TooLarge(self.limit));
        }
        self.out.push(byte);
        Ok(())
    }

    fn stored(&mut self) -> Result<(), GunzipError> {
        // Whole bytes from here: the bit buffer never holds a full unread byte
        // at a block boundary, so dropping it aligns to the next byte.
        self.bits = 0;
        self.nbits = 0;
        let at = self.pos;
        let head = self
            .input
            .get(at..at + 4)
            .ok_or(GunzipError::Truncated(at))?;
        let len = u16::from_le_bytes([head[0], head[1]]);
        if len != !u16::from_le_bytes([head[2], head[3]]) {
            return Err(self.corrupt("a stored block's length and its complement disagree"));
        }
        let start = at + 4;
        let bytes = self
            .input
            .get(start..start + len as usize)
            .ok_or(GunzipError::Truncated(self.input.len()))?;
        if self.out.len() + bytes.len() > self.limit {
            return Err(GunzipError::TooLarge(self.limit));
        }
        self.out.extend_from_slice(bytes);
        self.pos = start + len as usize;
        Ok(())
    }

    fn decode(&mut self, h: &Huffman) -> Result<u16, GunzipError> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..=MAX_BITS {
            code |= self.take(1)? as i32;
            let count = i32::from(h.count[len]);
            if code - count < first {
                return h
                    .symbol
                    .get((index + code - first) as usize)
                    .copied()
                    .ok_or_else(|| self.corrupt("a Huffman code points past its table"));
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        Err(self.corrupt("a Huffman code that the block's table does not have"))
    }

    fn dynamic_codes(&mut self) -> Result<(Huffman, Huffman), GunzipError> {
        let nlen = self.take(5)? as usize + 257;
        let ndist = self.take(5)? as usize + 1;
        let ncode = self.take(4)? as usize + 4;
        if nlen > MAX_LIT_CODES || ndist > MAX_DIST_CODES {
            return Err(self.corrupt("a dynamic block declares too many codes"));
        }
        let mut clens = [0u8; 19];
        for &i in &CLEN_ORDER[..ncode] {
            clens[i] = self.take(3)? as u8;
        }
        let clen = Huffman::new(&clens).map_err(|w| self.corrupt(w))?;
        let mut lengths = [0u8; MAX_LIT_CODES + MAX_DIST_CODES];
        let mut n = 0;
        while n < nlen + ndist {
            let sym = self.decode(&clen)?;
            if sym < 16 {
                lengths[n] = sym as u8;
                n += 1;
                continue;
            }
            let (value, times) = match sym {
                16 => {
                    if n == 0 {
                        return Err(self.corrupt("a length repeat with nothing before it"));
                    }
                    (lengths[n - 1], 3 + self.take(2)?)
                }
                17 => (0, 3 + self.take(3)?),
                _ => (0, 11 + self.take(7)?),
            };
            let end = n + times as usize;
            if end > nlen + ndist {
                return Err(self.corrupt("code lengths run past the declared count"));
            }
            lengths[n..end].fill(value);
            n = end;
        }
        if lengths[256] == 0 {
            return Err(self.corrupt("a dynamic block without an end-of-block code"));
        }
        let lit = Huffman::new(&lengths[..nlen]).map_err(|w| self.corrupt(w))?;
        let dist = Huffman::new(&lengths[nlen..nlen + ndist]).map_err(|w| self.corrupt(w))?;
        Ok((lit, dist))
    }

    /// Literals and back-references until the end-of-block symbol.
    fn codes(&mut self, lit: &Huffman, dist: &Huffman) -> Result<(), GunzipError> {
        loop {
            let sym = self.decode(lit)? as usize;
            if sym < 256 {
                self.push(sym as u8)?;
                continue;
            }
            if sym == 256 {
                return Ok(());
            }
            let i = sym - 257;
            let (Some(&base), Some(&extra)) = (LEN_BASE.get(i), LEN_EXTRA.get(i)) else {
                return Err(self.corrupt("a length symbol above 285"));
            };
            let len = base as usize + self.take(u32::from(extra))? as usize;
            let d = self.decode(dist)? as usize;
            let (Some(&base), Some(&extra)) = (DIST_BASE.get(d), DIST_EXTRA.get(d)) else {
                return Err(self.corrupt("a distance symbol above 29"));
            };
            let back = base as usize + self.take(u32::from(extra))? as usize;
            if back > self.out.len() {
                return Err(self.corrupt("a distance reaches before the start of the data"));
            }
            // Byte by byte: a copy may overlap what it writes (distance < length).
            for _ in 0..len {
                let b = self.out[self.out.len() - back];
                self.push(b)?;
            }
        }
    }
}

fn fixed_codes() -> Result<(Huffman, Huffman), GunzipError> {
    let mut lengths = [8u8; FIXED_LIT_CODES];
    lengths[144..256].fill(9);
    lengths[256..280].fill(7);
    let bad = |what| GunzipError::Corrupt { at: 0, what };
    Ok((
        Huffman::new(&lengths).map_err(bad)?,
        Huffman::new(&[5u8; MAX_DIST_CODES]).map_err(bad)?,
    ))
}

/// CRC-32 (IEEE 802.3, reflected, as gzip uses it), table built at compile time.
pub fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    !data.iter().fold(!0u32, |c, &b| {
        TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::{Command, Stdio};

    /// Compresses with the real gzip command, or None (with a note) without one.
    fn gzip(args: &[&str], data: &[u8]) -> Option<Vec<u8>> {
        let child = Command::new("gzip")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn();
        let Ok(mut child) = child else {
            eprintln!("skipped: no gzip command");
            return None;
        };
        let mut stdin = child.stdin.take().unwrap();
        let input = data.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert!(out.status.success());
        Some(out.stdout)
    }

    /// Text like a kernel config, with repeats far apart and near.
    fn config_like(lines: usize) -> Vec<u8> {
        let mut t = String::new();
        for i in 0..lines {
            t.push_str(&format!(
                "CONFIG_OPTION_{i}=y\n# CONFIG_OTHER_{} is not set\n",
                i * 7
            ));
        }
        t.into_bytes()
    }

    #[test]
    fn decodes_what_gzip_writes_at_every_level() {
        let text = config_like(6000);
        // -1 and -9 give dynamic blocks; a short input gives a fixed block.
        for level in ["-1", "-6", "-9"] {
            let Some(gz) = gzip(&["-c", "-n", level], &text) else {
                return;
            };
            assert_eq!(gunzip(&gz, MAX_OUTPUT_BYTES).unwrap(), text, "{level}");
        }
        let short = b"CONFIG_NET_SCH_FQ_CODEL=m\n";
        let gz = gzip(&["-c"], short).unwrap();
        assert_eq!(gunzip(&gz, MAX_OUTPUT_BYTES).unwrap(), short);
        // Random bytes do not compress: gzip stores them.
        let mut x: u32 = 1;
        let noise: Vec<u8> = (0..70_000)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 24) as u8
            })
            .collect();
        let gz = gzip(&["-c"], &noise).unwrap();
        assert_eq!(gunzip(&gz, MAX_OUTPUT_BYTES).unwrap(), noise);
        assert_eq!(gunzip(&gz, 1000), Err(GunzipError::TooLarge(1000)));
        // The empty file, and a header with the original name (gzip without -n).
        assert_eq!(gunzip(&gzip(&["-c"], b"").unwrap(), 10).unwrap(), b"");
    }

    #[test]
    fn header_fields_are_skipped() {
        // A stored block "hi" by hand, behind FEXTRA, FNAME, FCOMMENT and FHCRC.
        let mut gz = vec![0x1f, 0x8b, 8, 4 | 8 | 16 | 2, 0, 0, 0, 0, 0, 3];
        gz.extend([3, 0, b'a', b'b', b'c']);
        gz.extend(b"config\0comment\0");
        gz.extend([0xaa, 0xbb]);
        gz.extend([1, 2, 0, 0xfd, 0xff, b'h', b'i']);
        gz.extend(crc32(b"hi").to_le_bytes());
        gz.extend(2u32.to_le_bytes());
        assert_eq!(gunzip(&gz, 10).unwrap(), b"hi");
    }

    #[test]
    fn crc32_of_the_check_string() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn corrupt_input_is_a_typed_error_not_a_panic() {
        let text = config_like(300);
        let Some(gz) = gzip(&["-c", "-9"], &text) else {
            return;
        };
        assert_eq!(
            gunzip(b"CONFIG_X=y\n", 10),
            Err(GunzipError::NotGzip("434f4e".into()))
        );
        assert!(matches!(gunzip(&[0x1f], 10), Err(GunzipError::NotGzip(_))));
        assert!(matches!(
            gunzip(&gz[..gz.len() / 2], MAX_OUTPUT_BYTES),
            Err(GunzipError::Truncated(_))
        ));
        // The trailer: a flipped CRC bit, a wrong length.
        let mut bad = gz.clone();
        let n = bad.len();
        bad[n - 8] ^= 1;
        let e = gunzip(&bad, MAX_OUTPUT_BYTES).unwrap_err();
        assert!(matches!(e, GunzipError::Crc { .. }), "{e}");
        assert!(e.to_string().contains("CRC32 check failed"), "{e}");
        let mut bad = gz.clone();
        bad[n - 1] ^= 1;
        assert!(matches!(
            gunzip(&bad, MAX_OUTPUT_BYTES),
            Err(GunzipError::Length { .. })
        ));
        assert_eq!(gunzip(&gz, 1000), Err(GunzipError::TooLarge(1000)));
        // Block type 3.
        let e = gunzip(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0b111, 0], 10).unwrap_err();
        assert!(e.to_string().contains("block type 3"), "{e}");
        // A stored block whose complement is wrong.
        let e = gunzip(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 0, 0, 0], 10).unwrap_err();
        assert!(e.to_string().contains("complement"), "{e}");
        // Every single-byte corruption of the deflate data decodes or fails cleanly;
        // none panics, none gets past the CRC with different output.
        for i in (10..n - 8).step_by((n / 200).max(1)) {
            for flip in [0x01, 0x10, 0x80, 0xff] {
                let mut bad = gz.clone();
                bad[i] ^= flip;
                if let Ok(out) = gunzip(&bad, MAX_OUTPUT_BYTES) {
                    assert_eq!(out, text, "byte {i} ^ {flip:#x}");
                }
            }
        }
    }

    #[test]
    fn this_box_proc_config_gz_when_it_has_one() {
        let Ok(gz) = std::fs::read("/proc/config.gz") else {
            eprintln!("skipped: this kernel has no /proc/config.gz");
            return;
        };
        let text = gunzip(&gz, MAX_OUTPUT_BYTES).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("\nCONFIG_"), "not a kernel config");
        // zcat agrees byte for byte when it is there.
        if let Ok(out) = Command::new("zcat").arg("/proc/config.gz").output() {
            assert_eq!(out.stdout, text.as_bytes());
        }
    }
}
