//! `nastune generate man|completions SHELL`: both from the clap definition, so they
//! never drift from what the binary accepts.

use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, GenerateArgs, GenerateWhat};

pub fn run(args: &GenerateArgs) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    match &args.what {
        GenerateWhat::Man => render_man(&mut out)?,
        GenerateWhat::RulesDoc => out = crate::report::advise_text::rules_markdown().into_bytes(),
        GenerateWhat::Completions { shell } => {
            clap_complete::generate(*shell, &mut Cli::command(), "nastune", &mut out)
        }
    }
    crate::output::write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The top-level page followed by one section per visible subcommand.
pub fn render_man(out: &mut Vec<u8>) -> std::io::Result<()> {
    let cmd = Cli::command();
    clap_mangen::Man::new(cmd.clone()).render(out)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("nastune-{}", sub.get_name());
        clap_mangen::Man::new(sub.clone().name(name)).render(out)?;
    }
    Ok(())
}
