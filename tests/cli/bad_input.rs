//! Bad command lines: each exits 2 before doing anything, and its message quotes
//! the value and says what to give instead (never a bare parser error).

use crate::tune::copy_box;
use crate::util::*;

/// Command line | value that must be quoted | hint that must be there.
const BAD: &str = "\
bench net -t 1e99 127.0.0.1 | '1e99' | 1 to 86400
bench net -t 0 127.0.0.1 | '0' | 1 to 86400
bench net -l 0 127.0.0.1 | '0' | at least 1 byte
bench net -p 0 127.0.0.1 | '0' | port must be 1-65535
bench net -i abc 127.0.0.1 | 'abc' | 0 to 86400
net serve -p 0 | '0' | port must be 1-65535
net serve --max-sessions x | 'x' | 1 to 64
bench http -t abc http://127.0.0.1/ | 'abc' | 1 to 256
history show abc | 'abc' | nastune history list
history rm 1 x | 'x' | nastune history list
compare 1 abc | 'abc' | nastune history list
report abc --html - | 'abc' | nastune history list
tune rollback abc | 'abc' | history list --kind tune
tune rollback --entry abc | 'abc' | tune verify --json
tune confirm abc | 'abc' | history list --kind tune
watch --max-temp abc | 'abc' | -50 to 200
watch --interval abc | 'abc' | 0 to 86400
watch --increases 1e3 | '1e3' | 1 to 1000000
check --disk-seconds abc | 'abc' | 1 to 60
";

#[test]
fn bad_values_exit_2_quoting_the_value_with_a_hint() {
    let t = tempfile::tempdir().unwrap();
    for row in BAD.lines() {
        let [line, value, hint] = row.split(" | ").collect::<Vec<_>>()[..] else {
            panic!("bad row: {row}");
        };
        let args: Vec<&str> = line.split_whitespace().collect();
        let o = run_with_db(t.path(), &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(value), "{args:?}: no {value} in: {err}");
        assert!(err.contains(hint), "{args:?}: no '{hint}' in: {err}");
        for raw in ["invalid digit", "invalid float literal", "is not in"] {
            assert!(!err.contains(raw), "{args:?}: raw parser text: {err}");
        }
    }
    assert!(
        !t.path().join("nastune.db").exists(),
        "a refused command line opened the store"
    );
}

/// clap's own checks, kept: an option given twice is refused rather than the last one
/// silently winning, and a misspelt option or command is answered with the near one.
#[test]
fn repeated_and_misspelt_options_are_refused_with_the_fix() {
    let t = tempfile::tempdir().unwrap();
    for (line, want) in [
        (
            "bench disk --rw read --rw write .",
            "the argument '--rw <RW>' cannot be used multiple times",
        ),
        (
            "bench disk --rwx read .",
            "a similar argument exists: '--rw'",
        ),
        ("bnech disk", "a similar subcommand exists: 'bench'"),
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        let o = run_with_db(t.path(), &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: no '{want}' in: {err}");
    }
    assert!(!t.path().join("nastune.db").exists());
}

#[test]
fn tune_exits_2_when_every_set_is_rejected_and_0_when_one_is_in_place() {
    let (t, dir) = copy_box("oldguide");
    let root = dir.to_str().unwrap();
    for cmd in [&["tune", "plan"][..], &["tune", "apply", "--yes"]] {
        for sets in [
            &["sysctl:vm.nosuch=1"][..],
            &[
                "sysctl:vm.swappiness=abc",
                "sysfs:block/nosuch/queue/nr_requests=1",
            ],
        ] {
            let mut args = cmd.to_vec();
            args.extend(["--root", root]);
            for s in sets {
                args.extend(["--set", s]);
            }
            let o = run_with_db(t.path(), &args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            assert!(stdout(&o).contains("0 of"), "{args:?}: {}", stdout(&o));
            assert!(
                stderr(&o).contains("none of the --set changes"),
                "{}",
                stderr(&o)
            );
        }
    }
    // Asking for what is there already is not an error.
    let now = std::fs::read_to_string(dir.join("proc/sys/vm/swappiness")).unwrap();
    let set = format!("sysctl:vm.swappiness={}", now.trim());
    let o = run_with_db(t.path(), &["tune", "plan", "--root", root, "--set", &set]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// The parts of an error line between ": ", the ones long enough to be a cause.
fn repeated_part(line: &str) -> Option<&str> {
    let parts: Vec<&str> = line.split(": ").map(str::trim).collect();
    parts
        .iter()
        .enumerate()
        .find(|(i, p)| p.len() >= 8 && parts[i + 1..].contains(p))
        .map(|(_, p)| *p)
}

/// Errors from the file system and the network say their cause once: a typed
/// error that prints its cause does not also return it as `source()`, which
/// the error printer walks ("cannot use 'F': Not a directory (os error 20):
/// Not a directory (os error 20)"), and no cause is lost on the way.
#[test]
fn each_error_says_its_cause_once() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("file");
    std::fs::write(&file, "not a directory").unwrap();
    let under = |rest: &str| file.join(rest).to_str().unwrap().to_string();
    let garbled = t.path().join("garbled.json");
    std::fs::write(&garbled, "{\"format\": 1").unwrap();
    let garbled = garbled.to_str().unwrap();
    let db = t.path().join("nastune.db");
    let db = db.to_str().unwrap();
    let port = free_port();
    // Command line (split at spaces; the temporary paths have none) | cause.
    let cases = [
        (format!("probe --db {}", under("x.db")), "Not a directory"),
        (
            format!("history list --db {}", under("x.db")),
            "Not a directory",
        ),
        (
            format!("history import {} --db {db}", under("runs.json")),
            "Not a directory",
        ),
        (
            format!("history import {garbled} --db {db}"),
            "expected a string",
        ),
        (
            format!(
                "bench disk --size 1M --runtime 1s --no-store {}",
                under("dir/testfile")
            ),
            "Not a directory",
        ),
        (
            format!("probe --capture {} --no-store", under("cap")),
            "Not a directory",
        ),
        (
            format!("bench smb //127.0.0.1:{port}/share --no-store"),
            "Connection refused",
        ),
    ];
    for (line, cause) in &cases {
        let args: Vec<&str> = line.split(' ').collect();
        let o = nastune().args(&args).output().unwrap();
        let err = stderr(&o);
        assert!(!o.status.success(), "{args:?} succeeded: {err}");
        let line = err
            .lines()
            .find(|l| l.starts_with("nastune: error: "))
            .unwrap_or_else(|| panic!("{args:?}: no error line in: {err}"));
        assert!(
            line.contains(cause),
            "{args:?}: the cause '{cause}' is lost: {line}"
        );
        assert_eq!(line.matches(cause).count(), 1, "{args:?}: {line}");
        assert_eq!(repeated_part(line), None, "{args:?}: said twice in: {line}");
    }
}
