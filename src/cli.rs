//! The command line: one clap definition that also produces the man page and the
//! shell completions (`nastune generate`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("NASTUNE_BUILD_TARGET"),
    ")"
);

/// Probe, measure, advise and tune small Linux servers and NAS boxes.
#[derive(Debug, Parser)]
#[command(
    name = "nastune",
    version = VERSION,
    about,
    long_about = "nastune finds out why a small Linux server or NAS is slow: it probes the box \
(CPU, memory, NICs, the storage stack, sysctls, kernel crypto, Samba/NFS, SMART), and keeps \
every run in an SQLite store.\n\nExit codes: 0 ok, 2 usage or runtime error.",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Database file for the run store [default: $XDG_DATA_HOME/nastune/nastune.db]
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Do not save this run in the store
    #[arg(long, global = true, conflicts_with = "db")]
    pub no_store: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inventory the box: host, CPU, memory, network, storage stack, settings
    #[command(
        long_about = "Inventory the box: host, CPU, memory, network interfaces, the \
storage stack, filesystems, sysctls, kernel crypto, file services and SMART.\n\n\
Each section reports ok, unsupported (with the reason) or failed (with the error); one \
unreadable file never fails the probe.\n\nExamples:\n  nastune probe\n  nastune probe --json\n  \
nastune probe --capture /tmp/mybox    # send this tree with a bug report\n  \
nastune probe --root /tmp/mybox       # read a captured tree back"
    )]
    Probe(ProbeArgs),
    /// Measure what the box does: crypto
    Bench(BenchArgs),
    /// Generate the man page or shell completions
    #[command(hide = true)]
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Read the system from this tree (with proc/, sys/, etc/) instead of /
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print the versioned JSON document instead of the summary
    #[arg(long)]
    pub json: bool,
    /// Copy every file the probe reads into DIR (must be new or empty)
    #[arg(long, value_name = "DIR")]
    pub capture: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Cipher and key-derivation speed: kernel (AF_ALG, as dm-crypt) and user space
    #[command(long_about = crate::cmd::bench::CRYPTO_LONG_ABOUT)]
    Crypto(crate::cmd::bench::BenchCryptoArgs),
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub what: GenerateWhat,
}

#[derive(Debug, Subcommand)]
pub enum GenerateWhat {
    /// The man page (roff) on stdout
    Man,
    /// Completions for SHELL on stdout
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
