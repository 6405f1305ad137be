//! CPU: model, cores, frequency policies and governors, and the feature flags that
//! decide crypto and checksum speed (x86 aes/avx, ARM aes/pmull/sha1/sha2/neon).

use serde::{Deserialize, Serialize};

use super::text::{parse_f64, parse_u64, split_colon};
use super::{ParseError, ProbeError};
use crate::root::Root;

/// Flags worth showing; the full list is noise for tuning.
const INTERESTING_FLAGS: &[&str] = &[
    // x86
    "aes",
    "vaes",
    "pclmulqdq",
    "avx",
    "avx2",
    "avx512f",
    "sha_ni",
    "sse4_2",
    "ssse3",
    // ARM
    "neon",
    "asimd",
    "pmull",
    "sha1",
    "sha2",
    "sha512",
    "crc32",
    "vfpv4",
    "idiva",
];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Cpu {
    pub model: Option<String>,
    /// The SoC name ARM kernels print as `Hardware` (older kernels only).
    pub hardware: Option<String>,
    /// `x86`, `arm` or `aarch64`-style family inferred from cpuinfo.
    pub family: String,
    /// ARM architecture number as cpuinfo prints it (`5TE`, `7`, `8`).
    pub arm_architecture: Option<String>,
    pub logical_cpus: u32,
    pub online: Option<String>,
    pub bogomips: Option<f64>,
    /// The flags from [`INTERESTING_FLAGS`] this CPU has.
    pub flags: Vec<String>,
    /// Whether the CPU has AES instructions (x86 AES-NI or ARMv8 crypto extensions).
    pub has_aes: bool,
    pub frequency_policies: Vec<FreqPolicy>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FreqPolicy {
    pub name: String,
    pub cpus: String,
    pub driver: Option<String>,
    pub governor: Option<String>,
    pub available_governors: Vec<String>,
    pub cur_khz: Option<u64>,
    pub min_khz: Option<u64>,
    pub max_khz: Option<u64>,
}

/// What /proc/cpuinfo says, before sysfs adds frequencies.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpuInfo {
    pub model: Option<String>,
    pub hardware: Option<String>,
    pub family: String,
    pub arm_architecture: Option<String>,
    pub logical_cpus: u32,
    pub bogomips: Option<f64>,
    pub flags: Vec<String>,
}

pub fn read_cpu(root: &Root) -> Result<Cpu, ProbeError> {
    let info = parse_cpuinfo(&root.read_string("proc/cpuinfo")?)?;
    let online = root.read_optional("sys/devices/system/cpu/online")?;
    let mut frequency_policies = Vec::new();
    for name in root.read_dir_optional("sys/devices/system/cpu/cpufreq")? {
        if name.starts_with("policy") {
            frequency_policies.push(read_policy(root, &name)?);
        }
    }
    let has_aes = info.flags.iter().any(|f| f == "aes");
    Ok(Cpu {
        model: info.model,
        hardware: info.hardware,
        family: info.family,
        arm_architecture: info.arm_architecture,
        logical_cpus: info.logical_cpus,
        online,
        bogomips: info.bogomips,
        flags: info.flags,
        has_aes,
        frequency_policies,
    })
}

fn read_policy(root: &Root, name: &str) -> Result<FreqPolicy, ProbeError> {
    let dir = format!("sys/devices/system/cpu/cpufreq/{name}");
    let khz = |file: &str| -> Result<Option<u64>, ProbeError> {
        match root.read_optional(&format!("{dir}/{file}"))? {
            Some(v) if v != "<unknown>" => Ok(Some(parse_u64(&format!("{dir}/{file}"), &v)?)),
            _ => Ok(None),
        }
    };
    Ok(FreqPolicy {
        name: name.to_string(),
        cpus: root
            .read_optional(&format!("{dir}/related_cpus"))?
            .unwrap_or_default(),
        driver: root.read_optional(&format!("{dir}/scaling_driver"))?,
        governor: root.read_optional(&format!("{dir}/scaling_governor"))?,
        available_governors: root
            .read_optional(&format!("{dir}/scaling_available_governors"))?
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default(),
        cur_khz: khz("scaling_cur_freq")?,
        min_khz: khz("cpuinfo_min_freq")?,
        max_khz: khz("cpuinfo_max_freq")?,
    })
}

/// Parses /proc/cpuinfo as x86 and ARM kernels (old and new) print it.
pub fn parse_cpuinfo(text: &str) -> Result<CpuInfo, ParseError> {
    let mut info = CpuInfo::default();
    let mut processors = 0u32;
    let mut all_flags: Vec<&str> = Vec::new();
    // ARM cores by part number, in order, so big.LITTLE shows both kinds.
    let mut arm_parts: Vec<(String, u32)> = Vec::new();
    let mut arm_implementer = None;
    for line in text.lines() {
        let Some((key, value)) = split_colon(line) else {
            continue;
        };
        match key {
            "processor" => processors += 1,
            // Old ARM kernels print one "Processor : <model>" line and no "processor".
            "Processor" if info.model.is_none() => info.model = Some(value.to_string()),
            "model name" if info.model.is_none() => info.model = Some(value.to_string()),
            "Hardware" => info.hardware = Some(value.to_string()),
            "CPU architecture" => info.arm_architecture = Some(value.to_string()),
            "CPU part" => match arm_parts.iter_mut().find(|(p, _)| p == value) {
                Some((_, n)) => *n += 1,
                None => arm_parts.push((value.to_string(), 1)),
            },
            "CPU implementer" if arm_implementer.is_none() => {
                arm_implementer = Some(value.to_string())
            }
            "bogomips" | "BogoMIPS" if info.bogomips.is_none() => {
                info.bogomips = Some(parse_f64("/proc/cpuinfo BogoMIPS", value)?);
            }
            "flags" | "Features" if all_flags.is_empty() => {
                all_flags = value.split_whitespace().collect();
            }
            _ => {}
        }
    }
    if processors == 0 && info.model.is_none() && all_flags.is_empty() {
        return Err(ParseError::missing("/proc/cpuinfo", "processor"));
    }
    info.logical_cpus = processors.max(1);
    info.family = match info.arm_architecture.as_deref() {
        Some(a) if a.starts_with('8') || a.starts_with("AArch64") => "aarch64".into(),
        Some(_) => "arm".into(),
        None => "x86".into(),
    };
    // A 32-bit ARM kernel's model name names the architecture, not the core: "ARMv7
    // Processor rev 5 (v7l)" on a Cortex-A7, and "ARMv7 Processor rev 0 (v7l)" on a
    // Cortex-A57 running that kernel (the armhf lab guest showed both). The part number
    // names the core, as on aarch64, whose cpuinfo has no model name at all.
    if arm_implementer.as_deref() == Some("0x41")
        && info.model.as_deref().is_none_or(|m| m.starts_with("ARMv"))
        && let Some(core) = arm_model(&arm_parts)
    {
        info.model = Some(core);
    }
    info.flags = INTERESTING_FLAGS
        .iter()
        .filter(|f| all_flags.contains(f))
        .map(|f| f.to_string())
        .collect();
    Ok(info)
}

/// `Cortex-A53` for one kind of core, `Cortex-A53 x4 + Cortex-A72 x2` for big.LITTLE.
fn arm_model(parts: &[(String, u32)]) -> Option<String> {
    let names: Option<Vec<(&str, u32)>> = parts
        .iter()
        .map(|(p, n)| arm_core_name(p).map(|name| (name, *n)))
        .collect();
    match names?.as_slice() {
        [] => None,
        [(name, _)] => Some(name.to_string()),
        many => Some(
            many.iter()
                .map(|(name, n)| format!("{name} x{n}"))
                .collect::<Vec<_>>()
                .join(" + "),
        ),
    }
}

/// ARM Ltd core names by `CPU part` (aarch64 cpuinfo has no model name).
fn arm_core_name(part: &str) -> Option<&'static str> {
    Some(match part {
        "0xb76" => "ARM1176",
        "0xc07" => "Cortex-A7",
        "0xc08" => "Cortex-A8",
        "0xc09" => "Cortex-A9",
        "0xc0f" => "Cortex-A15",
        "0xc0e" => "Cortex-A17",
        "0xd03" => "Cortex-A53",
        "0xd04" => "Cortex-A35",
        "0xd05" => "Cortex-A55",
        "0xd07" => "Cortex-A57",
        "0xd08" => "Cortex-A72",
        "0xd09" => "Cortex-A73",
        "0xd0a" => "Cortex-A75",
        "0xd0b" => "Cortex-A76",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIRKWOOD: &str = "processor\t: 0\nmodel name\t: Feroceon 88FR131 rev 1 (v5l)\n\
BogoMIPS\t: 1191.11\nFeatures\t: swp half thumb fastmult edsp \nCPU implementer\t: 0x56\n\
CPU architecture: 5TE\nCPU variant\t: 0x2\nCPU part\t: 0x131\nCPU revision\t: 1\n\n\
Hardware\t: Marvell Kirkwood (Flattened Device Tree)\nRevision\t: 0000\nSerial\t\t: 0000000000000000\n";

    const RK3399: &str = "processor\t: 0\nBogoMIPS\t: 48.00\n\
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid\nCPU implementer\t: 0x41\n\
CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd03\nCPU revision\t: 4\n\n\
processor\t: 4\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid\n\
CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 2\n";

    #[test]
    fn kirkwood_armv5_has_no_aes() {
        let i = parse_cpuinfo(KIRKWOOD).unwrap();
        assert_eq!(i.model.as_deref(), Some("Feroceon 88FR131 rev 1 (v5l)"));
        assert_eq!(i.family, "arm");
        assert_eq!(i.arm_architecture.as_deref(), Some("5TE"));
        assert_eq!(i.logical_cpus, 1);
        assert!(i.flags.is_empty());
    }

    #[test]
    fn old_arm_kernels_use_capital_processor() {
        let i = parse_cpuinfo("Processor\t: ARMv7 Processor rev 5 (v7l)\nFeatures\t: neon vfpv4\nCPU architecture: 7\n").unwrap();
        assert_eq!(i.model.as_deref(), Some("ARMv7 Processor rev 5 (v7l)"));
        assert_eq!(i.flags, vec!["neon", "vfpv4"]);
    }

    /// /proc/cpuinfo of Debian's armmp kernel (6.1) in the armhf lab guest, QEMU's virt
    /// machine: a Cortex-A7 (the Raspberry Pi 2's core), and QEMU's `max` CPU, whose ID
    /// registers are a Cortex-A57's, with the ARMv8 crypto extensions.
    const ARMMP_A7: &str = "processor\t: 0\nmodel name\t: ARMv7 Processor rev 5 (v7l)\n\
BogoMIPS\t: 125.00\nFeatures\t: half thumb fastmult vfp edsp thumbee neon vfpv3 tls vfpv4 \
idiva idivt vfpd32 lpae evtstrm \nCPU implementer\t: 0x41\nCPU architecture: 7\n\
CPU variant\t: 0x0\nCPU part\t: 0xc07\nCPU revision\t: 5\n\n\
processor\t: 1\nmodel name\t: ARMv7 Processor rev 5 (v7l)\nBogoMIPS\t: 125.00\n\
Features\t: half thumb fastmult vfp edsp thumbee neon vfpv3 tls vfpv4 idiva idivt vfpd32 \
lpae evtstrm \nCPU implementer\t: 0x41\nCPU architecture: 7\nCPU variant\t: 0x0\n\
CPU part\t: 0xc07\nCPU revision\t: 5\n\nHardware\t: Generic DT based system\n\
Revision\t: 0000\nSerial\t\t: 0000000000000000\n";
    const ARMMP_A57: &str = "processor\t: 0\nmodel name\t: ARMv7 Processor rev 0 (v7l)\n\
BogoMIPS\t: 125.00\nFeatures\t: half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva \
idivt vfpd32 lpae evtstrm aes pmull sha1 sha2 crc32 \nCPU implementer\t: 0x41\n\
CPU architecture: 7\nCPU variant\t: 0x1\nCPU part\t: 0xd07\nCPU revision\t: 0\n\n\
Hardware\t: Generic DT based system\n";

    #[test]
    fn armv7_kernel_core_named_from_part() {
        let i = parse_cpuinfo(ARMMP_A7).unwrap();
        assert_eq!(i.model.as_deref(), Some("Cortex-A7"));
        assert_eq!(i.family, "arm");
        assert_eq!(i.arm_architecture.as_deref(), Some("7"));
        assert_eq!(i.logical_cpus, 2);
        // An ARMv8 core under the 32-bit kernel: architecture 7, its own part number.
        let i = parse_cpuinfo(ARMMP_A57).unwrap();
        assert_eq!(i.model.as_deref(), Some("Cortex-A57"));
        assert_eq!(i.arm_architecture.as_deref(), Some("7"));
        assert!(i.flags.contains(&"aes".to_string()), "{:?}", i.flags);
        // A part nastune does not know keeps the kernel's words.
        let unknown = ARMMP_A57.replace("0xd07", "0xd4f");
        let i = parse_cpuinfo(&unknown).unwrap();
        assert_eq!(i.model.as_deref(), Some("ARMv7 Processor rev 0 (v7l)"));
    }

    #[test]
    fn aarch64_core_named_from_part() {
        let i = parse_cpuinfo(RK3399).unwrap();
        assert_eq!(i.model.as_deref(), Some("Cortex-A53 x1 + Cortex-A72 x1"));
        assert_eq!(i.family, "aarch64");
        assert_eq!(i.logical_cpus, 2);
        assert_eq!(
            i.flags,
            vec!["aes", "asimd", "pmull", "sha1", "sha2", "crc32"]
        );
    }

    #[test]
    fn x86_flags() {
        let t = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\nflags\t\t: fpu sse4_2 aes avx avx2\nbogomips\t: 4800.00\n";
        let i = parse_cpuinfo(t).unwrap();
        assert_eq!(i.family, "x86");
        assert_eq!(i.flags, vec!["aes", "avx", "avx2", "sse4_2"]);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse_cpuinfo("").is_err());
        assert!(parse_cpuinfo("bogomips : lots\nprocessor : 0\n").is_err());
        assert!(parse_cpuinfo(":::\n\0\u{fffd}").is_err());
    }
}
