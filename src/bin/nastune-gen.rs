//! `nastune-gen man|rules-doc|completions`: nastune's man pages, docs/rules.md and
//! shell completions, from the clap definition (`nastune::cli::Cli`) and the rule
//! registry the `nastune` binary is built from, so they never drift from what it
//! accepts. A binary of its own so that clap_mangen and clap_complete stay out of
//! the one users run; docs/man/ and contrib/completions/ hold their output for
//! those who copy only `nastune` to a box.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use nastune::cli::Cli;

/// Generate nastune's man pages, rules.md and shell completions.
#[derive(Debug, Parser)]
#[command(name = "nastune-gen", version, about)]
struct GenCli {
    #[command(subcommand)]
    what: GenerateWhat,
}

#[derive(Debug, Subcommand)]
enum GenerateWhat {
    /// The man page (roff) on stdout; with DIR, one page per subcommand written there
    Man {
        /// Write nastune.1, nastune-bench.1, nastune-bench-disk.1 … into this directory
        /// (created if missing), e.g. /usr/local/share/man/man1
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// docs/rules.md (Markdown) on stdout, from the rule registry
    RulesDoc,
    /// Completions for SHELL on stdout
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    match run(&GenCli::parse().what) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if nastune::output::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            nastune::note!("nastune-gen: error: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(what: &GenerateWhat) -> anyhow::Result<()> {
    let mut out = Vec::new();
    match what {
        GenerateWhat::Man { dir: None } => render_man(&mut out)?,
        GenerateWhat::Man { dir: Some(dir) } => {
            for page in write_man_pages(dir)? {
                out.extend_from_slice(format!("{}\n", page.display()).as_bytes());
            }
        }
        GenerateWhat::RulesDoc => out = nastune::report::advise_text::rules_markdown().into_bytes(),
        GenerateWhat::Completions { shell } => {
            clap_complete::generate(*shell, &mut completion_command(), "nastune", &mut out)
        }
    }
    nastune::output::write_stdout(&out)?;
    Ok(())
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

/// The command tree completions offer: without hidden subcommands (`tune deadman`,
/// which `tune apply` starts itself), which clap_complete would list beside the
/// visible ones, and so without their entries under `help` either.
fn completion_command() -> clap::Command {
    without_hidden(Cli::command())
}

fn without_hidden(cmd: clap::Command) -> clap::Command {
    let cmd = cmd.mut_subcommands(without_hidden);
    if !cmd.get_subcommands().any(|s| s.is_hide_set()) {
        return cmd;
    }
    // clap has no way to remove a subcommand, so the command is built anew from
    // the parts the derive sets on a command with subcommands (arguments, groups,
    // texts, settings), keeping only the visible subcommands.
    let mut out = clap::Command::new(cmd.get_name().to_string())
        .args(cmd.get_arguments().cloned())
        .groups(cmd.get_groups().cloned())
        .subcommands(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
        .subcommand_required(cmd.is_subcommand_required_set())
        .arg_required_else_help(cmd.is_arg_required_else_help_set())
        .propagate_version(cmd.is_propagate_version_set())
        .hide(cmd.is_hide_set());
    if let Some(v) = cmd.get_version() {
        out = out.version(v.to_string());
    }
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    if let Some(long) = cmd.get_long_about() {
        out = out.long_about(long.clone());
    }
    out
}

/// The top-level page followed by one section per visible subcommand.
fn render_man(out: &mut Vec<u8>) -> std::io::Result<()> {
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
fn write_man_pages(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
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
    pages.sort();
    Ok(pages)
}
