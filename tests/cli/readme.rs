//! The README as a newcomer reads it: what to install, and Usage examples that run as written.

use std::path::Path;

fn repo_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of every ```sh block, one Vec per block.
fn sh_blocks(md: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in md.lines() {
        match (&mut current, line.trim_start()) {
            (None, l) if l.starts_with("```sh") => current = Some(Vec::new()),
            (Some(_), l) if l.starts_with("```") => blocks.extend(current.take()),
            (Some(b), _) => b.push(line),
            (None, _) => {}
        }
    }
    blocks
}

/// Runs each `nastune-gen` line of the install block as written, its absolute paths
/// (the install destinations) moved into a temporary directory.
fn install_block_generators_run(block: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let mut ran = 0;
    for line in block {
        let Some(rest) = line.strip_prefix("nastune-gen ") else {
            continue;
        };
        let command = rest.split(['#', '>']).next().unwrap_or_default();
        let args: Vec<std::path::PathBuf> = command
            .split_whitespace()
            .map(|a| match a.strip_prefix('/') {
                Some(dest) => tmp.path().join(dest),
                None => a.into(),
            })
            .collect();
        let o = crate::util::nastune_gen().args(&args).output().unwrap();
        assert!(
            o.status.success() && !o.stdout.is_empty(),
            "'{line}' failed: {}",
            crate::util::stderr(&o)
        );
        ran += 1;
    }
    assert_eq!(ran, 2, "expected the man and completions lines");
}

#[test]
fn readme_first_commands_are_unchanged() {
    let readme = repo_file("README.md");
    let first = &sh_blocks(&readme)[0];
    assert_eq!(
        first[..2],
        [
            "cargo run --release -- check              # probe, measure, advise, name the bottleneck (~1 min)",
            "bash .ci/setup && NASTUNE_REQUIRE_ALL=1 NASTUNE_LAB_REQUIRED=1 cargo test --locked   # as root: all tests, none skipped",
        ]
    );
}

#[test]
fn readme_says_what_a_newcomer_needs() {
    let readme = repo_file("README.md");
    // Line breaks in the prose are wherever the text was wrapped.
    let prose = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let cargo = repo_file("Cargo.toml");
    let msrv = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("rust-version in Cargo.toml")
        .trim_matches('"');
    assert!(
        prose.contains(&format!("Rust {msrv} or newer")),
        "README does not name Rust {msrv}"
    );
    assert!(
        prose.contains("about 3 minutes on two cores"),
        "no build time"
    );
    let install = sh_blocks(&readme)
        .into_iter()
        .find(|b| b.iter().any(|l| l.starts_with("cargo install ")))
        .expect("no `cargo install` block");
    // Without --locked, cargo install ignores Cargo.lock and resolves every dependency
    // anew (93 packages at the time of writing): the binary would not be the tested one.
    assert!(
        install
            .iter()
            .any(|l| l.starts_with("cargo install --locked --path .")),
        "the README's install command lacks --locked: {install:?}"
    );
    for what in ["nastune-gen man", "nastune-gen completions"] {
        assert!(
            install
                .iter()
                .any(|l| l.starts_with(what) && l.contains(" /")),
            "the install block does not say where `{what}` output goes"
        );
    }
    install_block_generators_run(&install);
    // For a box that gets only the nastune binary: the committed copies.
    for (named, path) in [
        ("docs/man/*.1", "docs/man/nastune.1"),
        (
            "contrib/completions/nastune.bash",
            "contrib/completions/nastune.bash",
        ),
    ] {
        assert!(
            prose.contains(named),
            "the README does not point at {named}"
        );
        assert!(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(path).is_file(),
            "{path} is gone: update the README"
        );
    }
    // The test command's packages, by the names a newcomer knows them.
    let packages = repo_file(".ci/apt-packages");
    for (package, name) in [
        ("samba-common-bin", "Samba"),
        ("qemu-system-x86", "QEMU"),
        ("chromium", "Chromium"),
        ("nginx", "nginx"),
    ] {
        assert!(
            packages.lines().any(|l| l == package),
            "{package} left .ci/apt-packages: update the README"
        );
        assert!(
            readme.contains(name),
            "README does not say the tests install {name}"
        );
    }
    assert!(
        prose.contains("test command needs root"),
        "README does not say the tests need root"
    );
}

/// `compare 12 14` on a new store fails: an example that names run ids first shows where
/// they come from.
#[test]
fn readme_examples_show_where_run_ids_come_from() {
    let readme = repo_file("README.md");
    let takes_ids = [
        "nastune compare ",
        "nastune report ",
        "nastune history show ",
        "nastune history export ",
    ];
    let mut checked = 0;
    for block in sh_blocks(&readme) {
        let mut listed = false;
        for line in block {
            listed |= line.starts_with("nastune history list");
            let Some(rest) = takes_ids.iter().find_map(|p| line.strip_prefix(p)) else {
                continue;
            };
            if rest.starts_with(|c: char| c.is_ascii_digit()) {
                checked += 1;
                assert!(
                    listed,
                    "'{line}' uses run ids that no earlier `nastune history list` shows"
                );
            }
        }
    }
    assert!(
        checked > 0,
        "no example with run ids: the test checks nothing"
    );
}

/// The words a shell passes for each command of one example line: quotes removed, a
/// ` #` comment dropped, commands separated by `&&`, `;` or `|`.
fn shell_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, '#') if word.is_none() => break,
            (None, '&' | ';' | '|') => {
                chars.next_if_eq(&'&');
                commands.last_mut().unwrap().extend(word.take());
                commands.push(Vec::new());
            }
            (None, c) if c.is_whitespace() => commands.last_mut().unwrap().extend(word.take()),
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    assert!(quote.is_none(), "unclosed quote in '{line}'");
    commands.last_mut().unwrap().extend(word);
    commands.retain(|c| !c.is_empty());
    commands
}

/// Each `Examples:` line of every command's --help, with the command's path.
fn help_examples(cmd: &clap::Command, path: &str, out: &mut Vec<(String, String)>) {
    let long = cmd
        .get_long_about()
        .map(|s| s.to_string())
        .unwrap_or_default();
    if let Some((_, examples)) = long.split_once("Examples:\n") {
        for line in examples.lines().take_while(|l| l.starts_with("  ")) {
            out.push((path.to_string(), line.trim().to_string()));
        }
    }
    for sub in cmd.get_subcommands() {
        help_examples(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// `bench disk --rw read --bs 1m --direct /dev/sdb /dev/sdc /dev/sdd`, an example of the
/// README and of `bench disk --help`, was refused: '--direct' took '/dev/sdb' as its
/// value. Every example command either shows must be one nastune accepts.
#[test]
fn every_example_in_the_readme_and_the_help_parses() {
    use clap::{CommandFactory, Parser};
    let mut examples: Vec<(String, String)> = Vec::new();
    for block in sh_blocks(&repo_file("README.md")) {
        examples.extend(
            block
                .iter()
                .map(|l| ("README.md".to_string(), l.to_string())),
        );
    }
    help_examples(&nastune::cli::Cli::command(), "nastune", &mut examples);
    let mut parsed = 0;
    for (place, line) in &examples {
        for words in shell_commands(line) {
            if words[0] != "nastune" {
                continue;
            }
            parsed += 1;
            if let Err(e) = nastune::cli::Cli::try_parse_from(&words) {
                // `nastune --version` and `--help` examples end parsing on purpose.
                use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
                assert!(
                    matches!(e.kind(), DisplayHelp | DisplayVersion),
                    "{place}: '{line}' is refused: {e}"
                );
            }
        }
    }
    assert!(parsed > 60, "only {parsed} examples found");
}

#[test]
fn bench_disk_direct_does_not_take_the_next_path() {
    use clap::Parser;
    use nastune::cli::{BenchCommand, Cli, Command};
    let disk = |line: &str| {
        let cli = Cli::try_parse_from(line.split_whitespace())?;
        let Command::Bench(bench) = cli.command else {
            panic!("not bench: {line}");
        };
        let BenchCommand::Disk(disk) = bench.command else {
            panic!("not bench disk: {line}");
        };
        Ok::<_, clap::Error>(disk)
    };
    let d = disk("nastune bench disk --rw read --bs 1m --direct /dev/sdb /dev/sdc /dev/sdd")
        .expect("the README's example parses");
    assert_eq!(
        d.paths,
        ["/dev/sdb", "/dev/sdc", "/dev/sdd"].map(std::path::PathBuf::from)
    );
    assert_eq!(d.direct, Some(true));
    // fio's own spelling takes a value, after '=' only.
    let d = disk("nastune bench disk --rw read --direct=0 /srv").unwrap();
    assert_eq!((d.direct, d.paths.len()), (Some(false), 1));
    assert_eq!(
        disk("nastune bench disk --rw read /srv").unwrap().direct,
        None
    );
    let e = disk("nastune bench disk --direct=2 /srv")
        .unwrap_err()
        .to_string();
    assert!(e.contains("'2' is not 0 or 1"), "{e}");
}
