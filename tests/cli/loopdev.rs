//! Real loop devices over sparse files (root), shared by the test binaries.

use std::path::PathBuf;
use std::process::Command;

use crate::util::*;

pub struct Loop {
    pub dev: String,
    pub _img: tempfile::TempDir,
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-R")
            .arg(self.mountpoint())
            .output();
        let _ = Command::new("swapoff").arg(&self.dev).output();
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).output();
    }
}

impl Loop {
    pub fn mountpoint(&self) -> PathBuf {
        self._img.path().join("mnt")
    }
    pub fn name(&self) -> &str {
        self.dev.trim_start_matches("/dev/")
    }
}

/// A fresh loop device over a sparse file, or None (with the reason printed)
/// when this is not root or loop devices are missing.
pub fn loop_dev(mib: u64, tools: &[&str]) -> Option<Loop> {
    let needs: Vec<Need> = [Need::Root, Need::Path("/dev/loop-control")]
        .into_iter()
        .chain(["losetup"].iter().chain(tools).map(|t| Need::Tool(t)))
        .collect();
    if !require(&needs) {
        return None;
    }
    let img = tempfile::tempdir().unwrap();
    let file = img.path().join("disk.img");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(mib << 20)
        .unwrap();
    let o = Command::new("losetup")
        .args(["--find", "--show", "--partscan"])
        .arg(&file)
        .output()
        .unwrap();
    if !o.status.success() {
        skip(&format!("losetup failed: {}", stderr(&o)));
        return None;
    }
    std::fs::create_dir(img.path().join("mnt")).unwrap();
    Some(Loop {
        dev: stdout(&o).trim().to_string(),
        _img: img,
    })
}

pub fn sh(cmd: &str) {
    let o = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(o.status.success(), "'{cmd}' failed: {}", stderr(&o));
}
