//! Progress bars: drawn on stderr when it is a terminal (a pty from
//! `script`), and nothing progress-like when it is not.

use std::process::Command;

use crate::util::{Need, QUICK_CRYPTO, nastune, require, stderr, stdout};

/// No carriage return (the bar redraws with one), no bar, no "measuring" line.
fn assert_quiet(what: &str, err: &str) {
    assert!(
        !err.contains('\r'),
        "{what}: a redrawn line on a pipe: {err:?}"
    );
    assert!(
        !err.contains("[#") && !err.contains("[."),
        "{what}: a bar on a pipe: {err:?}"
    );
    assert!(!err.contains("measuring"), "{what}: {err:?}");
}

#[test]
fn progress_is_silent_when_stderr_is_not_a_tty() {
    let o = nastune()
        .args(QUICK_CRYPTO)
        .arg("--no-store")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_quiet("bench crypto", &stderr(&o));

    let o = nastune()
        .args([
            "bench",
            "net",
            "--loopback",
            "-t",
            "1",
            "-i",
            "0.2",
            "--no-store",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_quiet("bench net", &stderr(&o));

    let o = nastune()
        .args(["check", "--skip-disk", "--skip-tcp", "--no-store", "--json"])
        .output()
        .unwrap();
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    assert_quiet("check", &stderr(&o));
}

#[test]
fn progress_is_drawn_on_a_tty_without_colour() {
    if !require(&[Need::Tool("script")]) {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_nastune");
    // script gives the command a pty; stdout goes to /dev/null, so what comes
    // back is stderr as a terminal sees it.
    let o = Command::new("script")
        .args(["-q", "-e", "-c"])
        .arg(format!(
            "{bin} {} --no-store >/dev/null",
            QUICK_CRYPTO.join(" ")
        ))
        .arg("/dev/null")
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let tty = stdout(&o);
    assert!(
        tty.contains("\r[") && tty.contains("% user space aes-gcm"),
        "{tty:?}"
    );
    assert!(
        !tty.contains('\u{1b}'),
        "NO_COLOR: no escape sequences: {tty:?}"
    );
    // The bar is wiped at the end: the last thing written is a blank line start.
    assert!(tty.trim_end_matches(['\r', '\n']).ends_with(' '), "{tty:?}");
}
