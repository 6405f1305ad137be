//! The loops `bench crypto` times, apart from nastune so that the release profile
//! can build them at opt-level 3 while nastune itself is built for size (AES-NI
//! blocks stop pipelining at "s": 1.2 against 3.0 GB/s for AES-256 on the
//! development box). Generic cipher code is compiled where it is instantiated,
//! so every instantiation happens here, behind non-generic functions that are
//! never inlined into the size-optimised caller.

pub mod xts;

use aes::cipher::{Array, BlockModeDecrypt, BlockModeEncrypt, InnerIvInit, consts::U16};
use aes::{Aes128, Aes256};

pub use xts::{PartialBlock, Xts};

/// An AES key schedule of either size.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // as XtsAes
pub enum AesKey {
    Aes128(Aes128),
    Aes256(Aes256),
}

/// AES-XTS with two AES-128 keys (a 256-bit XTS key) or two AES-256 keys (512-bit).
// One per benchmark, held inline: boxing the larger variant would put a pointer
// chase in front of the loop for no saving.
#[allow(clippy::large_enum_variant)]
pub enum XtsAes {
    Aes128(Xts<Aes128>),
    Aes256(Xts<Aes256>),
}

impl XtsAes {
    #[inline(never)]
    pub fn encrypt(&self, buf: &mut [u8], sector: u64) -> Result<(), PartialBlock> {
        match self {
            XtsAes::Aes128(x) => x.encrypt(buf, sector),
            XtsAes::Aes256(x) => x.encrypt(buf, sector),
        }
    }

    #[inline(never)]
    pub fn decrypt(&self, buf: &mut [u8], sector: u64) -> Result<(), PartialBlock> {
        match self {
            XtsAes::Aes128(x) => x.decrypt(buf, sector),
            XtsAes::Aes256(x) => x.decrypt(buf, sector),
        }
    }
}

/// AES-CBC over whole blocks from `iv`, in place.
#[inline(never)]
pub fn cbc_encrypt(key: &AesKey, iv: &Array<u8, U16>, blocks: &mut [Array<u8, U16>]) {
    match key {
        AesKey::Aes128(k) => {
            cbc::Encryptor::<Aes128>::inner_iv_init(k.clone(), iv).encrypt_blocks(blocks)
        }
        AesKey::Aes256(k) => {
            cbc::Encryptor::<Aes256>::inner_iv_init(k.clone(), iv).encrypt_blocks(blocks)
        }
    }
}

#[inline(never)]
pub fn cbc_decrypt(key: &AesKey, iv: &Array<u8, U16>, blocks: &mut [Array<u8, U16>]) {
    match key {
        AesKey::Aes128(k) => {
            cbc::Decryptor::<Aes128>::inner_iv_init(k.clone(), iv).decrypt_blocks(blocks)
        }
        AesKey::Aes256(k) => {
            cbc::Decryptor::<Aes256>::inner_iv_init(k.clone(), iv).decrypt_blocks(blocks)
        }
    }
}
