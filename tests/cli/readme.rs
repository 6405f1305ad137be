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
