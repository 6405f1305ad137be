//! `nastune generate` (hidden): the man page, rules.md, completions.

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub what: GenerateWhat,
}

#[derive(Debug, Subcommand)]
pub enum GenerateWhat {
    /// The man page (roff) on stdout
    Man,
    /// docs/rules.md (Markdown) on stdout, from the rule registry
    RulesDoc,
    /// Completions for SHELL on stdout
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}
