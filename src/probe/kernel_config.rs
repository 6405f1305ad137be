//! Which kernel features the rules recommend are in this kernel: built in, a
//! module (loadable on demand: setting net.core.default_qdisc or a congestion
//! control loads it), or absent. The live lists (tcp_available_congestion_control)
//! name only what is loaded, so the kernel's build configuration is the answer,
//! read from the first that exists of /boot/config-RELEASE, /proc/config.gz, and
//! /lib/modules/RELEASE/modules.builtin plus the module files. Only the options
//! the rules need are kept.

use serde::{Deserialize, Serialize};

use super::gunzip::{self, MAX_OUTPUT_BYTES};
use super::{Outcome, ParseError};
use crate::root::{MAX_FILE_BYTES, ReadError, Root};

/// A kernel build option a rule depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelOption {
    NetSchFqCodel,
    NetSchFq,
    NetSchCake,
    TcpCongBbr,
}

impl KernelOption {
    pub const ALL: [KernelOption; 4] = [
        KernelOption::NetSchFqCodel,
        KernelOption::NetSchFq,
        KernelOption::NetSchCake,
        KernelOption::TcpCongBbr,
    ];

    /// The name in a kernel config, `CONFIG_…`.
    pub fn config_name(self) -> &'static str {
        match self {
            KernelOption::NetSchFqCodel => "CONFIG_NET_SCH_FQ_CODEL",
            KernelOption::NetSchFq => "CONFIG_NET_SCH_FQ",
            KernelOption::NetSchCake => "CONFIG_NET_SCH_CAKE",
            KernelOption::TcpCongBbr => "CONFIG_TCP_CONG_BBR",
        }
    }

    /// The module's path below /lib/modules/RELEASE, without the `.ko` suffix.
    pub fn module_path(self) -> &'static str {
        match self {
            KernelOption::NetSchFqCodel => "kernel/net/sched/sch_fq_codel",
            KernelOption::NetSchFq => "kernel/net/sched/sch_fq",
            KernelOption::NetSchCake => "kernel/net/sched/sch_cake",
            KernelOption::TcpCongBbr => "kernel/net/ipv4/tcp_bbr",
        }
    }

    /// The module's name, for `modprobe -n -v NAME`.
    pub fn module(self) -> &'static str {
        self.module_path().rsplit('/').next().unwrap_or_default()
    }

    /// The option behind a qdisc kind (`net.core.default_qdisc`, `tc … root KIND`).
    pub fn for_qdisc(kind: &str) -> Option<Self> {
        match kind {
            "fq_codel" => Some(KernelOption::NetSchFqCodel),
            "fq" => Some(KernelOption::NetSchFq),
            "cake" => Some(KernelOption::NetSchCake),
            _ => None,
        }
    }

    /// The option behind a congestion control (`net.ipv4.tcp_congestion_control`).
    pub fn for_congestion_control(name: &str) -> Option<Self> {
        match name {
            "bbr" => Some(KernelOption::TcpCongBbr),
            _ => None,
        }
    }
}

/// Whether the kernel has an option.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Availability {
    Builtin,
    /// Built as a module: the kernel loads it when the setting names it.
    Module,
    Absent,
    /// No configuration could be read; see [`KernelConfig::problems`].
    #[default]
    Unknown,
}

impl Availability {
    /// `Some(true)` when a setting naming it can be applied, `None` when unknown.
    pub fn usable(self) -> Option<bool> {
        match self {
            Availability::Builtin | Availability::Module => Some(true),
            Availability::Absent => Some(false),
            Availability::Unknown => None,
        }
    }

    /// The option's value as evidence shows it: `y`, `m`, `not set`.
    pub fn describe(self) -> &'static str {
        match self {
            Availability::Builtin => "y (built in)",
            Availability::Module => "m (a module, loaded on demand)",
            Availability::Absent => "not set (not in this kernel)",
            Availability::Unknown => "unknown (no kernel config could be read)",
        }
    }
}

/// Where the answers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigSource {
    BootConfig,
    ProcConfigGz,
    ModulesBuiltin,
    Unknown,
}

/// Each option the rules need, by its config name. A struct, not a map keyed by
/// option: every option a rule reads is then a field the compiler checks. An
/// option a snapshot lacks (stored before it was tracked) reads back unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Options {
    #[serde(rename = "CONFIG_NET_SCH_FQ_CODEL")]
    pub net_sch_fq_codel: Availability,
    #[serde(rename = "CONFIG_NET_SCH_FQ")]
    pub net_sch_fq: Availability,
    #[serde(rename = "CONFIG_NET_SCH_CAKE")]
    pub net_sch_cake: Availability,
    #[serde(rename = "CONFIG_TCP_CONG_BBR")]
    pub tcp_cong_bbr: Availability,
}

impl Options {
    /// Every option in the same state.
    pub fn all(a: Availability) -> Self {
        Options {
            net_sch_fq_codel: a,
            net_sch_fq: a,
            net_sch_cake: a,
            tcp_cong_bbr: a,
        }
    }

    fn slot(&mut self, o: KernelOption) -> &mut Availability {
        match o {
            KernelOption::NetSchFqCodel => &mut self.net_sch_fq_codel,
            KernelOption::NetSchFq => &mut self.net_sch_fq,
            KernelOption::NetSchCake => &mut self.net_sch_cake,
            KernelOption::TcpCongBbr => &mut self.tcp_cong_bbr,
        }
    }

    pub fn get(mut self, o: KernelOption) -> Availability {
        *self.slot(o)
    }

    pub fn set(&mut self, o: KernelOption, a: Availability) {
        *self.slot(o) = a;
    }
}

/// The options named, the others unknown.
impl FromIterator<(KernelOption, Availability)> for Options {
    fn from_iter<I: IntoIterator<Item = (KernelOption, Availability)>>(iter: I) -> Self {
        let mut all = Options::default();
        for (o, a) in iter {
            all.set(o, a);
        }
        all
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelConfig {
    pub source: ConfigSource,
    /// The file the answers came from (none when unknown).
    pub path: Option<String>,
    pub options: Options,
    /// Why a place that exists could not be used (a corrupt /proc/config.gz).
    pub problems: Vec<String>,
}

impl KernelConfig {
    pub fn get(&self, o: KernelOption) -> Availability {
        self.options.get(o)
    }
}

/// The config of the kernel `root` runs (its `osrelease`), or None without one.
pub fn read_running(root: &Root) -> Option<KernelConfig> {
    let release = root.read_value("proc/sys/kernel/osrelease").ok()?;
    Some(read_kernel_config(root, &release))
}

/// What a snapshot says about `o`; unknown when the section is missing or failed.
pub fn availability(section: &Outcome<KernelConfig>, o: KernelOption) -> Availability {
    section.data().map_or(Availability::Unknown, |k| k.get(o))
}

#[derive(Debug, thiserror::Error)]
enum SourceError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("'{path}': {cause}")]
    Gzip {
        path: String,
        cause: gunzip::GunzipError,
    },
    #[error(transparent)]
    Parse(#[from] ParseError),
}

/// Reads one place's text: plain or gzip.
type ReadText = fn(&Root, &str) -> Result<String, SourceError>;

/// Reads the options for the kernel `release` (`uname -r`). Never fails: what
/// cannot be read is in `problems` and the options are then unknown.
pub fn read_kernel_config(root: &Root, release: &str) -> KernelConfig {
    let mut problems = Vec::new();
    let boot = format!("boot/config-{release}");
    let sources: [(ConfigSource, &str, ReadText); 2] = [
        (ConfigSource::BootConfig, &boot, read_text),
        (ConfigSource::ProcConfigGz, "proc/config.gz", read_gzip),
    ];
    for (source, rel, read) in sources {
        match read(root, rel).and_then(|t| Ok(parse_config(&t)?)) {
            Ok(options) => return found(source, rel, options, problems),
            Err(SourceError::Read(e)) if e.is_not_found() => {}
            Err(e) => problems.push(e.to_string()),
        }
    }
    let dir = format!("lib/modules/{release}");
    let builtin = format!("{dir}/modules.builtin");
    match root.read_string(&builtin) {
        Ok(text) => {
            let mut options = Options::default();
            for o in KernelOption::ALL {
                let module = ["ko", "ko.xz", "ko.zst", "ko.gz"]
                    .iter()
                    .any(|ext| root.exists(&format!("{dir}/{}.{ext}", o.module_path())));
                options.set(o, from_modules(&text, o, module));
            }
            return found(ConfigSource::ModulesBuiltin, &builtin, options, problems);
        }
        Err(e) if e.is_not_found() => problems.push(format!(
            "none of '/{boot}', '/proc/config.gz' and '/{builtin}' exists; \
             'modprobe -n -v MODULE' tells whether a module is available"
        )),
        Err(e) => problems.push(e.to_string()),
    }
    KernelConfig {
        source: ConfigSource::Unknown,
        path: None,
        options: Options::all(Availability::Unknown),
        problems,
    }
}

fn found(source: ConfigSource, rel: &str, options: Options, problems: Vec<String>) -> KernelConfig {
    KernelConfig {
        source,
        path: Some(format!("/{rel}")),
        options,
        problems,
    }
}

fn read_text(root: &Root, rel: &str) -> Result<String, SourceError> {
    Ok(root.read_string(rel)?)
}

fn read_gzip(root: &Root, rel: &str) -> Result<String, SourceError> {
    let gz = root.read_bytes(rel, MAX_FILE_BYTES)?;
    let gzip_error = |source| SourceError::Gzip {
        path: format!("/{rel}"),
        cause: source,
    };
    let text = gunzip::gunzip(&gz, MAX_OUTPUT_BYTES).map_err(gzip_error)?;
    String::from_utf8(text).map_err(|_| {
        ReadError::NotText {
            path: root.path(rel),
        }
        .into()
    })
}

/// The options in a kernel config (`CONFIG_X=y`, `=m`, `# CONFIG_X is not set`).
/// A full config lists every option it could have; one missing is not built.
pub fn parse_config(text: &str) -> Result<Options, ParseError> {
    if !text
        .lines()
        .any(|l| l.starts_with("CONFIG_") || l.starts_with("# CONFIG_"))
    {
        let first = text.lines().next().unwrap_or_default();
        return Err(ParseError::value("kernel config (no CONFIG_ lines)", first));
    }
    let mut options = Options::all(Availability::Absent);
    for line in text.lines() {
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let Some(o) = KernelOption::ALL
            .into_iter()
            .find(|o| o.config_name() == name)
        else {
            continue;
        };
        let state = match value.trim() {
            "y" => Availability::Builtin,
            "m" => Availability::Module,
            _ => Availability::Absent,
        };
        options.set(o, state);
    }
    Ok(options)
}

/// From modules.builtin (one `kernel/…/name.ko` a line) and whether the module
/// file exists.
pub fn from_modules(builtin: &str, o: KernelOption, module_file: bool) -> Availability {
    let listed = builtin
        .lines()
        .any(|l| l.trim().strip_suffix(".ko") == Some(o.module_path()));
    if listed {
        Availability::Builtin
    } else if module_file {
        Availability::Module
    } else {
        Availability::Absent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::process::Command;

    use Availability::*;
    use KernelOption::*;

    const CONFIG: &str = "#\n# Linux/x86 6.1.0 Kernel Configuration\n#\n\
        CONFIG_NET_SCH_FQ=m\n\
        # CONFIG_NET_SCH_FQ_CODEL is not set\n\
        CONFIG_TCP_CONG_BBR=y\n\
        CONFIG_NET_SCH_FQ_PIE=m\n";

    #[test]
    fn config_lines_give_builtin_module_or_absent() {
        let o = parse_config(CONFIG).unwrap();
        assert_eq!(o.get(NetSchFq), Module);
        assert_eq!(o.get(NetSchFqCodel), Absent, "is not set");
        assert_eq!(o.get(NetSchCake), Absent, "not listed at all");
        assert_eq!(o.get(TcpCongBbr), Builtin);
        let e = parse_config("\u{1f}garbage\n").unwrap_err().to_string();
        assert!(e.contains("no CONFIG_ lines"), "{e}");
    }

    #[test]
    fn options_are_keyed_by_config_name_and_a_missing_one_reads_back_unknown() {
        let k = KernelConfig {
            source: ConfigSource::BootConfig,
            path: None,
            options: parse_config(CONFIG).unwrap(),
            problems: Vec::new(),
        };
        let json = serde_json::to_value(&k).unwrap();
        assert_eq!(json["options"]["CONFIG_TCP_CONG_BBR"], "builtin");
        assert_eq!(json["options"]["CONFIG_NET_SCH_FQ_CODEL"], "absent");
        assert_eq!(serde_json::from_value::<KernelConfig>(json).unwrap(), k);
        let old: Options = serde_json::from_str(r#"{"CONFIG_NET_SCH_FQ":"module"}"#).unwrap();
        assert_eq!((old.get(NetSchFq), old.get(TcpCongBbr)), (Module, Unknown));
    }

    #[test]
    fn modules_builtin_list_and_module_files() {
        let list = "kernel/net/sched/sch_fq_codel.ko\nkernel/net/ipv4/tcp_cubic.ko\n";
        assert_eq!(from_modules(list, NetSchFqCodel, false), Builtin);
        assert_eq!(from_modules(list, NetSchCake, true), Module);
        assert_eq!(from_modules(list, NetSchFq, false), Absent);
        assert_eq!(NetSchFqCodel.module(), "sch_fq_codel");
    }

    fn tree() -> (tempfile::TempDir, Root) {
        let d = tempfile::tempdir().unwrap();
        let root = Root::tree(d.path()).unwrap();
        (d, root)
    }

    fn put(d: &tempfile::TempDir, rel: &str, bytes: &[u8]) {
        let p = d.path().join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    }

    #[test]
    fn sources_in_order_and_unknown_when_none() {
        let (d, root) = tree();
        let k = read_kernel_config(&root, "6.1.0");
        assert_eq!(k.source, ConfigSource::Unknown);
        assert_eq!(k.get(NetSchFqCodel), Unknown);
        assert!(k.problems[0].contains("modprobe -n -v"), "{:?}", k.problems);
        // modules.builtin plus a compressed module file.
        put(
            &d,
            "lib/modules/6.1.0/modules.builtin",
            b"kernel/net/sched/sch_fq.ko\n",
        );
        put(
            &d,
            "lib/modules/6.1.0/kernel/net/sched/sch_fq_codel.ko.zst",
            b"",
        );
        let k = read_kernel_config(&root, "6.1.0");
        assert_eq!(k.source, ConfigSource::ModulesBuiltin);
        assert_eq!(
            (k.get(NetSchFq), k.get(NetSchFqCodel), k.get(NetSchCake)),
            (Builtin, Module, Absent)
        );
        // /boot/config wins over both.
        put(&d, "boot/config-6.1.0", CONFIG.as_bytes());
        let k = read_kernel_config(&root, "6.1.0");
        assert_eq!(k.source, ConfigSource::BootConfig);
        assert_eq!(k.path.as_deref(), Some("/boot/config-6.1.0"));
        assert_eq!(k.get(NetSchFqCodel), Absent);
        // Another release's config is not this kernel's.
        assert_eq!(
            read_kernel_config(&root, "6.2.0").source,
            ConfigSource::Unknown
        );
    }

    #[test]
    fn a_corrupt_proc_config_gz_is_a_problem_and_the_next_source_answers() {
        let (d, root) = tree();
        put(
            &d,
            "proc/config.gz",
            &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0b111],
        );
        put(&d, "lib/modules/6.1.0/modules.builtin", b"");
        let k = read_kernel_config(&root, "6.1.0");
        assert_eq!(k.source, ConfigSource::ModulesBuiltin);
        assert_eq!(k.problems.len(), 1, "{:?}", k.problems);
        assert!(
            k.problems[0].starts_with("'/proc/config.gz': the gzip data "),
            "{:?}",
            k.problems
        );
    }

    #[test]
    fn proc_config_gz_from_the_gzip_command() {
        let Ok(mut child) = Command::new("gzip")
            .arg("-c")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
        else {
            eprintln!("skipped: no gzip command");
            return;
        };
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(CONFIG.as_bytes())
            .unwrap();
        let gz = child.wait_with_output().unwrap().stdout;
        let (d, root) = tree();
        put(&d, "proc/config.gz", &gz);
        let k = read_kernel_config(&root, "6.1.0");
        assert_eq!(k.source, ConfigSource::ProcConfigGz);
        assert_eq!(k.get(NetSchFq), Module);
        assert!(k.problems.is_empty(), "{:?}", k.problems);
    }

    #[test]
    fn this_box_when_it_has_a_config() {
        let live = Root::live();
        let Ok(release) = live.read_value("proc/sys/kernel/osrelease") else {
            return;
        };
        let k = read_kernel_config(&live, &release);
        if k.source == ConfigSource::Unknown {
            eprintln!(
                "skipped: this box has no readable kernel config: {:?}",
                k.problems
            );
            return;
        }
        assert!(k.problems.is_empty(), "{:?}", k.problems);
        assert!(
            KernelOption::ALL.iter().all(|o| k.get(*o) != Unknown),
            "{k:?}"
        );
    }
}
