//! Which cipher a new LUKS volume on this box should use, and why, from the
//! measured figures (kernel first, since dm-crypt runs there; user space and
//! the CPU's AES flag when AF_ALG is missing).

use serde::{Deserialize, Serialize};

use super::CipherResult;
use crate::format::rate as mb;

/// dm-crypt's usual request: one 4 KiB page (LUKS2 picks 4096-byte sectors).
const DM_CRYPT_REQUEST: u32 = 4096;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Recommendation {
    pub cipher: String,
    pub key_bits: u32,
    pub cryptsetup_options: String,
    pub reason: String,
    /// `kernel`, `user_space` or `cpu_flags`: what the choice rests on.
    pub basis: String,
    pub notes: Vec<String>,
}

fn find<'a>(results: &'a [CipherResult], cipher: &str, bits: u32) -> Option<&'a CipherResult> {
    results
        .iter()
        .find(|r| r.cipher == cipher && r.key_bits == bits && !r.points.is_empty())
}

/// The request size to compare at: 4 KiB if measured, else the largest.
fn compare_size(results: &[CipherResult]) -> Option<u32> {
    let sizes: Vec<u32> = results
        .iter()
        .flat_map(|r| r.points.iter().map(|p| p.request_bytes))
        .collect();
    if sizes.contains(&DM_CRYPT_REQUEST) {
        Some(DM_CRYPT_REQUEST)
    } else {
        sizes.into_iter().max()
    }
}

fn xts(reason: String, basis: &str, notes: Vec<String>) -> Recommendation {
    Recommendation {
        cipher: "aes-xts-plain64".into(),
        key_bits: 512,
        cryptsetup_options: "--type luks2 --cipher aes-xts-plain64 --key-size 512".into(),
        reason,
        basis: basis.into(),
        notes,
    }
}

fn adiantum(reason: String, basis: &str, notes: Vec<String>) -> Recommendation {
    Recommendation {
        cipher: "xchacha12,aes-adiantum-plain64".into(),
        key_bits: 256,
        cryptsetup_options:
            "--type luks2 --cipher xchacha12,aes-adiantum-plain64 --key-size 256 --sector-size 4096"
                .into(),
        reason,
        basis: basis.into(),
        notes,
    }
}

pub fn recommend(
    kernel: &[CipherResult],
    user: &[CipherResult],
    has_aes: Option<bool>,
) -> Recommendation {
    let mut notes = Vec::new();
    // Marvell CESA (and similar engines) accelerate CBC but have no XTS mode.
    let cesa = kernel.iter().find(|r| {
        r.driver
            .as_ref()
            .is_some_and(|d| d.module.contains("cesa") || d.driver.starts_with("mv-"))
    });
    if let Some(c) = cesa {
        notes.push(format!(
            "Marvell CESA serves {} ({}); it has no XTS mode, so aes-xts-plain64 runs on the CPU",
            c.cipher,
            c.driver.as_ref().map_or("", |d| d.driver.as_str())
        ));
    }

    if let Some(size) = compare_size(kernel) {
        let xts_512 = find(kernel, "aes-xts-plain64", 512).and_then(|r| r.speed_at(size));
        let xts_256 = find(kernel, "aes-xts-plain64", 256).and_then(|r| r.speed_at(size));
        let adi =
            find(kernel, "xchacha12,aes-adiantum-plain64", 256).and_then(|r| r.speed_at(size));
        let essiv = find(kernel, "aes-cbc-essiv:sha256", 256).and_then(|r| r.speed_at(size));
        let best_xts = xts_512.or(xts_256);
        if let (Some(e), Some(x)) = (essiv, best_xts)
            && cesa.is_some()
            && e > 1.2 * x
        {
            notes.push(format!(
                    "aes-cbc-essiv:sha256 (256-bit) runs at {} against {} for XTS: faster here, but CBC \
is malleable and LUKS2's default is XTS; choose it only if throughput matters more",
                    mb(e),
                    mb(x)
                ));
        }
        match (best_xts, adi) {
            (Some(x), Some(a)) if a > 1.2 * x => {
                return adiantum(
                    format!(
                        "in the kernel at {size}-byte requests Adiantum runs at {} against {} for \
aes-xts-plain64: this CPU has no fast AES, and Adiantum needs only one AES block per sector",
                        mb(a),
                        mb(x)
                    ),
                    "kernel",
                    notes,
                );
            }
            (Some(x), a) => {
                if let (Some(x512), Some(x256)) = (xts_512, xts_256) {
                    notes.push(format!(
                        "a 256-bit key (AES-128) runs at {} against {} for 512-bit",
                        mb(x256),
                        mb(x512)
                    ));
                }
                let vs = a.map_or(String::new(), |a| format!(" (Adiantum: {})", mb(a)));
                return xts(
                    format!(
                        "in the kernel at {size}-byte requests aes-xts-plain64 runs at {}{vs}; it is \
LUKS2's default and the fastest measured here",
                        mb(x)
                    ),
                    "kernel",
                    notes,
                );
            }
            (None, Some(a)) => {
                return adiantum(
                    format!(
                        "the kernel offers no usable aes-xts here; Adiantum runs at {} at {size}-byte requests",
                        mb(a)
                    ),
                    "kernel",
                    notes,
                );
            }
            (None, None) => {}
        }
    }

    // No kernel figures: judge from user space and the CPU's AES flag.
    notes.push(
        "kernel ciphers could not be measured, so this rests on user-space figures; dm-crypt's \
own speed may differ (see the kernel driver in /proc/crypto)"
            .into(),
    );
    let size = compare_size(user).unwrap_or(DM_CRYPT_REQUEST);
    let user_xts = find(user, "aes-xts-plain64", 512).and_then(|r| r.speed_at(size));
    let user_chacha = find(user, "chacha20-poly1305", 256).and_then(|r| r.speed_at(size));
    let measured = user_xts.map_or(String::new(), |x| {
        format!(
            "; aes-xts-plain64 (512-bit) runs at {} in user space",
            mb(x)
        )
    });
    match has_aes {
        Some(false) => {
            let chacha = user_chacha.map_or(String::new(), |c| {
                format!(" while ChaCha20-Poly1305 runs at {}", mb(c))
            });
            adiantum(
                format!(
                    "this CPU has no AES instructions{measured}{chacha}; Adiantum (XChaCha12 with one \
AES block per sector) is built for such CPUs (kernel 5.0+, CONFIG_CRYPTO_ADIANTUM)"
                ),
                "cpu_flags",
                notes,
            )
        }
        Some(true) => xts(
            format!("this CPU has AES instructions{measured}; aes-xts-plain64 is LUKS2's default"),
            "user_space",
            notes,
        ),
        None => xts(
            format!(
                "whether this CPU has AES instructions is unknown{measured}; aes-xts-plain64 is LUKS2's default"
            ),
            "user_space",
            notes,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::measure::Rate;
    use super::super::proc_crypto::Driver;
    use super::super::{CipherResult, Point};
    use super::*;

    fn result(cipher: &str, bits: u32, mb_s: f64, driver: Option<(&str, &str)>) -> CipherResult {
        let rate = Rate::new((mb_s * 1e6) as u64, 1.0, 0.5);
        CipherResult {
            cipher: cipher.into(),
            key_bits: bits,
            implementation: "test".into(),
            driver: driver.map(|(d, m)| Driver {
                name: cipher.into(),
                driver: d.into(),
                module: m.into(),
                priority: 300,
                hardware: Some(true),
            }),
            points: vec![Point {
                request_bytes: 4096,
                in_flight: 1,
                encrypt: rate.clone(),
                decrypt: rate,
            }],
            not_measured: None,
        }
    }

    #[test]
    fn adiantum_wins_on_a_cpu_without_aes() {
        let k = [
            result("aes-xts-plain64", 512, 14.6, None),
            result("xchacha12,aes-adiantum-plain64", 256, 48.0, None),
        ];
        let r = recommend(&k, &[], Some(false));
        assert_eq!(r.cipher, "xchacha12,aes-adiantum-plain64");
        assert_eq!(r.basis, "kernel");
        assert!(
            r.reason.contains("48.0 MB/s") && r.reason.contains("14.6 MB/s"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn xts_wins_with_fast_aes_and_cesa_is_noted() {
        let k = [
            result("aes-xts-plain64", 512, 900.0, None),
            result(
                "aes-cbc-essiv:sha256",
                256,
                60.0,
                Some(("essiv(mv-cbc-aes,sha256-generic)", "marvell_cesa")),
            ),
            result("xchacha12,aes-adiantum-plain64", 256, 400.0, None),
        ];
        let r = recommend(&k, &[], Some(true));
        assert_eq!(r.cipher, "aes-xts-plain64");
        assert_eq!(r.key_bits, 512);
        assert!(
            r.notes.iter().any(|n| n.contains("no XTS mode")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn without_kernel_figures_the_cpu_flag_decides() {
        let u = [
            result("aes-xts-plain64", 512, 20.0, None),
            result("chacha20-poly1305", 256, 70.0, None),
        ];
        let r = recommend(&[], &u, Some(false));
        assert_eq!(r.cipher, "xchacha12,aes-adiantum-plain64");
        assert_eq!(r.basis, "cpu_flags");
        assert!(r.reason.contains("20.0 MB/s"), "{}", r.reason);
        let r = recommend(&[], &u, Some(true));
        assert_eq!(r.cipher, "aes-xts-plain64");
        assert!(r.notes.iter().any(|n| n.contains("user-space figures")));
    }
}
