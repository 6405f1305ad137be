//! In-place edits of configuration files nastune does not own (fstab, smb.conf,
//! crypttab):
//! which file, the pure edit ([`super::edit_fstab`], [`super::edit_smbconf`]),
//! and a check of the result with the system's own validator when installed.
//! The whole old file is journaled, so rollback puts back every byte.

use std::io;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
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
/// is not installed checks nothing. The copies the validator reads get `mode`
/// (the file's own permission bits) in a private directory; see [`Scratch`].
pub fn validate(file: &str, old: &str, new: &str, mode: u32) -> Option<String> {
    let tool = match file {
        FSTAB => "findmnt",
        SMB_CONF => "testparm",
        // crypttab has no validator; its edit touches one options field.
        _ => return None,
    };
    let before = errors(tool, old, mode)?;
    let after = errors(tool, new, mode)?;
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

/// The data segment a validator may grow to. testparm takes some 2 KiB per
/// share: 430 MB for a 4 MiB smb.conf of 205 000 shares, which on a 128 MiB
/// box (64 MiB for a command and what it runs) ends in the OOM killer, maybe
/// for nastune. 24 MiB holds some 10 000 shares (a real configuration's few
/// need under 2 MiB); past it testparm says "Error loading services" for the
/// old text and the new alike, which adds no error against the edit.
const VALIDATOR_DATA_BYTES: libc::rlim_t = 24 << 20;

/// The error lines a validator prints for `text`; `None` when it cannot run.
fn errors(tool: &str, text: &str, mode: u32) -> Option<Vec<String>> {
    use std::os::unix::process::CommandExt;
    let scratch = Scratch::new().ok()?;
    let path = scratch.write(text, mode).ok()?;
    let mut cmd = match tool {
        "findmnt" => {
            let mut c = Command::new("findmnt");
            c.args(["--verify", "--tab-file"]);
            c
        }
        _ => {
            let mut c = Command::new("testparm");
            c.args(["-s", "--suppress-prompt"]);
            c
        }
    };
    cmd.arg(&path);
    let limit = libc::rlimit {
        rlim_cur: VALIDATOR_DATA_BYTES,
        rlim_max: VALIDATOR_DATA_BYTES,
    };
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output();
    drop(scratch);
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

/// Names of scratch directories (and of the plain files older versions left
/// in the temporary directory): the prefix, then the process id, then `-`.
const SCRATCH_PREFIX: &str = "nastune-validate-";

/// A directory of our own (mkdtemp, mode 0700) for the copies a validator
/// reads, removed on drop. The copies are of configuration files that may be
/// 0640 or 0600 (an smb.conf with a password server's name, a crypttab): a
/// plain file in /tmp was 0644, and each kill left one (66 after 120 kills).
/// What a kill leaves now is unreadable to others and swept by the next run.
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    pub fn new() -> io::Result<Scratch> {
        let tmp = std::env::temp_dir();
        static SWEEP: std::sync::Once = std::sync::Once::new();
        SWEEP.call_once(|| sweep_stale(&tmp));
        let template = tmp.join(format!("{SCRATCH_PREFIX}{}-XXXXXX", std::process::id()));
        let mut bytes = template.into_os_string().into_vec();
        bytes.push(0);
        // SAFETY: `bytes` is a NUL-terminated template mkdtemp rewrites in place.
        let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
        if made.is_null() {
            return Err(io::Error::last_os_error());
        }
        bytes.pop();
        Ok(Scratch {
            dir: PathBuf::from(std::ffi::OsString::from_vec(bytes)),
        })
    }

    /// Writes `text` as a new file with `mode` (less the umask) and gives its path.
    pub fn write(&self, text: &str, mode: u32) -> io::Result<PathBuf> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.dir.join("copy");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode & 0o777)
            .open(&path)?;
        f.write_all(text.as_bytes())?;
        Ok(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes what killed runs left in `tmp`: entries named [`SCRATCH_PREFIX`]
/// with the id of a process that is gone, owned by us. A live id is kept,
/// whoever has it now; a symlink is removed itself, never followed.
pub fn sweep_stale(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SCRATCH_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
            .filter(|&pid| pid > 0)
        else {
            continue;
        };
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if meta.uid() != me || alive(pid) {
            continue;
        }
        let _ = if meta.is_dir() {
            std::fs::remove_dir_all(entry.path())
        } else {
            std::fs::remove_file(entry.path())
        };
    }
}

/// Whether a process with this id exists (EPERM: it does, and is not ours).
fn alive(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
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
        assert_eq!(validate(SMB_CONF, good, still_good, 0o640), None);
        let why = validate(SMB_CONF, good, bad, 0o640).expect("testparm must object");
        assert!(why.contains("testparm finds 1 more error"), "{why}");
        assert!(why.contains("sendfile speed"), "{why}");
    }

    #[test]
    fn findmnt_rejects_an_edit_that_breaks_a_line() {
        let good = "proc /proc proc defaults 0 0\n";
        let bad = "proc /proc proc defaults 0 0\nproc /proc\n";
        assert_eq!(validate(FSTAB, good, good, 0o644), None);
        let why = validate(FSTAB, good, bad, 0o644).expect("findmnt must object");
        assert!(why.starts_with("findmnt finds"), "{why}");
    }
}
