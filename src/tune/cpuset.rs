//! CPU sets as the kernel writes and reads them: lists (`0-1,3`, as in
//! /proc/irq/N/smp_affinity_list) and hex masks (`f`, `ff,ffffffff`, as in
//! rps_cpus and xps_cpus), checked against the CPUs the box has and printed
//! the way the kernel prints them back, so verify compares like with like.

use crate::root::Root;

/// The most CPUs a set may name; far above any NAS box, and it bounds the work.
const MAX_CPUS: u32 = 4096;

/// The CPUs of a list such as `0-2,5`, sorted, without repeats.
pub fn parse_list(text: &str) -> Result<Vec<u32>, String> {
    let bad = || format!("'{text}' is not a CPU list; use numbers and ranges such as '0-1,3'");
    let mut out = crate::probe::cpu_list::parse_cpu_list(text).map_err(|_| bad())?;
    if out.is_empty() || out.iter().any(|c| *c >= MAX_CPUS) {
        return Err(bad());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// A CPU list as the kernel prints it: runs of two or more as `a-b`.
pub fn format_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        while i + 1 < cpus.len() && cpus[i + 1] == cpus[i] + 1 {
            i += 1;
        }
        parts.push(if cpus[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", cpus[i])
        });
        i += 1;
    }
    parts.join(",")
}

/// The CPUs of a hex mask (`3`, `0x3`, `ff,ffffffff`: commas between 32-bit words).
pub fn parse_mask(text: &str) -> Result<Vec<u32>, String> {
    let bad = || format!("'{text}' is not a hex CPU mask; use e.g. '3' for CPUs 0 and 1");
    let digits: String = text
        .trim()
        .trim_start_matches("0x")
        .chars()
        .filter(|c| *c != ',')
        .collect();
    if digits.is_empty() || digits.len() as u32 > MAX_CPUS / 4 {
        return Err(bad());
    }
    let mut out = Vec::new();
    for (n, c) in digits.chars().rev().enumerate() {
        let v = c.to_digit(16).ok_or_else(bad)?;
        out.extend(
            (0..4)
                .filter(|b| v & (1 << b) != 0)
                .map(|b| n as u32 * 4 + b),
        );
    }
    Ok(out)
}

/// A mask as the kernel prints one for `nbits` CPUs: hex digits enough for
/// `nbits`, a comma between 32-bit words (`3` for 2 CPUs, `00000000,00000001`
/// for 64).
pub fn format_mask(cpus: &[u32], nbits: u32) -> String {
    let digits = nbits.max(1).div_ceil(4) as usize;
    let mut hex = String::new();
    for d in (0..digits).rev() {
        let v: u32 = (0..4)
            .filter(|b| cpus.contains(&(d as u32 * 4 + b)))
            .map(|b| 1 << b)
            .sum();
        hex.push(char::from_digit(v, 16).unwrap_or('0'));
        if d > 0 && d % 8 == 0 {
            hex.push(',');
        }
    }
    hex
}

/// Refuses a set that is empty or names a CPU the box does not have.
pub fn check(cpus: &[u32], count: u32, text: &str) -> Result<(), String> {
    match cpus.iter().max() {
        None => Err(format!("'{text}' names no CPU; name at least one")),
        Some(&max) if max >= count => Err(format!(
            "'{text}' names CPU {max}, but this box has CPUs 0-{} only",
            count.saturating_sub(1)
        )),
        Some(_) => Ok(()),
    }
}

/// How many CPU numbers the kernel has (nr_cpu_ids: the highest possible CPU
/// plus one), from sysfs below the root.
pub fn count(root: &Root) -> Result<u32, String> {
    for file in [
        "sys/devices/system/cpu/possible",
        "sys/devices/system/cpu/online",
    ] {
        if let Ok(text) = root.read_value(file) {
            let cpus = parse_list(&text).map_err(|e| format!("'/{file}': {e}"))?;
            return Ok(cpus.iter().max().map_or(1, |m| m + 1));
        }
    }
    Err("cannot read the CPU count ('/sys/devices/system/cpu/possible' is missing)".into())
}

/// Whether a process whose name is `comm` runs (read from /proc below the root).
pub fn running(root: &Root, comm: &str) -> bool {
    root.read_dir("proc").is_ok_and(|pids| {
        pids.iter().filter(|p| p.parse::<u32>().is_ok()).any(|p| {
            root.read_value(&format!("proc/{p}/comm"))
                .is_ok_and(|c| c == comm)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_print_as_the_kernel_does() {
        assert_eq!(parse_list("0-2,5,1").unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(format_list(&[0, 1, 2, 5]), "0-2,5");
        assert_eq!(format_list(&[0, 1]), "0-1");
        assert_eq!(format_list(&[3]), "3");
        assert!(parse_list("2-1").is_err());
        assert!(
            parse_list("a")
                .unwrap_err()
                .contains("'a' is not a CPU list")
        );
        assert!(parse_list("").is_err());
        assert!(parse_list("0-99999").is_err());
    }

    #[test]
    fn masks_parse_and_print_as_the_kernel_does() {
        assert_eq!(parse_mask("3").unwrap(), vec![0, 1]);
        assert_eq!(parse_mask("0x10").unwrap(), vec![4]);
        assert_eq!(parse_mask("1,00000000").unwrap(), vec![32]);
        assert!(parse_mask("g").is_err());
        assert!(parse_mask("").is_err());
        assert_eq!(format_mask(&[0, 1], 2), "3");
        assert_eq!(format_mask(&[], 2), "0");
        assert_eq!(format_mask(&[1], 8), "02");
        assert_eq!(format_mask(&[0, 32], 64), "00000001,00000001");
        assert_eq!(format_mask(&[0], 33), "0,00000001");
    }

    #[test]
    fn sets_are_checked_against_the_cpu_count() {
        assert!(check(&[0, 1], 2, "3").is_ok());
        assert_eq!(
            check(&[2], 2, "4").unwrap_err(),
            "'4' names CPU 2, but this box has CPUs 0-1 only"
        );
        assert!(check(&[], 2, "0").unwrap_err().contains("names no CPU"));
    }

    #[test]
    fn count_reads_possible_cpus() {
        let d = tempfile::tempdir().unwrap();
        let root = Root::tree(d.path()).unwrap();
        assert!(count(&root).is_err());
        std::fs::create_dir_all(d.path().join("sys/devices/system/cpu")).unwrap();
        std::fs::write(d.path().join("sys/devices/system/cpu/possible"), "0-3\n").unwrap();
        assert_eq!(count(&root).unwrap(), 4);
    }
}
