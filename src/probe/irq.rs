//! IRQ placement of each physical NIC: which cores take each queue's
//! interrupts (/proc/interrupts), which cores they may go to
//! (/proc/irq/N/smp_affinity_list), and where receive packet steering sends
//! the softirq work (/sys/class/net/IFACE/queues/rx-*/rps_cpus). On a small
//! box every NIC interrupt landing on CPU0 puts the TCP receive on the core
//! that may also run smbd. A NIC whose interrupts carry no name of its own (a
//! USB NIC behind the USB host controller, virtio) has no queues listed.

use serde::{Deserialize, Serialize};

pub use super::cpu_list::parse_cpu_list;
use super::{Outcome, ParseError};
use crate::root::Root;

const WHAT: &str = "/proc/interrupts";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Irq {
    /// The CPUs /proc/interrupts has a column for (the online ones).
    pub cpus: Vec<u32>,
    pub nics: Vec<NicIrqs>,
    /// Files that were present but unreadable or malformed (left out, not fatal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NicIrqs {
    pub interface: String,
    /// The interrupt lines named after this NIC (one per queue on multi-queue NICs).
    pub queues: Vec<QueueIrq>,
    /// Interrupts of all its lines per CPU, in the order of [`Irq::cpus`].
    pub per_cpu: Vec<u64>,
    /// Receive packet steering per rx queue; empty when the kernel has none.
    pub rps: Vec<Rps>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QueueIrq {
    pub irq: u32,
    /// The handler's name as /proc/interrupts shows it (`eth0`, `enp2s0-TxRx-0`).
    pub action: String,
    /// Interrupts per CPU since boot, in the order of [`Irq::cpus`].
    pub per_cpu: Vec<u64>,
    /// The CPUs that took any of them.
    pub cores_taking: Vec<u32>,
    /// The CPUs it may be delivered to; `None` when the file is missing.
    pub affinity: Option<Vec<u32>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rps {
    /// `rx-0`.
    pub queue: String,
    /// The CPUs receive processing is steered to; empty: RPS off (the
    /// interrupted core does it).
    pub cpus: Vec<u32>,
}

/// One numbered line of /proc/interrupts.
#[derive(Debug, Clone, PartialEq)]
pub struct InterruptLine {
    pub irq: u32,
    pub per_cpu: Vec<u64>,
    /// Everything after the counts: chip, hardware irq, trigger and handlers.
    pub description: String,
}

/// /proc/interrupts: the CPU columns and the numbered lines (the named ones,
/// NMI, LOC, IPI…, are the kernel's own and are left out).
pub fn parse_interrupts(text: &str) -> Result<(Vec<u32>, Vec<InterruptLine>), ParseError> {
    let mut lines = text.lines();
    let header = lines
        .next()
        .ok_or_else(|| ParseError::missing(WHAT, "CPU header"))?;
    let cpus = header
        .split_whitespace()
        .map(|c| {
            c.strip_prefix("CPU")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| ParseError::value(WHAT, header))
        })
        .collect::<Result<Vec<u32>, _>>()?;
    if cpus.is_empty() {
        return Err(ParseError::missing(WHAT, "CPU header"));
    }
    let mut out = Vec::new();
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(irq) = label.trim().parse::<u32>() else {
            continue;
        };
        let mut rest = rest.trim_start();
        let mut per_cpu = Vec::with_capacity(cpus.len());
        for _ in &cpus {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let count = rest[..end]
                .parse::<u64>()
                .map_err(|_| ParseError::value(WHAT, line))?;
            per_cpu.push(count);
            rest = rest[end..].trim_start();
        }
        out.push(InterruptLine {
            irq,
            per_cpu,
            description: rest.trim_end().to_string(),
        });
    }
    Ok((cpus, out))
}

/// Whether an interrupt line's handlers name `iface`: the name itself or a
/// queue of it (`eth0-rx-0`, `enp2s0-TxRx-3`), never another NIC that merely
/// starts the same (`eth0` is not `eth01`).
pub fn names_interface(description: &str, iface: &str) -> Option<String> {
    description
        .split(|c: char| c.is_whitespace() || c == ',')
        .find(|t| {
            *t == iface
                || t.strip_prefix(iface)
                    .is_some_and(|r| r.starts_with('-') || r.starts_with('@'))
        })
        .map(str::to_string)
}

/// A CPU mask as the kernel writes it: hex in 32-bit words separated by
/// commas, most significant first (`00000000,0000000f`).
pub fn parse_cpu_mask(text: &str) -> Result<Vec<u32>, ParseError> {
    let what = "CPU mask";
    let mut out = Vec::new();
    let words: Vec<&str> = text.trim().split(',').collect();
    for (i, w) in words.iter().rev().enumerate() {
        let v = u32::from_str_radix(w, 16).map_err(|_| ParseError::value(what, text.trim()))?;
        out.extend(
            (0..32)
                .filter(|b| v & (1 << b) != 0)
                .map(|b| i as u32 * 32 + b),
        );
    }
    Ok(out)
}

impl Irq {
    /// The one CPU that takes all of `iface`'s interrupts, when there is one.
    pub fn only_core(&self, iface: &str) -> Option<u32> {
        let nic = self.nics.iter().find(|n| n.interface == iface)?;
        let mut taking = self
            .cpus
            .iter()
            .zip(&nic.per_cpu)
            .filter(|(_, n)| **n > 0)
            .map(|(c, _)| *c);
        let first = taking.next()?;
        taking.next().is_none().then_some(first)
    }
}

/// The NIC's share of the interrupt lines (named after the interface, or
/// after its virtio device: `virtio2-input.0`), with each line's affinity.
pub fn nic_irqs(
    iface: &str,
    virtio: Option<&str>,
    cpus: &[u32],
    lines: &[InterruptLine],
    mut affinity: impl FnMut(u32) -> Option<Vec<u32>>,
) -> NicIrqs {
    let queues: Vec<QueueIrq> = lines
        .iter()
        .filter_map(|l| {
            let action = names_interface(&l.description, iface)
                .or_else(|| virtio.and_then(|v| names_interface(&l.description, v)))?;
            Some(QueueIrq {
                irq: l.irq,
                action,
                per_cpu: l.per_cpu.clone(),
                cores_taking: cpus
                    .iter()
                    .zip(&l.per_cpu)
                    .filter(|(_, n)| **n > 0)
                    .map(|(c, _)| *c)
                    .collect(),
                affinity: affinity(l.irq),
            })
        })
        .collect();
    let per_cpu = (0..cpus.len())
        .map(|i| queues.iter().map(|q| q.per_cpu[i]).sum())
        .collect();
    NicIrqs {
        interface: iface.to_string(),
        queues,
        per_cpu,
        rps: Vec::new(),
    }
}

/// Reads the IRQ placement of every physical NIC; no /proc/interrupts is
/// unsupported (a tree captured without it), not an error.
pub fn read_irq(root: &Root) -> Outcome<Irq> {
    let text = match root.read_optional("proc/interrupts") {
        Ok(Some(t)) => t,
        Ok(None) => {
            return Outcome::Unsupported {
                reason: "no /proc/interrupts".into(),
            };
        }
        Err(e) => {
            return Outcome::Failed {
                error: e.to_string(),
            };
        }
    };
    let (cpus, lines) = match parse_interrupts(&text) {
        Ok(v) => v,
        Err(e) => {
            return Outcome::Failed {
                error: e.to_string(),
            };
        }
    };
    let mut problems = Vec::new();
    let mut nics = Vec::new();
    let mut names = root.read_dir_optional("sys/class/net").unwrap_or_default();
    names.sort();
    for name in names.iter().filter(|n| *n != "lo") {
        let dir = format!("sys/class/net/{name}");
        let physical = root.exists(&format!("{dir}/device"))
            && !root
                .read_link(&dir)
                .is_ok_and(|t| t.to_string_lossy().contains("devices/virtual/"));
        if !physical {
            continue;
        }
        let device = root.read_link_name(&format!("{dir}/device")).ok();
        let virtio = device.as_deref().filter(|d| d.starts_with("virtio"));
        let mut nic = nic_irqs(name, virtio, &cpus, &lines, |irq| {
            let rel = format!("proc/irq/{irq}/smp_affinity_list");
            match root
                .read_optional(&rel)
                .map(|t| t.map(|t| parse_cpu_list(&t)))
            {
                Ok(Some(Ok(list))) => Some(list),
                Ok(None) => None,
                Ok(Some(Err(e))) => {
                    problems.push(format!("/{rel}: {e}"));
                    None
                }
                Err(e) => {
                    problems.push(e.to_string());
                    None
                }
            }
        });
        let mut queues = root
            .read_dir_optional(&format!("{dir}/queues"))
            .unwrap_or_default();
        queues.sort();
        for q in queues.iter().filter(|q| q.starts_with("rx-")) {
            let rel = format!("{dir}/queues/{q}/rps_cpus");
            match root.read_optional(&rel) {
                Ok(Some(t)) => match parse_cpu_mask(&t) {
                    Ok(cpus) => nic.rps.push(Rps {
                        queue: q.clone(),
                        cpus,
                    }),
                    Err(e) => problems.push(format!("/{rel}: {e}")),
                },
                Ok(None) => {}
                Err(e) => problems.push(e.to_string()),
            }
        }
        nics.push(nic);
    }
    Outcome::Ok {
        data: Irq {
            cpus,
            nics,
            problems,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Pogoplug v4 (Kirkwood, one core): mv643xx_eth's one line.
    const KIRKWOOD: &str = "           CPU0       \n  1:      20117  orion_irq  1 Level     orion_tick\n 11:    8812734  orion_irq 11 Level     eth0\n 29:       1803  orion_irq 29 Level     ehci_hcd:usb1\nErr:          0\n";

    /// An RK3399 (six cores) with stmmac: every interrupt on CPU0.
    const RK3399: &str = "           CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       \n  1:          0          0          0          0          0          0     GICv3  25 Level     vgic\n 24:   51234567          0          0          0          0          0     GICv3  44 Level     eth0\n 25:         17          0          0          0          0          0     GICv3  45 Level     eth0-wol\nIPI0:     23441      20210      19876      18765      21345      22011       Rescheduling interrupts\nErr:          0\n";

    /// An x86 box with a four-queue igb NIC spread over the cores by irqbalance.
    const X86: &str = "            CPU0       CPU1       CPU2       CPU3       \n   0:         27          0          0          0  IR-IO-APIC    2-edge      timer\n 128:          1          0          0          0  IR-PCI-MSI 1048576-edge      enp2s0\n 129:     204811          0          0          0  IR-PCI-MSI 1048577-edge      enp2s0-TxRx-0\n 130:          0     198230          0          0  IR-PCI-MSI 1048578-edge      enp2s0-TxRx-1\n 131:          0          0     187654          3  IR-PCI-MSI 1048579-edge      enp2s0-TxRx-2\n 132:          0          0          0     176543  IR-PCI-MSI 1048580-edge      enp2s0-TxRx-3\n 140:         12          0          0          0  IR-PCI-MSI 2097152-edge      enp20s0\n NMI:          0          0          0          0   Non-maskable interrupts\n LOC:    1234567    1134567    1034567     934567   Local timer interrupts\n";

    #[test]
    fn arm_one_core_nic_line_is_found() {
        let (cpus, lines) = parse_interrupts(KIRKWOOD).unwrap();
        assert_eq!(cpus, vec![0]);
        assert_eq!(lines.len(), 3, "Err is the kernel's own: {lines:?}");
        let nic = nic_irqs("eth0", None, &cpus, &lines, |_| Some(vec![0]));
        assert_eq!(nic.queues.len(), 1);
        assert_eq!(nic.queues[0].irq, 11);
        assert_eq!(nic.per_cpu, vec![8_812_734]);
        assert_eq!(nic.queues[0].affinity, Some(vec![0]));
    }

    #[test]
    fn arm_six_cores_all_on_cpu0_is_the_only_core() {
        let (cpus, lines) = parse_interrupts(RK3399).unwrap();
        assert_eq!(cpus, vec![0, 1, 2, 3, 4, 5]);
        let nic = nic_irqs("eth0", None, &cpus, &lines, |_| None);
        let actions: Vec<&str> = nic.queues.iter().map(|q| q.action.as_str()).collect();
        assert_eq!(actions, vec!["eth0", "eth0-wol"]);
        assert_eq!(nic.queues[0].cores_taking, vec![0]);
        assert_eq!(nic.per_cpu, vec![51_234_584, 0, 0, 0, 0, 0]);
        let irq = Irq {
            cpus,
            nics: vec![nic],
            problems: vec![],
        };
        assert_eq!(irq.only_core("eth0"), Some(0));
        assert_eq!(irq.only_core("eth1"), None);
    }

    #[test]
    fn x86_queues_spread_over_cores_and_a_similar_name_is_not_taken() {
        let (cpus, lines) = parse_interrupts(X86).unwrap();
        let nic = nic_irqs("enp2s0", None, &cpus, &lines, |_| None);
        // The queue-less first vector plus four queues; enp20s0 is another NIC.
        assert_eq!(nic.queues.len(), 5);
        assert_eq!(nic.queues[3].action, "enp2s0-TxRx-2");
        assert_eq!(nic.queues[3].cores_taking, vec![2, 3]);
        assert_eq!(nic.per_cpu, vec![204_812, 198_230, 187_654, 176_546]);
        let irq = Irq {
            cpus,
            nics: vec![nic],
            problems: vec![],
        };
        assert_eq!(irq.only_core("enp2s0"), None);
    }

    #[test]
    fn a_virtio_nic_is_found_by_its_device_name() {
        let text = "           CPU0       CPU1       \n 24:          0          0   PCI-MSI 49152-edge      virtio2-config\n 25:    1882231     201122   PCI-MSI 49153-edge      virtio2-input.0\n";
        let (cpus, lines) = parse_interrupts(text).unwrap();
        let nic = nic_irqs("eth0", Some("virtio2"), &cpus, &lines, |_| None);
        let actions: Vec<&str> = nic.queues.iter().map(|q| q.action.as_str()).collect();
        assert_eq!(actions, vec!["virtio2-config", "virtio2-input.0"]);
        assert_eq!(nic.per_cpu, vec![1_882_231, 201_122]);
        assert!(
            nic_irqs("eth0", None, &cpus, &lines, |_| None)
                .queues
                .is_empty()
        );
    }

    #[test]
    fn malformed_interrupts_are_errors() {
        assert!(parse_interrupts("").is_err());
        assert!(parse_interrupts("  foo bar\n").is_err());
        assert!(parse_interrupts("   CPU0 CPU1\n 5: 12 x GIC eth0\n").is_err());
    }

    #[test]
    fn cpu_lists_and_masks() {
        assert_eq!(parse_cpu_list("0-3,6\n").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list("2").unwrap(), vec![2]);
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<u32>::new());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert_eq!(parse_cpu_mask("0\n").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpu_mask("e").unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_cpu_mask("00000001,00000003").unwrap(), vec![0, 1, 32]);
        assert!(parse_cpu_mask("xyz").is_err());
    }

    #[test]
    fn a_tree_without_interrupts_is_unsupported_and_one_with_them_reads_rps() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::tree(dir.path()).unwrap();
        assert_eq!(read_irq(&root).status(), "unsupported");
        let p = dir.path();
        std::fs::create_dir_all(p.join("proc/irq/24")).unwrap();
        std::fs::write(p.join("proc/interrupts"), RK3399).unwrap();
        std::fs::write(p.join("proc/irq/24/smp_affinity_list"), "0-5\n").unwrap();
        let q = p.join("sys/class/net/eth0/queues/rx-0");
        std::fs::create_dir_all(&q).unwrap();
        std::fs::create_dir_all(p.join("sys/class/net/eth0/device")).unwrap();
        std::fs::write(q.join("rps_cpus"), "3e\n").unwrap();
        let irq = read_irq(&root);
        let irq = irq.data().expect("ok");
        assert_eq!(irq.nics.len(), 1);
        let nic = &irq.nics[0];
        assert_eq!(nic.queues[0].affinity, Some(vec![0, 1, 2, 3, 4, 5]));
        assert_eq!(nic.queues[1].affinity, None);
        assert_eq!(nic.rps[0].cpus, vec![1, 2, 3, 4, 5]);
        assert!(irq.problems.is_empty(), "{:?}", irq.problems);
    }
}
