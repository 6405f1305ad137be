//! `nastune tune plan|apply|rollback|verify|confirm|try|export`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::tune::export::ExportFormat;
use crate::tune::trial::engine::TrySettings;
use crate::tune::trial::judge::{Judge, JudgeOptions, MetricName};
use crate::tune::trial::{Better, PlanError, TrialPlan};

pub const LONG_ABOUT: &str = "Turn findings into changes, apply them journaled, verify \
and roll them back.\n\n\
'plan' shows each change the findings imply (or that --set asks for): the setting, old -> new, \
why, its risk, and whether it is applied or skipped and why. 'apply' writes runtime values \
(/proc/sys, /sys) and network device settings (ring sizes, offload features, MTU, \
txqueuelen through ethtool ioctls, the root qdisc through rtnetlink; live system only, runtime only: keep a confirmed one in the \
interface's configuration) and persists them: sysctls in /etc/sysctl.d/99-zz-nastune.conf (other files \
that boot applies later are reported), block and network device attributes as udev rules in \
/etc/udev/rules.d/99-zz-nastune.rules, mount options and Samba parameters as in-place edits of \
/etc/fstab and /etc/samba/smb.conf that keep comments and order (checked with findmnt --verify and \
testparm when installed: an edit that adds errors is skipped; with --reload the edited mount \
points are remounted with exactly their entries' options (mount(2)) and Samba reloads its configuration, never without). Values are validated first (ranges, kernel limits, keys and \
scheduler names this kernel has). Before each write the old value or file is journaled in the \
store; 'rollback' restores exactly that, also after a crash. 'verify' says, per owned setting, \
applied, drifted (changed by someone else: reported, not fought) or unsupported.\n\n\
Network changes (net.* sysctls, network device attributes and settings) revert by themselves unless 'tune \
confirm' arrives within --confirm-within; their persistence is written only at confirm.\n\n\
'try' measures one change of any kind (sysctl, sysfs, udev attribute, network device setting, \
root qdisc, interrupt coalescing, IRQ affinity, RPS/XPS mask, dm-crypt flag, smb.conf parameter \
or fstab mount option): a warm-up run, then \
--runs measurements on each side in ABBA order, the change applied as a journaled session and \
switched back and forth (an smb.conf edit rewritten and Samba reloaded between runs, an fstab \
edit rewritten and the mount point remounted with the entry's options, the file restored byte \
for byte on each revert and the mount's options checked against those before the trial; a \
root qdisc is replaced only when the kernel attached it, since one set up with tc could not \
get its parameters back); it stays only if Welch's confidence interval of the difference lies \
wholly on the better side (and the mean gains --min-gain), otherwise the session is rolled \
back; Ctrl-C or SIGTERM ends the run in progress and reverts the change (exit 130). The \
verdict names the effect (helps, no effect, hurts). The runs, interval and verdict are stored as a 'tune-try' run. \
The judge (--bench) is a disk workload (reads on a device, file or directory; seq-write, \
rand-write, rand-write-fsync and buffered-seq-write on a temporary file in a directory), \
net:HOST[:PORT] (a 'nastune net serve' peer; --rr for latency), smb://HOST/SHARE (--user, \
--smb-size, --smb-read) or http:URL; --metric picks bw, iops, p99 or cpu_per_gb (a CPU gain is \
kept only with throughput kept, and says so), and for a disk workload stall (the longest time \
with no I/O completed, in s) or sustained (MB/s after the first seconds or after the cliff), \
from its throughput in 0.25 s points: the pair that shows a dirty-limit change, which a \
buffered write's mean hides. A read_ahead_kb change \
needs the buffered-seq-read workload: seq-read and rand-read use direct I/O, which read-ahead \
does not touch. The judge must exercise the change: a block device change needs a --bench PATH \
whose I/O passes through that device (its partition, or dm or md over it), a network interface \
change a peer routed out of that interface, an smb.conf change an smb judge served by this box, \
a mount option a disk workload on that filesystem; anything else is refused. A change that lowers security (SMB signing or encryption weaker, TCP \
timestamps off) is reverted, saying what it trades, unless --allow-weaker-security.\n\n\
'try --folklore' tries each well-known recipe that applies to this box (read-ahead 512 KiB and \
4 MiB, the none/mq-deadline/bfq schedulers, vm.dirty_ratio=40, vm.dirty_background_ratio=10, \
vm.swappiness=10, 2 MiB socket buffer maxima, txqueuelen 10000, smb.conf socket options, use \
sendfile, aio read/write size, min receivefile size), one trial each as above, judged by the \
first --bench (repeatable here) that exercises it, and reverts every one unless --keep-helpful. \
It prints a table: recipe, old -> new, the change and its interval in percent, the effect, \
and the recipes skipped with why (the value already there, no judge through that device, …).\n\n\
'export' writes the changes 'apply' would make as a sysctl.d file, udev rules, \
a TuneD profile or Ansible tasks, without touching the system.\n\nExamples:\n  \
nastune tune plan\n  nastune tune apply swappiness-for-swap-kind\n  \
nastune tune apply --set sysctl:vm.swappiness=10 --yes\n  \
nastune tune apply --set ethtool:eth0:rx-gro=on --confirm-within 2m\n  nastune tune confirm\n  \
nastune tune verify\n  nastune tune rollback\n  \
nastune tune try --set sysfs:block/sda/queue/read_ahead_kb=1024 --bench buffered-seq-read:/dev/sda\n  \
nastune tune try --set 'smb.conf:global:use sendfile=yes' --bench smb://127.0.0.1/data --user alice\n  \
nastune tune try --folklore --bench buffered-seq-read:/srv/big.iso --bench rand-write-fsync:/srv\n  \
nastune tune export --format tuned --output /etc/tuned";

#[derive(Debug, Args)]
pub struct TuneArgs {
    #[command(subcommand)]
    pub command: TuneCommand,
}

#[derive(Debug, Subcommand)]
pub enum TuneCommand {
    /// Show the changes the findings imply: old -> new, why, risk
    Plan(PlanArgs),
    /// Apply the plan: journal old values, write runtime values and persistence
    Apply(ApplyArgs),
    /// Restore what a session (default: the latest) changed
    Rollback(RollbackArgs),
    /// Check each owned setting: applied, drifted or unsupported
    Verify(VerifyArgs),
    /// Keep the network changes of a session (stops the dead-man timer)
    Confirm(ConfirmArgs),
    /// Measure a workload without and with one change; keep it only if it beats the noise
    Try(TryArgs),
    /// Write the plan as a sysctl.d file, udev rules, a TuneD profile or Ansible tasks
    Export(ExportArgs),
    /// The dead-man timer process started by apply
    #[command(hide = true)]
    Deadman(DeadmanArgs),
}

#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Rule ids or finding numbers to act on [default: every finding]
    pub ids: Vec<String>,
    /// A change of your own: sysctl:KEY=VALUE, sysfs:PATH=VALUE (PATH below /sys),
    /// ethtool:IFACE:SETTING=VALUE (rx, tx, mtu, txqueuelen, qdisc, a feature, or
    /// coalescing: rx-usecs, rx-frames, tx-usecs, tx-frames, adaptive-rx, adaptive-tx),
    /// irq:N=CPULIST or irq:IFACE=CPULIST (IRQ affinity), rps:IFACE:rx-N=MASK,
    /// xps:IFACE:tx-N=MASK, dmcrypt:NAME:no_read_workqueue=on|off (or
    /// no_write_workqueue), fstab:MOUNTPOINT=OPT,-OPT or
    /// smb.conf:SECTION:PARAMETER=VALUE; repeatable
    #[arg(long = "set", value_name = "SETTING=VALUE")]
    pub sets: Vec<String>,
    /// Work on this tree (with proc/, sys/, etc/) instead of /
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// Apply without asking
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Network changes revert unless 'tune confirm' comes within this time (10s, 2m)
    #[arg(long, default_value = "60s", value_name = "DURATION", value_parser = parse_confirm_within)]
    pub confirm_within: Duration,
    /// Afterwards remount each edited mount point and reload Samba's configuration (live system only)
    #[arg(long)]
    pub reload: bool,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// Session to roll back [default: the latest not rolled back]
    #[arg(conflicts_with = "entry", value_parser = crate::cli::values::session_id)]
    pub session: Option<i64>,
    /// Roll back only this journal entry
    #[arg(long, value_name = "ID", value_parser = crate::cli::values::entry_id)]
    pub entry: Option<i64>,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Check the settings written to this tree instead of /
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ConfirmArgs {
    /// Session to confirm [default: the latest with changes waiting]
    #[arg(value_parser = crate::cli::values::session_id)]
    pub session: Option<i64>,
}

#[derive(Debug, Args)]
pub struct DeadmanArgs {
    pub session: i64,
}

fn parse_confirm_within(s: &str) -> Result<Duration, String> {
    let d = crate::bench::disk::workload::parse_duration(s).map_err(|e| e.to_string())?;
    if d < Duration::from_secs(1) || d > Duration::from_secs(3600) {
        return Err(format!("'{s}' is out of range: use 1s to 1h"));
    }
    Ok(d)
}
#[derive(Debug, Args)]
pub struct TryArgs {
    /// The change to try: a rule id or finding number (from 'tune plan') that recommends one change
    #[arg(required_unless_present_any = ["set", "folklore"], conflicts_with = "set")]
    pub id: Option<String>,
    /// Or a change of your own: sysctl:KEY=VALUE, sysfs:PATH=VALUE (PATH below /sys),
    /// ethtool:IFACE:rx-usecs=N (coalescing), irq:N|IFACE=CPULIST, rps:IFACE:rx-N=MASK,
    /// xps:IFACE:tx-N=MASK, dmcrypt:NAME:no_read_workqueue=on or
    /// smb.conf:SECTION:PARAMETER=VALUE
    #[arg(long, value_name = "SETTING=VALUE")]
    pub set: Option<String>,
    /// Instead: try each well-known tuning recipe that applies to this box (read-ahead,
    /// schedulers, dirty ratios, swappiness, socket buffers, txqueuelen, smb.conf folklore),
    /// one trial after another, each reverted unless --keep-helpful; prints a table of
    /// their measured effects, recipes no --bench exercises listed as skipped with why
    #[arg(long, conflicts_with_all = ["id", "set"])]
    pub folklore: bool,
    /// With --folklore: keep each recipe whose trial says keep (later recipes are then
    /// measured on top of it)
    #[arg(long, requires = "folklore", conflicts_with_all = ["id", "set"])]
    pub keep_helpful: bool,
    /// The judge. A disk workload KIND:PATH: seq-read or rand-read (direct I/O, which
    /// read-ahead does not touch), buffered-seq-read (through the emptied page cache: the one a
    /// queue/read_ahead_kb change needs), on a block device, file or directory; seq-write,
    /// rand-write (direct I/O), rand-write-fsync (buffered, fsync after each write) or
    /// buffered-seq-write (1 MiB buffered writes, a copy's) on a directory (a temporary file
    /// there, never a device). Or net:HOST[:PORT] (bench net to a
    /// peer running 'nastune net serve'), smb://HOST[:PORT]/SHARE[/DIR] (bench smb) or
    /// http:URL (bench http). With --folklore, repeatable: each recipe is judged by the first
    /// given judge that exercises it
    #[arg(long, value_name = "JUDGE", required = true)]
    pub bench: Vec<Judge>,
    /// The judge's number to decide by: bw, iops, p99 or cpu_per_gb; for a disk workload also
    /// stall (the longest time with no I/O completed, s: lower is better) or sustained (MB/s
    /// after the first seconds or after the cliff) [default: the judge's own: bw for sequential
    /// disk, net and smb; iops for random disk and http; p99 with --rr]
    #[arg(long, value_enum)]
    pub metric: Option<MetricName>,
    /// net judge: request/response latency (transactions/s and p99) instead of throughput
    #[arg(long)]
    pub rr: bool,
    /// smb judge: user to log on as (NAME or DOMAIN\NAME; password from NASTUNE_SMB_PASSWORD,
    /// --password-file or a prompt); without it, a guest session
    #[arg(short = 'U', long)]
    pub user: Option<String>,
    /// smb judge: read the password from the first line of this file
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// smb judge: bytes written (or read) per run
    #[arg(long, default_value = "64M", value_name = "SIZE", value_parser = parse_smb_size)]
    pub smb_size: u64,
    /// smb judge: time a sequential read (of a file written first) instead of a write
    #[arg(long)]
    pub smb_read: bool,
    /// Keep a change that lowers security (SMB signing or encryption weaker, TCP timestamps
    /// off) when it wins; without it such a change is always reverted
    #[arg(long)]
    pub allow_weaker_security: bool,
    /// Measurements on each side (without and with the change); an even count makes whole
    /// ABBA blocks, an odd one leaves the changed side half a run later on average
    #[arg(long, default_value_t = 6, value_name = "N", value_parser = crate::cli::values::whole("runs", 2..=1000))]
    pub runs: u32,
    /// Length of one measurement (1s, 500ms)
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = parse_runtime)]
    pub runtime: Duration,
    /// Two-sided confidence of the interval of the difference
    #[arg(long, default_value_t = 0.95, value_name = "P", value_parser = crate::cli::values::real("(a probability)", 0.5..=1.0))]
    pub confidence: f64,
    /// Keep the change only if the mean gains at least this many percent
    #[arg(long, default_value_t = 0.0, value_name = "PERCENT", value_parser = crate::cli::values::real("percent", -100.0..=1000.0))]
    pub min_gain: f64,
    /// Work on this tree (with proc/, sys/, etc/) instead of /; the workload still runs on PATH
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Try without asking
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub guard: crate::cli::guard::GuardArgs,
}

fn parse_runtime(s: &str) -> Result<Duration, String> {
    let d = crate::bench::disk::workload::parse_duration(s).map_err(|e| e.to_string())?;
    if d < Duration::from_millis(10) || d > Duration::from_secs(3600) {
        return Err(format!("'{s}' is out of range: use 10ms to 1h"));
    }
    Ok(d)
}
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// What to write
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Directory to write the files into ('-': stdout, each file after a '# ==> path <==' line)
    #[arg(long, short = 'o', default_value = "-", value_name = "DIR")]
    pub output: PathBuf,
}

fn parse_smb_size(s: &str) -> Result<u64, String> {
    let n = crate::bench::disk::workload::parse_size(s).map_err(|e| e.to_string())?;
    if !((1 << 20)..=(64 << 30)).contains(&n) {
        return Err(format!("'{s}' is out of range: use 1M to 64G"));
    }
    Ok(n)
}

impl TryArgs {
    /// The judge's options; credentials are asked for only by an smb judge.
    pub fn judge_options(&self) -> Result<JudgeOptions, crate::cli::bench_smb::SmbArgsError> {
        let smb = self.bench.iter().any(|j| matches!(j, Judge::Smb(_)));
        let smb_credentials = match smb {
            true => Some(crate::cli::bench_smb::credentials(
                self.user.as_deref(),
                self.password_file.as_deref(),
            )?),
            false => None,
        };
        Ok(JudgeOptions {
            runtime: self.runtime,
            rr: self.rr,
            smb_credentials,
            smb_size: self.smb_size,
            smb_read: self.smb_read,
        })
    }

    /// What the trial engine takes from these options.
    pub fn settings(&self) -> TrySettings {
        TrySettings {
            runs: self.runs,
            runtime: self.runtime,
            confidence: self.confidence,
            min_gain: self.min_gain,
            settle_s: self.guard.settle,
            strict: self.guard.strict,
            allow_weaker_security: self.allow_weaker_security,
        }
    }

    /// The trial: --runs on each side in ABBA blocks, judged at --confidence
    /// in the direction the metric improves.
    pub fn plan(&self, better: Better) -> Result<TrialPlan, PlanError> {
        self.settings().plan(better)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_are_bounded() {
        assert_eq!(parse_runtime("2s"), Ok(Duration::from_secs(2)));
        assert!(parse_runtime("1ms").unwrap_err().contains("'1ms'"));
        assert!(parse_runtime("2h").is_err());
    }
}
