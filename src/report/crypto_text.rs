//! `bench crypto` as text: a table in the spirit of `cryptsetup benchmark`, plus
//! the driver that served each kernel cipher and the CPU it cost.

use std::fmt::Write;

use crate::bench::crypto::kat::{KatOutcome, Verdict};
use crate::bench::crypto::{CipherResult, CryptoReport, KdfResults};
use crate::probe::Outcome;

fn request(bytes: u32) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

fn mb_s(bytes_per_sec: f64) -> String {
    super::format::rate(bytes_per_sec)
}

fn header(out: &mut String) {
    let _ = writeln!(
        out,
        "#{:>29} {:>5} {:>8} {:>6} {:>14} {:>14} {:>15} {:>5} {:>16}  Driver / implementation",
        "Algorithm",
        "Key",
        "Request",
        "Queue",
        "Encryption",
        "Decryption",
        "wall-clock e/d",
        "core",
        "CPU s/GiB e/d"
    );
}

fn cipher_lines(out: &mut String, r: &CipherResult) {
    let impl_text = match &r.driver {
        Some(d) => {
            let kind = match d.hardware {
                Some(true) => "hardware engine",
                Some(false) => "CPU",
                None => "engine unknown",
            };
            format!(
                "{} (priority {}, module {}, {kind})",
                d.driver, d.priority, d.module
            )
        }
        None => r.implementation.clone(),
    };
    let cpu = r.cpu_bound();
    for p in &r.points {
        let share = [&p.encrypt, &p.decrypt]
            .iter()
            .filter_map(|r| r.thread_cpu_share)
            .reduce(f64::min)
            .filter(|_| cpu)
            .map_or("-".to_string(), |s| format!("{s:.2}"));
        let _ = writeln!(
            out,
            "{:>30} {:>4}b {:>8} {:>6} {:>14} {:>14} {:>15} {:>5} {:>16}  {impl_text}",
            r.cipher,
            r.key_bits,
            request(p.request_bytes),
            p.in_flight,
            mb_s(p.encrypt.headline(cpu)),
            mb_s(p.decrypt.headline(cpu)),
            format!(
                "{:.1}/{:.1}",
                p.encrypt.bytes_per_sec / 1e6,
                p.decrypt.bytes_per_sec / 1e6
            ),
            share,
            format!(
                "{:.2}/{:.2}",
                p.encrypt.cpu_secs_per_gib, p.decrypt.cpu_secs_per_gib
            ),
        );
    }
    if let Some(nm) = &r.not_measured {
        let errno = nm
            .errno
            .as_deref()
            .map_or(String::new(), |e| format!("{e}: "));
        let short = if nm.errno.as_deref() == Some("EAFNOSUPPORT") {
            "kernel without AF_ALG (see above)".to_string()
        } else {
            nm.reason.clone()
        };
        let _ = writeln!(
            out,
            "{:>30} {:>4}b   not measured: {errno}{short}",
            r.cipher, r.key_bits
        );
    }
}

fn kdf_lines(out: &mut String, kdf: &KdfResults) {
    for p in &kdf.pbkdf2 {
        let _ = writeln!(
            out,
            "PBKDF2-{:<8} {:>10.0} iterations per second for {}-bit key",
            p.hash, p.iterations_per_sec, p.key_bits
        );
    }
    match &kdf.argon2id {
        Outcome::Ok { data: a } => {
            let _ = writeln!(
                out,
                "argon2id       {:>10.2} s for {} iterations, {} KiB memory, {} lanes on {} thread (LUKS2 unlock cost; cryptsetup runs lanes on up to 4 threads)",
                a.wall_secs, a.iterations, a.memory_kib, a.lanes, a.threads
            );
            if let Some(why) = &a.memory_capped {
                let _ = writeln!(out, "               memory below LUKS2's default: {why}");
            }
        }
        other => {
            let _ = writeln!(
                out,
                "argon2id       not measured: {}",
                other.problem().unwrap_or("unknown")
            );
        }
    }
}

pub fn render(r: &CryptoReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Tests are approximate, in memory only (no storage I/O); MB = 10^6 bytes; {:.2} s per point.",
        r.duration_secs_per_point
    );
    let _ = writeln!(
        out,
        "# Speeds of ciphers the CPU runs are per CPU-second of the measuring thread (per core \
         with Queue > 1), which other load does not lower; wall-clock MB/s beside them, and \
         the share of a core the thread got (core). Hardware engines: wall-clock."
    );
    let aes = match r.cpu.has_aes {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    };
    let _ = writeln!(
        out,
        "# CPU: {}, {} logical CPUs, AES instructions: {aes}; user-space AES engine: {}",
        r.cpu.model.as_deref().unwrap_or("unknown model"),
        r.cpu
            .logical_cpus
            .map_or("?".to_string(), |n| n.to_string()),
        r.cpu.user_space_aes_engine
    );
    match &r.kdf {
        Some(kdf) => kdf_lines(&mut out, kdf),
        None => {
            let _ = writeln!(
                out,
                "# key derivation (PBKDF2, Argon2id) not measured: --no-kdf"
            );
        }
    }

    let _ = writeln!(
        out,
        "\nKernel ciphers through AF_ALG (what dm-crypt uses; Queue = requests in flight):"
    );
    if let Some(reason) = &r.afalg.reason {
        let _ = writeln!(out, "  AF_ALG unavailable: {reason}");
    }
    header(&mut out);
    for c in &r.kernel {
        cipher_lines(&mut out, c);
    }
    if r.kernel.is_empty() {
        let _ = writeln!(out, "  (no kernel cipher matches --cipher)");
    }

    let _ = writeln!(out, "\nUser space (this process, one thread):");
    header(&mut out);
    for c in &r.user_space {
        cipher_lines(&mut out, c);
    }
    if r.user_space.is_empty() {
        let _ = writeln!(out, "  (no user-space cipher matches --cipher)");
    }

    let rec = &r.recommendation;
    let _ = writeln!(
        out,
        "\nFor a new LUKS volume on this box: {} with a {}-bit key",
        rec.cipher, rec.key_bits
    );
    let _ = writeln!(
        out,
        "  cryptsetup luksFormat {} DEVICE",
        rec.cryptsetup_options
    );
    let _ = writeln!(out, "  why: {}", rec.reason);
    for n in &rec.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    if let Some(v) = &r.validity {
        let _ = writeln!(out, "\n{}", super::validity_text::line(v));
    }
    out
}

pub fn render_self_test(results: &[KatOutcome]) -> String {
    let mut out = String::new();
    let (mut pass, mut fail, mut skip) = (0, 0, 0);
    for r in results {
        let (word, detail) = match &r.verdict {
            Verdict::Pass => {
                pass += 1;
                ("PASS", String::new())
            }
            Verdict::Fail { detail } => {
                fail += 1;
                ("FAIL", format!(": {detail}"))
            }
            Verdict::Skip { reason } => {
                skip += 1;
                ("SKIP", format!(": {reason}"))
            }
        };
        let _ = writeln!(out, "{word}  {:<16} {}{detail}", r.path, r.vector);
    }
    let _ = writeln!(
        out,
        "self-test summary: {pass} vectors match, {fail} mismatch, {skip} skipped"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(request(512), "512 B");
        assert_eq!(request(4096), "4 KiB");
        assert_eq!(request(65536), "64 KiB");
        assert_eq!(mb_s(1.5e6), "1.5 MB/s");
    }

    #[test]
    fn self_test_summary_counts_each_verdict() {
        let r = [
            KatOutcome {
                path: "user space".into(),
                vector: "v1".into(),
                verdict: Verdict::Pass,
            },
            KatOutcome {
                path: "kernel (AF_ALG)".into(),
                vector: "all".into(),
                verdict: Verdict::Skip {
                    reason: "no AF_ALG".into(),
                },
            },
        ];
        let t = render_self_test(&r);
        assert!(t.contains("PASS  user space"));
        assert!(t.contains("SKIP  kernel (AF_ALG)  all: no AF_ALG"));
        assert!(t.ends_with("1 vectors match, 0 mismatch, 1 skipped\n"));
    }
}
