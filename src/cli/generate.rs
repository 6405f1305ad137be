//! `nastune generate` (hidden): the man page, rules.md, completions.

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub what: GenerateWhat,
}

#[derive(Debug, Subcommand)]
pub enum GenerateWhat {
    /// The man page (roff) on stdout; with DIR, one page per subcommand written there
    Man {
        /// Write nastune.1, nastune-bench.1, nastune-bench-disk.1 … into this directory
        /// (created if missing), e.g. /usr/local/share/man/man1
        #[arg(value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// docs/rules.md (Markdown) on stdout, from the rule registry
    RulesDoc,
    /// Completions for SHELL on stdout
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}
