//! A minimal /proc/crypto lookup: which driver the kernel picks for an algorithm
//! name (the highest-priority, non-internal entry of the right type), and
//! whether that driver is a hardware engine.
//!
//! Merge note: src/probe/crypto.rs carries the full /proc/crypto parser; this
//! lookup can move onto it once both are in main.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Driver {
    /// The algorithm name asked for, e.g. `xts(aes)`.
    pub name: String,
    /// The implementation, e.g. `xts-aes-aesni` or `mv-cbc-aes`.
    pub driver: String,
    pub module: String,
    pub priority: i64,
    /// `Some(true)` for a known hardware engine, `Some(false)` for a known CPU
    /// implementation, `None` when the module is not in either list.
    pub hardware: Option<bool>,
}

/// Modules of crypto engines that are separate hardware (offload).
const HARDWARE_MODULES: &[&str] = &[
    "marvell_cesa",
    "mv_cesa",
    "rk_crypto",
    "rk3288_crypto",
    "rockchip_crypto",
    "sun8i_ce",
    "sun8i_ss",
    "sun4i_ss",
    "caam",
    "caamalg_desc",
    "talitos",
    "omap_aes",
    "atmel_aes",
    "qcrypto",
    "qce",
    "ccp",
    "ccree",
    "qat_common",
    "mxs_dcp",
    "sahara",
    "nx_crypto",
    "amlogic_gxl_crypto",
    "stm32_cryp",
    "hisi_sec2",
    "mtk_crypto",
    "safexcel",
    "crypto_safexcel",
];

/// Modules (and "kernel") that run on the CPU.
fn is_cpu_module(module: &str) -> bool {
    module == "kernel"
        || module.starts_with("aes")
        || module.starts_with("chacha")
        || module.starts_with("sha")
        || module.starts_with("ghash")
        || module.starts_with("serpent")
        || module.starts_with("twofish")
        || module.starts_with("camellia")
        || matches!(
            module,
            "xts" | "cbc" | "essiv" | "adiantum" | "nhpoly1305" | "cryptd" | "crypto_simd" | "ecb"
        )
}

fn classify(module: &str, driver: &str) -> Option<bool> {
    if HARDWARE_MODULES.contains(&module) || driver.starts_with("mv-") {
        Some(true)
    } else if is_cpu_module(module) {
        Some(false)
    } else {
        None
    }
}

/// The driver the kernel would use for `name` of type `kind` (e.g. "skcipher").
pub fn best_driver(text: &str, name: &str, kind: &str) -> Option<Driver> {
    let mut best: Option<Driver> = None;
    for entry in text.split("\n\n") {
        let f = |key: &str| {
            entry.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        if f("name").as_deref() != Some(name) || f("type").as_deref() != Some(kind) {
            continue;
        }
        if f("internal").as_deref() == Some("yes") || f("selftest").as_deref() == Some("unknown") {
            continue;
        }
        let Some(priority) = f("priority").and_then(|p| p.parse::<i64>().ok()) else {
            continue;
        };
        let driver = f("driver").unwrap_or_default();
        let module = f("module").unwrap_or_default();
        if best.as_ref().is_none_or(|b| priority > b.priority) {
            best = Some(Driver {
                name: name.to_string(),
                hardware: classify(&module, &driver),
                driver,
                module,
                priority,
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIRKWOOD: &str = "name         : cbc(aes)\ndriver       : mv-cbc-aes\nmodule       : marvell_cesa\n\
priority     : 300\nrefcnt       : 1\nselftest     : passed\ninternal     : no\ntype         : skcipher\n\
async        : yes\nblocksize    : 16\n\n\
name         : cbc(aes)\ndriver       : cbc(aes-generic)\nmodule       : kernel\npriority     : 100\n\
refcnt       : 1\nselftest     : passed\ninternal     : no\ntype         : skcipher\nasync        : no\n\n\
name         : xts(aes)\ndriver       : xts(aes-generic)\nmodule       : kernel\npriority     : 100\n\
refcnt       : 1\nselftest     : passed\ninternal     : no\ntype         : skcipher\n\n\
name         : __xts(aes)\ndriver       : __xts-aes-aesni\nmodule       : aesni_intel\npriority     : 401\n\
selftest     : passed\ninternal     : yes\ntype         : skcipher\n\n\
name         : aes\ndriver       : aes-generic\nmodule       : kernel\npriority     : 100\ntype         : cipher\n";

    #[test]
    fn cesa_wins_cbc_and_software_serves_xts() {
        let d = best_driver(KIRKWOOD, "cbc(aes)", "skcipher").unwrap();
        assert_eq!(d.driver, "mv-cbc-aes");
        assert_eq!(d.module, "marvell_cesa");
        assert_eq!(d.priority, 300);
        assert_eq!(d.hardware, Some(true));
        let x = best_driver(KIRKWOOD, "xts(aes)", "skcipher").unwrap();
        assert_eq!(x.driver, "xts(aes-generic)");
        assert_eq!(x.hardware, Some(false));
    }

    #[test]
    fn internal_and_wrong_type_entries_are_skipped() {
        assert!(best_driver(KIRKWOOD, "__xts(aes)", "skcipher").is_none());
        assert!(best_driver(KIRKWOOD, "aes", "skcipher").is_none());
        assert!(best_driver("", "xts(aes)", "skcipher").is_none());
    }
}
