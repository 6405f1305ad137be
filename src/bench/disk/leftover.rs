//! The temporary file `bench disk DIR` writes: created exclusively under a
//! name of nastune's own and locked while the run lasts; what a run that was
//! killed (SIGKILL, OOM, power loss) left behind, up to 1 GiB each, is removed
//! by the next run in that directory.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

const PREFIX: &str = "nastune-bench-";
const SUFFIX: &str = ".tmp";

/// The pid in one of nastune's names, "nastune-bench-PID.tmp" or
/// "nastune-bench-PID-N.tmp"; `None` for any other name.
pub fn parse_name(name: &str) -> Option<u32> {
    let mid = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let (pid, n) = match mid.split_once('-') {
        Some((pid, n)) => (pid, Some(n)),
        None => (mid, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || pid.starts_with('0') || n.is_some_and(|n| !digits(n)) {
        return None;
    }
    pid.parse().ok()
}

/// Tries to take the file's lock without waiting: whoever runs on it holds it.
fn try_lock(file: &File) -> bool {
    // SAFETY: flock(2) on an open descriptor.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Creates the temporary file in `dir`: O_CREAT|O_EXCL (never an existing
/// file, never through a symlink), mode 0600, locked with flock for as long
/// as the returned file is open. A name taken (the same pid in an earlier
/// boot or container, or a second target in one directory) moves on to
/// "-2", "-3" …
pub fn create(dir: &Path) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    let mut last = None;
    for n in 1..=64u32 {
        let name = if n == 1 {
            format!("{PREFIX}{pid}{SUFFIX}")
        } else {
            format!("{PREFIX}{pid}-{n}{SUFFIX}")
        };
        let path = dir.join(name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(file) => {
                // A file just made: nobody else can hold its lock.
                try_lock(&file);
                return Ok((path, file));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
}

/// One leftover removed.
#[derive(Debug, Clone, PartialEq)]
pub struct Removed {
    pub path: PathBuf,
    pub pid: u32,
    pub bytes: u64,
}

/// Whether process `pid` runs (EPERM: it does, as another user). A zombie
/// does not: its files are closed, only its parent has not reaped it yet.
fn alive(pid: u32) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(p, 0) };
    let exists = rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && !fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| is_zombie(&st))
}

/// Whether a /proc/PID/stat line is a zombie's: state `Z` after the name,
/// which may itself hold spaces and parentheses. Pure.
fn is_zombie(stat: &str) -> bool {
    stat.rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}

/// Removes the leftovers in `dir`: regular files with nastune's names whose
/// process no longer runs and whose lock nobody holds. The lock keeps a run
/// whose pid means nothing here (another pid namespace sharing the
/// directory) safe; the pid keeps an older nastune, which took no lock, safe.
/// Our own pid is a leftover's too until we make our file (and then we hold
/// its lock). Nothing else is touched, not even through a symlink.
pub fn sweep(dir: &Path) -> Vec<Removed> {
    let own = std::process::id();
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(parse_name) else {
            continue;
        };
        if pid != own && alive(pid) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_file() {
            continue;
        }
        let Ok(file) = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
        else {
            continue;
        };
        let same = file
            .metadata()
            .is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino());
        if same && try_lock(&file) && fs::remove_file(&path).is_ok() {
            out.push(Removed {
                path,
                pid,
                bytes: meta.len(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_nastunes_own_names_are_leftovers() {
        assert_eq!(parse_name("nastune-bench-1234.tmp"), Some(1234));
        assert_eq!(parse_name("nastune-bench-1234-2.tmp"), Some(1234));
        for other in [
            "nastune-bench-.tmp",
            "nastune-bench-0.tmp",
            "nastune-bench-01.tmp",
            "nastune-bench-12a.tmp",
            "nastune-bench-12-.tmp",
            "nastune-bench-12-x.tmp",
            "nastune-bench-1234.tmp~",
            "xnastune-bench-1234.tmp",
            "nastune-bench-1234.tmp.bak",
            "nastune-bench-99999999999.tmp",
            "photo.jpg",
        ] {
            assert_eq!(parse_name(other), None, "{other}");
        }
    }

    #[test]
    fn zombies_do_not_run() {
        assert!(is_zombie("4242 (nastune) Z 1 4242 4242 0 -1"));
        assert!(!is_zombie("4242 (a) Z) S 1 4242"));
        assert!(!is_zombie("4242 (nastune) R 1 4242"));
    }

    #[test]
    fn a_dead_runs_file_goes_a_live_or_locked_one_and_others_stay() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // A pid that ran and is gone: a child that exited and was reaped.
        let dead = std::process::Command::new("true")
            .spawn()
            .and_then(|mut c| c.wait().map(|_| c.id()))
            .unwrap();
        let put = |name: &str| {
            fs::write(d.join(name), b"x").unwrap();
            d.join(name)
        };
        let gone = put(&format!("nastune-bench-{dead}.tmp"));
        let live = put("nastune-bench-1.tmp"); // init runs
        let foreign = put(&format!("nastune-bench-{dead}.tmp.keep"));
        std::os::unix::fs::symlink(&foreign, d.join(format!("nastune-bench-{dead}-2.tmp")))
            .unwrap();
        // Our own earlier file (same pid, another boot), and one we hold now.
        let (ours, held) = create(d).unwrap();
        let own_old = put(&format!("nastune-bench-{}-9.tmp", std::process::id()));
        let removed = sweep(d);
        let mut paths: Vec<PathBuf> = removed.into_iter().map(|r| r.path).collect();
        paths.sort();
        let mut want = vec![gone, own_old];
        want.sort();
        assert_eq!(paths, want);
        assert!(live.exists() && foreign.exists() && ours.exists());
        assert!(
            d.join(format!("nastune-bench-{dead}-2.tmp"))
                .symlink_metadata()
                .is_ok()
        );
        drop(held);
        // Unlocked now, but our pid runs: a file named by it is a leftover only
        // because it cannot be ours any more.
        let removed = sweep(d);
        assert_eq!(removed.len(), 1, "{removed:?}");
        assert_eq!(removed[0].path, ours);
    }
}
