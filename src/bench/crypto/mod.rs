//! `nastune bench crypto`: what encryption costs on this box. Kernel ciphers
//! through AF_ALG (what dm-crypt uses), user-space ciphers (what TLS, SSH and
//! SMB3 use, and a baseline when AF_ALG is missing), and the key-derivation cost
//! of unlocking LUKS. Collection only: rendering lives in report::crypto_text.

pub mod advice;
pub mod afalg;
pub mod kat;
pub mod kdf;
pub mod kernel;
pub mod measure;
mod measured;
pub mod proc_crypto;
pub mod userspace;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::root::Root;
use measure::{Rate, run_for};
use userspace::UserCipher;

/// Version of the `bench crypto --json` document.
pub const SCHEMA_VERSION: u32 = 1;

/// What to measure, validated by the command.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub duration: Duration,
    pub sizes: Vec<usize>,
    /// Requests in flight for the second kernel run (1 = only one run).
    pub depth: u32,
    /// Keep only ciphers whose name contains one of these (empty = all).
    pub filters: Vec<String>,
    /// Argon2 memory before the RAM, MemAvailable and cgroup caps.
    pub argon2_max_kib: u32,
    pub kdf: bool,
}

impl Settings {
    pub fn wants(&self, cipher: &str) -> bool {
        self.filters.is_empty()
            || self.filters.iter().any(|f| {
                cipher
                    .to_ascii_lowercase()
                    .contains(&f.to_ascii_lowercase())
            })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CryptoReport {
    pub schema_version: u32,
    pub tool_version: String,
    pub duration_secs_per_point: f64,
    pub request_sizes_bytes: Vec<u32>,
    pub kernel_in_flight: u32,
    pub cpu: CpuFacts,
    pub afalg: AfAlgStatus,
    pub kernel: Vec<CipherResult>,
    pub user_space: Vec<CipherResult>,
    /// `None` with --no-kdf.
    pub kdf: Option<KdfResults>,
    pub recommendation: advice::Recommendation,
    /// Whether the box was quiet while we measured (absent before 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<crate::bench::validity::Validity>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CpuFacts {
    pub model: Option<String>,
    pub logical_cpus: Option<u32>,
    /// AES instructions (x86 `aes`, ARMv8 `aes`) per /proc/cpuinfo.
    pub has_aes: Option<bool>,
    pub user_space_aes_engine: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AfAlgStatus {
    pub available: bool,
    pub errno: Option<String>,
    pub reason: Option<String>,
}

/// One cipher at one key size: measured points, or why it was not measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CipherResult {
    pub cipher: String,
    pub key_bits: u32,
    pub implementation: String,
    pub driver: Option<proc_crypto::Driver>,
    pub points: Vec<Point>,
    pub not_measured: Option<NotMeasured>,
}

impl CipherResult {
    /// Whether the CPU does the work (user space, or a kernel driver that is not
    /// a hardware engine): then its speed is stated per CPU-second.
    pub fn cpu_bound(&self) -> bool {
        self.driver.as_ref().and_then(|d| d.hardware) != Some(true)
    }

    /// Mean of encrypt and decrypt speed at `size` (per CPU-second when
    /// [`Self::cpu_bound`]), best over in-flight depths.
    pub fn speed_at(&self, size: u32) -> Option<f64> {
        let cpu = self.cpu_bound();
        self.points
            .iter()
            .filter(|p| p.request_bytes == size)
            .map(|p| (p.encrypt.headline(cpu) + p.decrypt.headline(cpu)) / 2.0)
            .reduce(f64::max)
    }
}

impl CryptoReport {
    /// What the measuring threads got over every CPU-bound timed loop, for the
    /// validity guard; `None` when nothing CPU-bound was measured.
    pub fn measuring_thread(&self) -> Option<crate::bench::validity::MeasuringThread> {
        let uses: Vec<measure::ThreadUse> = self
            .kernel
            .iter()
            .chain(&self.user_space)
            .filter(|c| c.cpu_bound())
            .flat_map(|c| &c.points)
            .flat_map(|p| [&p.encrypt, &p.decrypt])
            .filter_map(Rate::thread_use)
            .collect();
        let worst = uses
            .iter()
            .filter_map(measure::ThreadUse::share)
            .reduce(f64::min)?;
        let all = measure::ThreadUse::sum(uses);
        Some(crate::bench::validity::MeasuringThread {
            cpu_secs: all.cpu_secs,
            wanted_secs: all.wanted_secs,
            worst_share: worst,
            wait_known: all.wait_secs.is_some(),
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NotMeasured {
    pub errno: Option<String>,
    pub reason: String,
}

impl NotMeasured {
    pub fn from_afalg(e: &afalg::AfAlgError) -> NotMeasured {
        NotMeasured {
            errno: e.errno_name().map(str::to_string),
            reason: e.to_string(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Point {
    pub request_bytes: u32,
    pub in_flight: u32,
    pub encrypt: Rate,
    /// For AEADs this includes copying the request back before each decrypt
    /// (ring opens in place and checks the tag of the last encryption).
    pub decrypt: Rate,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KdfResults {
    pub pbkdf2: Vec<kdf::Pbkdf2Result>,
    pub argon2id: crate::probe::Outcome<kdf::Argon2Result>,
}

/// Runs everything `settings` asks for. `progress` gets each step's name and
/// the share of steps done before it (the command draws it on a terminal);
/// nothing here prints.
/// `38 s`, `0.4 s`: a wait as a person reads it.
fn seconds(d: Duration) -> String {
    match d.as_secs_f64() {
        s if s >= 10.0 => format!("{s:.0} s"),
        s => format!("{s:.1} s"),
    }
}

pub fn run(settings: &Settings, root: &Root, progress: &mut dyn FnMut(&str, f64)) -> CryptoReport {
    let cpu = cpu_facts(root);
    let afalg = match afalg::probe() {
        Ok(()) => AfAlgStatus {
            available: true,
            errno: None,
            reason: None,
        },
        Err(e) => AfAlgStatus {
            available: false,
            errno: e.errno_name().map(str::to_string),
            reason: Some(e.to_string()),
        },
    };

    let kernel_ciphers = kernel::KERNEL_CIPHERS
        .iter()
        .filter(|c| settings.wants(c.cipher))
        .count();
    let user_ciphers = UserCipher::ALL
        .into_iter()
        .filter(|c| settings.wants(c.name()))
        .count();
    let kdf_steps = if settings.kdf {
        kdf::Prf::ALL.len() + 1
    } else {
        0
    };
    let steps = (kernel_ciphers + user_ciphers + kdf_steps).max(1) as f64;
    let mut done = 0usize;
    let mut step = |name: &str| {
        progress(name, done as f64 / steps);
        done += 1;
    };

    let mut kernel_results = Vec::new();
    for c in kernel::KERNEL_CIPHERS
        .iter()
        .filter(|c| settings.wants(c.cipher))
    {
        step(&format!("kernel {} {}-bit", c.cipher, c.key_bits));
        kernel_results.push(kernel::measure(
            root,
            c,
            &settings.sizes,
            settings.depth,
            settings.duration,
        ));
    }

    let mut user_results = Vec::new();
    for c in UserCipher::ALL
        .into_iter()
        .filter(|c| settings.wants(c.name()))
    {
        step(&format!("user space {} {}-bit", c.name(), c.key_bits()));
        user_results.push(measure_user(c, &settings.sizes, settings.duration));
    }

    let kdf = settings.kdf.then(|| {
        let mut pbkdf2 = Vec::new();
        for prf in kdf::Prf::ALL {
            step(&format!("PBKDF2-{}", prf.name()));
            pbkdf2.push(kdf::pbkdf2_rate(
                prf,
                settings.duration.max(Duration::from_millis(100)),
            ));
        }
        let limits = kdf::read_memory_limits(root);
        let (kib, capped) = kdf::argon2_memory(settings.argon2_max_kib, &limits);
        let lanes = cpu
            .logical_cpus
            .unwrap_or(1)
            .clamp(1, kdf::LUKS2_ARGON2_MAX_LANES);
        step(&format!("argon2id {kib} KiB, {lanes} lanes"));
        // Seconds to a minute with no figure to show (the progress bar only
        // on a terminal): say what is running and for about how long.
        if let Ok(eta) = kdf::argon2id_estimate(kib, lanes) {
            crate::note!(
                "bench crypto: Argon2id at {kib} KiB, {} passes, {lanes} lanes: about {} \
                 (what unlocking LUKS2 costs here; --no-kdf skips it)",
                kdf::LUKS2_ARGON2_MIN_ITERATIONS,
                seconds(eta)
            );
        }
        let argon2id = kdf::argon2id_time(kib, lanes)
            .map(|mut r| {
                r.memory_capped = capped;
                r
            })
            .into();
        KdfResults { pbkdf2, argon2id }
    });

    let recommendation = advice::recommend(&kernel_results, &user_results, cpu.has_aes);
    CryptoReport {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        duration_secs_per_point: settings.duration.as_secs_f64(),
        request_sizes_bytes: settings.sizes.iter().map(|&s| s as u32).collect(),
        kernel_in_flight: settings.depth,
        cpu,
        afalg,
        kernel: kernel_results,
        user_space: user_results,
        kdf,
        recommendation,
        validity: None,
    }
}

fn cpu_facts(root: &Root) -> CpuFacts {
    let cpu = crate::probe::cpu::read_cpu(root).ok();
    CpuFacts {
        model: cpu.as_ref().and_then(|c| c.model.clone()),
        logical_cpus: cpu.as_ref().map(|c| c.logical_cpus).filter(|&n| n > 0),
        has_aes: cpu.as_ref().map(|c| c.has_aes),
        user_space_aes_engine: userspace::aes_engine().to_string(),
    }
}

/// One user-space cipher at every size, one request at a time on one thread.
pub fn measure_user(c: UserCipher, sizes: &[usize], duration: Duration) -> CipherResult {
    let mut result = CipherResult {
        cipher: c.name().to_string(),
        key_bits: c.key_bits(),
        implementation: c.implementation(),
        driver: None,
        points: Vec::new(),
        not_measured: None,
    };
    let key: Vec<u8> = (0..c.key_len() as u8).map(|i| i.wrapping_mul(29)).collect();
    for &size in sizes {
        match user_point(c, &key, size, duration) {
            Ok(p) => result.points.push(p),
            Err(e) => {
                result.not_measured = Some(NotMeasured {
                    errno: None,
                    reason: e.to_string(),
                });
                break;
            }
        }
    }
    result
}

fn user_point(
    c: UserCipher,
    key: &[u8],
    size: usize,
    duration: Duration,
) -> Result<Point, userspace::UserCipherError> {
    let mut bulk = c.instance(key)?;
    let mut buf: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    let mut sector = 0u64;
    let encrypt = run_for(duration, size, || {
        sector = sector.wrapping_add(1);
        bulk.encrypt(&mut buf, sector)
    })?;
    let decrypt = if c.is_aead() {
        // Decrypt needs the ciphertext and tag of one encryption: keep a copy.
        bulk.encrypt(&mut buf, sector)?;
        let sealed = buf.clone();
        run_for(duration, size, || {
            buf.copy_from_slice(&sealed);
            bulk.decrypt(&mut buf, sector)
        })?
    } else {
        run_for(duration, size, || {
            sector = sector.wrapping_add(1);
            bulk.decrypt(&mut buf, sector)
        })?
    };
    Ok(Point {
        request_bytes: size as u32,
        in_flight: 1,
        encrypt,
        decrypt,
    })
}

impl crate::doc::Document for CryptoReport {
    const KIND: crate::doc::DocKind = crate::doc::DocKind::Crypto;
    const VERSION: u32 = SCHEMA_VERSION;

    fn validity(&self) -> Option<&crate::bench::validity::Validity> {
        self.validity.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_match_parts_of_names() {
        let mut s = Settings {
            duration: Duration::from_millis(1),
            sizes: vec![512],
            depth: 1,
            filters: vec!["XTS".into()],
            argon2_max_kib: 64,
            kdf: false,
        };
        assert!(s.wants("aes-xts-plain64"));
        assert!(!s.wants("aes-gcm"));
        s.filters.clear();
        assert!(s.wants("aes-gcm"));
    }

    #[test]
    fn user_space_points_are_measured_for_every_size() {
        let r = measure_user(
            UserCipher::AesGcm128,
            &[512, 4096],
            Duration::from_millis(5),
        );
        assert_eq!(r.not_measured, None);
        assert_eq!(r.points.len(), 2);
        for p in &r.points {
            assert!(p.encrypt.bytes >= u64::from(p.request_bytes));
            assert!(p.decrypt.bytes_per_sec > 0.0);
        }
        assert!(r.speed_at(4096).is_some());
        assert!(r.speed_at(65536).is_none());
    }

    #[test]
    fn a_size_a_cipher_cannot_take_is_reported() {
        let r = measure_user(UserCipher::AesXts256, &[24], Duration::from_millis(1));
        assert!(r.points.is_empty());
        assert!(r.not_measured.unwrap().reason.contains("24 bytes"));
    }
}
