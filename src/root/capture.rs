//! `probe --capture DIR`: copies exactly what a probe read into a plain tree that
//! `--root DIR` reads back to the same result. sysfs is mostly symlinks
//! (`/sys/block/sda -> ../devices/...`), so every symlink met on the way to a file
//! is recreated as it was, and the file lands at its resolved place.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::SYNTHETIC_DIR;

/// What a probe did with one path.
#[derive(Debug, Clone)]
pub enum Event {
    /// Read a file; the bytes are what the probe saw.
    File(Vec<u8>),
    /// Listed a directory.
    Dir,
    /// Read a symlink.
    Link,
    /// Checked that a path exists.
    Exists,
    /// A value that does not come from a file (ioctl, statvfs), already serialised.
    Synthetic(Vec<u8>),
    /// The read failed with this message (EIO, EACCES); replayed from the tree.
    Error(String),
}

/// Every read of one probe run, in order.
#[derive(Debug, Default)]
pub struct Recorder {
    events: Vec<(String, Event)>,
}

impl Recorder {
    pub fn push(&mut self, rel: &str, event: Event) {
        self.events.push((rel.to_string(), event));
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error(
        "capture directory '{}' exists and is not empty; pick a new directory so nothing is overwritten",
        .0.display()
    )]
    NotEmpty(PathBuf),
    #[error("cannot write capture at '{}': {cause}", path.display())]
    Write { path: PathBuf, cause: io::Error },
    #[error("too many symlinks while resolving '{0}'")]
    LinkLoop(String),
}

/// Summary of a written capture.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct CaptureSummary {
    pub files: usize,
    pub dirs: usize,
    pub links: usize,
    pub errors: usize,
}

/// Refuses to capture into a directory that already holds files.
pub fn check_destination(dest: &Path) -> Result<(), CaptureError> {
    match fs::read_dir(dest) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                Err(CaptureError::NotEmpty(dest.to_path_buf()))
            } else {
                Ok(())
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(CaptureError::Write {
            path: dest.to_path_buf(),
            cause: source,
        }),
    }
}

/// Writes the recorded reads of a probe that ran against `source` into `dest`.
pub fn write_capture(
    source: &Path,
    recording: Recorder,
    dest: &Path,
) -> Result<CaptureSummary, CaptureError> {
    check_destination(dest)?;
    let mirror = Mirror { source, dest };
    mirror.mkdir(Path::new(""))?;
    let mut summary = CaptureSummary::default();
    let mut errors = BTreeMap::new();
    for (rel, event) in recording.events {
        match event {
            Event::File(bytes) => {
                let resolved = mirror.resolve(&rel)?;
                mirror.write(&resolved, &bytes)?;
                summary.files += 1;
            }
            Event::Synthetic(bytes) => {
                mirror.write(Path::new(&rel), &bytes)?;
                summary.files += 1;
            }
            Event::Dir => {
                let resolved = mirror.resolve(&rel)?;
                mirror.mkdir(&resolved)?;
                mirror.mirror_entries(&resolved)?;
                summary.dirs += 1;
            }
            Event::Link => {
                mirror.resolve_parent_and_link(&rel)?;
                summary.links += 1;
            }
            Event::Exists => {
                mirror.resolve(&rel)?;
            }
            Event::Error(message) => {
                errors.insert(rel, message);
                summary.errors += 1;
            }
        }
    }
    if !errors.is_empty() {
        // Strings to strings: serializing cannot fail.
        let text = crate::json::to_string_pretty(&errors).unwrap_or_default();
        mirror.write(
            &Path::new(SYNTHETIC_DIR).join("read-errors.json"),
            text.as_bytes(),
        )?;
    }
    Ok(summary)
}

struct Mirror<'a> {
    source: &'a Path,
    dest: &'a Path,
}

impl Mirror<'_> {
    fn err(&self, path: &Path, source: io::Error) -> CaptureError {
        CaptureError::Write {
            path: self.dest.join(path),
            cause: source,
        }
    }

    fn mkdir(&self, rel: &Path) -> Result<(), CaptureError> {
        fs::create_dir_all(self.dest.join(rel)).map_err(|e| self.err(rel, e))
    }

    fn write(&self, rel: &Path, bytes: &[u8]) -> Result<(), CaptureError> {
        if let Some(parent) = rel.parent() {
            self.mkdir(parent)?;
        }
        let target = self.dest.join(rel);
        // A path may already be a directory when an earlier event listed it.
        if target.is_dir() {
            return Ok(());
        }
        fs::write(&target, bytes).map_err(|e| self.err(rel, e))
    }

    /// Recreates the symlink at `rel` (relative to the tree root) as it is in the
    /// source, so that relative targets keep working inside the capture.
    fn copy_link(&self, rel: &Path) -> Result<PathBuf, CaptureError> {
        let host = self.source.join(rel);
        let target = fs::read_link(&host).map_err(|e| self.err(rel, e))?;
        let depth = rel.components().count().saturating_sub(1);
        let stored = if target.is_absolute() {
            let mut up = PathBuf::new();
            for _ in 0..depth {
                up.push("..");
            }
            up.join(target.strip_prefix("/").unwrap_or(&target))
        } else {
            target.clone()
        };
        if let Some(parent) = rel.parent() {
            self.mkdir(parent)?;
        }
        let link = self.dest.join(rel);
        if fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(&stored, &link).map_err(|e| self.err(rel, e))?;
        }
        let base = if target.is_absolute() {
            PathBuf::new()
        } else {
            rel.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        let joined = base.join(target.strip_prefix("/").unwrap_or(&target));
        Ok(normalize(&joined))
    }

    /// Walks `rel` component by component in the source tree, recreating every
    /// symlink it passes and every directory it enters; returns the resolved path.
    fn resolve(&self, rel: &str) -> Result<PathBuf, CaptureError> {
        let mut pending: Vec<PathBuf> = Path::new(rel)
            .components()
            .rev()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(PathBuf::from(n)),
                Component::ParentDir => Some(PathBuf::from("..")),
                _ => None,
            })
            .collect();
        let mut resolved = PathBuf::new();
        let mut hops = 0;
        while let Some(part) = pending.pop() {
            if part.as_os_str() == ".." {
                resolved.pop();
                continue;
            }
            let candidate = resolved.join(&part);
            let host = self.source.join(&candidate);
            match fs::symlink_metadata(&host) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    hops += 1;
                    if hops > 40 {
                        return Err(CaptureError::LinkLoop(rel.to_string()));
                    }
                    let target = self.copy_link(&candidate)?;
                    for c in target.components().rev() {
                        if let Component::Normal(n) = c {
                            pending.push(PathBuf::from(n));
                        }
                    }
                    resolved = PathBuf::new();
                }
                Ok(meta) if meta.is_dir() => {
                    self.mkdir(&candidate)?;
                    resolved = candidate;
                }
                _ => resolved = candidate,
            }
        }
        Ok(resolved)
    }

    fn resolve_parent_and_link(&self, rel: &str) -> Result<(), CaptureError> {
        let path = Path::new(rel);
        let parent = path
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let resolved_parent = self.resolve(&parent)?;
        let name = path.file_name().unwrap_or_default();
        self.copy_link(&resolved_parent.join(name))?;
        Ok(())
    }

    /// After a directory listing, recreate its entries so the listing reads back
    /// the same: symlinks as symlinks (with their target directory), directories
    /// as directories. Files appear when they are read.
    fn mirror_entries(&self, dir: &Path) -> Result<(), CaptureError> {
        let host = self.source.join(dir);
        let Ok(entries) = fs::read_dir(&host) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let rel = dir.join(entry.file_name());
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                let target = self.copy_link(&rel)?;
                if self.source.join(&target).is_dir() {
                    self.mkdir(&target)?;
                }
            } else if kind.is_dir() {
                self.mkdir(&rel)?;
            }
        }
        Ok(())
    }
}

/// Resolves `.` and `..` lexically (no filesystem access).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::root::Root;

    #[test]
    fn capture_recreates_symlinks_and_reads_back_the_same() {
        let src = tempfile::tempdir().unwrap();
        let s = src.path();
        fs::create_dir_all(s.join("sys/devices/pci0/block/sda/queue")).unwrap();
        fs::write(s.join("sys/devices/pci0/block/sda/queue/rotational"), "1\n").unwrap();
        fs::write(s.join("sys/devices/pci0/block/sda/size"), "2048\n").unwrap();
        fs::create_dir_all(s.join("sys/block")).unwrap();
        std::os::unix::fs::symlink("../devices/pci0/block/sda", s.join("sys/block/sda")).unwrap();

        let root = Root::tree(s).unwrap().with_recorder();
        assert_eq!(root.read_dir("sys/block").unwrap(), vec!["sda"]);
        assert_eq!(
            root.read_value("sys/block/sda/queue/rotational").unwrap(),
            "1"
        );
        let _: Result<u32, String> = root.captured("x", || Ok(5));

        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("cap");
        let summary = write_capture(s, root.take_recording(), &dest).unwrap();
        assert_eq!(summary.files, 1);

        let back = Root::tree(&dest).unwrap();
        assert_eq!(back.read_dir("sys/block").unwrap(), vec!["sda"]);
        assert_eq!(
            back.read_value("sys/block/sda/queue/rotational").unwrap(),
            "1"
        );
        assert!(
            fs::symlink_metadata(dest.join("sys/block/sda"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // Not read, so not copied.
        assert!(!dest.join("sys/devices/pci0/block/sda/size").exists());
    }

    #[test]
    fn refuses_non_empty_destination() {
        let out = tempfile::tempdir().unwrap();
        fs::write(out.path().join("keep"), "data").unwrap();
        let err = check_destination(out.path()).unwrap_err();
        assert!(err.to_string().contains("not empty"));
        assert_eq!(fs::read_to_string(out.path().join("keep")).unwrap(), "data");
    }

    #[test]
    fn normalize_handles_parent_components() {
        assert_eq!(
            normalize(Path::new("sys/block/../devices/x")),
            PathBuf::from("sys/devices/x")
        );
    }
}
