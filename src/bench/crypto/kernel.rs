//! The kernel ciphers dm-crypt can use, measured through AF_ALG at each request
//! size, with one request in flight and with several.
//!
//! "Several in flight" means N threads, each with its own op socket accepted
//! from one keyed transform, each sending a request and blocking in read()
//! until it is done. With a synchronous CPU driver that is N CPUs working; with
//! an asynchronous engine (CESA, CAAM, ...) the engine's queue holds up to N
//! requests, which is how dm-crypt feeds it. AIO on AF_ALG would do the same
//! from one thread but needs io_submit, which old vendor kernels lack.

use std::time::Duration;

use super::afalg::{AfAlgError, Direction, OpSocket, Transform};
use super::measure::{Rate, run_for, run_parallel};
use super::{CipherResult, NotMeasured, Point, proc_crypto};
use crate::root::Root;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelCipher {
    /// cryptsetup's name for it.
    pub cipher: &'static str,
    /// The kernel crypto API name dm-crypt asks for.
    pub alg: &'static str,
    pub key_bits: u32,
    pub iv_len: usize,
}

pub const KERNEL_CIPHERS: &[KernelCipher] = &[
    KernelCipher {
        cipher: "aes-xts-plain64",
        alg: "xts(aes)",
        key_bits: 256,
        iv_len: 16,
    },
    KernelCipher {
        cipher: "aes-xts-plain64",
        alg: "xts(aes)",
        key_bits: 512,
        iv_len: 16,
    },
    KernelCipher {
        cipher: "aes-cbc-essiv:sha256",
        alg: "essiv(cbc(aes),sha256)",
        key_bits: 128,
        iv_len: 16,
    },
    KernelCipher {
        cipher: "aes-cbc-essiv:sha256",
        alg: "essiv(cbc(aes),sha256)",
        key_bits: 256,
        iv_len: 16,
    },
    KernelCipher {
        cipher: "xchacha12,aes-adiantum-plain64",
        alg: "adiantum(xchacha12,aes)",
        key_bits: 256,
        iv_len: 32,
    },
    KernelCipher {
        cipher: "serpent-xts-plain64",
        alg: "xts(serpent)",
        key_bits: 512,
        iv_len: 16,
    },
    KernelCipher {
        cipher: "twofish-xts-plain64",
        alg: "xts(twofish)",
        key_bits: 512,
        iv_len: 16,
    },
];

/// A keyed transform for `alg`, ready for op sockets.
pub fn keyed(alg: &str, key: &[u8]) -> Result<Transform, AfAlgError> {
    let tfm = Transform::skcipher(alg)?;
    tfm.set_key(key)?;
    Ok(tfm)
}

/// dm-crypt's plain64 IV: the sector number, little-endian, zero-padded.
pub fn plain64_iv(sector: u64, iv: &mut [u8]) {
    iv.fill(0);
    iv[..8].copy_from_slice(&sector.to_le_bytes());
}

/// One op socket with its buffers: the unit a worker drives.
struct Worker {
    op: OpSocket,
    input: Vec<u8>,
    output: Vec<u8>,
    iv: Vec<u8>,
    sector: u64,
}

impl Worker {
    fn new(tfm: &Transform, c: &KernelCipher, size: usize) -> Result<Worker, AfAlgError> {
        Ok(Worker {
            op: tfm.op()?,
            input: (0..size).map(|i| (i % 253) as u8).collect(),
            output: vec![0; size],
            iv: vec![0; c.iv_len],
            sector: 0,
        })
    }

    fn step(&mut self, dir: Direction) -> Result<(), AfAlgError> {
        plain64_iv(self.sector, &mut self.iv);
        self.sector = self.sector.wrapping_add(1);
        self.op.crypt(dir, &self.iv, &self.input, &mut self.output)
    }
}

fn rate(
    tfm: &Transform,
    c: &KernelCipher,
    size: usize,
    depth: u32,
    dir: Direction,
    duration: Duration,
) -> Result<Rate, AfAlgError> {
    if depth <= 1 {
        let mut w = Worker::new(tfm, c, size)?;
        run_for(duration, size, || w.step(dir))
    } else {
        run_parallel(
            duration,
            size,
            depth,
            || Worker::new(tfm, c, size),
            |w| w.step(dir),
        )
    }
}

/// Measures one kernel cipher at every size and depth; a failure becomes a
/// `not_measured` entry that says why.
pub fn measure(
    root: &Root,
    c: &KernelCipher,
    sizes: &[usize],
    depth: u32,
    duration: Duration,
) -> CipherResult {
    let mut result = CipherResult {
        cipher: c.cipher.to_string(),
        key_bits: c.key_bits,
        implementation: format!("kernel {}", c.alg),
        driver: None,
        points: Vec::new(),
        not_measured: None,
    };
    let key: Vec<u8> = (0..c.key_bits / 8)
        .map(|i| (i as u8).wrapping_mul(37))
        .collect();
    let tfm = match keyed(c.alg, &key) {
        Ok(t) => t,
        Err(e) => {
            result.not_measured = Some(NotMeasured::from_afalg(&e));
            return result;
        }
    };
    // Templates (essiv, adiantum) appear in /proc/crypto once instantiated.
    result.driver = root
        .read_optional("proc/crypto")
        .ok()
        .flatten()
        .and_then(|text| proc_crypto::best_driver(&text, c.alg, "skcipher"));
    let mut depths = vec![1];
    if depth > 1 {
        depths.push(depth);
    }
    for &size in sizes {
        for &d in &depths {
            let point = rate(&tfm, c, size, d, Direction::Encrypt, duration).and_then(|encrypt| {
                let decrypt = rate(&tfm, c, size, d, Direction::Decrypt, duration)?;
                Ok(Point {
                    request_bytes: size as u32,
                    in_flight: d,
                    encrypt,
                    decrypt,
                })
            });
            match point {
                Ok(p) => result.points.push(p),
                Err(e) => {
                    result.not_measured = Some(NotMeasured::from_afalg(&e));
                    return result;
                }
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain64_is_little_endian_and_padded() {
        let mut iv = [0xffu8; 32];
        plain64_iv(0x0102, &mut iv);
        assert_eq!(&iv[..3], &[2, 1, 0]);
        assert!(iv[8..].iter().all(|&b| b == 0));
    }

    #[test]
    fn key_sizes_match_the_cipher_names() {
        for c in KERNEL_CIPHERS {
            assert!(c.key_bits % 128 == 0, "{c:?}");
            assert!(c.iv_len == 16 || c.alg.starts_with("adiantum"), "{c:?}");
        }
    }

    #[test]
    fn a_missing_kernel_path_is_reported_not_skipped() {
        let root = Root::live();
        let c = &KERNEL_CIPHERS[0];
        let r = measure(&root, c, &[512], 2, Duration::from_millis(5));
        match crate::bench::crypto::afalg::probe() {
            Err(e) => {
                // This machine's kernel: no AF_ALG. The entry must say exactly why.
                let nm = r.not_measured.expect("a reason");
                assert_eq!(nm.errno.as_deref(), e.errno_name());
                assert!(nm.reason.contains("AF_ALG"), "{}", nm.reason);
                assert!(r.points.is_empty());
            }
            Ok(()) => {
                if let Some(nm) = &r.not_measured {
                    println!("skipping the measurement check: {}", nm.reason);
                    return;
                }
                assert_eq!(r.points.len(), 2);
                assert!(
                    r.points
                        .iter()
                        .all(|p| p.encrypt.bytes > 0 && p.decrypt.bytes > 0)
                );
            }
        }
    }
}
