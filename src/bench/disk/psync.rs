//! The `psync` engine: pread(2)/pwrite(2), one I/O at a time. It works on every
//! kernel, and it is the fallback when io_uring is missing or forbidden.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::buffers::Buffers;
use super::engine::{Caps, Completion, Dir, Engine};

pub struct Psync {
    // std's read_at/write_at use pread64/pwrite64, so 32-bit boxes reach past 2 GiB.
    file: File,
    bufs: Buffers,
    done: Vec<Completion>,
}

impl Psync {
    pub fn new(file: File, bufs: Buffers) -> Self {
        Psync {
            file,
            bufs,
            done: Vec::with_capacity(1),
        }
    }
}

impl Engine for Psync {
    fn name(&self) -> &'static str {
        "psync"
    }
    fn caps(&self) -> Caps {
        Caps {
            queues: false,
            fixed_buffers: false,
            does_io: true,
        }
    }
    fn buffers(&mut self) -> &mut Buffers {
        &mut self.bufs
    }
    fn queue(&mut self, slot: u32, dir: Dir, offset: u64) -> io::Result<()> {
        let buf = self.bufs.slot_mut(slot as usize);
        let n = match dir {
            Dir::Read => self.file.read_at(buf, offset),
            Dir::Write => self.file.write_at(buf, offset),
        };
        let result = match n {
            Ok(n) => n as i64,
            Err(e) => -i64::from(e.raw_os_error().unwrap_or(libc::EIO)),
        };
        self.done.push(Completion { slot, result });
        Ok(())
    }
    fn reap(&mut self, _min: u32, out: &mut Vec<Completion>) -> io::Result<()> {
        out.append(&mut self.done);
        Ok(())
    }
    fn sync(&mut self, data_only: bool) -> io::Result<()> {
        if data_only {
            self.file.sync_data()
        } else {
            self.file.sync_all()
        }
    }
}
