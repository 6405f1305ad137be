//! Values are checked before anything is written: the key or attribute must
//! exist on this kernel, a choice (`[mq-deadline] none`) must be one the kernel
//! lists, numbers must fit the kernel's range and type (bpftune once wrote a
//! negative tcp_rmem; INT_MAX is a hard ceiling for `int` sysctls).

use super::action::selected_value;
use crate::probe::kernel_config::{Availability, KernelConfig, KernelOption};

/// Kernel `int` ceiling.
const INT_MAX: u64 = i32::MAX as u64;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("'{value}' is not valid for '{setting}': {reason}")]
pub struct Invalid {
    pub setting: String,
    pub value: String,
    pub reason: String,
}

/// Inclusive bounds per field for keys whose range the kernel documents.
fn known_range(name: &str) -> Option<(u64, u64)> {
    Some(match name {
        "vm.swappiness" => (0, 200),
        "vm.dirty_ratio" | "vm.dirty_background_ratio" => (0, 100),
        // The kernel's minimum is two pages; 0 is refused (set the ratio instead).
        "vm.dirty_bytes" | "vm.dirty_background_bytes" => (8192, u64::MAX),
        "net.ipv4.tcp_timestamps" => (0, 2),
        "net.ipv4.tcp_sack"
        | "net.ipv4.tcp_window_scaling"
        | "net.ipv4.tcp_slow_start_after_idle"
        | "net.ipv4.tcp_no_metrics_save" => (0, 1),
        "net.ipv4.tcp_mtu_probing" => (0, 2),
        "net.core.netdev_max_backlog" | "net.core.netdev_budget" | "net.core.somaxconn" => {
            (1, INT_MAX)
        }
        "net.ipv4.tcp_rmem" | "net.ipv4.tcp_wmem" => (1, INT_MAX),
        // tcp_mem is in pages and `long`.
        "net.ipv4.tcp_mem" => (1, u64::MAX),
        "vm.overcommit_memory" => (0, 2),
        // Attributes (by their name under the device directory).
        "queue/read_ahead_kb" => (0, 65536),
        "queue/nr_requests" => (4, 65536),
        "md/stripe_cache_size" => (17, 32768),
        "tx_queue_len" => (0, 100_000),
        "mtu" => (68, 65535),
        _ => return None,
    })
}

/// Keys whose fields must not decrease (min ≤ default ≤ max, or low ≤ pressure ≤ high).
fn ordered(name: &str) -> bool {
    matches!(
        name,
        "net.ipv4.tcp_rmem" | "net.ipv4.tcp_wmem" | "net.ipv4.tcp_mem"
    )
}

/// Checks `value` for the setting `name` (a sysctl key or an attribute path such
/// as `queue/scheduler`) against what the kernel reads now (`current`), and
/// returns the value normalised (whitespace runs become one space).
/// `choices` are extra allowed names read elsewhere (available congestion controls).
pub fn check(
    setting: &str,
    name: &str,
    value: &str,
    current: &str,
    choices: Option<&[String]>,
) -> Result<String, Invalid> {
    let bad = |reason: String| Invalid {
        setting: setting.to_string(),
        value: value.to_string(),
        reason,
    };
    let normal = value.split_whitespace().collect::<Vec<_>>().join(" ");
    if normal.is_empty() {
        return Err(bad("the value is empty".into()));
    }
    if value
        .chars()
        .any(|c| c.is_control() && c != '\t' && c != ' ')
    {
        return Err(bad("the value has control characters".into()));
    }
    // md, dm and loop-without-queue devices read a bare "none": nothing to choose.
    if name.ends_with("scheduler") && !current.contains('[') {
        return Err(bad(format!(
            "this device has no I/O scheduler to choose (it reads '{}'); set it on the member disks",
            current.trim()
        )));
    }
    // A choice list: only what the kernel lists (scheduler names).
    if current.contains('[') {
        let names: Vec<&str> = current
            .split_whitespace()
            .map(|t| t.trim_start_matches('[').trim_end_matches(']'))
            .collect();
        if !names.contains(&normal.as_str()) {
            return Err(bad(format!("this kernel offers only {}", names.join(", "))));
        }
        return Ok(normal);
    }
    if let Some(choices) = choices
        && !choices.iter().any(|c| c == &normal)
    {
        return Err(bad(format!(
            "this kernel offers only {}",
            choices.join(", ")
        )));
    }
    let current = selected_value(current);
    let cur_fields: Vec<&str> = current.split(' ').filter(|s| !s.is_empty()).collect();
    let numeric_now = !cur_fields.is_empty()
        && cur_fields
            .iter()
            .all(|f| f.trim_start_matches('-').parse::<u64>().is_ok());
    if !numeric_now {
        if normal
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.:".contains(c))
        {
            return Ok(normal);
        }
        return Err(bad(
            "names hold only letters, digits, '_', '-', '.' and ':'".into(),
        ));
    }
    let fields: Vec<&str> = normal.split(' ').collect();
    if fields.len() != cur_fields.len() {
        return Err(bad(format!(
            "the kernel has {} field(s) here ('{current}'), the value has {}",
            cur_fields.len(),
            fields.len()
        )));
    }
    let mut numbers = Vec::with_capacity(fields.len());
    for f in &fields {
        let n: u64 = f
            .parse()
            .map_err(|_| bad(format!("'{f}' is not a non-negative whole number")))?;
        numbers.push(n);
    }
    let (lo, hi) = known_range(name).unwrap_or((0, INT_MAX));
    if let Some(n) = numbers.iter().find(|n| **n < lo || **n > hi) {
        return Err(bad(format!("{n} is outside {lo}..={hi}")));
    }
    if ordered(name) && numbers.windows(2).any(|w| w[0] > w[1]) {
        return Err(bad(
            "the fields must not decrease (min, default, max)".into()
        ));
    }
    Ok(normal)
}

/// The kernel option behind a value of `name` (a qdisc kind for
/// `net.core.default_qdisc` or a root qdisc, a congestion control), if we track it.
fn kernel_option(name: &str, value: &str) -> Option<KernelOption> {
    match name {
        "net.core.default_qdisc" | "qdisc" => KernelOption::for_qdisc(value),
        "net.ipv4.tcp_congestion_control" => KernelOption::for_congestion_control(value),
        _ => None,
    }
}

/// Refuses a qdisc or congestion control that the kernel's build leaves out: the
/// write would fail half-way through an apply. A module (=m) passes: naming it in
/// the setting makes the kernel load it. Unknown (no config readable) passes too;
/// the write is then the check.
pub fn check_in_kernel(
    setting: &str,
    name: &str,
    value: &str,
    config: &KernelConfig,
) -> Result<(), Invalid> {
    let Some(option) = kernel_option(name, value.trim()) else {
        return Ok(());
    };
    if config.get(option) != Availability::Absent {
        return Ok(());
    }
    let alternatives: Vec<&str> = ["fq_codel", "fq", "cake"]
        .into_iter()
        .filter(|k| {
            kernel_option(name, k)
                .is_some_and(|o| o != option && config.get(o).usable() == Some(true))
        })
        .collect();
    Err(Invalid {
        setting: setting.to_string(),
        value: value.to_string(),
        reason: format!(
            "this kernel has no {value}: {} is not set in '{}'; {}",
            option.config_name(),
            config.path.as_deref().unwrap_or("its config"),
            if alternatives.is_empty() {
                format!(
                    "it needs a kernel built with {}=m (or =y)",
                    option.config_name()
                )
            } else {
                format!("use one it has: {}", alternatives.join(", "))
            }
        ),
    })
}

/// Whether `value` of `name` is a module the kernel would load when the setting
/// names it, although no live list shows it yet (tcp_available_congestion_control
/// lists only loaded congestion controls).
pub fn loadable(name: &str, value: &str, config: &KernelConfig) -> bool {
    kernel_option(name, value.trim()).is_some_and(|o| config.get(o) == Availability::Module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_good_values_normalised() {
        assert_eq!(
            check("s", "vm.swappiness", "10", "60\n", None).unwrap(),
            "10"
        );
        assert_eq!(
            check(
                "s",
                "net.ipv4.tcp_rmem",
                "4096  87380\t6291456",
                "4096\t131072\t6291456\n",
                None
            )
            .unwrap(),
            "4096 87380 6291456"
        );
        assert_eq!(
            check("s", "queue/scheduler", "none", "[mq-deadline] none\n", None).unwrap(),
            "none"
        );
        assert_eq!(
            check(
                "s",
                "net.core.default_qdisc",
                "fq_codel",
                "pfifo_fast\n",
                None
            )
            .unwrap(),
            "fq_codel"
        );
    }

    #[test]
    fn refuses_what_the_kernel_would_reject() {
        let e = check(
            "s",
            "queue/scheduler",
            "deadline",
            "[mq-deadline] none\n",
            None,
        )
        .unwrap_err();
        assert!(e.reason.contains("mq-deadline, none"), "{e}");
        assert!(e.to_string().starts_with("'deadline' is not valid for 's'"));
        let md = check("s", "queue/scheduler", "none", "none\n", None).unwrap_err();
        assert!(md.reason.contains("no I/O scheduler"), "{md}");
        assert!(check("s", "vm.swappiness", "201", "60", None).is_err());
        assert!(check("s", "vm.swappiness", "-1", "60", None).is_err());
        assert!(check("s", "vm.swappiness", "ten", "60", None).is_err());
        assert!(check("s", "net.core.rmem_max", "4294967296", "212992", None).is_err());
        assert!(check("s", "net.ipv4.tcp_rmem", "4096 87380", "4096 1 2", None).is_err());
        assert!(check("s", "net.ipv4.tcp_rmem", "9 8 7", "4096 1 2", None).is_err());
        assert!(check("s", "vm.dirty_bytes", "0", "0", None).is_err());
        assert!(check("s", "md/stripe_cache_size", "65536", "256", None).is_err());
        assert!(check("s", "vm.swappiness", "", "60", None).is_err());
        assert!(
            check(
                "s",
                "net.core.default_qdisc",
                "fq codel;",
                "pfifo_fast",
                None
            )
            .is_err()
        );
        let cc = ["reno".to_string(), "cubic".to_string()];
        assert!(check("s", "x", "bbr", "cubic", Some(&cc)).is_err());
        assert!(check("s", "x", "reno", "cubic", Some(&cc)).is_ok());
    }

    fn config(options: &[(KernelOption, Availability)]) -> KernelConfig {
        KernelConfig {
            source: crate::probe::kernel_config::ConfigSource::ProcConfigGz,
            path: Some("/proc/config.gz".into()),
            options: options.iter().copied().collect(),
            problems: Vec::new(),
        }
    }

    #[test]
    fn a_qdisc_or_congestion_control_the_kernel_lacks_is_refused() {
        use Availability::*;
        use KernelOption::*;
        let k = config(&[
            (NetSchFqCodel, Absent),
            (NetSchFq, Module),
            (NetSchCake, Absent),
            (TcpCongBbr, Module),
        ]);
        let e = check_in_kernel("s", "net.core.default_qdisc", "fq_codel", &k).unwrap_err();
        assert_eq!(
            e.to_string(),
            "'fq_codel' is not valid for 's': this kernel has no fq_codel: \
             CONFIG_NET_SCH_FQ_CODEL is not set in '/proc/config.gz'; use one it has: fq"
        );
        let e = check_in_kernel("tc:eth0:qdisc", "qdisc", "cake", &k).unwrap_err();
        assert!(e.reason.contains("use one it has: fq"), "{e}");
        // A module passes, and so do names we do not track and unknown kernels.
        assert!(check_in_kernel("s", "net.core.default_qdisc", "fq", &k).is_ok());
        assert!(check_in_kernel("s", "net.core.default_qdisc", "pfifo_fast", &k).is_ok());
        assert!(check_in_kernel("s", "vm.swappiness", "fq_codel", &k).is_ok());
        let unknown = config(&[]);
        assert!(check_in_kernel("s", "net.core.default_qdisc", "fq_codel", &unknown).is_ok());
        // Nothing else fair: say what kernel it takes.
        let none = config(&[
            (NetSchFqCodel, Absent),
            (NetSchFq, Absent),
            (NetSchCake, Absent),
        ]);
        let e = check_in_kernel("s", "qdisc", "fq_codel", &none).unwrap_err();
        assert!(
            e.reason.ends_with("CONFIG_NET_SCH_FQ_CODEL=m (or =y)"),
            "{e}"
        );
        // bbr as a module is a choice although tcp_available_congestion_control lacks it.
        let cc = "net.ipv4.tcp_congestion_control";
        assert!(loadable(cc, "bbr", &k));
        assert!(
            !loadable(cc, "bbr", &config(&[(TcpCongBbr, Builtin)])),
            "built in is listed"
        );
        let e = check_in_kernel("s", cc, "bbr", &config(&[(TcpCongBbr, Absent)])).unwrap_err();
        assert!(e.reason.contains("CONFIG_TCP_CONG_BBR is not set"), "{e}");
    }
}
