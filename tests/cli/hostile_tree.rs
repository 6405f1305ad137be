//! `--root` trees built to attack the reader: symlinks (absolute and `../`) and
//! smb.conf includes that climb out of the tree, and named pipes where files
//! should be. Nothing outside the tree is read or written, and every command
//! ends within seconds with the pipe named.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::tune::{assert_same_tree, copy_box, tree_state};
use crate::util::*;

const SECRET: &str = "TOPSECRET-8c1f";

/// Runs `cmd`, killing it and failing the test when it takes longer than `limit`
/// (a read blocked on a FIFO never ends by itself).
fn run_within(cmd: &mut Command, limit: Duration) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} still running after {limit:?}; stderr: {}",
                fs::read_to_string(&err).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: fs::read(out).unwrap(),
        stderr: fs::read(err).unwrap(),
    }
}

fn nastune_in(db_dir: &Path, args: &[&str]) -> Command {
    let mut c = nastune();
    c.args(args).arg("--db").arg(db_dir.join("nastune.db"));
    c
}

fn mkfifo(path: &Path) {
    let _ = fs::remove_file(path);
    let o = Command::new("mkfifo").arg(path).output().unwrap();
    assert!(o.status.success(), "mkfifo: {}", stderr(&o));
}

fn replace_with_link(link: &Path, target: impl AsRef<Path>) {
    match fs::symlink_metadata(link) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(link).unwrap(),
        Ok(_) => fs::remove_file(link).unwrap(),
        Err(_) => {}
    }
    symlink(target, link).unwrap();
}

#[test]
fn probe_and_advise_never_show_a_file_outside_the_tree() {
    let (t, dir) = copy_box("oldguide");
    let root = dir.to_str().unwrap();
    let secret = t.path().join("secret");
    fs::write(&secret, format!("{SECRET}\n")).unwrap();
    fs::write(
        t.path().join("secret.conf"),
        format!("[global]\n  server string = {SECRET}\n"),
    )
    .unwrap();
    fs::create_dir_all(t.path().join("sysctl-out")).unwrap();
    fs::write(
        t.path().join("sysctl-out/evil.conf"),
        format!("# {SECRET}\nvm.swappiness = 77\n"),
    )
    .unwrap();
    // Relative and absolute links out of the tree, a linked directory, and
    // includes that climb out with `../` or name a host path.
    let kernel = dir.join("proc/sys/kernel");
    replace_with_link(&kernel.join("hostname"), "../../../../secret");
    replace_with_link(&kernel.join("version"), &secret);
    replace_with_link(&dir.join("etc/sysctl.d"), t.path().join("sysctl-out"));
    let smb = dir.join("etc/samba/smb.conf");
    let mut text = fs::read_to_string(&smb).unwrap();
    text.push_str(&format!(
        "include = ../../../secret.conf\ninclude = {}/secret.conf\n",
        t.path().display()
    ));
    fs::write(&smb, text).unwrap();
    // Where the relative link clamps to inside the tree: that is what is read.
    fs::write(dir.join("secret"), "clamped-inside\n").unwrap();

    for args in [
        ["probe", "--root", root, "--json"],
        ["advise", "--root", root, "--json"],
    ] {
        let o = run_within(&mut nastune_in(t.path(), &args), Duration::from_secs(30));
        let all = stdout(&o) + &stderr(&o);
        assert!(!all.contains(SECRET), "{args:?} showed the secret: {all}");
        assert!(!all.contains("= 77"), "{args:?} read sysctl-out: {all}");
        if args[0] == "probe" {
            assert!(o.status.success(), "{all}");
            assert!(all.contains("clamped-inside"), "{all}");
            assert!(all.contains("secret.conf"), "includes not reported: {all}");
        }
    }
}

#[test]
fn fifos_in_a_tree_are_refused_within_seconds() {
    let (t, dir) = copy_box("oldguide");
    let root = dir.to_str().unwrap();
    let fifos = [
        "proc/meminfo",
        "etc/samba/smb.conf",
        "proc/mdstat",
        "sys/block/sda/queue/rotational",
    ];
    fs::write(
        dir.join(".nastune/timestamp.json"),
        r#"{"value": 1700000000}"#,
    )
    .unwrap();
    // The host section drops an unreadable uname quietly; it must not hang.
    for rel in fifos.iter().chain(&[".nastune/uname.json"]) {
        mkfifo(&dir.join(rel));
    }
    for args in [
        vec!["probe", "--root", root],
        vec!["advise", "--root", root],
        vec!["watch", "--replay", root],
    ] {
        let o = run_within(&mut nastune_in(t.path(), &args), Duration::from_secs(10));
        let all = stdout(&o) + &stderr(&o);
        assert!(all.contains("named pipe (FIFO)"), "{args:?}: {all}");
        // probe names every one; advise warns of the sections it could not read.
        let named: &[&str] = match args[0] {
            "probe" => &fifos,
            "advise" => &fifos[..2],
            _ => &fifos[2..3],
        };
        for rel in named {
            assert!(all.contains(rel), "{args:?} does not name '{rel}': {all}");
        }
    }
    // The sample time itself a FIFO: watch stops with the reason, promptly.
    mkfifo(&dir.join(".nastune/timestamp.json"));
    let o = run_within(
        &mut nastune_in(t.path(), &["watch", "--replay", root]),
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("named pipe (FIFO)"), "{}", stderr(&o));
}

#[test]
fn fifos_named_on_the_command_line_are_refused_at_once() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("fifo");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    for args in [
        vec![
            "net",
            "serve",
            "-B",
            "127.0.0.1",
            "-p",
            "1",
            "--psk-file",
            fifo,
        ],
        vec!["bench", "http", "http://127.0.0.1:1/", "--body-file", fifo],
    ] {
        let o = run_within(&mut nastune_in(t.path(), &args), Duration::from_secs(5));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("named pipe (FIFO)"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn tune_under_root_writes_nothing_outside_and_rollback_keeps_links() {
    let (t, dir) = copy_box("oldguide");
    let root = dir.to_str().unwrap();
    let outside = t.path().join("outside");
    fs::create_dir_all(outside.join("sysctl.d")).unwrap();
    let swappiness = fs::read(dir.join("proc/sys/vm/swappiness")).unwrap();
    fs::write(outside.join("swappiness"), &swappiness).unwrap();
    // `../` out of the tree: clamped at its top, these name box/outside/...,
    // which hold the same files, so the plan still has work to do.
    fs::create_dir_all(dir.join("outside/sysctl.d")).unwrap();
    fs::write(dir.join("outside/swappiness"), &swappiness).unwrap();
    replace_with_link(
        &dir.join("proc/sys/vm/swappiness"),
        "../../../../outside/swappiness",
    );
    replace_with_link(&dir.join("etc/sysctl.d"), "../../outside/sysctl.d");
    // An fstab and an smb.conf that link elsewhere (inside the tree; the
    // absolute one resolves inside it too).
    fs::create_dir_all(dir.join("srv/conf")).unwrap();
    fs::rename(dir.join("etc/fstab"), dir.join("srv/conf/fstab")).unwrap();
    symlink("../srv/conf/fstab", dir.join("etc/fstab")).unwrap();
    fs::rename(
        dir.join("etc/samba/smb.conf"),
        dir.join("srv/conf/smb.conf"),
    )
    .unwrap();
    symlink("/srv/conf/smb.conf", dir.join("etc/samba/smb.conf")).unwrap();
    let before = tree_state(&dir);
    let outside_before = tree_state(&outside);

    let o = run_within(
        &mut nastune_in(
            t.path(),
            &["tune", "apply", "--root", root, "--yes", "--json"],
        ),
        Duration::from_secs(60),
    );
    let all = stdout(&o) + &stderr(&o);
    assert!(o.status.success(), "{all}");
    assert_same_tree(&outside_before, &outside, "outside after apply");
    let after = tree_state(&dir);
    for (rel, why) in [
        ("outside/swappiness", "the clamped sysctl value"),
        ("srv/conf/fstab", "the fstab target"),
        ("srv/conf/smb.conf", "the smb.conf target"),
    ] {
        assert_ne!(
            after.get(Path::new(rel)),
            before.get(Path::new(rel)),
            "{why}"
        );
    }
    for link in ["etc/fstab", "etc/samba/smb.conf", "etc/sysctl.d"] {
        assert_eq!(
            after.get(Path::new(link)),
            before.get(Path::new(link)),
            "{link} is no longer the same link"
        );
    }

    let o = run_within(
        &mut nastune_in(t.path(), &["tune", "rollback"]),
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_same_tree(&before, &dir, "rollback");
    assert_same_tree(&outside_before, &outside, "outside after rollback");
}

/// Live, in a private mount namespace whose /etc is an overlay (the machine's
/// /etc is never written): an /etc/fstab that links elsewhere is edited at its
/// target, and rollback restores the target's bytes with the link still a link.
#[test]
fn a_symlinked_live_fstab_is_edited_at_its_target_and_rollback_keeps_the_link() {
    if !require(&[Need::Root, Need::Tool("unshare")]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    for d in ["upper", "work"] {
        fs::create_dir(t.path().join(d)).unwrap();
    }
    let real = t.path().join("fstab-real");
    let original = "# test fstab\n/dev/nastune-none /srv/nastune-x ext4 defaults,relatime 0 2\n";
    fs::write(&real, original).unwrap();
    let script = r#"set -e
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$T/upper,workdir=$T/work" /etc \
    || { echo "SKIP: no overlayfs"; exit 0; }
rm -f /etc/fstab
ln -s "$REAL" /etc/fstab
"$BIN" tune apply --yes --set "fstab:/srv/nastune-x=noatime,-relatime" --db "$T/nastune.db"
echo "after apply: $(readlink /etc/fstab) $(grep -c noatime "$REAL")"
"$BIN" tune rollback --db "$T/nastune.db"
echo "after rollback: $(readlink /etc/fstab)"
"#;
    let o = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script])
        .env("T", t.path())
        .env("REAL", &real)
        .env("BIN", env!("CARGO_BIN_EXE_nastune"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    if let Some(reason) = out.strip_prefix("SKIP: ") {
        return skip(reason.trim());
    }
    let real = real.display();
    assert!(out.contains(&format!("after apply: {real} 1")), "{out}");
    assert!(out.contains(&format!("after rollback: {real}")), "{out}");
    assert_eq!(
        fs::read_to_string(t.path().join("fstab-real")).unwrap(),
        original
    );
    let left: Vec<_> = fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !left
            .iter()
            .any(|n| n.to_string_lossy().contains("nastune-tmp")),
        "{left:?}"
    );
}

/// Clears the screen, retitles the window (OSC 0) and sets the clipboard
/// (OSC 52) when printed raw; then forges a line of the report, and a C1 CSI.
const HOSTILE: &str = "\x1b[2J\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIH4=\x1b\\\n  forged line\u{9b}1m";

/// Appends `HOSTILE` to the first line of `path`'s that contains `key`.
fn poison_line(path: &Path, key: &str) {
    let text = fs::read_to_string(path).unwrap();
    let mut done = false;
    let poisoned: Vec<String> = text
        .lines()
        .map(|l| {
            if !done && l.contains(key) {
                done = true;
                format!("{l}{HOSTILE}")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(done, "no '{key}' in {}", path.display());
    fs::write(path, poisoned.join("\n") + "\n").unwrap();
}

#[test]
fn text_from_a_tree_cannot_drive_the_terminal() {
    let (t, dir) = copy_box("oldguide");
    fs::write(
        dir.join("proc/sys/kernel/hostname"),
        format!("nas{HOSTILE}\n"),
    )
    .unwrap();
    poison_line(&dir.join("sys/block/sda/device/model"), "WDC");
    poison_line(&dir.join("etc/os-release"), "PRETTY_NAME");
    poison_line(&dir.join("etc/samba/smb.conf"), "socket options");
    poison_line(&dir.join("etc/samba/smb.conf"), "max xmit");
    poison_line(
        &dir.join("etc/sysctl.d/99-nas-tuning.conf"),
        "tcp_timestamps",
    );
    fs::write(
        dir.join(".nastune/kmsg"),
        format!(
            "[    1.000000] Booting Linux\n\
             [  900.000000] blk_update_request: I/O error, dev sda, sector 8 op 0x0:(READ){HOSTILE}\n"
        ),
    )
    .unwrap();
    let root = dir.to_str().unwrap();
    let mut escaped_seen = Vec::new();
    for args in [
        &["probe", "--root", root][..],
        &["advise", "--root", root],
        &["check", "--root", root],
    ] {
        let o = run_within(
            nastune_in(t.path(), args).env("NO_COLOR", "1"),
            Duration::from_secs(60),
        );
        let out = &o.stdout;
        for (byte, name) in [(0x1b, "ESC"), (0x07, "BEL"), (0x9b, "CSI")] {
            assert!(
                !out.contains(&byte),
                "{args:?} printed a raw {name}:\n{}",
                String::from_utf8_lossy(out)
            );
        }
        let text = String::from_utf8_lossy(out);
        assert!(
            !text.lines().any(|l| l.trim_start() == "forged line"),
            "{args:?} let a tree forge a line:\n{text}"
        );
        escaped_seen.push(text.matches("\\x1b]52;c;").count());
    }
    // The poisoned values were printed, escaped: the hostname, the disk's model,
    // and the kernel log line in the probe; smb.conf or sysctl values in advise.
    assert!(escaped_seen[0] >= 3, "{escaped_seen:?}");
    assert!(escaped_seen[1] >= 1, "{escaped_seen:?}");
}
