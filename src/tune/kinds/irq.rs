//! IRQ affinity: `irq:N=CPULIST` sets /proc/irq/N/smp_affinity_list;
//! `irq:IFACE=CPULIST` sets it for every IRQ of the interface (each queue's
//! MSI-X vector, or the lines /proc/interrupts names after it). A runtime
//! value, journaled like any other, written as the kernel prints it back.
//!
//! Persisted by nastune's systemd oneshot unit ([`crate::tune::boot_unit`]
//! says why a unit and not a udev rule), which finds an interface's IRQs anew
//! at every boot. irqbalance, when it runs, rewrites affinities every 10 s, so
//! it is warned about.

use super::ChangeKind;
use crate::advise::Change;
use crate::root::Root;
use crate::tune::boot_unit;
use crate::tune::cpuset;
use crate::tune::export::Tuned;
use crate::tune::plan::{Persist, PlanItem, read_text};

pub struct IrqAffinity<'a> {
    pub irq: &'a str,
    pub cpus: &'a str,
}

/// `--set irq:N=CPULIST` or `irq:IFACE=CPULIST`.
pub fn parse_set(irq: &str, cpus: String) -> Option<Change> {
    let plain = !irq.is_empty()
        && irq
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    plain.then(|| Change::IrqAffinity {
        irq: irq.to_string(),
        cpus,
    })
}

/// The IRQs /proc/interrupts names after `interface` (or its device, as
/// virtio names its vectors `virtio2-input.0`): a last column of `eth0`,
/// `eth0-rx-0`, `eth0-TxRx-1`; a device's configuration vector is not one
/// that carries packets and is left out.
pub fn irqs_named(interrupts: &str, interface: &str) -> Vec<u32> {
    interrupts
        .lines()
        .filter_map(|l| {
            let (irq, rest) = l.trim_start().split_once(':')?;
            let irq: u32 = irq.parse().ok()?;
            let name = rest.split_whitespace().last()?;
            let ours = name == interface
                || name
                    .strip_prefix(interface)
                    .is_some_and(|r| r.starts_with('-') || r.starts_with('@'));
            (ours && !name.ends_with("-config")).then_some(irq)
        })
        .collect()
}

/// The IRQs of an interface: its device's MSI/MSI-X vectors, else the lines of
/// /proc/interrupts named after it (SoC NICs without MSI).
fn irqs_of(root: &Root, interface: &str) -> Result<Vec<u32>, String> {
    let msi = format!("sys/class/net/{interface}/device/msi_irqs");
    let mut irqs: Vec<u32> = root
        .read_dir_optional(&msi)
        .map_err(|e| e.to_string())?
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    if irqs.is_empty() {
        let interrupts = read_text(root, "proc/interrupts")?.unwrap_or_default();
        irqs = irqs_named(&interrupts, interface);
        if irqs.is_empty()
            && let Ok(device) = root.read_link_name(&format!("sys/class/net/{interface}/device"))
        {
            irqs = irqs_named(&interrupts, &device);
        }
    }
    irqs.sort();
    if irqs.is_empty() {
        return Err(format!(
            "'{interface}' has no IRQ of its own here (no MSI vectors, no line named after it in /proc/interrupts); give an IRQ number from /proc/interrupts"
        ));
    }
    Ok(irqs)
}

impl ChangeKind for IrqAffinity<'_> {
    fn setting(&self) -> String {
        format!("irq:{}", self.irq)
    }

    fn describe(&self) -> String {
        match self.irq.parse::<u32>() {
            Ok(n) => format!("echo '{}' > /proc/irq/{n}/smp_affinity_list", self.cpus),
            Err(_) => format!(
                "echo '{}' > /proc/irq/N/smp_affinity_list for every IRQ of {}",
                self.cpus, self.irq
            ),
        }
    }

    fn plan(&self, root: &Root, item: &mut PlanItem) -> Result<(), String> {
        let irqs = match self.irq.parse::<u32>() {
            Ok(n) => vec![n],
            Err(_) => irqs_of(root, self.irq)?,
        };
        let cpus = cpuset::parse_list(self.cpus)?;
        cpuset::check(&cpus, cpuset::count(root)?, self.cpus)?;
        let new = cpuset::format_list(&cpus);
        let mut olds = Vec::new();
        for irq in &irqs {
            let rel = format!("proc/irq/{irq}/smp_affinity_list");
            let current = read_text(root, &rel)?
                .ok_or_else(|| format!("'/{rel}' does not exist: no IRQ {irq} here"))?;
            let current = current.trim();
            olds.push(format!("{irq}: {current}"));
            if current != new {
                item.runtime.push((rel, Some(new.clone())));
            }
        }
        item.old = Some(match olds.as_slice() {
            [one] => one
                .split_once(": ")
                .map_or(one.clone(), |(_, v)| v.to_string()),
            _ => olds.join(", "),
        });
        item.new = Some(new.clone());
        if item.runtime.is_empty() {
            item.in_place = true;
            return Err(format!("already '{new}'"));
        }
        // Moving a NIC's interrupts can stall it on a broken platform: keep
        // the interface form behind the dead-man timer like other net changes.
        item.network = self.irq.parse::<u32>().is_err();
        item.persisted_in = Some(format!("/{}", boot_unit::UNIT_FILE));
        item.persist = Persist::Boot(boot_unit::Affinity {
            irq: self.irq.to_string(),
            cpus: new.clone(),
        });
        if self.irq.parse::<u32>().is_ok() {
            item.warnings.push(format!(
                "IRQ numbers can change between boots: the unit sets IRQ {} whatever it serves then; \
                 'irq:IFACE' follows a NIC's IRQs",
                self.irq
            ));
        }
        if cpuset::running(root, "irqbalance") {
            item.warnings.push(format!(
                "irqbalance runs and rewrites IRQ affinity every 10 s, so it will override this: \
                 ban the IRQs ('--banirq={}' in IRQBALANCE_ARGS of /etc/default/irqbalance) or stop irqbalance",
                irqs.first().copied().unwrap_or_default()
            ));
        }
        Ok(())
    }

    fn as_applied(&self, new: &str) -> Option<Change> {
        Some(Change::IrqAffinity {
            irq: self.irq.to_string(),
            cpus: new.to_string(),
        })
    }

    fn export_fields(&self) -> Vec<(&'static str, &str, bool)> {
        vec![("irq", self.irq, true), ("cpus", self.cpus, true)]
    }

    /// TuneD's [irq] plugin moves every IRQ away from CPUs; it cannot pin one
    /// IRQ to a list, and its [script] would need a script file beside the
    /// profile: left as a comment.
    fn tuned(&self, _profile: &mut Tuned) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS: &str = "           CPU0       CPU1
  16:          0          0   IO-APIC   16-fasteoi   i801_smbus
  29:     123456          0   PCI-MSI 524288-edge      eth0
  30:       1000          0   PCI-MSI 524289-edge      eth0-rx-0
  31:       1000          0   PCI-MSI 524290-edge      eth0-tx-0
  32:          5          0   PCI-MSI 524291-edge      eth10
  37:          0          0   PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
  38:         10          0   PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
  39:          9          0   PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
 NMI:          0          0   Non-maskable interrupts
";

    #[test]
    fn interrupts_are_found_by_the_interface_name() {
        assert_eq!(irqs_named(INTERRUPTS, "eth0"), vec![29, 30, 31]);
        assert_eq!(irqs_named(INTERRUPTS, "eth10"), vec![32]);
        assert!(irqs_named(INTERRUPTS, "eth1").is_empty());
        assert_eq!(irqs_named(INTERRUPTS, "virtio2"), vec![38, 39]);
        assert!(irqs_named("garbage\n:\n", "eth0").is_empty());
    }

    #[test]
    fn set_syntax() {
        assert_eq!(
            parse_set("29", "0-1".into()),
            Some(Change::IrqAffinity {
                irq: "29".into(),
                cpus: "0-1".into(),
            })
        );
        assert!(parse_set("eth0", "1".into()).is_some());
        assert_eq!(parse_set("../x", "1".into()), None);
        assert_eq!(parse_set("", "1".into()), None);
    }
}
