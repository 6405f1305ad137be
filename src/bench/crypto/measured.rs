//! What compare and report take from a crypto bench: encrypt and decrypt speed
//! per cipher, key size, request size and depth.

use super::CryptoReport;
use crate::doc::metrics::Metric;
use crate::doc::metrics::{Chart, Measured, single};

impl Measured for CryptoReport {
    const KIND: &'static str = "crypto";
    const CHARTS: &'static [Chart] = &[Chart {
        title: "Encryption speed",
        quantity: "encrypt",
        unit: "bytes/s",
    }];

    fn metrics(&self, out: &mut Vec<Metric>) {
        for (section, list) in [("kernel", &self.kernel), ("user_space", &self.user_space)] {
            for entry in list {
                // Per CPU-second where the CPU does the work, so that a run on
                // a busy box does not read as a regression.
                let cpu = entry.cpu_bound();
                for p in &entry.points {
                    let id = format!(
                        "crypto {section} {} {}-bit {}B x{}",
                        entry.cipher, entry.key_bits, p.request_bytes, p.in_flight
                    );
                    let label = format!(
                        "{} {} {}-bit {} B{}",
                        section.replace('_', " "),
                        entry.cipher,
                        entry.key_bits,
                        p.request_bytes,
                        if p.in_flight > 1 {
                            format!(" x{}", p.in_flight)
                        } else {
                            String::new()
                        }
                    );
                    out.extend(single(
                        &id,
                        &label,
                        "encrypt",
                        "bytes/s",
                        p.encrypt.headline(cpu),
                    ));
                    out.extend(single(
                        &id,
                        &label,
                        "decrypt",
                        "bytes/s",
                        p.decrypt.headline(cpu),
                    ));
                }
            }
        }
    }
}
