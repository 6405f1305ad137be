//! The loops `bench crypto` times, apart from nastune so that the release profile
//! can build them at opt-level 3 while nastune itself is built for size (AES-NI
//! blocks stop pipelining at "s": 1.2 against 3.0 GB/s for AES-256 on the
//! development box). Generic cipher code is compiled where it is instantiated,
//! so every instantiation happens here, behind non-generic functions that are
//! never inlined into the size-optimised caller.

pub mod xts;
#[cfg(all(
    any(target_arch = "x86_64", target_arch = "x86"),
    not(aes_backend = "soft")
))]
mod xts_ni;

use aes::cipher::{Array, BlockModeDecrypt, BlockModeEncrypt, InnerIvInit, KeyInit, consts::U16};
use aes::{Aes128, Aes256};

pub use xts::{PartialBlock, Xts};

/// An AES key schedule of either size.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // as XtsAes
pub enum AesKey {
    Aes128(Aes128),
    Aes256(Aes256),
}

/// AES-XTS with two AES-128 keys (a 256-bit XTS key) or two AES-256 keys
/// (512-bit), on the fastest engine this CPU has.
// One per benchmark, held inline: boxing the larger variant would put a pointer
// chase in front of the loop for no saving.
#[allow(clippy::large_enum_variant)]
pub enum XtsAes {
    /// Our own eight-wide AES-NI loop (x86 with AES-NI, unless `aes_backend="soft"`).
    #[cfg(all(
        any(target_arch = "x86_64", target_arch = "x86"),
        not(aes_backend = "soft")
    ))]
    Ni(xts_ni::NiXts),
    Aes128(Xts<Aes128>),
    Aes256(Xts<Aes256>),
}

#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("an XTS key is 32 or 64 bytes (two AES keys), got {0}")]
pub struct XtsKeyLength(pub usize);

impl XtsAes {
    /// The engine `xts_engine()` names: AES-NI when the CPU has it, else
    /// RustCrypto `aes` over whatever it detects.
    pub fn new(key: &[u8]) -> Result<XtsAes, XtsKeyLength> {
        #[cfg(all(
            any(target_arch = "x86_64", target_arch = "x86"),
            not(aes_backend = "soft")
        ))]
        if std::arch::is_x86_feature_detected!("aes") && matches!(key.len(), 32 | 64) {
            let (data, tweak) = key.split_at(key.len() / 2);
            // SAFETY: AES-NI was detected just above.
            return Ok(XtsAes::Ni(unsafe { xts_ni::NiXts::new(data, tweak) }));
        }
        XtsAes::portable(key)
    }

    /// RustCrypto `aes` only (its VAES/AES-NI/ARMv8 backend or its
    /// constant-time software), bypassing our AES-NI loop.
    pub fn portable(key: &[u8]) -> Result<XtsAes, XtsKeyLength> {
        let (data, tweak) = key.split_at(key.len() / 2);
        let bad = || XtsKeyLength(key.len());
        Ok(match key.len() {
            32 => XtsAes::Aes128(Xts::new(
                Aes128::new_from_slice(data).map_err(|_| bad())?,
                Aes128::new_from_slice(tweak).map_err(|_| bad())?,
            )),
            64 => XtsAes::Aes256(Xts::new(
                Aes256::new_from_slice(data).map_err(|_| bad())?,
                Aes256::new_from_slice(tweak).map_err(|_| bad())?,
            )),
            _ => return Err(bad()),
        })
    }

    /// Which implementation runs, for the report.
    pub fn engine(&self) -> &'static str {
        match self {
            #[cfg(all(
                any(target_arch = "x86_64", target_arch = "x86"),
                not(aes_backend = "soft")
            ))]
            XtsAes::Ni(x) => x.engine(),
            XtsAes::Aes128(_) | XtsAes::Aes256(_) => portable_engine(),
        }
    }

    #[inline(never)]
    pub fn encrypt(&self, buf: &mut [u8], sector: u64) -> Result<(), PartialBlock> {
        self.crypt(buf, sector, true)
    }

    #[inline(never)]
    pub fn decrypt(&self, buf: &mut [u8], sector: u64) -> Result<(), PartialBlock> {
        self.crypt(buf, sector, false)
    }

    fn crypt(&self, buf: &mut [u8], sector: u64, encrypt: bool) -> Result<(), PartialBlock> {
        match self {
            #[cfg(all(
                any(target_arch = "x86_64", target_arch = "x86"),
                not(aes_backend = "soft")
            ))]
            XtsAes::Ni(x) => {
                if buf.is_empty() || !buf.len().is_multiple_of(16) {
                    return Err(PartialBlock(buf.len()));
                }
                // SAFETY: an `Ni` is only built after AES-NI was detected; whole blocks checked above.
                unsafe { x.crypt(buf, sector, encrypt) };
                Ok(())
            }
            XtsAes::Aes128(x) if encrypt => x.encrypt(buf, sector),
            XtsAes::Aes128(x) => x.decrypt(buf, sector),
            XtsAes::Aes256(x) if encrypt => x.encrypt(buf, sector),
            XtsAes::Aes256(x) => x.decrypt(buf, sector),
        }
    }
}

/// The engine `XtsAes::new` picks on this CPU.
pub fn xts_engine() -> &'static str {
    #[cfg(all(
        any(target_arch = "x86_64", target_arch = "x86"),
        not(aes_backend = "soft")
    ))]
    if let Some(e) = xts_ni::engine_here() {
        return e;
    }
    portable_engine()
}

/// RustCrypto `aes` and the backend it picks here (the same tests as its own
/// dispatch; `--cfg aes_backend="soft"` forces the software one).
pub fn portable_engine() -> &'static str {
    match aes_backend() {
        "VAES-512" => "RustCrypto aes 0.9 (VAES-512)",
        "VAES-256" => "RustCrypto aes 0.9 (VAES-256)",
        "AES-NI" => "RustCrypto aes 0.9 (AES-NI)",
        "ARMv8 Crypto Extensions" => "RustCrypto aes 0.9 (ARMv8 Crypto Extensions)",
        _ => "RustCrypto aes 0.9 (constant-time software)",
    }
}

/// The AES instructions the `aes` crate uses on this CPU.
pub fn aes_backend() -> &'static str {
    if !aes::hardware_accelerated() {
        return "constant-time software";
    }
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("vaes")
        {
            return "VAES-512";
        }
        if std::arch::is_x86_feature_detected!("vaes") {
            return "VAES-256";
        }
        "AES-NI"
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    "ARMv8 Crypto Extensions"
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

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    /// IEEE 1619 vector 10 (XTS-AES-256, sector 0xff), its first nine blocks:
    /// eight through the wide loop and one through the remainder. The whole
    /// vector runs in nastune's `bench crypto --self-test`.
    const V10_KEY: &str = "27182818284590452353602874713526624977572470936999595749669676273141592653589793238462643383279502884197169399375105820974944592";
    const V10_CT9: &str = "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b5d31e276f8fe4a8d66b317f9ac683f44680a86ac35adfc3345befecb4bb188fd5776926c49a3095eb108fd1098baec70aaa66999a72a82f27d848b21d4a741b0c5cd4d5fff9dac89aeba122961d03a757123e9870f8acf1000020887891429ca2a3e7a7d7df7b10355165c8b9a6d0a7d";

    #[test]
    fn both_engines_give_the_ieee_1619_answer() {
        let key = unhex(V10_KEY);
        let plain: Vec<u8> = (0..144u32).map(|i| i as u8).collect();
        for x in [XtsAes::new(&key).unwrap(), XtsAes::portable(&key).unwrap()] {
            let mut buf = plain.clone();
            x.encrypt(&mut buf, 0xff).unwrap();
            assert_eq!(buf, unhex(V10_CT9), "{}", x.engine());
            x.decrypt(&mut buf, 0xff).unwrap();
            assert_eq!(buf, plain, "{}", x.engine());
        }
    }

    /// Every engine this CPU has (VAES-512 groups of 32, AES-NI groups of 8,
    /// single blocks) against RustCrypto at every length from one block to
    /// past four groups of 32, both key sizes, a sector with high bits set.
    #[test]
    fn the_fast_engines_match_the_portable_one_at_every_length() {
        for key_len in [32, 64] {
            let key: Vec<u8> = (0..key_len as u8)
                .map(|i| i.wrapping_mul(37) ^ 0x5a)
                .collect();
            let slow = XtsAes::portable(&key).unwrap();
            #[allow(unused_mut)]
            let mut engines = vec![XtsAes::new(&key).unwrap()];
            #[cfg(all(
                any(target_arch = "x86_64", target_arch = "x86"),
                not(aes_backend = "soft")
            ))]
            if let XtsAes::Ni(x) = &engines[0] {
                engines.push(XtsAes::Ni(x.clone().without_vaes512()));
            }
            for (fast, blocks) in engines.iter().flat_map(|e| (1..=140).map(move |n| (e, n))) {
                let plain: Vec<u8> = (0..blocks * 16).map(|i| (i * 7 % 253) as u8).collect();
                let (mut a, mut b) = (plain.clone(), plain.clone());
                let sector = 0x8000_0000_0000_0001u64 ^ blocks as u64;
                fast.encrypt(&mut a, sector).unwrap();
                slow.encrypt(&mut b, sector).unwrap();
                let what = format!("{}: {key_len}-byte key, {blocks} blocks", fast.engine());
                assert_eq!(a, b, "{what}");
                assert_ne!(a, plain, "{what}");
                fast.decrypt(&mut a, sector).unwrap();
                assert_eq!(a, plain, "{what}");
            }
        }
    }

    #[test]
    fn the_report_names_the_engine_that_ran() {
        let x = XtsAes::new(&[7; 64]).unwrap();
        assert_eq!(x.engine(), xts_engine());
        if !aes::hardware_accelerated() {
            assert!(
                x.engine().contains("constant-time software"),
                "{}",
                x.engine()
            );
        }
        assert_eq!(
            XtsAes::new(&[0; 48]).err(),
            Some(XtsKeyLength(48)),
            "a 48-byte key is neither XTS size"
        );
        assert_eq!(
            XtsAes::new(&[1; 32]).unwrap().encrypt(&mut [0; 24], 0),
            Err(PartialBlock(24))
        );
    }
}
