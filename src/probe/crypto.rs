//! Kernel crypto from /proc/crypto: each algorithm with the drivers that
//! implement it, whether a driver is a hardware engine or CPU code, and which one
//! the kernel picks (highest priority). That choice decides dm-crypt's speed.

use serde::{Deserialize, Serialize};

use super::text::{parse_u64, split_colon};
use super::{ParseError, ProbeError};
use crate::root::Root;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelCrypto {
    /// Sorted by name.
    pub algorithms: Vec<Algorithm>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Algorithm {
    /// `xts(aes)`, `cbc(aes)`, `sha256`, `adiantum(xchacha12,aes)`.
    pub name: String,
    /// The driver the kernel uses for this name: highest priority among drivers
    /// that are not internal and did not fail their self-test.
    pub selected_driver: Option<String>,
    /// Whether the selected driver is a hardware engine.
    pub selected_engine: Option<Engine>,
    /// In /proc/crypto order.
    pub drivers: Vec<Driver>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Driver {
    pub driver: String,
    /// `kernel` for built-in code.
    pub module: String,
    pub priority: i64,
    pub kind: String,
    pub selftest: Option<String>,
    /// Requests complete later (hardware engines, cryptd wrappers).
    pub is_async: Option<bool>,
    /// Only usable inside other drivers (`__xts-aes-neonbs`); never picked by name.
    pub internal: bool,
    pub engine: Engine,
}

/// What runs a driver, guessed from its module and driver names.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Hardware,
    Cpu,
    Unknown,
}

/// Module names of crypto engines found in NAS and ARM board SoCs (and a few
/// PCs): Marvell CESA, Rockchip, Allwinner, NXP CAAM/Talitos, AMD CCP, Intel
/// QAT, TI OMAP, Atmel, Inside Secure, Mediatek, HiSilicon, Amlogic.
const HARDWARE_MODULES: &[&str] = &[
    "marvell_cesa",
    "mv_cesa",
    "rk_crypto",
    "rk3288_crypto",
    "sun4i_ss",
    "sun8i_ce",
    "sun8i_ss",
    "caam",
    "caam_jr",
    "caamalg_desc",
    "talitos",
    "ccp",
    "ccp_crypto",
    "qat_common",
    "intel_qat",
    "omap_aes_driver",
    "omap_sham",
    "omap_des",
    "atmel_aes",
    "atmel_sha",
    "atmel_tdes",
    "crypto_safexcel",
    "mtk_crypto",
    "hisi_sec2",
    "amlogic_gxl_crypto",
];

/// Driver-name pieces of the same engines, for built-in drivers (module `kernel`).
const HARDWARE_DRIVER_PARTS: &[&str] = &[
    "mv-",
    "-rk",
    "rk-",
    "sun4i-ss",
    "sun8i-ce",
    "sun8i-ss",
    "caam",
    "talitos",
    "-ccp",
    "qat_",
    "-omap",
    "omap-",
    "atmel-",
    "safexcel",
    "-mtk",
    "gxl-crypto",
];

/// Driver-name pieces of CPU implementations: plain C and the SIMD/crypto
/// extension variants for ARM and x86.
const CPU_DRIVER_PARTS: &[&str] = &[
    "-generic",
    "-fixed-time",
    "-arm",
    "-neon",
    "-ce",
    "-aesni",
    "aesni-",
    "-avx",
    "-ssse3",
    "-sse2",
    "-asm",
    "-x86_64",
    "-lib",
    "-simd",
    "-scalar",
];

pub fn read_crypto(root: &Root) -> Result<KernelCrypto, ProbeError> {
    Ok(parse_proc_crypto(&root.read_string("proc/crypto")?)?)
}

/// Parses /proc/crypto (blank-line separated `key : value` blocks) and groups
/// drivers by algorithm name.
pub fn parse_proc_crypto(text: &str) -> Result<KernelCrypto, ParseError> {
    const WHAT: &str = "/proc/crypto";
    let mut algorithms: Vec<Algorithm> = Vec::new();
    for block in text.split("\n\n") {
        let mut name = None;
        let mut driver = None;
        let mut module = None;
        let mut priority = None;
        let mut kind = None;
        let mut selftest = None;
        let mut is_async = None;
        let mut internal = false;
        for line in block.lines() {
            let Some((key, value)) = split_colon(line) else {
                if line.trim().is_empty() {
                    continue;
                }
                return Err(ParseError::value(WHAT, line));
            };
            match key {
                "name" => name = Some(value.to_string()),
                "driver" => driver = Some(value.to_string()),
                "module" => module = Some(value.to_string()),
                "priority" => priority = Some(super::text::parse_i64(WHAT, value)?),
                "type" => kind = Some(value.to_string()),
                "selftest" => selftest = Some(value.to_string()),
                "async" => is_async = Some(yes_no(value)?),
                "internal" => internal = yes_no(value)?,
                "refcnt" | "blocksize" | "digestsize" => {
                    parse_u64(WHAT, value)?;
                }
                _ => {}
            }
        }
        let Some(name) = name else {
            if block.trim().is_empty() {
                continue;
            }
            return Err(ParseError::missing(WHAT, "name"));
        };
        let driver = driver.ok_or_else(|| ParseError::missing(WHAT, "driver"))?;
        let module = module.unwrap_or_else(|| "kernel".into());
        let engine = classify(&driver, &module);
        let d = Driver {
            driver,
            module,
            priority: priority.ok_or_else(|| ParseError::missing(WHAT, "priority"))?,
            kind: kind.ok_or_else(|| ParseError::missing(WHAT, "type"))?,
            selftest,
            is_async,
            internal,
            engine,
        };
        match algorithms.iter_mut().find(|a| a.name == name) {
            Some(a) => a.drivers.push(d),
            None => algorithms.push(Algorithm {
                name,
                selected_driver: None,
                selected_engine: None,
                drivers: vec![d],
            }),
        }
    }
    if algorithms.is_empty() {
        return Err(ParseError::missing(WHAT, "any algorithm"));
    }
    for a in &mut algorithms {
        if let Some(w) = selected(&a.drivers) {
            a.selected_driver = Some(w.driver.clone());
            a.selected_engine = Some(w.engine);
        }
    }
    algorithms.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(KernelCrypto { algorithms })
}

fn yes_no(value: &str) -> Result<bool, ParseError> {
    match value {
        "yes" => Ok(true),
        "no" => Ok(false),
        other => Err(ParseError::value("/proc/crypto", other)),
    }
}

/// The driver a lookup by name gets: highest priority; on a tie the first
/// listed, as the kernel's list walk finds it first.
fn selected(drivers: &[Driver]) -> Option<&Driver> {
    drivers
        .iter()
        .filter(|d| !d.internal && d.selftest.as_deref() != Some("failed"))
        .fold(None, |best: Option<&Driver>, d| match best {
            Some(b) if b.priority >= d.priority => Some(b),
            _ => Some(d),
        })
}

/// Hardware when the module or driver name is a known engine's; CPU when the
/// driver name carries a CPU implementation suffix (templates such as
/// `xts(ecb(aes-generic))` are judged by what they wrap).
pub fn classify(driver: &str, module: &str) -> Engine {
    let d = driver.to_ascii_lowercase();
    if HARDWARE_MODULES.contains(&module) || HARDWARE_DRIVER_PARTS.iter().any(|p| d.contains(p)) {
        return Engine::Hardware;
    }
    if CPU_DRIVER_PARTS.iter().any(|p| d.contains(p)) {
        return Engine::Cpu;
    }
    Engine::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIRKWOOD: &str = "name         : cbc(aes)
driver       : mv-cbc-aes
module       : marvell_cesa
priority     : 300
refcnt       : 1
selftest     : passed
internal     : no
type         : skcipher
async        : yes
blocksize    : 16
min keysize  : 16
max keysize  : 32
ivsize       : 16
chunksize    : 16
walksize     : 16

name         : xts(aes)
driver       : xts(ecb(aes-generic))
module       : kernel
priority     : 100
refcnt       : 1
selftest     : passed
internal     : no
type         : skcipher
async        : no
blocksize    : 16

name         : cbc(aes)
driver       : cbc(aes-generic)
module       : kernel
priority     : 100
refcnt       : 1
selftest     : passed
internal     : no
type         : skcipher
async        : no
blocksize    : 16

name         : aes
driver       : aes-generic
module       : kernel
priority     : 100
refcnt       : 1
selftest     : passed
internal     : no
type         : cipher
blocksize    : 16
min keysize  : 16
max keysize  : 32
";

    #[test]
    fn groups_drivers_and_picks_the_highest_priority() {
        let c = parse_proc_crypto(KIRKWOOD).unwrap();
        let names: Vec<_> = c.algorithms.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, vec!["aes", "cbc(aes)", "xts(aes)"]);
        let cbc = &c.algorithms[1];
        assert_eq!(cbc.drivers.len(), 2);
        assert_eq!(cbc.selected_driver.as_deref(), Some("mv-cbc-aes"));
        assert_eq!(cbc.selected_engine, Some(Engine::Hardware));
        assert_eq!(cbc.drivers[0].is_async, Some(true));
        assert_eq!(cbc.drivers[1].engine, Engine::Cpu);
        let xts = &c.algorithms[2];
        assert_eq!(xts.selected_engine, Some(Engine::Cpu));
        assert_eq!(c.algorithms[0].drivers[0].is_async, None);
    }

    #[test]
    fn internal_and_failed_drivers_are_never_selected() {
        let t = "name : xts(aes)\ndriver : __xts-aes-neonbs\nmodule : aes_arm_bs\npriority : 250\n\
                 type : skcipher\ninternal : yes\n\n\
                 name : xts(aes)\ndriver : xts-aes-broken\nmodule : kernel\npriority : 400\n\
                 type : skcipher\nselftest : failed\n\n\
                 name : xts(aes)\ndriver : xts-aes-neonbs\nmodule : aes_arm_bs\npriority : 250\n\
                 type : skcipher\ninternal : no\n\n\
                 name : xts(aes)\ndriver : xts(ecb(aes-arm))\nmodule : kernel\npriority : 200\n\
                 type : skcipher\n";
        let c = parse_proc_crypto(t).unwrap();
        assert_eq!(
            c.algorithms[0].selected_driver.as_deref(),
            Some("xts-aes-neonbs")
        );
        assert!(c.algorithms[0].drivers[0].internal);
    }

    #[test]
    fn ties_go_to_the_first_listed() {
        let t = "name : cbc(aes)\ndriver : cbc-aes-ce\nmodule : aes_ce_blk\npriority : 300\ntype : skcipher\n\n\
                 name : cbc(aes)\ndriver : cbc-aes-rk\nmodule : rk_crypto\npriority : 300\ntype : skcipher\n";
        let c = parse_proc_crypto(t).unwrap();
        assert_eq!(
            c.algorithms[0].selected_driver.as_deref(),
            Some("cbc-aes-ce")
        );
        assert_eq!(c.algorithms[0].drivers[1].engine, Engine::Hardware);
    }

    #[test]
    fn engines_by_name() {
        assert_eq!(classify("mv-sha1", "marvell_cesa"), Engine::Hardware);
        assert_eq!(classify("ecb-aes-rk", "kernel"), Engine::Hardware);
        assert_eq!(classify("cbc-aes-sun8i-ce", "sun8i_ce"), Engine::Hardware);
        assert_eq!(classify("cbc-aes-caam", "caam_jr"), Engine::Hardware);
        assert_eq!(classify("xts-aes-ce", "aes_ce_blk"), Engine::Cpu);
        assert_eq!(classify("__xts-aes-aesni", "aesni_intel"), Engine::Cpu);
        assert_eq!(classify("sha256-generic", "kernel"), Engine::Cpu);
        assert_eq!(classify("xts(ecb(aes-arm))", "kernel"), Engine::Cpu);
        assert_eq!(classify("jitterentropy_rng", "kernel"), Engine::Unknown);
    }

    #[test]
    fn malformed_text_is_an_error() {
        assert!(parse_proc_crypto("").is_err());
        assert!(parse_proc_crypto("name : aes\npriority : 100\ntype : cipher\n").is_err());
        assert!(
            parse_proc_crypto("name : aes\ndriver : a\npriority : high\ntype : cipher\n").is_err()
        );
        assert!(parse_proc_crypto("garbage line\n").is_err());
        let e =
            parse_proc_crypto("name : aes\ndriver : a\npriority : 1\ntype : c\nasync : maybe\n")
                .unwrap_err()
                .to_string();
        assert!(e.contains("'maybe'"), "{e}");
    }
}
