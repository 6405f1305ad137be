//! Engines are plug-ins, as in fio: each one queues reads and writes against a
//! file descriptor using buffers from a [`Buffers`] pool and reports completions.
//! Capability flags tell the job loop what an engine can do (queue depth > 1,
//! registered buffers). `psync` and `null` are always built; `io_uring` only with
//! the `io-uring` cargo feature.

use std::io;

use serde::{Deserialize, Serialize};

use super::buffers::Buffers;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caps {
    /// Keeps several I/Os in flight; sync engines run at depth 1.
    pub queues: bool,
    /// Uses buffers registered with the kernel.
    pub fixed_buffers: bool,
    /// Really moves data (false for `null`).
    pub does_io: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
}

/// One finished I/O: its buffer slot and the kernel's result (bytes or -errno).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub slot: u32,
    pub result: i64,
}

pub trait Engine {
    fn name(&self) -> &'static str;
    fn caps(&self) -> Caps;
    fn buffers(&mut self) -> &mut Buffers;
    /// Queues one I/O of the whole slot at `offset`. Sync engines do it now.
    fn queue(&mut self, slot: u32, dir: Dir, offset: u64) -> io::Result<()>;
    /// Submits what is queued and waits until at least `min` completions are in `out`.
    fn reap(&mut self, min: u32, out: &mut Vec<Completion>) -> io::Result<()>;
    /// fsync (or fdatasync) the file; called with nothing in flight.
    fn sync(&mut self, data_only: bool) -> io::Result<()>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// Linux io_uring: batched submission, registered buffers
    #[value(name = "io_uring")]
    IoUring,
    /// pread(2)/pwrite(2), one I/O at a time
    Psync,
    /// No I/O at all: measures the benchmark's own overhead
    Null,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::IoUring => "io_uring",
            EngineKind::Psync => "psync",
            EngineKind::Null => "null",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("io_uring is not available: {0}; use --engine psync")]
    UringUnavailable(String),
    #[error("this nastune was built without the 'io-uring' feature; use --engine psync")]
    UringNotBuilt,
}

/// Which engine to use, given what was asked and whether io_uring could be set
/// up. Without an explicit request, ENOSYS (old kernel, qemu-user) and EPERM
/// (seccomp, `kernel.io_uring_disabled`) fall back to psync with a note; any
/// other failure, or an explicit `--engine io_uring`, is an error.
pub fn decide(
    requested: Option<EngineKind>,
    uring: Result<(), io::Error>,
) -> Result<(EngineKind, Option<String>), EngineError> {
    match requested {
        Some(EngineKind::IoUring) => match uring {
            Ok(()) => Ok((EngineKind::IoUring, None)),
            Err(e) if e.kind() == io::ErrorKind::Unsupported && e.raw_os_error().is_none() => {
                Err(EngineError::UringNotBuilt)
            }
            Err(e) => Err(EngineError::UringUnavailable(e.to_string())),
        },
        Some(other) => Ok((other, None)),
        None => match uring {
            Ok(()) => Ok((EngineKind::IoUring, None)),
            Err(e) if e.kind() == io::ErrorKind::Unsupported && e.raw_os_error().is_none() => Ok((
                EngineKind::Psync,
                Some("built without io_uring support; using psync".into()),
            )),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM)) => Ok((
                EngineKind::Psync,
                Some(format!("io_uring unavailable ({e}); falling back to psync")),
            )),
            Err(e) => Err(EngineError::UringUnavailable(e.to_string())),
        },
    }
}

/// Hidden test switch: `NASTUNE_URING_ERRNO=38` makes io_uring setup fail with
/// that errno, to exercise the fallback on kernels where io_uring works.
pub fn forced_uring_error() -> Option<io::Error> {
    std::env::var("NASTUNE_URING_ERRNO")
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
        .map(io::Error::from_raw_os_error)
}

/// Tries to set up a tiny ring, so the choice is made once before any job starts.
pub fn probe_uring() -> Result<(), io::Error> {
    if let Some(e) = forced_uring_error() {
        return Err(e);
    }
    #[cfg(feature = "io-uring")]
    {
        super::uring::probe()
    }
    #[cfg(not(feature = "io-uring"))]
    {
        Err(io::Error::new(io::ErrorKind::Unsupported, "not built"))
    }
}

/// Opens an engine of `kind` for one job.
pub fn open(
    kind: EngineKind,
    file: std::fs::File,
    bufs: Buffers,
) -> io::Result<Box<dyn Engine + Send>> {
    match kind {
        EngineKind::Psync => Ok(Box::new(super::psync::Psync::new(file, bufs))),
        EngineKind::Null => {
            drop(file);
            Ok(Box::new(super::null::Null::new(bufs)))
        }
        EngineKind::IoUring => {
            if let Some(e) = forced_uring_error() {
                return Err(e);
            }
            #[cfg(feature = "io-uring")]
            {
                Ok(Box::new(super::uring::Uring::new(file, bufs)?))
            }
            #[cfg(not(feature = "io-uring"))]
            {
                let _ = (file, bufs);
                Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "built without io_uring",
                ))
            }
        }
    }
}

/// A completion's result as an error, if it is one.
pub fn result_error(result: i64) -> Option<io::Error> {
    (result < 0).then(|| io::Error::from_raw_os_error((-result) as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errno(n: i32) -> Result<(), io::Error> {
        Err(io::Error::from_raw_os_error(n))
    }

    #[test]
    fn falls_back_only_when_not_asked_and_only_for_enosys_eperm() {
        assert_eq!(decide(None, Ok(())).unwrap(), (EngineKind::IoUring, None));
        let (k, note) = decide(None, errno(libc::ENOSYS)).unwrap();
        assert_eq!(k, EngineKind::Psync);
        assert!(note.unwrap().contains("falling back to psync"));
        assert_eq!(
            decide(None, errno(libc::EPERM)).unwrap().0,
            EngineKind::Psync
        );
        assert!(decide(None, errno(libc::EINVAL)).is_err());
        assert!(decide(Some(EngineKind::IoUring), errno(libc::ENOSYS)).is_err());
        assert_eq!(
            decide(Some(EngineKind::Psync), errno(libc::ENOSYS)).unwrap(),
            (EngineKind::Psync, None)
        );
        let unbuilt = || Err(io::Error::new(io::ErrorKind::Unsupported, "not built"));
        assert_eq!(decide(None, unbuilt()).unwrap().0, EngineKind::Psync);
        assert!(matches!(
            decide(Some(EngineKind::IoUring), unbuilt()),
            Err(EngineError::UringNotBuilt)
        ));
    }
}
