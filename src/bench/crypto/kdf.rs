//! What unlocking a LUKS volume costs on this CPU: PBKDF2 iterations per second
//! (LUKS1, and LUKS2 with --pbkdf pbkdf2) and the time of one Argon2id
//! derivation at LUKS2's default memory cost.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::measure::Clock;

/// cryptsetup's limit for Argon2 memory: 1 GiB (it also caps at half of RAM).
pub const LUKS2_ARGON2_MAX_KIB: u32 = 1024 * 1024;
/// cryptsetup's minimum (and benchmark start) iteration count for Argon2.
pub const LUKS2_ARGON2_MIN_ITERATIONS: u32 = 4;
/// cryptsetup uses up to 4 threads (lanes), no more than the online CPUs.
pub const LUKS2_ARGON2_MAX_LANES: u32 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prf {
    Sha1,
    Sha256,
    Sha512,
}

impl Prf {
    pub const ALL: [Prf; 3] = [Prf::Sha1, Prf::Sha256, Prf::Sha512];

    pub fn name(self) -> &'static str {
        match self {
            Prf::Sha1 => "sha1",
            Prf::Sha256 => "sha256",
            Prf::Sha512 => "sha512",
        }
    }

    pub fn derive(self, password: &[u8], salt: &[u8], rounds: u32, out: &mut [u8]) {
        match self {
            Prf::Sha1 => pbkdf2::pbkdf2_hmac::<sha1::Sha1>(password, salt, rounds, out),
            Prf::Sha256 => pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, salt, rounds, out),
            Prf::Sha512 => pbkdf2::pbkdf2_hmac::<sha2::Sha512>(password, salt, rounds, out),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pbkdf2Result {
    pub hash: String,
    /// Derived key length, as `cryptsetup benchmark` (256-bit key).
    pub key_bits: u32,
    /// Iterations of the last, timed derivation.
    pub iterations: u32,
    pub wall_secs: f64,
    pub cpu_secs: f64,
    pub iterations_per_sec: f64,
}

/// Grows the iteration count until one derivation takes at least `target`,
/// then reports that derivation.
pub fn pbkdf2_rate(prf: Prf, target: Duration) -> Pbkdf2Result {
    let mut rounds: u32 = 1024;
    let mut key = [0u8; 32];
    loop {
        let clock = Clock::start();
        prf.derive(
            b"nastune benchmark",
            b"0123456789abcdef0123456789abcdef",
            rounds,
            &mut key,
        );
        let (wall, cpu) = clock.stop();
        std::hint::black_box(&key);
        let done = wall >= target.as_secs_f64() || rounds >= u32::MAX / 16;
        if done {
            return Pbkdf2Result {
                hash: prf.name().to_string(),
                key_bits: 256,
                iterations: rounds,
                wall_secs: wall,
                cpu_secs: cpu,
                iterations_per_sec: f64::from(rounds) / wall.max(1e-9),
            };
        }
        // Aim a little past the target; at least double, at most x16 per step.
        let factor = (target.as_secs_f64() * 1.2 / wall.max(1e-6)).clamp(2.0, 16.0);
        rounds = (f64::from(rounds) * factor).min(f64::from(u32::MAX / 16)) as u32;
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Argon2Result {
    pub iterations: u32,
    pub memory_kib: u32,
    pub lanes: u32,
    /// Threads that computed the lanes (this build computes them on one).
    pub threads: u32,
    pub wall_secs: f64,
    pub cpu_secs: f64,
    /// Why the memory is below LUKS2's default, when it is.
    pub memory_capped: Option<String>,
    /// The timed derivation's 32-byte output (hex) for password `nastune benchmark` and
    /// salt `0123456789abcdef`: any Argon2id implementation given the parameters above
    /// must produce it, so it proves what was timed. Empty in runs stored before 0.2.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub derived_key_hex: String,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KdfError {
    #[error(
        "argon2id parameters refused (m={memory_kib} KiB, t={iterations}, p={lanes}): {detail}"
    )]
    Params {
        memory_kib: u32,
        iterations: u32,
        lanes: u32,
        detail: String,
    },
}

/// The memory Argon2 may use: LUKS2's default (or `max_kib`), capped at half
/// of MemAvailable so the benchmark never pushes a small box into swap or OOM.
pub fn argon2_memory(max_kib: u32, mem_available_bytes: Option<u64>) -> (u32, Option<String>) {
    let mut kib = max_kib;
    let mut why = None;
    if max_kib < LUKS2_ARGON2_MAX_KIB {
        why = Some(format!(
            "--argon2-memory-kib {max_kib} is below LUKS2's default of {LUKS2_ARGON2_MAX_KIB} KiB"
        ));
    }
    match mem_available_bytes {
        Some(avail) => {
            let half = (avail / 1024 / 2).min(u64::from(u32::MAX)) as u32;
            if half < kib {
                kib = half;
                why = Some(format!(
                    "capped at half of MemAvailable ({half} KiB of {} KiB) so the benchmark cannot push the box into swap",
                    avail / 1024
                ));
            }
        }
        None => {
            why.get_or_insert_with(|| {
                "MemAvailable unknown; used the requested memory without a cap".to_string()
            });
        }
    }
    (kib, why)
}

const BENCH_PASSWORD: &[u8] = b"nastune benchmark";
const BENCH_SALT: &[u8] = b"0123456789abcdef";

/// Times one Argon2id derivation with LUKS2's minimum iterations.
pub fn argon2id_time(memory_kib: u32, lanes: u32) -> Result<Argon2Result, KdfError> {
    let t = LUKS2_ARGON2_MIN_ITERATIONS;
    let bad = |detail: String| KdfError::Params {
        memory_kib,
        iterations: t,
        lanes,
        detail,
    };
    let params =
        argon2::Params::new(memory_kib, t, lanes, Some(32)).map_err(|e| bad(e.to_string()))?;
    let ctx = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let mut out = [0u8; 32];
    let clock = Clock::start();
    ctx.hash_password_into(BENCH_PASSWORD, BENCH_SALT, &mut out)
        .map_err(|e| bad(e.to_string()))?;
    let (wall, cpu) = clock.stop();
    Ok(Argon2Result {
        derived_key_hex: out.iter().map(|b| format!("{b:02x}")).collect(),
        iterations: t,
        memory_kib,
        lanes,
        threads: 1,
        wall_secs: wall,
        cpu_secs: cpu,
        memory_capped: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_capped_at_half_of_available() {
        let (kib, why) = argon2_memory(LUKS2_ARGON2_MAX_KIB, Some(100 * 1024 * 1024));
        assert_eq!(kib, 51_200);
        assert!(why.unwrap().contains("half of MemAvailable"));
        let (kib, why) = argon2_memory(LUKS2_ARGON2_MAX_KIB, Some(64 << 30));
        assert_eq!(kib, LUKS2_ARGON2_MAX_KIB);
        assert_eq!(why, None);
        let (kib, why) = argon2_memory(4096, Some(64 << 30));
        assert_eq!(kib, 4096);
        assert!(why.unwrap().contains("below LUKS2's default"));
    }

    #[test]
    fn pbkdf2_reaches_the_target() {
        let r = pbkdf2_rate(Prf::Sha256, Duration::from_millis(20));
        assert!(r.wall_secs >= 0.02, "{r:?}");
        assert!(r.iterations >= 1024);
        let implied = f64::from(r.iterations) / r.wall_secs;
        assert!(
            (r.iterations_per_sec - implied).abs() < 1e-6 * implied,
            "{r:?}"
        );
    }

    /// Outputs of the reference implementation (Debian's `argon2` 0~20171227):
    /// `echo -n "nastune benchmark" | argon2 0123456789abcdef -id -v 13 -t T -k M -p P -l 32 -r`.
    /// A derivation that ran fewer passes, less memory or other lanes than it reports
    /// cannot match.
    const REFERENCE_TAGS: [(u32, u32, u32, &str); 6] = [
        (
            4,
            64,
            1,
            "3d19e9dd11d42e6435935c809026d4d1b32878852a59ef35bc8cb5385e8ae953",
        ),
        (
            4,
            64,
            2,
            "2daa97fef1cf146d5b1683e20af16c1a9536123005b4801378e86415dabf585c",
        ),
        (
            4,
            1024,
            1,
            "90f066adc721759f716bd55bfe0087761f1af5a56c6e7d02db204f5ae756d1d1",
        ),
        (
            4,
            1024,
            2,
            "51094cb1feb25b63f48db51f5e17d4ded89ff817841f4b206f50822d8b4e2a40",
        ),
        (
            4,
            1024,
            3,
            "1f0eb14eda7a49157edf466ad3a185073bb92c21eddd1d9d72d70a452b322b8a",
        ),
        (
            4,
            1024,
            4,
            "99609d94cb043055312e1a40075c5defd365bfabeed5ebd3cd27b78702046fd7",
        ),
    ];

    #[test]
    fn argon2_derives_the_reference_output_for_the_parameters_it_reports() {
        for (memory_kib, lanes) in [(64, 1), (64, 2), (1024, 3)] {
            let r = argon2id_time(memory_kib, lanes).unwrap();
            let want = REFERENCE_TAGS
                .iter()
                .find(|(t, m, p, _)| (*t, *m, *p) == (r.iterations, r.memory_kib, r.lanes))
                .unwrap_or_else(|| panic!("no reference output for {r:?}"))
                .3;
            assert_eq!(r.derived_key_hex, want, "{r:?}");
        }
    }

    #[test]
    fn argon2_runs_and_bad_params_are_errors() {
        let r = argon2id_time(64, 2).unwrap();
        assert_eq!((r.iterations, r.memory_kib, r.lanes), (4, 64, 2));
        assert!(r.wall_secs > 0.0);
        let e = argon2id_time(1, 4).unwrap_err();
        assert!(e.to_string().contains("m=1 KiB"), "{e}");
    }
}
