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
    render_page(cmd.clone(), out)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("nastune-{}", sub.get_name());
        render_page(sub.clone().name(name), out)?;
    }
    Ok(())
}

/// clap_mangen's page with the description from [`description`]: clap_mangen
/// writes every line of a long help as filled text, so the indented example
/// lines under "Examples:" ran together into one justified paragraph, stretched
/// and wrapped at the terminal's width. The other sections are clap_mangen's own,
/// under the conditions its `render` puts them.
fn render_page(cmd: clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    out.extend_from_slice(description(&cmd).as_bytes());
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(out)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(out)?;
    }
    if cmd.get_after_long_help().is_some() || cmd.get_after_help().is_some() {
        man.render_extra_section(out)?;
    }
    if cmd
        .get_version()
        .or_else(|| cmd.get_long_version())
        .is_some()
    {
        man.render_version_section(out)?;
    }
    if cmd.get_author().is_some() {
        man.render_authors_section(out)?;
    }
    Ok(())
}

/// The DESCRIPTION section: a blank line starts a paragraph, as in clap_mangen, and
/// a run of indented lines (the help texts' examples and tables) is kept as
/// written, one line each, between `.nf` and `.fi` (no filling, no adjusting).
fn description(cmd: &clap::Command) -> String {
    let mut roff = roff::Roff::new();
    roff.control("SH", ["DESCRIPTION"]);
    let about = cmd.get_long_about().or_else(|| cmd.get_about());
    let text = about.map(|a| a.to_string()).unwrap_or_default();
    let mut preformatted = false;
    for line in text.lines() {
        let indented = line.starts_with([' ', '\t']) && !line.trim().is_empty();
        if indented != preformatted {
            roff.control(if indented { "nf" } else { "fi" }, []);
            preformatted = indented;
        }
        if line.trim().is_empty() {
            roff.control("PP", []);
        } else {
            roff.text([roff::roman(line)]);
        }
    }
    if preformatted {
        roff.control("fi", []);
    }
    roff.to_roff()
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
        let path = dir.join(clap_mangen::Man::new(cmd.clone()).get_filename());
        let mut page = Vec::new();
        render_page(cmd, &mut page).map_err(fail)?;
        std::fs::write(&path, page).map_err(fail)?;
        pages.push(path);
    }
    pages.sort();
    Ok(pages)
}
