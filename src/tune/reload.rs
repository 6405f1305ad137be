//! What `tune apply --reload` runs after in-place edits, so they take effect
//! now: a remount per edited mount point (with exactly the entry's options,
//! see [`super::remount`]) and one Samba configuration reload. Only ever when
//! asked: a remount of a busy data disk is the user's call.

use std::path::PathBuf;
use std::process::Command;

use crate::root::Root;

use serde::{Deserialize, Serialize};

use super::kinds::kind;
use super::plan::{Plan, Status};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reload {
    /// The command line, as a person would type it.
    pub command: Vec<String>,
    /// `None` when it worked; the program's own message otherwise.
    pub error: Option<String>,
}

/// What makes an applied edit take effect now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A command run as it is (`smbcontrol smbd reload-config`).
    Command(Vec<String>),
    /// The mount point remounted with the options of its fstab entry.
    Remount(String),
}

/// The reloads the applied edits of `plan` need, in plan order, each once.
pub fn needed(plan: &Plan) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    for i in plan.items.iter().filter(|i| i.status == Status::Apply) {
        let Some(step) = kind(&i.change).reload() else {
            continue;
        };
        if !out.contains(&step) {
            out.push(step);
        }
    }
    out
}

/// Carries out one reload step; the edited files are read under `root`.
pub fn run(step: Step, root: &Root) -> Reload {
    match step {
        Step::Command(command) => run_command(command),
        Step::Remount(mount_point) => remount_entry(root, &mount_point),
    }
}

/// Remounts `mount_point` with the options its fstab entry under `root` has
/// now; the command is the mount(8) line that would ask for the same.
pub fn remount_entry(root: &Root, mount_point: &str) -> Reload {
    let options = root
        .read_string(super::edit_file::FSTAB)
        .map_err(|e| e.to_string())
        .and_then(|t| super::edit_fstab::options(&t, mount_point).map_err(|e| e.to_string()))
        .map(|o| super::remount::remount_options(&o));
    let (shown, error) = match options {
        Ok(o) => (
            format!("remount,{}", o.join(",")),
            super::remount::remount(mount_point, &o).err(),
        ),
        Err(e) => ("remount".to_string(), Some(e)),
    };
    Reload {
        command: ["mount", "-o", &shown, mount_point]
            .map(String::from)
            .to_vec(),
        error,
    }
}

/// Runs one command; its stderr (or why it could not start) is the error.
fn run_command(command: Vec<String>) -> Reload {
    let error = match Command::new(&command[0]).args(&command[1..]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => {
            let said: Vec<String> = [&o.stderr, &o.stdout]
                .iter()
                .map(|b| String::from_utf8_lossy(b).trim().to_string())
                .filter(|t| !t.is_empty())
                .collect();
            Some(if said.is_empty() {
                format!("exited with {}", o.status)
            } else {
                said.join("; ")
            })
        }
        Err(e) => Some(format!("cannot run '{}': {e}", command[0])),
    };
    Reload { command, error }
}

/// Samba's configuration file when smbd is started without `-s`.
pub const DEFAULT_SMB_CONF: &str = "/etc/samba/smb.conf";

/// The configuration file an smbd command line names (`-s FILE`, `-sFILE`,
/// `--configfile=FILE`, `--configfile FILE`), or Samba's default.
pub fn smbd_config(args: &[String]) -> PathBuf {
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "-s" || a == "--configfile" {
            if let Some(f) = it.next() {
                return PathBuf::from(f);
            }
        } else if let Some(f) = a.strip_prefix("--configfile=") {
            return PathBuf::from(f);
        } else if let Some(f) = a
            .strip_prefix("-s")
            .filter(|f| !f.is_empty() && !a.starts_with("--"))
        {
            return PathBuf::from(f);
        }
    }
    PathBuf::from(DEFAULT_SMB_CONF)
}

/// Makes the smbd that reads `root`'s smb.conf reload it now: SIGHUP to each
/// smbd process started with that file (a private smbd of a tree too);
/// `smbcontrol smbd reload-config` on a live root when none is found by its
/// command line. Samba reloads asynchronously, so this waits a moment: the
/// next connection then gets the new configuration. Says what it did.
pub fn samba(root: &Root) -> Result<String, String> {
    let conf = root.path(crate::tune::edit_file::SMB_CONF);
    let conf = std::fs::canonicalize(&conf).unwrap_or(conf);
    let mut signalled = Vec::new();
    for pid in smbd_pids() {
        let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let theirs = smbd_config(&args);
        if std::fs::canonicalize(&theirs).unwrap_or(theirs) != conf {
            continue;
        }
        // SAFETY: kill(2) with a pid read from /proc; at worst it is gone (ESRCH).
        if unsafe { libc::kill(pid, libc::SIGHUP) } == 0 {
            signalled.push(pid);
        }
    }
    if signalled.is_empty() {
        if !root.is_live() {
            return Err(format!(
                "no smbd runs with '{}': start it with '-s {0}' or try on the live system",
                conf.display()
            ));
        }
        let r = run_command(
            ["smbcontrol", "smbd", "reload-config"]
                .map(String::from)
                .to_vec(),
        );
        if let Some(e) = r.error {
            return Err(format!("Samba did not reload: {e}"));
        }
        std::thread::sleep(SAMBA_SETTLE);
        return Ok("smbcontrol smbd reload-config".into());
    }
    std::thread::sleep(SAMBA_SETTLE);
    Ok(format!("SIGHUP to smbd {signalled:?}"))
}

/// Time for smbd to re-read its configuration after the signal.
const SAMBA_SETTLE: std::time::Duration = std::time::Duration::from_millis(500);

/// Processes named `smbd` (the daemon and its per-client children).
fn smbd_pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "smbd")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn smbd_command_lines_name_their_config() {
        let a = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        for (line, conf) in [
            (
                "/usr/sbin/smbd --foreground --no-process-group",
                DEFAULT_SMB_CONF,
            ),
            ("smbd --foreground -s /tmp/x/smb.conf", "/tmp/x/smb.conf"),
            ("smbd -s/tmp/y.conf -D", "/tmp/y.conf"),
            ("smbd --configfile=/srv/s.conf", "/srv/s.conf"),
            ("smbd --configfile /srv/t.conf", "/srv/t.conf"),
        ] {
            assert_eq!(smbd_config(&a(line)), PathBuf::from(conf), "{line}");
        }
    }

    use super::*;
    use crate::root::Root;
    use crate::tune::plan::{build, manual, parse_set};

    #[test]
    fn one_remount_per_mount_point_and_one_samba_reload() {
        let d = crate::tune::test_tree::tree(&[
            (
                "etc/fstab",
                "UUID=1 /srv ext4 defaults,relatime 0 2\nUUID=2 /data xfs defaults 0 2\n",
            ),
            (
                "etc/samba/smb.conf",
                "[global]\n   workgroup = HOME\n[media]\n   path = /srv\n",
            ),
            ("proc/sys/vm/swappiness", "60\n"),
        ]);
        let root = Root::tree(d.path()).unwrap();
        let plan = build(
            &root,
            [
                "fstab:/srv=noatime,-relatime",
                "smb.conf:global:use sendfile=yes",
                "smb.conf:media:read raw=yes",
                "fstab:/data=noatime",
                "sysctl:vm.swappiness=10",
                "fstab:/srv=defaults",
            ]
            .iter()
            .map(|s| manual(parse_set(s).unwrap()))
            .collect(),
        );
        let smb = ["smbcontrol", "smbd", "reload-config"].map(String::from);
        assert_eq!(
            needed(&plan),
            [
                Step::Remount("/srv".into()),
                Step::Command(smb.to_vec()),
                Step::Remount("/data".into()),
            ]
        );
    }

    #[test]
    fn a_failing_reload_says_why() {
        let r = run_command(vec!["false".into()]);
        assert!(r.error.unwrap().contains("exited with"));
        let r = run_command(vec!["/nonexistent/smbcontrol".into()]);
        assert!(
            r.error
                .unwrap()
                .contains("cannot run '/nonexistent/smbcontrol'")
        );
        assert_eq!(run_command(vec!["true".into()]).error, None);
    }

    /// A tree's fstab without the entry: the remount is not attempted, and says why.
    #[test]
    fn a_remount_without_an_entry_says_why() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("etc")).unwrap();
        std::fs::write(
            t.path().join("etc/fstab"),
            "/dev/sda1 / ext4 defaults 0 1\n",
        )
        .unwrap();
        let r = run(Step::Remount("/srv".into()), &Root::tree(t.path()).unwrap());
        assert_eq!(r.command, ["mount", "-o", "remount", "/srv"]);
        assert!(r.error.unwrap().contains("/srv"));
    }
}
