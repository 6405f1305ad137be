//! The store and the terminal at their edges: a --db that is no regular file,
//! a full filesystem, a damaged WAL store, a closed stderr, and text from
//! another box that would drive the terminal.

use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::tune::{assert_same_tree, copy_box, tree_state};
use crate::util::*;

/// Runs `cmd`, killing it (and failing the test) if it has not ended in 30 s:
/// a FIFO used to hang the open for good.
fn output_within(mut cmd: Command, what: &str) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{what}: nastune did not end within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn with_db(db: &Path, args: &[&str]) -> Command {
    let mut c = nastune();
    c.args(args).arg("--db").arg(db);
    c
}

#[test]
fn a_db_that_is_not_a_regular_file_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("x.db");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = dir.path().join("link.db");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let socket = dir.path().join("sock.db");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let subdir = dir.path().join("dir.db");
    std::fs::create_dir(&subdir).unwrap();
    let root = fixtures().join("boxes/pogoplug-v4");
    let cases: [(&Path, &str); 5] = [
        (&fifo, "is a named pipe (FIFO), not a database file"),
        (&link, "is a named pipe (FIFO), not a database file"),
        (&socket, "is a socket, not a database file"),
        (
            Path::new("/dev/null"),
            "is a character device, not a database file",
        ),
        (&subdir, "is a directory, not a database file"),
    ];
    for (db, says) in cases {
        for args in [
            &["history", "list"][..],
            &["probe", "--root", root.to_str().unwrap()][..],
        ] {
            let what = format!("{} {args:?}", db.display());
            let o = output_within(with_db(db, args), &what);
            assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
            let e = stderr(&o);
            assert!(e.contains(says), "{what}: {e}");
            assert!(e.contains("pass --db with a regular file"), "{what}: {e}");
        }
    }
    assert!(!dir.path().join("x.db-wal").exists());
    assert!(!dir.path().join("x.db-shm").exists());
}

/// A pipe whose reading end is already closed: every write gets EPIPE.
fn closed_pipe() -> std::fs::File {
    let mut fds = [0; 2];
    // SAFETY: a two-int array for pipe2 to fill.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors are ours; the read end is closed once, the
    // write end owned by the File from here on.
    unsafe {
        libc::close(fds[0]);
        std::fs::File::from_raw_fd(fds[1])
    }
}

#[test]
fn a_closed_stderr_changes_neither_the_outcome_nor_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("n.db");
    let root = fixtures().join("boxes/pogoplug-v4");
    let root = root.to_str().unwrap();
    let commands: [&[&str]; 5] = [
        &["compare", "3", "99"],
        &["bench", "disk", "/nonexistent/nastune-test"],
        &["history", "show", "5"],
        &["advise", "--root", root],
        &["tune", "plan", "--root", root],
    ];
    for args in commands {
        let normal = with_db(&db, args).output().unwrap();
        for _ in 0..5 {
            let closed = with_db(&db, args)
                .stdout(Stdio::piped())
                .stderr(Stdio::from(closed_pipe()))
                .output()
                .unwrap();
            assert_eq!(
                closed.status.code(),
                normal.status.code(),
                "{args:?} with stderr closed (stderr when open: {})",
                stderr(&normal)
            );
            assert_eq!(closed.stdout, normal.stdout, "{args:?}");
        }
    }
}

/// A tmpfs of `size` mounted on a new directory, unmounted when dropped.
struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    fn mount(size: &str) -> Option<SmallFs> {
        if !require(&[Need::Root]) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "mount: {}", stderr(&o));
        Some(SmallFs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file until the filesystem has no block left.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.path().join("fill");
        let mut f = std::fs::File::create(&path).unwrap();
        let block = vec![0u8; 4096];
        loop {
            match f.write_all(&block) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling: {e}"),
            }
        }
        path
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn rollback_restores_the_system_when_the_stores_filesystem_is_full() {
    let Some(fs) = SmallFs::mount("2m") else {
        return;
    };
    let db = fs.path().join("n.db");
    let (_t, tree) = copy_box("oldguide");
    let before = tree_state(&tree);
    let root = tree.to_str().unwrap();
    // One runtime setting persisted by a udev rule; no network change, so no
    // dead-man timer keeps the store open.
    let o = with_db(
        &db,
        &[
            "tune",
            "apply",
            "md-stripe-cache-ram",
            "--root",
            root,
            "--yes",
        ],
    )
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(tree_state(&tree) != before, "apply wrote nothing");
    let wal = fs.path().join("n.db-wal");
    assert!(!wal.exists(), "the store was left open");
    let fill = fs.fill();

    // Reading needs the 32 KiB -shm file there is no room for (it was
    // "disk I/O error: Error code 4874").
    let o = with_db(&db, &["history", "list"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("tune apply md-stripe-cache-ram"));
    let o = with_db(&db, &["tune", "apply", "--root", root, "--yes"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("the filesystem holding the store"), "{e}");

    let o = with_db(&db, &["tune", "rollback"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("session 1 is restored on the system (2 value(s)) but not recorded"),
        "{e}"
    );
    assert!(e.contains("the filesystem holding the store"), "{e}");
    assert!(e.contains("is full (0 B free"), "{e}");
    assert!(!e.contains("4874"), "{e}");
    assert_same_tree(&before, &tree, "rollback on a full store filesystem");
    for side in ["n.db-wal", "n.db-shm"] {
        assert!(!fs.path().join(side).exists(), "{side} left behind");
    }

    // With room again, the same command records it, and then there is
    // nothing left to roll back.
    std::fs::remove_file(fill).unwrap();
    let o = with_db(&db, &["tune", "rollback"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("drifted"), "{}", stdout(&o));
    assert_same_tree(&before, &tree, "rollback recorded");
    let o = with_db(&db, &["tune", "rollback"]).output().unwrap();
    assert!(stderr(&o).contains("rolled back already"), "{}", stderr(&o));
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_damaged_wal_store_is_refused_without_side_files_and_keeps_existing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.db");
    let root = fixtures().join("boxes/pogoplug-v4");
    let o = with_db(&good, &["probe", "--root", root.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(&good).unwrap();
    assert_eq!(&bytes[18..20], &[2, 2], "the store is in WAL mode");
    assert!(bytes.len() >= 4 * 4096, "{} bytes", bytes.len());

    let cases = [
        (
            "truncated.db",
            bytes[..bytes.len() / 2].to_vec(),
            "is truncated",
        ),
        (
            "damaged.db",
            [&bytes[..4096], &vec![0x5a; bytes.len() - 4096][..]].concat(),
            "is damaged",
        ),
    ];
    for (name, content, says) in cases {
        let sub = dir.path().join(name.trim_end_matches(".db"));
        std::fs::create_dir(&sub).unwrap();
        let db = sub.join(name);
        std::fs::write(&db, &content).unwrap();
        for args in [&["history", "list"][..], &["history", "rm", "1"][..]] {
            let o = with_db(&db, args).output().unwrap();
            assert_eq!(o.status.code(), Some(2), "{name} {args:?}");
            let e = stderr(&o);
            assert!(e.contains(says), "{name} {args:?}: {e}");
            assert_eq!(files_in(&sub), [name], "{name} {args:?}");
            assert_eq!(std::fs::read(&db).unwrap(), content, "{name} changed");
        }
    }

    // A -wal that was there before (an empty one, as a crash leaves) stays.
    let sub = dir.path().join("kept");
    std::fs::create_dir(&sub).unwrap();
    let db = sub.join("kept.db");
    std::fs::write(
        &db,
        [&bytes[..4096], &vec![0x5a; bytes.len() - 4096][..]].concat(),
    )
    .unwrap();
    std::fs::write(sub.join("kept.db-wal"), b"").unwrap();
    let o = with_db(&db, &["history", "list"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(files_in(&sub), ["kept.db", "kept.db-wal"]);
}

/// A runs file exported from a store with one probe run, as JSON.
fn exported_run(dir: &Path) -> serde_json::Value {
    let db = dir.join("from.db");
    let root = fixtures().join("boxes/pogoplug-v4");
    let o = with_db(&db, &["probe", "--root", root.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    json_of(&with_db(&db, &["history", "export", "1"]).output().unwrap())
}

#[test]
fn imported_text_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = exported_run(dir.path());
    let run = &mut file["runs"][0];
    // Clear the screen, set the window title (OSC 0), set the clipboard
    // (OSC 52), a C1 CSI, and a newline that would forge a line.
    run["command"] = "nastune probe\u{1b}[2J\u{1b}]0;owned\u{7}\u{1b}]52;c;cm0gLXJm\u{7}".into();
    run["host_id"] = "\u{1b}[31mhost\nRUN 99 forged".into();
    run["tool_version"] = "0.1\u{9b}2J".into();
    let path = dir.path().join("hostile.json");
    std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
    let db = dir.path().join("to.db");
    let o = with_db(&db, &["history", "import", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for args in [&["history", "list"][..], &["history", "show", "1"][..]] {
        let o = with_db(&db, args).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        for c in ['\u{1b}', '\u{7}', '\u{9b}'] {
            assert!(!text.contains(c), "{args:?} printed {c:?}: {text:?}");
        }
        assert!(
            text.contains(r"nastune probe\x1b[2J\x1b]0;owned\x07"),
            "{text}"
        );
        assert!(!text.lines().any(|l| l.starts_with("RUN 99")), "{text}");
    }
    let o = with_db(&db, &["history", "show", "1"]).output().unwrap();
    let text = stdout(&o);
    assert!(
        text.contains(r"host       \x1b[31mhost\nRUN 99 forged"),
        "{text}"
    );
    assert!(text.contains(r"version    0.1\u{9b}2J"), "{text}");
    // JSON stays exact: the consumer gets the bytes that were stored.
    let v = json_of(
        &with_db(&db, &["history", "show", "1", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(v["run"]["tool_version"], "0.1\u{9b}2J");
}

#[test]
fn importing_a_file_without_runs_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = exported_run(dir.path());
    file["runs"] = serde_json::json!([]);
    let path = dir.path().join("empty.json");
    std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
    let o = with_db(
        &dir.path().join("to.db"),
        &["history", "import", path.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("no runs in '{}'; nothing was imported\n", path.display())
    );
}

/// DEL, a C1 CSI (U+009B, the one-byte ESC [) and NEL (U+0085).
const C1: &str = "\u{7f}\u{9b}2J\u{85}";

/// Whether a JSON value holds a string containing `needle`, anywhere.
fn holds(v: &serde_json::Value, needle: &str) -> bool {
    match v {
        serde_json::Value::String(s) => s.contains(needle),
        serde_json::Value::Array(a) => a.iter().any(|v| holds(v, needle)),
        serde_json::Value::Object(o) => o.values().any(|v| holds(v, needle)),
        _ => false,
    }
}

/// `out` (a command's JSON) has DEL and C1 only as `\u` escapes, and reads back
/// to a document holding `value` as it was.
fn assert_escaped(what: &str, out: &[u8], value: &str) {
    let raw_c1 = out
        .windows(2)
        .any(|w| w[0] == 0xc2 && (0x80..=0x9f).contains(&w[1]));
    assert!(
        !out.contains(&0x7f) && !raw_c1,
        "{what}: DEL or C1 written raw: {}",
        String::from_utf8_lossy(out)
    );
    let text = String::from_utf8_lossy(out);
    assert!(text.contains(r"\u007f\u009b2J\u0085"), "{what}: {text}");
    let doc: serde_json::Value = serde_json::from_slice(out).unwrap();
    assert!(holds(&doc, value), "{what}: '{value:?}' not read back");
}

/// JSON is valid with DEL and C1 raw, but a terminal acts on C1 (U+009B is
/// CSI): every JSON nastune writes escapes them, from a tree (`probe --root
/// --json`) and from an imported run (`history export`, `history show --json`),
/// and the documents still read back to the same strings.
#[test]
fn json_escapes_del_and_c1_from_trees_and_imported_runs() {
    let (t, tree) = copy_box("oldguide");
    let hostname = format!("nas{C1}x");
    std::fs::write(
        tree.join("proc/sys/kernel/hostname"),
        format!("{hostname}\n"),
    )
    .unwrap();
    let db = t.path().join("n.db");
    let o = with_db(&db, &["probe", "--root", tree.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_escaped("probe --json", &o.stdout, &hostname);
    // The stored document, copied into the export as it is in the store.
    let o = with_db(&db, &["history", "export", "1"]).output().unwrap();
    assert_escaped("history export of the probe", &o.stdout, &hostname);

    let mut file = exported_run(t.path());
    let command = format!("nastune probe{C1}");
    file["runs"][0]["command"] = command.clone().into();
    let path = t.path().join("c1.json");
    std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
    let to = t.path().join("to.db");
    let o = with_db(&to, &["history", "import", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for args in [
        &["history", "export", "1"][..],
        &["history", "show", "1", "--json"],
    ] {
        let o = with_db(&to, args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert_escaped(&format!("{args:?}"), &o.stdout, &command);
    }
}
