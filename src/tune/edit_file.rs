//! In-place edits of configuration files nastune does not own (fstab, smb.conf,
//! crypttab):
//! which file, the pure edit ([`super::edit_fstab`], [`super::edit_smbconf`]),
//! and a check of the result with the system's own validator when installed.
//! The whole old file is journaled, so rollback puts back every byte.

use std::process::Command;

use super::kinds::kind;
use crate::advise::Change;

/// A change that is an in-place file edit: a mount option or an smb.conf
/// parameter (made only by [`Edit::of`]); its kind makes the edit.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    file: &'static str,
    change: Change,
}

pub const FSTAB: &str = "etc/fstab";
pub const SMB_CONF: &str = "etc/samba/smb.conf";
pub const CRYPTTAB: &str = "etc/crypttab";

impl Edit {
    /// Every file an edit may touch, relative to the root.
    pub const FILES: [&'static str; 3] = [FSTAB, SMB_CONF, CRYPTTAB];

    /// The edit a change makes, if it is one.
    pub fn of(change: &Change) -> Option<Edit> {
        kind(change).edited_file().map(|file| Edit {
            file,
            change: change.clone(),
        })
    }

    pub fn file(&self) -> &'static str {
        self.file
    }

    /// The edited text; the error says why this edit cannot be made.
    pub fn apply(&self, text: &str) -> Result<String, String> {
        kind(&self.change).edit(text)
    }
}

/// Runs the file's validator (`findmnt --verify` for fstab, `testparm` for
/// smb.conf) on the old and the new text; `Some(reason)` when the new text has
/// more errors than the old one. Errors that were already there (a source
/// missing in a --root tree, say) do not count against the edit. A validator that
/// is not installed checks nothing.
pub fn validate(file: &str, old: &str, new: &str) -> Option<String> {
    let tool = match file {
        FSTAB => "findmnt",
        SMB_CONF => "testparm",
        // crypttab has no validator; its edit touches one options field.
        _ => return None,
    };
    let before = errors(tool, old)?;
    let after = errors(tool, new)?;
    if after.len() <= before.len() {
        return None;
    }
    let added: Vec<&String> = after.iter().filter(|l| !before.contains(l)).collect();
    Some(format!(
        "{tool} finds {} more error(s) in the edited /{file}: {}",
        after.len() - before.len(),
        added
            .iter()
            .map(|l| format!("'{l}'"))
            .collect::<Vec<_>>()
            .join("; ")
    ))
}

/// The error lines a validator prints for `text`; `None` when it cannot run.
fn errors(tool: &str, text: &str) -> Option<Vec<String>> {
    let path = scratch_path();
    // create_new: the name in /tmp is guessable, and a link planted under it
    // must not make us (root) write through it.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .ok()?;
    let out = match tool {
        "findmnt" => Command::new("findmnt")
            .args(["--verify", "--tab-file"])
            .arg(&path)
            .output(),
        _ => Command::new("testparm")
            .args(["-s", "--suppress-prompt"])
            .arg(&path)
            .output(),
    };
    let _ = std::fs::remove_file(&path);
    let out = out.ok()?;
    let all =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Some(parse_errors(tool, &all))
}

/// Error lines of findmnt (`[E] …`, and lines it cannot parse) or testparm
/// (unknown parameters, errors). A findmnt parse error names the scratch file,
/// so only the part from "parse error" on is kept.
pub fn parse_errors(tool: &str, output: &str) -> Vec<String> {
    output
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            if tool == "findmnt" {
                if l.starts_with("[E]") {
                    return Some(l);
                }
                l.find("parse error at").map(|i| &l[i..])
            } else {
                (l.contains("Unknown parameter")
                    || l.contains("ERROR")
                    || l.contains("Error loading"))
                .then_some(l)
            }
        })
        .map(str::to_string)
        .collect()
}

fn scratch_path() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    std::env::temp_dir().join(format!(
        "nastune-validate-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validator_error_lines() {
        let f = "findmnt: /tmp/x: parse error at line 2 -- ignored\n/srv\n   [E] unreachable source: /dev/sdb1\n   [W] recommended root FS passno is 1\n\n1 parse error, 1 error, 1 warning\n";
        assert_eq!(
            parse_errors("findmnt", f),
            vec![
                "parse error at line 2 -- ignored",
                "[E] unreachable source: /dev/sdb1"
            ]
        );
        let t = "Load smb config files from x\nUnknown parameter encountered: \"socket optionz\"\nIgnoring unknown parameter \"socket optionz\"\nLoaded services file OK.\n";
        assert_eq!(parse_errors("testparm", t).len(), 1);
    }

    #[test]
    fn edits_know_their_file_and_say_why_they_fail() {
        let e = Edit::of(&Change::MountOption {
            mount_point: "/srv".into(),
            add: vec!["noatime".into()],
            remove: vec!["relatime".into()],
        })
        .unwrap();
        assert_eq!(e.file(), "etc/fstab");
        let t = "UUID=1 /srv ext4 defaults,relatime 0 2\n";
        assert_eq!(
            e.apply(t).unwrap(),
            "UUID=1 /srv ext4 defaults,noatime 0 2\n"
        );
        assert!(
            e.apply("UUID=1 /data ext4 defaults 0 2\n")
                .unwrap_err()
                .contains("'/srv'")
        );
    }

    fn installed(tool: &str) -> bool {
        Command::new(tool).arg("--version").output().is_ok()
    }

    #[test]
    fn testparm_rejects_an_edit_that_adds_an_unknown_parameter() {
        if !installed("testparm") {
            println!("SKIP: testparm is not installed (Debian: samba-common-bin)");
            return;
        }
        let good = "[global]\n   workgroup = HOME\n";
        let still_good = "[global]\n   workgroup = HOME\n   use sendfile = yes\n";
        let bad = "[global]\n   workgroup = HOME\n   sendfile speed = max\n";
        assert_eq!(validate(SMB_CONF, good, still_good), None);
        let why = validate(SMB_CONF, good, bad).expect("testparm must object");
        assert!(why.contains("testparm finds 1 more error"), "{why}");
        assert!(why.contains("sendfile speed"), "{why}");
    }

    #[test]
    fn findmnt_rejects_an_edit_that_breaks_a_line() {
        let good = "proc /proc proc defaults 0 0\n";
        let bad = "proc /proc proc defaults 0 0\nproc /proc\n";
        assert_eq!(validate(FSTAB, good, good), None);
        let why = validate(FSTAB, good, bad).expect("findmnt must object");
        assert!(why.starts_with("findmnt finds"), "{why}");
    }
}
