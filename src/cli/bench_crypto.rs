//! `nastune bench crypto`.

use std::time::Duration;

use clap::Args;

use crate::bench::crypto::{self, Settings, kdf};

pub const LONG_ABOUT: &str = "Measure what encryption costs on this box, before you \
encrypt a disk or a share.\n\n\
Kernel ciphers are measured through AF_ALG, the same kernel crypto API dm-crypt uses: \
aes-xts-plain64 (256- and 512-bit keys), aes-cbc-essiv:sha256 (128/256), Adiantum and \
serpent/twofish-xts where the kernel has them; at dm-crypt's request sizes, one request at a \
time and with --depth requests in flight (one thread and op socket per request, so \
asynchronous engines such as Marvell CESA get a queue). Each line shows MB/s (10^6 bytes) \
for encryption and decryption per CPU-second of the measuring thread (what the cipher costs, \
which other load on the box does not lower; hardware engines per wall-clock second), the \
wall-clock MB/s beside them, the share of a core the thread got, process CPU seconds per \
GiB, and the driver that served it (from /proc/crypto). A thread that got less than 0.9 of a \
core makes the run disturbed, with its share. When AF_ALG is missing the report says why and still shows the \
user-space figures: AES-XTS (nastune's own VAES-512 or AES-NI loop, RustCrypto without AES \
instructions), AES-CBC (RustCrypto), AES-GCM and ChaCha20-Poly1305 (ring, \
as TLS, SSH and SMB3 use them). Then the cost of unlocking LUKS: PBKDF2 iterations per second \
and one Argon2id derivation at the memory cost cryptsetup would choose (LUKS2's 1 GiB, at most \
half of RAM and half of MemAvailable), kept to half the room under the process's cgroup \
memory limit; the report says which bound set it. \
Finally the cipher to choose for a new LUKS volume, with the reason.\n\n\
Tests run in memory only (no storage I/O).\n\n\
--self-test runs published known-answer vectors (IEEE 1619 XTS, NIST CBC and GCM, RFC 8439, \
RFC 6070, RFC 7914, RFC 9106) through every available path, kernel included, and exits 1 on \
any mismatch.\n\nExamples:\n  nastune bench crypto\n  nastune bench crypto --duration 1 \
--size 4096,65536 --cipher xts\n  nastune bench crypto --size 65536 --sector-size 512\n  \
nastune bench crypto --json --no-kdf\n  \
nastune bench crypto --self-test --require-afalg";

#[derive(Debug, Args)]
pub struct BenchCryptoArgs {
    /// Seconds per measured point (0.01-60)
    #[arg(long, value_name = "SECS", default_value = "0.1", value_parser = parse_duration)]
    pub duration: Duration,
    /// Request sizes, comma-separated: multiples of 16 from 16 to 65536 (suffix k = KiB)
    #[arg(
        long = "size",
        value_name = "BYTES",
        value_delimiter = ',',
        default_value = "512,4096,65536",
        value_parser = parse_size
    )]
    pub sizes: Vec<usize>,
    /// A dm-crypt volume's sector size (512, 1024, 2048 or 4096: cryptsetup's --sector-size;
    /// `probe` shows it): measured whatever --size says, so check and advise find the
    /// figure at the request size the volume's cipher sees
    #[arg(long, value_name = "BYTES", value_parser = parse_sector_size)]
    pub sector_size: Option<usize>,
    /// Kernel requests in flight for the second run of each size (1 = single run only)
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = crate::cli::values::whole("requests", 1..=64))]
    pub depth: u32,
    /// Only ciphers whose name contains one of these (e.g. xts,gcm)
    #[arg(long = "cipher", value_name = "NAME", value_delimiter = ',')]
    pub ciphers: Vec<String>,
    /// Argon2id memory before the RAM, MemAvailable and cgroup caps [default: LUKS2's 1048576]
    #[arg(long, value_name = "KIB", default_value_t = kdf::LUKS2_ARGON2_MAX_KIB,
          value_parser = crate::cli::values::whole("KiB", 64..=4_194_304))]
    pub argon2_memory_kib: u32,
    /// Skip PBKDF2 and Argon2id
    #[arg(long)]
    pub no_kdf: bool,
    /// Print the versioned JSON document instead of the table
    #[arg(long)]
    pub json: bool,
    /// Run the known-answer vectors through every path instead of measuring; exit 1 on mismatch
    #[arg(long)]
    pub self_test: bool,
    /// With --self-test: also fail when the kernel path (AF_ALG) is unavailable
    #[arg(long, requires = "self_test")]
    pub require_afalg: bool,
    #[command(flatten)]
    pub guard: crate::cli::guard::GuardArgs,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds (e.g. 0.5)"))?;
    if !(0.01..=60.0).contains(&secs) {
        return Err(format!("'{s}' is out of range: use 0.01 to 60 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `512`, `4k`, `4KiB`, `64K` -> bytes; multiples of 16 in 16..=65536.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let (digits, mult) = if let Some(d) = lower.strip_suffix("kib").or(lower.strip_suffix('k')) {
        (d.trim(), 1024)
    } else {
        (lower.strip_suffix('b').unwrap_or(&lower).trim(), 1)
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("'{t}' is not a size in bytes (e.g. 512, 4096 or 64k)"))?;
    let bytes = n.saturating_mul(mult);
    if !(16..=65536).contains(&bytes) || bytes % 16 != 0 {
        return Err(format!(
            "'{t}' is not usable: sizes must be multiples of 16 bytes from 16 to 65536 (64k), as dm-crypt sends"
        ));
    }
    Ok(bytes)
}

/// A dm-crypt sector size: a power of two from 512 to 4096.
fn parse_sector_size(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n @ (512 | 1024 | 2048 | 4096)) => Ok(n),
        _ => Err(format!(
            "'{}' is not a dm-crypt sector size: use 512, 1024, 2048 or 4096",
            s.trim()
        )),
    }
}

impl BenchCryptoArgs {
    /// What to measure; a --cipher filter must match at least one cipher.
    pub fn plan(&self) -> anyhow::Result<Settings> {
        let settings = Settings {
            duration: self.duration,
            sizes: dedup(&self.sizes, self.sector_size),
            depth: self.depth,
            filters: self.ciphers.clone(),
            argon2_max_kib: self.argon2_memory_kib,
            kdf: !self.no_kdf,
        };
        if !settings.filters.is_empty() && !any_cipher_matches(&settings) {
            anyhow::bail!(
                "--cipher '{}' matches no cipher; names are: {}",
                settings.filters.join(","),
                all_cipher_names().join(", ")
            );
        }
        Ok(settings)
    }
}

/// The sizes in the order given, each once, with the sector size added if absent.
fn dedup(sizes: &[usize], sector: Option<usize>) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for &s in sizes.iter().chain(sector.as_ref()) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

fn all_cipher_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = crypto::kernel::KERNEL_CIPHERS
        .iter()
        .map(|c| c.cipher)
        .collect();
    names.extend(crypto::userspace::UserCipher::ALL.iter().map(|c| c.name()));
    names.dedup();
    let mut uniq = Vec::new();
    for n in names {
        if !uniq.contains(&n) {
            uniq.push(n);
        }
    }
    uniq
}

fn any_cipher_matches(settings: &Settings) -> bool {
    all_cipher_names().iter().any(|n| settings.wants(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units_and_are_validated() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("16B"), Ok(16));
        assert!(parse_size("100").unwrap_err().contains("multiples of 16"));
        assert!(parse_size("128k").unwrap_err().contains("'128k'"));
        assert!(parse_size("lots").unwrap_err().contains("not a size"));
    }

    #[test]
    fn a_sector_size_is_measured_whatever_the_sizes() {
        assert_eq!(parse_sector_size("512"), Ok(512));
        assert!(parse_sector_size("768").unwrap_err().contains("'768'"));
        assert_eq!(dedup(&[65536], Some(512)), vec![65536, 512]);
        assert_eq!(dedup(&[512, 4096, 512], Some(4096)), vec![512, 4096]);
        assert_eq!(dedup(&[4096], None), vec![4096]);
    }

    #[test]
    fn durations_are_bounded() {
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0").unwrap_err().contains("out of range"));
        assert!(parse_duration("x").unwrap_err().contains("'x'"));
    }

    #[test]
    fn cipher_names_are_unique() {
        let names = all_cipher_names();
        assert!(names.contains(&"aes-xts-plain64") && names.contains(&"aes-gcm"));
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
    }
}
