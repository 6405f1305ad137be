//! Engines are plug-ins, as in fio: each one queues reads and writes against a
//! file descriptor using buffers from a [`Buffers`] pool and reports completions.
//! Every engine is one entry of [`ENGINES`]: its name, its capability flags
//! (queue depth > 1, registered buffers, real I/O), whether it can run here and
//! how to open it; the job loop and the test runner decide by capabilities,
//! never by engine. `psync` and `null` are always built; `io_uring` only with
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
        entry(self).name
    }
}

/// One engine in [`ENGINES`]: what it is called, what it can do, whether this
/// box and build can run it, and how to open it for a job.
pub struct Registered {
    pub kind: EngineKind,
    pub name: &'static str,
    /// What the engine can do at best (an io_uring may still fail to register buffers).
    pub caps: Caps,
    /// `Ok` when the engine can run here; the error says why not.
    pub available: fn() -> io::Result<()>,
    pub open: fn(std::fs::File, Buffers) -> io::Result<Box<dyn Engine + Send>>,
}

/// Every engine, the default first. Adding one is an entry here, a variant of
/// [`EngineKind`] and its module.
pub const ENGINES: &[Registered] = &[
    Registered {
        kind: EngineKind::IoUring,
        name: "io_uring",
        caps: Caps {
            queues: true,
            fixed_buffers: true,
            does_io: true,
        },
        available: probe_uring,
        open: open_uring,
    },
    Registered {
        kind: EngineKind::Psync,
        name: "psync",
        caps: Caps {
            queues: false,
            fixed_buffers: false,
            does_io: true,
        },
        available: always,
        open: |file, bufs| Ok(Box::new(super::psync::Psync::new(file, bufs))),
    },
    Registered {
        kind: EngineKind::Null,
        name: "null",
        caps: Caps {
            queues: true,
            fixed_buffers: false,
            does_io: false,
        },
        available: always,
        open: |file, bufs| {
            drop(file);
            Ok(Box::new(super::null::Null::new(bufs)))
        },
    },
];

fn always() -> io::Result<()> {
    Ok(())
}

/// The table entry of `kind`.
pub fn entry(kind: EngineKind) -> &'static Registered {
    // Every kind has an entry (a test checks it); the first is a safe default.
    ENGINES
        .iter()
        .find(|e| e.kind == kind)
        .unwrap_or(&ENGINES[0])
}

/// The engine to run: the one asked for, checked, or the default with its fallback.
pub fn choose(requested: Option<EngineKind>) -> Result<(EngineKind, Option<String>), EngineError> {
    let available = entry(requested.unwrap_or(ENGINES[0].kind)).available;
    decide(requested, available())
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
    (entry(kind).open)(file, bufs)
}

fn open_uring(file: std::fs::File, bufs: Buffers) -> io::Result<Box<dyn Engine + Send>> {
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
    fn every_kind_has_one_entry_under_its_own_name() {
        use clap::ValueEnum;
        for kind in EngineKind::value_variants() {
            let found: Vec<_> = ENGINES.iter().filter(|e| e.kind == *kind).collect();
            assert_eq!(found.len(), 1, "{kind:?}");
            let cli_name = kind.to_possible_value().map(|v| v.get_name().to_string());
            assert_eq!(cli_name.as_deref(), Some(found[0].name));
        }
        assert!((entry(EngineKind::Psync).available)().is_ok());
        assert!(!entry(EngineKind::Psync).caps.queues);
        assert!(!entry(EngineKind::Null).caps.does_io);
    }

    #[test]
    fn an_engine_asked_for_by_name_is_used_as_is() {
        assert_eq!(
            choose(Some(EngineKind::Null)).unwrap(),
            (EngineKind::Null, None)
        );
        assert_eq!(
            choose(Some(EngineKind::Psync)).unwrap(),
            (EngineKind::Psync, None)
        );
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
