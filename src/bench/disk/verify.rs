//! `--verify`: every written block starts with a 24-byte header (magic, its
//! own offset, a hash of the rest of the block). The rest of the block is the
//! pool's fixed random data, so its hash is computed once per buffer, not per
//! I/O. After the measured window, every block written is read back and checked.

use std::fs::File;
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};

use super::buffers::Buffers;
use crate::probe::host::fnv1a64;

const MAGIC: &[u8; 8] = b"NASTUNE1";
pub const HEADER_BYTES: usize = 24;

/// The header a buffer gets before each write.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    body_hash: u64,
}

impl Stamp {
    pub fn for_buffer(buf: &[u8]) -> Self {
        Stamp {
            body_hash: fnv1a64(&buf[HEADER_BYTES.min(buf.len())..]),
        }
    }

    pub fn apply(&self, buf: &mut [u8], offset: u64) {
        buf[..8].copy_from_slice(MAGIC);
        buf[8..16].copy_from_slice(&offset.to_le_bytes());
        buf[16..24].copy_from_slice(&self.body_hash.to_le_bytes());
    }
}

/// Why a block read back is not what was written.
pub fn check_block(buf: &[u8], offset: u64) -> Result<(), String> {
    if buf.len() < HEADER_BYTES || &buf[..8] != MAGIC {
        return Err(format!(
            "block at offset {offset}: no nastune header (lost or never written)"
        ));
    }
    let mut word = [0u8; 8];
    word.copy_from_slice(&buf[8..16]);
    let stored = u64::from_le_bytes(word);
    if stored != offset {
        return Err(format!(
            "block at offset {offset}: holds the block written for offset {stored} (misdirected write)"
        ));
    }
    word.copy_from_slice(&buf[16..24]);
    if u64::from_le_bytes(word) != fnv1a64(&buf[HEADER_BYTES..]) {
        return Err(format!(
            "block at offset {offset}: data does not match its checksum (corrupted)"
        ));
    }
    Ok(())
}

/// Which blocks were written: one bit per block.
#[derive(Debug, Clone, Default)]
pub struct WrittenBlocks {
    bits: Vec<u64>,
}

impl WrittenBlocks {
    pub fn new(blocks: u64) -> Self {
        WrittenBlocks {
            bits: vec![0; blocks.div_ceil(64) as usize],
        }
    }
    pub fn mark(&mut self, block: u64) {
        if let Some(w) = self.bits.get_mut((block / 64) as usize) {
            *w |= 1 << (block % 64);
        }
    }
    pub fn merge(&mut self, other: &WrittenBlocks) {
        if self.bits.len() < other.bits.len() {
            self.bits.resize(other.bits.len(), 0);
        }
        for (a, b) in self.bits.iter_mut().zip(&other.bits) {
            *a |= b;
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.bits.iter().enumerate().flat_map(|(i, w)| {
            (0..64)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| i as u64 * 64 + b)
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifyResult {
    pub blocks_checked: u64,
    pub mismatches: u64,
    pub first_mismatch: Option<String>,
}

/// Reads back every written block through `file` into an aligned buffer.
pub fn verify(
    file: &File,
    written: &WrittenBlocks,
    bs: usize,
    align: usize,
) -> std::io::Result<VerifyResult> {
    let mut buf = Buffers::new(1, bs, align, 1).map_err(std::io::Error::other)?;
    let mut out = VerifyResult::default();
    for block in written.iter() {
        if crate::bench::interrupt::interrupted() {
            break;
        }
        let offset = block * bs as u64;
        file.read_exact_at(buf.slot_mut(0), offset)?;
        out.blocks_checked += 1;
        if let Err(why) = check_block(buf.slot(0), offset) {
            out.mismatches += 1;
            out.first_mismatch.get_or_insert(why);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamped_blocks_check_and_damage_is_named() {
        let mut b = vec![7u8; 4096];
        b[100] = 1;
        let s = Stamp::for_buffer(&b);
        s.apply(&mut b, 8192);
        assert_eq!(check_block(&b, 8192), Ok(()));
        assert!(check_block(&b, 4096).unwrap_err().contains("misdirected"));
        b[2000] ^= 1;
        assert!(check_block(&b, 8192).unwrap_err().contains("corrupted"));
        assert!(
            check_block(&[0u8; 4096], 0)
                .unwrap_err()
                .contains("no nastune header")
        );
    }

    #[test]
    fn written_blocks_merge_and_iterate() {
        let mut a = WrittenBlocks::new(200);
        let mut b = WrittenBlocks::new(200);
        a.mark(3);
        b.mark(130);
        b.mark(3);
        a.merge(&b);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![3, 130]);
    }
}
