//! nastune run with private /etc/sysctl.d and /etc/udev/rules.d, and its
//! JSON read back; shared by the test binaries.

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::util::*;

pub(crate) fn succeeded(args: &[&str], o: Output) -> Output {
    assert!(
        o.status.success(),
        "{args:?}: exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(&o),
        stderr(&o)
    );
    o
}

pub(crate) fn json_of(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// Private stand-ins for /etc/sysctl.d and /etc/udev/rules.d, bind-mounted over
/// the real ones inside the command's own mount namespace, so the live system's
/// /etc is never written.
pub(crate) struct PrivateEtc {
    dir: tempfile::TempDir,
}

impl PrivateEtc {
    pub(crate) fn new() -> Self {
        for d in ["/etc/sysctl.d", "/etc/udev/rules.d"] {
            std::fs::create_dir_all(d).unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sysctl.d")).unwrap();
        std::fs::create_dir_all(dir.path().join("rules.d")).unwrap();
        PrivateEtc { dir }
    }

    pub(crate) fn sysctl_d(&self) -> PathBuf {
        self.dir.path().join("sysctl.d")
    }

    pub(crate) fn rules_d(&self) -> PathBuf {
        self.dir.path().join("rules.d")
    }

    /// Runs nastune behind `prefix` (`ip netns exec NS` or `unshare -m`).
    pub(crate) fn run(&self, prefix: &[&str], args: &[&str]) -> Output {
        let script = "mount --bind \"$1\" /etc/sysctl.d && mount --bind \"$2\" /etc/udev/rules.d \
                      && shift 2 && exec \"$@\"";
        Command::new(prefix[0])
            .args(&prefix[1..])
            .args(["sh", "-c", script, "sh"])
            .arg(self.sysctl_d())
            .arg(self.rules_d())
            .arg(env!("CARGO_BIN_EXE_nastune"))
            .args(args)
            .arg("--db")
            .arg(self.dir.path().join("nastune.db"))
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }

    pub(crate) fn run_ok(&self, prefix: &[&str], args: &[&str]) -> Output {
        succeeded(args, self.run(prefix, args))
    }
}
