//! `nastune watch`.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;

pub const LONG_ABOUT: &str = "Watch error and drop counters, disk latency, md arrays, SMART \
counts, pressure and temperatures over time.\n\nEvery counter is tracked on its own: a 32- or \
64-bit wrap is counted, a reset is flagged and counted as 0, a new device under the same name \
or a reboot starts a new baseline. Baselines are kept in the store, so a leak of one dropped \
packet every two hours is seen across restarts and reboots: the default alert fires when an \
error counter increased 3 times within 24 h.\n\nExamples:\n  nastune watch\n  nastune watch \
--json --interval 60 --metrics-listen 127.0.0.1:9109\n  nastune watch --exec 'logger -t nastune'\n  \
nastune watch --replay day1/t00 day1/t02 day1/t04   # captured trees, one sample each\n\n\
Each watch is a run in the store: every --persist-every seconds the counters that moved are \
written as one point per sample they moved in (increase, peak rate, wraps and resets; at \
most 60 a series per write, neighbours merged pairwise past that), so 'nastune report RUN \
--html' draws them over time. Points older than --keep-days and baselines of series not \
seen for as long are dropped, and the store keeps at most 200000 points (the oldest go \
first). Ctrl-C or SIGTERM ends the watch cleanly (exit 0) after a last write.";

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Seconds between samples [default: 10]; with --replay, the time between trees that
    /// record none (no .nastune/timestamp.json, no btime and uptime)
    #[arg(long, value_name = "SECS", value_parser = crate::cli::values::real("seconds", 0.0..=86_400.0))]
    pub interval: Option<f64>,
    /// Stop after N samples (default: run until stopped)
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Print JSON Lines (one per sample and one per alert) instead of text
    #[arg(long)]
    pub json: bool,
    /// Serve Prometheus text format at http://ADDR/metrics (a bare port means 127.0.0.1:PORT)
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Treat each captured tree as one sample, in the order given
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub replay: Vec<PathBuf>,
    /// Seconds between SMART reads (smartctl --json, when installed)
    #[arg(long, default_value_t = 600.0, value_name = "SECS", value_parser = crate::cli::values::real("seconds", 0.0..=604_800.0))]
    pub smart_interval: f64,
    /// Do not run smartctl
    #[arg(long)]
    pub no_smart: bool,
    /// Alert when an error counter increased in this many samples...
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = |s: &str| crate::cli::values::whole("samples", 1..=1_000_000)(s).map(|n| n as usize))]
    pub increases: usize,
    /// ...within this many seconds
    #[arg(long, default_value_t = 86_400.0, value_name = "SECS", value_parser = crate::cli::values::real("seconds", 0.0..=31_536_000.0))]
    pub within: f64,
    /// Alert when an error counter grows faster than this per second
    #[arg(long, default_value_t = 1.0, value_name = "PER_SEC", value_parser = crate::cli::values::real("per second", 0.0..=1e12))]
    pub max_rate: f64,
    /// Alert when a temperature reaches this
    #[arg(long, default_value_t = 80.0, value_name = "CELSIUS", value_parser = crate::cli::values::real("°C", -50.0..=200.0))]
    pub max_temp: f64,
    /// Run this shell command for every alert, with the alert's JSON on stdin
    #[arg(long, value_name = "CMD")]
    pub exec: Option<String>,
    /// Kill an --exec command that runs longer than this
    #[arg(long, default_value_t = 10.0, value_name = "SECS", value_parser = crate::cli::values::real("seconds", 0.0..=86_400.0))]
    pub exec_timeout: f64,
    /// Seconds between store writes of baselines and counter points (always at the end)
    #[arg(long, default_value_t = 60.0, value_name = "SECS", value_parser = crate::cli::values::real("seconds", 0.0..=86_400.0))]
    pub persist_every: f64,
    /// Drop stored counter points, and baselines of series not seen, after this many days
    #[arg(long, default_value_t = 30.0, value_name = "DAYS", value_parser = crate::cli::values::real("days", 0.0..=3650.0))]
    pub keep_days: f64,
}

impl WatchArgs {
    /// Seconds between live samples.
    pub fn live_interval(&self) -> f64 {
        self.interval.unwrap_or(10.0)
    }

    /// Rejects values the parsers let through but a watch cannot use.
    pub fn validate(&self) -> anyhow::Result<()> {
        let args = self;
        for (flag, v) in [
            ("--interval", args.live_interval()),
            ("--within", args.within),
            ("--exec-timeout", args.exec_timeout),
            ("--smart-interval", args.smart_interval),
        ] {
            if !(v.is_finite() && v > 0.0) {
                bail!("{flag} '{v}' must be a positive number of seconds");
            }
        }
        if !(args.persist_every.is_finite() && args.persist_every >= 0.0) {
            bail!(
                "--persist-every '{}' must be 0 or more seconds",
                args.persist_every
            );
        }
        if !(args.keep_days.is_finite() && args.keep_days > 0.0) {
            bail!(
                "--keep-days '{}' must be a positive number of days",
                args.keep_days
            );
        }
        if !(args.max_rate.is_finite() && args.max_rate >= 0.0) {
            bail!(
                "--max-rate '{}' must be 0 or more per second",
                args.max_rate
            );
        }
        if args.count == Some(0) {
            bail!(
                "--count '0' takes no sample; use 1 or more, or leave it out to run until stopped"
            );
        }
        Ok(())
    }
}
