//! `nastune generate man|completions SHELL`: both from the clap definition, so they
//! never drift from what the binary accepts.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, GenerateArgs, GenerateWhat};

pub fn run(args: &GenerateArgs) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    match &args.what {
        GenerateWhat::Man { dir: None } => render_man(&mut out)?,
        GenerateWhat::Man { dir: Some(dir) } => {
            for page in write_man_pages(dir)? {
                out.extend_from_slice(format!("{}\n", page.display()).as_bytes());
            }
        }
        GenerateWhat::RulesDoc => out = crate::report::advise_text::rules_markdown().into_bytes(),
        GenerateWhat::Completions { shell } => {
            clap_complete::generate(*shell, &mut Cli::command(), "nastune", &mut out)
        }
    }
    crate::output::write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The command tree the pages describe: without the implicit `help` subcommands,
/// which have no page of their own to refer to.
fn man_command() -> clap::Command {
    fn without_help(cmd: clap::Command) -> clap::Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    without_help(Cli::command())
}

/// The top-level page followed by one section per visible subcommand.
pub fn render_man(out: &mut Vec<u8>) -> std::io::Result<()> {
    let cmd = man_command();
    clap_mangen::Man::new(cmd.clone()).render(out)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("nastune-{}", sub.get_name());
        clap_mangen::Man::new(sub.clone().name(name)).render(out)?;
    }
    Ok(())
}

/// One page per visible command at every depth (nastune.1, nastune-bench.1,
/// nastune-bench-disk.1 …), so every SUBCOMMANDS reference names a page that exists;
/// returns the files written.
pub fn write_man_pages(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let fail = |e: std::io::Error| {
        anyhow::anyhow!(
            "cannot write man pages to '{}': {e}; pass a writable directory",
            dir.display()
        )
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    let mut cmd = man_command();
    // Building sets each subcommand's display name to its full path (nastune-bench-disk).
    cmd.build();
    let mut pages = Vec::new();
    let mut pending = vec![cmd];
    while let Some(cmd) = pending.pop() {
        pending.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        pages.push(clap_mangen::Man::new(cmd).generate_to(dir).map_err(fail)?);
    }
    crate::sort::sort(&mut pages);
    Ok(pages)
}
