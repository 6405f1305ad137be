//! /proc/config.gz: its gzip member inflated by flate2 (miniz_oxide, pure
//! Rust), which checks the trailer's CRC32 and length. Output is bounded, and
//! corrupt input is an error, never a panic.

use std::io::Read;

/// Most a decoded file may grow to: a kernel config is ~250 KiB; anything past this
/// is not one, and bounded memory matters on a 128 MiB board.
pub const MAX_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GunzipError {
    #[error(
        "not gzip data (it starts with '{0}', not '1f8b08'); is the file compressed another way?"
    )]
    NotGzip(String),
    #[error("the gzip data ends early; the file is truncated")]
    Truncated,
    #[error("the gzip data is corrupt ({0}); the file is damaged")]
    Corrupt(String),
    #[error("the data inflates to more than {0} bytes; refused to bound memory")]
    TooLarge(usize),
}

/// Decodes the first member of a gzip stream, at most `limit` bytes of output.
pub fn gunzip(data: &[u8], limit: usize) -> Result<Vec<u8>, GunzipError> {
    if !data.starts_with(&[0x1f, 0x8b, 8]) {
        let head: String = data.iter().take(3).map(|b| format!("{b:02x}")).collect();
        return Err(GunzipError::NotGzip(head));
    }
    // The trailer's length, when the member ends the file, sizes the output at
    // once: growing by doubling would hold up to twice the text (a 250 KiB
    // config in a 512 KiB buffer). Only a hint, bounded by `limit`.
    let hint = data
        .len()
        .checked_sub(4)
        .and_then(|i| data.get(i..))
        .map_or(0, |t| u32::from_le_bytes([t[0], t[1], t[2], t[3]]) as usize);
    let mut out = Vec::with_capacity(hint.min(limit));
    flate2::read::GzDecoder::new(data)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => GunzipError::Truncated,
            _ => GunzipError::Corrupt(e.to_string()),
        })?;
    if out.len() > limit {
        return Err(GunzipError::TooLarge(limit));
    }
    Ok(out)
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
        // FHCRC: the low half of the CRC32 of the header so far.
        let mut crc = flate2::Crc::new();
        crc.update(&gz);
        gz.extend((crc.sum() as u16).to_le_bytes());
        gz.extend([1, 2, 0, 0xfd, 0xff, b'h', b'i']);
        let mut crc = flate2::Crc::new();
        crc.update(b"hi");
        gz.extend(crc.sum().to_le_bytes());
        gz.extend(2u32.to_le_bytes());
        assert_eq!(gunzip(&gz, 10).unwrap(), b"hi");
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
        assert_eq!(
            gunzip(&gz[..gz.len() / 2], MAX_OUTPUT_BYTES),
            Err(GunzipError::Truncated)
        );
        // The trailer: a flipped CRC bit, a wrong length.
        let n = gz.len();
        for at in [n - 8, n - 1] {
            let mut bad = gz.clone();
            bad[at] ^= 1;
            let e = gunzip(&bad, MAX_OUTPUT_BYTES).unwrap_err();
            assert!(matches!(e, GunzipError::Corrupt(_)), "byte {at}: {e}");
        }
        assert_eq!(gunzip(&gz, 1000), Err(GunzipError::TooLarge(1000)));
        // Block type 3; a stored block whose complement is wrong.
        for bad in [
            &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0b111, 0][..],
            &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 0, 0, 0],
        ] {
            let e = gunzip(bad, 10).unwrap_err();
            assert!(matches!(e, GunzipError::Corrupt(_)), "{e}");
        }
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
