//! A buffered sequential read through the page cache, the one `tune try`
//! workload that read-ahead (`queue/read_ahead_kb`) changes: direct I/O bypasses
//! read-ahead entirely. Before every run the target's cached pages are dropped
//! (`posix_fadvise(DONTNEED)`, and `BLKFLSBUF` on a block device), so each run
//! reads from the device, never from memory. A run reads from offset 0 in
//! [`READ_BYTES`] `read()` calls, as a file server does, for the runtime; at the
//! target's end the cache is dropped again before the reads start over.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One `read()` call: small enough that read-ahead, not the request size, sets
/// the size of the device's I/Os.
pub const READ_BYTES: usize = 64 << 10;

/// Bytes read and time taken by one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadRun {
    pub bytes: u64,
    pub elapsed: Duration,
}

impl ReadRun {
    pub fn mb_per_sec(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Drops the cached pages of `file`: every clean page of a file, and for a
/// block device also its buffer cache (`BLKFLSBUF`, which needs root).
pub fn drop_cache(file: &File, block_device: bool) -> io::Result<()> {
    let fd = file.as_raw_fd();
    if block_device {
        // BLKFLSBUF is _IO(0x12, 97); libc does not export it on every target.
        const BLKFLSBUF: libc::c_ulong = 0x1261;
        // SAFETY: fd is open for the call; BLKFLSBUF takes no argument.
        if unsafe { libc::ioctl(fd, BLKFLSBUF as _, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: advisory call on an open fd.
    let rc = unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// A target opened for buffered reads.
pub struct BufferedRead {
    path: PathBuf,
    block_device: bool,
    size_bytes: u64,
    runtime: Duration,
}

impl BufferedRead {
    pub fn new(path: &Path, size_bytes: u64, runtime: Duration) -> io::Result<Self> {
        let block_device = std::fs::metadata(path)?.file_type().is_block_device();
        Ok(BufferedRead {
            path: path.to_path_buf(),
            block_device,
            size_bytes,
            runtime,
        })
    }

    /// One run: drop the cache, then read from the start for the runtime. At
    /// the end of the target the cache is dropped again (off the clock) and the
    /// reads start over, so no read is ever served from pages this run cached.
    pub fn run(&self) -> io::Result<ReadRun> {
        let mut buf = vec![0; READ_BYTES];
        let mut f = File::open(&self.path)?;
        // SAFETY: sync(2) has no preconditions; dirty pages would survive DONTNEED.
        unsafe { libc::sync() };
        let mut bytes = 0u64;
        let mut elapsed = Duration::ZERO;
        while elapsed < self.runtime {
            drop_cache(&f, self.block_device)?;
            f.seek(SeekFrom::Start(0))?;
            let (n, t) = self.read_pass(&mut f, &mut buf, self.runtime - elapsed)?;
            bytes += n;
            elapsed += t;
            if n == 0 {
                break;
            }
        }
        // Leave no cached pages behind for the next run or the next workload.
        drop_cache(&f, self.block_device)?;
        if bytes == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "nothing could be read",
            ));
        }
        Ok(ReadRun { bytes, elapsed })
    }

    /// Reads from the current offset to the end of the target or for `limit`.
    fn read_pass(
        &self,
        f: &mut File,
        buf: &mut [u8],
        limit: Duration,
    ) -> io::Result<(u64, Duration)> {
        let start = Instant::now();
        let mut bytes = 0u64;
        while bytes < self.size_bytes && start.elapsed() < limit {
            let want = (self.size_bytes - bytes).min(READ_BYTES as u64) as usize;
            match f.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => bytes += n as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok((bytes, start.elapsed()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_for_the_runtime_starting_over_at_the_end() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("data");
        std::fs::write(&p, vec![7u8; 3 * READ_BYTES + 100]).unwrap();
        let size = std::fs::metadata(&p).unwrap().len();
        let r = BufferedRead::new(&p, size, Duration::from_millis(50)).unwrap();
        let run = r.run().unwrap();
        assert!(run.bytes > size, "starts over at the end: {run:?}");
        assert!(run.elapsed >= Duration::from_millis(50), "{run:?}");
        assert!(run.mb_per_sec() > 0.0);
    }

    #[test]
    fn an_empty_target_is_an_error_not_a_zero() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("empty");
        std::fs::write(&p, b"").unwrap();
        let r = BufferedRead::new(&p, 0, Duration::from_secs(1)).unwrap();
        assert!(r.run().is_err());
        assert!(BufferedRead::new(&d.path().join("nope"), 1, Duration::from_secs(1)).is_err());
    }
}
