//! Persistence of IRQ affinity: a systemd oneshot unit owned by nastune, run at
//! every boot once the network is up, with one `ExecStart=` per IRQ affinity.
//!
//! Why a unit and not a udev rule: IRQ numbers are handed out at boot, and
//! most NIC drivers request their MSI-X vectors at link up, after the device's
//! udev `add` event, so a rule would run before the IRQs exist. The unit runs
//! after network-online.target and finds an interface's IRQs anew each boot.
//! It is pulled in by a drop-in of multi-user.target (`Wants=`), a plain file:
//! enabling it would need a symlink, which nastune's journal does not write.

use crate::tune::sysctl_d::NotOurs;

/// The unit nastune owns, relative to the root.
pub const UNIT_FILE: &str = "etc/systemd/system/nastune-irq-affinity.service";
/// The drop-in that makes multi-user.target want the unit.
pub const WANTS_FILE: &str = "etc/systemd/system/multi-user.target.d/nastune-irq-affinity.conf";

const HEADER: &str = "# Written by nastune ('nastune tune apply'); owned by nastune.\n\
# Undo with 'nastune tune rollback'.\n";

const UNIT_HEAD: &str = "[Unit]\n\
Description=IRQ affinity set by nastune\n\
Wants=network-online.target\n\
After=network-online.target\n\
\n\
[Service]\n\
Type=oneshot\n";

/// The drop-in's whole text.
pub fn wants() -> String {
    format!("{HEADER}[Unit]\nWants=nastune-irq-affinity.service\n")
}

/// One IRQ affinity to set at boot: an IRQ number or an interface, and the
/// CPU list (both checked by the plan: no blank, quote or shell character).
#[derive(Debug, Clone, PartialEq)]
pub struct Affinity {
    pub irq: String,
    pub cpus: String,
}

impl Affinity {
    /// The comment line that names what the next `ExecStart=` sets.
    fn identity(&self) -> String {
        format!("# irq:{}", self.irq)
    }

    /// The `ExecStart=` line (`-`: a missing IRQ does not fail the boot;
    /// `$$` is systemd's escape for the shell's `$`). An interface's IRQs are
    /// found as the plan found them: its MSI vectors, else the lines of
    /// /proc/interrupts named after it or its device (`virtio2-input.0`),
    /// configuration vectors left out.
    fn exec(&self) -> String {
        let (irq, cpus) = (&self.irq, &self.cpus);
        let set = |n: &str| format!("echo {cpus} > /proc/irq/{n}/smp_affinity_list");
        if irq.parse::<u32>().is_ok() {
            return format!("ExecStart=-/bin/sh -c '{}'", set(irq));
        }
        format!(
            "ExecStart=-/bin/sh -c 'for d in /sys/class/net/{irq}/device/msi_irqs/*; do \
             [ -e \"$$d\" ] && {}; done; \
             grep -E \" ({irq}|$$(basename $$(readlink /sys/class/net/{irq}/device || echo {irq})))([-@][^ ]*)?$$\" \
             /proc/interrupts | grep -v -- -config$$ | cut -d: -f1 | \
             while read -r i; do {}; done; true'",
            set("$${d##*/}"),
            set("$$i")
        )
    }
}

/// The unit with `set` merged in: an IRQ already there takes the new CPU list
/// where it stands, new ones are appended.
pub fn render(existing: Option<&str>, set: &[Affinity]) -> Result<String, NotOurs> {
    // (identity line, ExecStart line) pairs, in file order.
    let mut entries: Vec<(String, String)> = Vec::new();
    if let Some(text) = existing {
        if !text.starts_with(HEADER.lines().next().unwrap_or_default()) {
            return Err(NotOurs(UNIT_FILE.to_string()));
        }
        let mut lines = text.lines().peekable();
        while let Some(l) = lines.next() {
            if l.starts_with("# irq:")
                && let Some(exec) = lines.next_if(|n| n.starts_with("ExecStart="))
            {
                entries.push((l.to_string(), exec.to_string()));
            }
        }
    }
    for a in set {
        let (id, exec) = (a.identity(), a.exec());
        match entries.iter_mut().find(|(i, _)| *i == id) {
            Some(e) => e.1 = exec,
            None => entries.push((id, exec)),
        }
    }
    let mut out = format!("{HEADER}{UNIT_HEAD}");
    for (id, exec) in entries {
        out.push_str(&format!("{id}\n{exec}\n"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(irq: &str, cpus: &str) -> Affinity {
        Affinity {
            irq: irq.into(),
            cpus: cpus.into(),
        }
    }

    #[test]
    fn renders_one_exec_per_irq_and_replaces_in_place() {
        let one = render(None, &[a("29", "1"), a("eth0", "0-1")]).unwrap();
        assert!(one.starts_with(HEADER));
        assert!(one.contains(
            "# irq:29\nExecStart=-/bin/sh -c 'echo 1 > /proc/irq/29/smp_affinity_list'\n"
        ));
        assert!(one.contains("for d in /sys/class/net/eth0/device/msi_irqs/*; do [ -e \"$$d\" ] && echo 0-1 > /proc/irq/$${d##*/}/smp_affinity_list; done;"), "{one}");
        let two = render(Some(&one), &[a("29", "2"), a("30", "3")]).unwrap();
        let ids: Vec<&str> = two.lines().filter(|l| l.starts_with("# irq:")).collect();
        assert_eq!(ids, ["# irq:29", "# irq:eth0", "# irq:30"]);
        assert!(two.contains("echo 2 > /proc/irq/29/"));
        assert!(!two.contains("echo 1 > /proc/irq/29/"));
        assert!(render(Some("[Unit]\n"), &[]).is_err());
        assert!(wants().ends_with("[Unit]\nWants=nastune-irq-affinity.service\n"));
    }

    /// The interface script, with systemd's `$$` undone, finds the IRQs that
    /// /proc/interrupts names after the interface (the grep half), and only those.
    #[test]
    fn the_interface_script_matches_named_interrupt_lines() {
        if std::process::Command::new("sh")
            .arg("-c")
            .arg("true")
            .status()
            .is_err()
        {
            println!("SKIP: no sh");
            return;
        }
        // Both forms are valid shell once systemd has undone `$$`.
        for form in [a("29", "1"), a("nt0", "0-1")] {
            let exec = form.exec().replace("$$", "$");
            let script = exec
                .strip_prefix("ExecStart=-/bin/sh -c '")
                .and_then(|s| s.strip_suffix('\''))
                .unwrap();
            let ok = std::process::Command::new("sh")
                .args(["-n", "-c", script])
                .status()
                .unwrap();
            assert!(ok.success(), "{script}");
        }
        // An interface no host has: the device name falls back to it.
        let exec = a("nt0", "1").exec();
        let grep = exec
            .split("; ")
            .find(|p| p.starts_with("grep"))
            .unwrap()
            .split(" | cut")
            .next()
            .unwrap()
            .replace("$$", "$")
            .replace("/proc/interrupts", "-");
        let input = "  29:  1  PCI-MSI  nt0\n  30:  1  PCI-MSI  nt0-rx-0\n  31:  1  PCI-MSI  nt10\n  32:  1  x  nt0@pci\n  33:  1  x  nt0-config\n";
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{grep} | cut -d: -f1"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let irqs: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        assert_eq!(irqs, ["29", "30", "32"]);
    }
}
