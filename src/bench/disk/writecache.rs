//! Turning a drive's volatile write cache off for one test, and always back on.
//! SCSI and SATA disks expose it as `device/scsi_disk/*/cache_type` ("write
//! back" / "write through"); other devices (loop, SD cards, most USB bridges)
//! cannot toggle it, and the test is skipped with that reason.

use std::path::PathBuf;

use crate::bench::diskstats::Layer;
use crate::root::Root;

/// Restores every changed `cache_type` when dropped.
#[derive(Debug)]
pub struct CacheOff {
    restore: Vec<(PathBuf, String)>,
}

impl Drop for CacheOff {
    fn drop(&mut self) {
        for (path, value) in &self.restore {
            let _ = std::fs::write(path, value);
        }
    }
}

/// The `cache_type` files of the physical disks among `layers`.
fn cache_files(root: &Root, layers: &[Layer]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for l in layers.iter().filter(|l| l.kind == "disk") {
        let dir = format!("sys/class/block/{}/device/scsi_disk", l.name);
        for entry in root.read_dir_optional(&dir).unwrap_or_default() {
            let rel = format!("{dir}/{entry}/cache_type");
            if let Ok(Some(v)) = root.read_optional(&rel) {
                out.push((rel, v));
            }
        }
    }
    out
}

/// Turns the write cache off on every disk under the target that has one on.
/// Only on a live root: a captured tree is never written.
pub fn turn_off(root: &Root, layers: &[Layer]) -> Result<CacheOff, String> {
    if !root.is_live() {
        return Err("the target is read from a captured tree".into());
    }
    let files = cache_files(root, layers);
    if files.is_empty() {
        return Err(
            "no disk under the target lets us toggle its write cache (no scsi_disk cache_type)"
                .into(),
        );
    }
    let mut guard = CacheOff {
        restore: Vec::new(),
    };
    for (rel, value) in files.into_iter().filter(|(_, v)| v.contains("write back")) {
        let path = root.path(&rel);
        std::fs::write(&path, "write through").map_err(|e| {
            format!(
                "cannot turn off the write cache via '{}': {e}",
                path.display()
            )
        })?;
        guard.restore.push((path, value));
    }
    if guard.restore.is_empty() {
        return Err("the write cache is already off".into());
    }
    Ok(guard)
}
