//! The files `tune apply` edits keep what they are besides their bytes (owner,
//! group, mode, ACL, extended attributes, SELinux label, hard links) through
//! apply and rollback, and a file that cannot be written is named with the
//! reason and the fix.

use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::Path;
use std::process::Command;

use crate::tune::{copy_box, run_ok};
use crate::util::*;

fn sh(cmd: &str, args: &[&str]) {
    let o = Command::new(cmd).args(args).output().unwrap();
    assert!(o.status.success(), "{cmd} {args:?}: {}", stderr(&o));
}

/// Owner, group, mode and every extended attribute (hex values, sorted by
/// getfattr), of the file a path names (a symlink followed).
fn meta(path: &Path) -> String {
    let m = fs::metadata(path).unwrap();
    let o = Command::new("getfattr")
        .args(["-d", "-m", "-", "-e", "hex", "--absolute-names"])
        .arg(path)
        .output()
        .unwrap();
    let attrs: Vec<String> = stdout(&o)
        .lines()
        .filter(|l| !l.starts_with("# file:") && !l.is_empty())
        .map(str::to_string)
        .collect();
    format!(
        "{}:{} {:o} {}",
        m.uid(),
        m.gid(),
        m.mode() & 0o7777,
        attrs.join(" ")
    )
}

/// smb.conf and the target of a symlinked fstab: owned by nobody, 0640, with
/// an ACL entry, a user note and an SELinux label.
fn dress(dir: &Path) -> Vec<std::path::PathBuf> {
    fs::create_dir_all(dir.join("srv/conf")).unwrap();
    fs::rename(dir.join("etc/fstab"), dir.join("srv/conf/fstab")).unwrap();
    symlink("../srv/conf/fstab", dir.join("etc/fstab")).unwrap();
    let files = vec![dir.join("etc/samba/smb.conf"), dir.join("srv/conf/fstab")];
    for f in &files {
        let p = f.to_str().unwrap();
        sh("chown", &["65534:65534", p]);
        sh("chmod", &["0640", p]);
        sh("setfattr", &["-n", "user.note", "-v", "keep me", p]);
        sh("setfacl", &["-m", "u:1000:r", p]);
        sh(
            "setfattr",
            &[
                "-n",
                "security.selinux",
                "-v",
                "system_u:object_r:samba_etc_t:s0",
                p,
            ],
        );
    }
    files
}

#[test]
fn apply_and_rollback_keep_owner_mode_acl_xattrs_and_label() {
    if !require(&[
        Need::Root,
        Need::Tool("setfattr"),
        Need::Tool("getfattr"),
        Need::Tool("setfacl"),
    ]) {
        return;
    }
    let (t, dir) = copy_box("oldguide");
    let files = dress(&dir);
    let before: Vec<(Vec<u8>, String)> = files
        .iter()
        .map(|f| (fs::read(f).unwrap(), meta(f)))
        .collect();
    for (f, (_, m)) in files.iter().zip(&before) {
        assert!(m.starts_with("65534:65534 640 "), "{}: {m}", f.display());
        for attr in ["security.selinux", "system.posix_acl_access", "user.note"] {
            assert!(m.contains(attr), "{}: {m}", f.display());
        }
    }
    let root = dir.to_str().unwrap();
    run_ok(t.path(), &["tune", "apply", "--root", root, "--yes"]);
    for (f, (bytes, m)) in files.iter().zip(&before) {
        assert_ne!(
            &fs::read(f).unwrap(),
            bytes,
            "{} was not edited",
            f.display()
        );
        assert_eq!(&meta(f), m, "{} after apply", f.display());
    }
    // Changed by hand after the apply: the rollback puts back the journaled ones.
    for f in &files {
        let p = f.to_str().unwrap();
        sh("chown", &["0:0", p]);
        sh("setfattr", &["-x", "user.note", p]);
    }
    run_ok(t.path(), &["tune", "rollback"]);
    for (f, (bytes, m)) in files.iter().zip(&before) {
        assert_eq!(&fs::read(f).unwrap(), bytes, "{} bytes", f.display());
        assert_eq!(&meta(f), m, "{} after rollback", f.display());
    }
    assert!(
        fs::symlink_metadata(dir.join("etc/fstab"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_hard_linked_smb_conf_stays_one_file_through_apply_and_rollback() {
    if !require(&[Need::Root]) {
        return;
    }
    let (t, dir) = copy_box("oldguide");
    let conf = dir.join("etc/samba/smb.conf");
    let other = dir.join("etc/samba/smb.conf.link");
    fs::hard_link(&conf, &other).unwrap();
    let before = fs::read(&conf).unwrap();
    let root = dir.to_str().unwrap();
    run_ok(t.path(), &["tune", "apply", "--root", root, "--yes"]);
    let after = fs::read(&conf).unwrap();
    assert_ne!(after, before);
    assert_eq!(
        fs::read(&other).unwrap(),
        after,
        "the other link kept the old text"
    );
    assert_eq!(fs::metadata(&conf).unwrap().nlink(), 2);
    run_ok(t.path(), &["tune", "rollback"]);
    assert_eq!(fs::read(&other).unwrap(), before);
    assert_eq!(fs::read(&conf).unwrap(), before);
}

#[test]
fn an_immutable_smb_conf_is_named_with_the_fix_and_left_alone() {
    if !require(&[Need::Root, Need::Tool("chattr")]) {
        return;
    }
    let (t, dir) = copy_box("oldguide");
    let conf = dir.join("etc/samba/smb.conf");
    let before = fs::read(&conf).unwrap();
    let p = conf.to_str().unwrap();
    sh("chattr", &["+i", p]);
    let root = dir.to_str().unwrap();
    let o = run_with_db(t.path(), &["tune", "apply", "--root", root, "--yes"]);
    sh("chattr", &["-i", p]);
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("immutable") && err.contains("chattr -i"),
        "{err}"
    );
    assert!(err.contains("smb.conf"), "{err}");
    assert_eq!(fs::read(&conf).unwrap(), before);
    assert!(!dir.join("etc/samba/.smb.conf.nastune-tmp").exists());
}

/// `tune apply` on a copy of the oldguide box with `rel` (a directory or a
/// file) a read-only bind mount: its stderr, after checking it failed, and
/// whether the file `check` stayed as it was.
fn apply_with_read_only(rel: &str, check: &str) -> String {
    let (t, dir) = copy_box("oldguide");
    let target = dir.join(rel);
    if !target.exists() {
        fs::create_dir_all(&target).unwrap();
    }
    let before = fs::read(dir.join(check)).unwrap();
    let p = target.to_str().unwrap();
    sh("mount", &["--bind", p, p]);
    sh("mount", &["-o", "remount,bind,ro", p]);
    let root = dir.to_str().unwrap();
    let o = run_with_db(t.path(), &["tune", "apply", "--root", root, "--yes"]);
    sh("umount", &[p]);
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert_eq!(
        fs::read(dir.join(check)).unwrap(),
        before,
        "{check} changed"
    );
    err
}

#[test]
fn a_read_only_sysctl_d_or_smb_conf_is_named_with_the_fix() {
    if !require(&[Need::Root]) {
        return;
    }
    let err = apply_with_read_only("etc/sysctl.d", "etc/samba/smb.conf");
    assert!(!err.contains("remove that temporary file"), "{err}");
    assert!(
        err.contains("read-only file system") && err.contains("remount it read-write"),
        "{err}"
    );
    assert!(err.contains(".99-zz-nastune.conf.nastune-tmp"), "{err}");
    // smb.conf itself a read-only bind mount (as in a container): the file
    // is named, with the same fix.
    let err = apply_with_read_only("etc/samba/smb.conf", "etc/samba/smb.conf");
    assert!(
        err.contains("smb.conf': it is on a read-only file system")
            && err.contains("remount it read-write"),
        "{err}"
    );
}

/// A process id that was just in use and is gone now.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn validator_copies_are_private_and_a_killed_runs_are_swept() {
    use std::os::unix::fs::PermissionsExt;
    if !require(&[Need::Root]) {
        return;
    }
    let (t, dir) = copy_box("oldguide");
    fs::set_permissions(
        dir.join("etc/samba/smb.conf"),
        fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let (tmp, bin, log) = (
        t.path().join("tmp"),
        t.path().join("bin"),
        t.path().join("log"),
    );
    fs::create_dir_all(&tmp).unwrap();
    fs::create_dir_all(&bin).unwrap();
    // A testparm that says where it runs and then waits to be killed with us.
    let fake = bin.join("testparm");
    fs::write(
        &fake,
        "#!/bin/sh\necho $$ >> \"$FAKE_LOG\"\nexec sleep \"$FAKE_SLEEP\"\n",
    )
    .unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    // Left by earlier kills: the old plain file, a directory, and one whose
    // process still runs (this test), which must stay.
    let dead = dead_pid();
    let old_file = tmp.join(format!("nastune-validate-{dead}-0"));
    fs::write(&old_file, "[global]\n").unwrap();
    let old_dir = tmp.join(format!("nastune-validate-{dead}-Ab12Cd"));
    fs::create_dir(&old_dir).unwrap();
    fs::write(old_dir.join("copy"), "[global]\n").unwrap();
    let live = tmp.join(format!("nastune-validate-{}-0", std::process::id()));
    fs::write(&live, "not ours to remove\n").unwrap();

    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let plan = |sleep: &str| {
        let mut c = nastune();
        c.args(["tune", "plan", "--root", dir.to_str().unwrap(), "--db"])
            .arg(t.path().join("nastune.db"))
            .env("PATH", &path)
            .env("TMPDIR", &tmp)
            .env("FAKE_LOG", &log)
            .env("FAKE_SLEEP", sleep)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        c
    };
    let mut child = plan("60").spawn().unwrap();
    let killed = child.id();
    let start = std::time::Instant::now();
    while fs::read_to_string(&log).unwrap_or_default().is_empty() {
        assert!(
            start.elapsed().as_secs() < 60,
            "testparm never ran: no smb.conf edit to validate?"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    for pid in fs::read_to_string(&log).unwrap().lines() {
        sh("kill", &[pid]);
    }

    assert!(
        !old_file.exists() && !old_dir.exists(),
        "a dead run's leftovers stay"
    );
    assert!(live.exists(), "a live process's file was removed");
    let left: Vec<_> = fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(&format!("nastune-validate-{killed}-"))
        })
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    let m = fs::symlink_metadata(&left[0]).unwrap();
    assert!(
        m.is_dir(),
        "{}: a plain file in the temporary directory",
        left[0].display()
    );
    assert_eq!(m.mode() & 0o777, 0o700, "{}", left[0].display());
    let copies: Vec<_> = fs::read_dir(&left[0])
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(copies.len(), 1);
    assert_eq!(copies[0].metadata().unwrap().mode() & 0o777, 0o640);

    // The next run sweeps the killed run's directory and leaves nothing.
    let o = plan("0").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let names: Vec<String> = fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [live.file_name().unwrap().to_string_lossy()]);
}
