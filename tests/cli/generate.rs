use std::collections::BTreeMap;
use std::path::Path;

use clap::CommandFactory;

use crate::util::*;

#[test]
fn man_page_names_every_visible_subcommand() {
    let o = nastune_gen().arg("man").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let man = stdout(&o);
    assert!(man.contains(".TH nastune"), "no title: {man}");
    assert!(man.contains("nastune\\-probe"), "no probe page");
    // clap's implicit `help` subcommand has no page to refer to.
    assert!(!man.contains("nastune\\-help"), "help command listed");
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let o = nastune_gen().args(["completions", shell]).output().unwrap();
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("probe"),
            "{shell} completions lack 'probe'"
        );
    }
    let o = nastune_gen()
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("tcsh"));
}

/// `nastune tune <TAB>` offered `deadman`, the hidden timer process `tune apply` starts:
/// clap_complete lists hidden subcommands beside the visible ones.
#[test]
fn completions_offer_no_hidden_command() {
    let mut hidden = Vec::new();
    fn walk(cmd: &clap::Command, out: &mut Vec<String>) {
        for sub in cmd.get_subcommands() {
            if sub.is_hide_set() {
                out.push(sub.get_name().to_string());
            }
            walk(sub, out);
        }
    }
    walk(&nastune::cli::Cli::command(), &mut hidden);
    assert!(hidden.contains(&"deadman".to_string()), "{hidden:?}");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = nastune_gen().args(["completions", shell]).output().unwrap();
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(text.contains("rollback"), "{shell}: no tune rollback");
        for name in &hidden {
            assert!(
                !text.contains(name.as_str()),
                "{shell} offers hidden '{name}'"
            );
        }
    }
}

/// The files a box without nastune-gen installs: what `nastune-gen completions SHELL` prints.
#[test]
fn committed_completions_are_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/completions");
    for (shell, file) in [
        ("bash", "nastune.bash"),
        ("zsh", "_nastune"),
        ("fish", "nastune.fish"),
    ] {
        let o = nastune_gen().args(["completions", shell]).output().unwrap();
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        assert_golden(&dir.join(file), &stdout(&o));
    }
}

/// Generating moved to nastune-gen so that clap_mangen and clap_complete leave nastune.
#[test]
fn nastune_no_longer_generates() {
    let o = nastune().args(["generate", "man"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("unrecognized subcommand 'generate'"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn version_names_the_target() {
    let o = nastune().arg("--version").output().unwrap();
    let v = stdout(&o);
    assert!(v.starts_with("nastune 0."), "{v}");
    assert!(v.contains("linux"), "no build target in '{v}'");
}

#[test]
fn committed_man_page_is_current() {
    let o = nastune_gen().arg("man").output().unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/nastune.1");
    assert_golden(&path, &stdout(&o));
}

/// Each visible command at every depth with the name of its page ("nastune-bench-disk").
fn commands_by_page(cmd: &clap::Command, page: &str, out: &mut Vec<(String, clap::Command)>) {
    out.push((page.to_string(), cmd.clone()));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        commands_by_page(sub, &format!("{page}-{}", sub.get_name()), out);
    }
}

/// `nastune-gen man DIR` into a new directory: file name -> text with roff's `\-` undone.
fn man_dir(dir: &Path) -> BTreeMap<String, String> {
    let o = nastune_gen().arg("man").arg(dir).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// `man_dir(dir)` and every visible command with the name of its page.
fn pages_and_commands(dir: &Path) -> (BTreeMap<String, String>, Vec<(String, clap::Command)>) {
    let mut commands = Vec::new();
    commands_by_page(&nastune::cli::Cli::command(), "nastune", &mut commands);
    (man_dir(dir), commands)
}

fn plain(roff: &str) -> String {
    roff.replace("\\-", "-")
}

#[test]
fn man_dir_has_one_page_per_command_and_refers_only_to_those() {
    let dir = tempfile::tempdir().unwrap();
    let pages = man_dir(&dir.path().join("man1"));
    let mut commands = Vec::new();
    commands_by_page(&nastune::cli::Cli::command(), "nastune", &mut commands);
    let want: Vec<String> = commands.iter().map(|(p, _)| format!("{p}.1")).collect();
    let got: Vec<String> = pages.keys().cloned().collect();
    let mut want_sorted = want.clone();
    want_sorted.sort();
    assert_eq!(got, want_sorted);
    for page in [
        "nastune-bench-disk.1",
        "nastune-tune-apply.1",
        "nastune-net-serve.1",
    ] {
        assert!(pages.contains_key(page), "no {page}");
    }
    let mut references = 0;
    for (name, text) in &pages {
        let text = plain(text);
        let stem = name.trim_end_matches(".1");
        assert!(text.contains(&format!(".TH {stem} 1 ")), "{name}: title");
        for line in text.lines() {
            if let Some(target) = line.strip_suffix("(1)") {
                references += 1;
                assert!(
                    pages.contains_key(&format!("{target}.1")),
                    "{name} refers to {line}, which has no page"
                );
            }
        }
    }
    // Every command but the top one is listed in its parent's page.
    assert_eq!(references, commands.len() - 1);
}

/// Options of nested commands (`--iodepth`, `--confirm-within`, `--max-sessions`) were
/// on no page when only the top-level commands had one.
#[test]
fn every_option_of_every_command_is_on_its_man_page() {
    let dir = tempfile::tempdir().unwrap();
    let (pages, commands) = pages_and_commands(dir.path());
    let mut checked = 0;
    for (page, cmd) in &commands {
        let text = plain(&pages[&format!("{page}.1")]);
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let mut names: Vec<String> = arg
                .get_long()
                .map(|l| format!("--{l}"))
                .into_iter()
                .collect();
            names.extend(arg.get_short().map(|c| format!("-{c}")));
            if names.is_empty() {
                names.extend(
                    arg.get_value_names()
                        .into_iter()
                        .flatten()
                        .map(|v| v.to_string()),
                );
            }
            for name in names {
                checked += 1;
                assert!(text.contains(&name), "{page}.1 lacks {name}");
            }
        }
    }
    assert!(checked > 100, "only {checked} options checked");
    for (page, option) in [
        ("nastune-bench-disk.1", "--iodepth"),
        ("nastune-tune-apply.1", "--confirm-within"),
        ("nastune-net-serve.1", "--max-sessions"),
    ] {
        assert!(
            plain(&pages[page]).contains(option),
            "{page} lacks {option}"
        );
    }
}

#[test]
fn committed_man_pages_are_current() {
    let dir = tempfile::tempdir().unwrap();
    let pages = man_dir(dir.path());
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/man");
    for (name, text) in &pages {
        assert_golden(&committed.join(name), text);
    }
    if !update_golden() {
        let stale: Vec<String> = std::fs::read_dir(&committed)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !pages.contains_key(n))
            .collect();
        assert!(
            stale.is_empty(),
            "docs/man has pages of no command: {stale:?}"
        );
    }
    // Without DIR the top page comes first, as in a DIR.
    let o = nastune_gen().arg("man").output().unwrap();
    assert!(stdout(&o).starts_with(&pages["nastune.1"]));
}

/// The examples under "Examples:" in a page were filled as one paragraph: `man -l
/// docs/man/nastune-bench-disk.1` ran the six commands together, stretched to the
/// line's width and wrapped mid-command. Each indented line of every command's long
/// help must come out of groff as a line of its own, spaced as written.
#[test]
fn man_page_examples_are_one_command_a_line() {
    if !require(&[Need::Tool("groff")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (pages, commands) = pages_and_commands(dir.path());
    let mut checked = 0;
    for (page, cmd) in &commands {
        let Some(about) = cmd.get_long_about() else {
            continue;
        };
        let indented: Vec<String> = about
            .to_string()
            .lines()
            .filter(|l| l.starts_with("  ") && !l.trim().is_empty())
            .map(|l| l.trim().to_string())
            .collect();
        if indented.is_empty() {
            continue;
        }
        let file = dir.path().join(format!("{page}.1"));
        let o = std::process::Command::new("groff")
            .args(["-k", "-man", "-Tutf8", "-rLL=78n"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(o.status.success(), "groff {page}.1: {}", stderr(&o));
        // groff may typeset roff's \- as a minus sign or a hyphen.
        let text = stdout(&o).replace(['\u{2212}', '\u{2010}'], "-");
        let shown: Vec<String> = text.lines().map(|l| l.trim().to_string()).collect();
        for line in &indented {
            checked += 1;
            assert!(
                shown.contains(line),
                "{page}.1 does not show '{line}' on a line of its own:\n{}",
                stdout(&o)
            );
        }
        assert!(pages[&format!("{page}.1")].contains("\n.nf\n"), "{page}.1");
    }
    assert!(checked >= 6, "only {checked} example lines checked");
}
