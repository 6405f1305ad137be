//! Shared helpers: run the binary with a throw-away store and no colour.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn nastune() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nastune"));
    c.env("NO_COLOR", "1");
    c
}

/// Runs nastune with `args` and a `--db` inside `dir`.
pub fn run_with_db(dir: &Path, args: &[&str]) -> Output {
    nastune()
        .args(args)
        .arg("--db")
        .arg(dir.join("nastune.db"))
        .output()
        .expect("run nastune")
}

/// The quickest real `bench crypto`: one cipher family, one size, 10 ms a point.
pub const QUICK_CRYPTO: [&str; 9] = [
    "bench",
    "crypto",
    "--no-kdf",
    "--duration",
    "0.01",
    "--size",
    "4096",
    "--cipher",
    "gcm",
];

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Whether golden files should be rewritten instead of compared (UPDATE_GOLDEN=1).
pub fn update_golden() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

/// Compares `actual` with the golden file, or rewrites it under UPDATE_GOLDEN=1.
pub fn assert_golden(path: &Path, actual: &str) {
    if update_golden() {
        std::fs::create_dir_all(path.parent().expect("golden parent")).expect("mkdir");
        std::fs::write(path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "golden file '{}' unreadable ({e}); run with UPDATE_GOLDEN=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let diff_line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "'{}' differs from the output at line {}:\n  golden: {:?}\n  actual: {:?}\n(UPDATE_GOLDEN=1 rewrites it after review)",
            path.display(),
            diff_line + 1,
            expected.lines().nth(diff_line),
            actual.lines().nth(diff_line)
        );
    }
}
