//! What `tune apply --reload` runs after in-place edits, so they take effect
//! now: a remount per edited mount point (util-linux merges the fstab options
//! on remount) and one Samba configuration reload. Only ever when asked: a
//! remount of a busy data disk is the user's call.

use std::process::Command;

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

/// The reloads the applied edits of `plan` need, in plan order, each once.
pub fn needed(plan: &Plan) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for i in plan.items.iter().filter(|i| i.status == Status::Apply) {
        let Some(cmd) = kind(&i.change).reload() else {
            continue;
        };
        if !out.contains(&cmd) {
            out.push(cmd);
        }
    }
    out
}

/// Runs one reload; its stderr (or why it could not start) is the error.
pub fn run(command: Vec<String>) -> Reload {
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

#[cfg(test)]
mod tests {
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
        let cmds: Vec<String> = needed(&plan).iter().map(|c| c.join(" ")).collect();
        assert_eq!(
            cmds,
            [
                "mount -o remount /srv",
                "smbcontrol smbd reload-config",
                "mount -o remount /data"
            ]
        );
    }

    #[test]
    fn a_failing_reload_says_why() {
        let r = run(vec!["false".into()]);
        assert!(r.error.unwrap().contains("exited with"));
        let r = run(vec!["/nonexistent/smbcontrol".into()]);
        assert!(
            r.error
                .unwrap()
                .contains("cannot run '/nonexistent/smbcontrol'")
        );
        assert_eq!(run(vec!["true".into()]).error, None);
    }
}
