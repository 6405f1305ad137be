//! The `null` engine: completes every I/O at once without touching the target.
//! It measures the pipeline itself (offsets, timing, histograms), which is what
//! limits a benchmark on an 800 MHz board.

use std::io;

use super::buffers::Buffers;
use super::engine::{Caps, Completion, Dir, Engine};

pub struct Null {
    bufs: Buffers,
    done: Vec<Completion>,
}

impl Null {
    pub fn new(bufs: Buffers) -> Self {
        Null {
            bufs,
            done: Vec::new(),
        }
    }
}

impl Engine for Null {
    fn name(&self) -> &'static str {
        "null"
    }
    fn caps(&self) -> Caps {
        Caps {
            queues: true,
            fixed_buffers: false,
            does_io: false,
        }
    }
    fn buffers(&mut self) -> &mut Buffers {
        &mut self.bufs
    }
    fn queue(&mut self, slot: u32, _dir: Dir, _offset: u64) -> io::Result<()> {
        let n = self.bufs.slot_bytes() as i64;
        self.done.push(Completion { slot, result: n });
        Ok(())
    }
    fn reap(&mut self, _min: u32, out: &mut Vec<Completion>) -> io::Result<()> {
        out.append(&mut self.done);
        Ok(())
    }
    fn sync(&mut self, _data_only: bool) -> io::Result<()> {
        Ok(())
    }
}
