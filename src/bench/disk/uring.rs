//! The `io_uring` engine: I/Os are queued as SQEs and submitted in growing
//! chunks (see [`Pacer`]), completions are reaped in batches, and the buffer
//! pool and the file are registered with the kernel so each I/O skips page
//! pinning and fd lookup. It asks for SINGLE_ISSUER|COOP_TASKRUN, then
//! COOP_TASKRUN, then nothing, dropping flags the kernel rejects with EINVAL.
//! Not DEFER_TASKRUN (fio's choice): with it, completions wait for our next
//! io_uring_enter, and 4 KiB random reads at QD32 on a virtio disk ran at 0.95x
//! the IOPS for 1.25x the CPU per I/O of COOP_TASKRUN (5 alternating runs each,
//! kernel 6.18).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use io_uring::{IoUring, opcode, squeue, types};

use super::buffers::Buffers;
use super::engine::{Caps, Completion, Dir, Engine};

fn build(entries: u32) -> io::Result<IoUring> {
    let attempts: [fn(&mut io_uring::Builder); 3] = [
        |b| {
            b.setup_single_issuer().setup_coop_taskrun();
        },
        |b| {
            b.setup_coop_taskrun();
        },
        |_| {},
    ];
    let mut last = io::Error::from_raw_os_error(libc::EINVAL);
    for apply in attempts {
        let mut b = IoUring::builder();
        apply(&mut b);
        match b.build(entries) {
            Ok(ring) => return Ok(ring),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Whether a ring can be set up at all (ENOSYS, EPERM …).
pub fn probe() -> io::Result<()> {
    build(2).map(drop)
}

/// When queued SQEs go to the kernel. A turn of the job loop refills the slots
/// whose I/Os just completed, and a disk (a virtio one above all) answers in
/// bursts: when all of a turn's SQEs went out in one call at its end, the
/// device idled while the whole burst was prepared, and QD32 random reads ran
/// at 0.69-0.86x fio's IOPS (fio submits each I/O alone) with each read 40 %
/// longer in the device queue. So the first SQE of a turn goes out at once and
/// the chunks then double (1, 2, 4 ...): the device restarts within one I/O's
/// preparation, and a turn of N I/Os costs about log2(N) system calls, not N.
/// The SQE that fills the last free slot waits for the submit-and-wait that
/// ends the turn, so depth 1 stays at one system call per I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pacer {
    slots: u32,
    /// Queued or submitted, not yet reaped.
    in_flight: u32,
    /// Queued since the last submit.
    queued: u32,
    /// Submit when `queued` reaches this.
    chunk: u32,
}

impl Pacer {
    fn new(slots: u32) -> Self {
        Pacer {
            slots,
            in_flight: 0,
            queued: 0,
            chunk: 1,
        }
    }

    /// One more SQE is queued: whether to submit now.
    fn queued(&mut self) -> bool {
        self.queued += 1;
        self.in_flight += 1;
        let now = self.in_flight < self.slots && self.queued >= self.chunk;
        if now {
            self.queued = 0;
            self.chunk = self.chunk.saturating_mul(2);
        }
        now
    }

    /// Everything queued went to the kernel with a wait: the turn is over.
    fn flushed(&mut self) {
        self.queued = 0;
        self.chunk = 1;
    }

    fn reaped(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }
}

pub struct Uring {
    ring: IoUring,
    file: File,
    bufs: Buffers,
    fixed_buffers: bool,
    fixed_file: bool,
    pacer: Pacer,
}

impl Uring {
    pub fn new(file: File, bufs: Buffers) -> io::Result<Self> {
        let entries = (bufs.slots() as u32).next_power_of_two().max(2);
        let ring = build(entries)?;
        // Registration can fail (RLIMIT_MEMLOCK on kernels before 5.12); plain
        // reads and writes still work, so it is an optimisation, not a requirement.
        // SAFETY: the iovecs point into `bufs`, which lives as long as the ring
        // (both are fields of Self, and the ring is dropped first).
        let fixed_buffers = unsafe { ring.submitter().register_buffers(&bufs.iovecs()) }.is_ok();
        let fixed_file = ring.submitter().register_files(&[file.as_raw_fd()]).is_ok();
        Ok(Uring {
            ring,
            file,
            fixed_buffers,
            fixed_file,
            pacer: Pacer::new(bufs.slots() as u32),
            bufs,
        })
    }

    fn push(&mut self, entry: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: buffers referenced by the entry live in self.bufs until reaped.
            let pushed = unsafe { self.ring.submission().push(&entry) }.is_ok();
            if pushed {
                if self.pacer.queued() {
                    self.ring.submit()?;
                }
                return Ok(());
            }
            // Not with slots-sized rings; kept so a full queue is never an error.
            self.ring.submit()?;
        }
    }
}

impl Engine for Uring {
    fn name(&self) -> &'static str {
        "io_uring"
    }
    fn caps(&self) -> Caps {
        Caps {
            queues: true,
            fixed_buffers: self.fixed_buffers,
            does_io: true,
        }
    }
    fn buffers(&mut self) -> &mut Buffers {
        &mut self.bufs
    }
    fn queue(&mut self, slot: u32, dir: Dir, offset: u64) -> io::Result<()> {
        let p = self.bufs.slot_ptr(slot as usize);
        let len = self.bufs.slot_bytes() as u32;
        let fd = types::Fd(self.file.as_raw_fd());
        let fixed = types::Fixed(0);
        let idx = slot as u16;
        let entry = match (dir, self.fixed_buffers, self.fixed_file) {
            (Dir::Read, true, true) => opcode::ReadFixed::new(fixed, p, len, idx)
                .offset(offset)
                .build(),
            (Dir::Read, true, false) => opcode::ReadFixed::new(fd, p, len, idx)
                .offset(offset)
                .build(),
            (Dir::Read, false, true) => opcode::Read::new(fixed, p, len).offset(offset).build(),
            (Dir::Read, false, false) => opcode::Read::new(fd, p, len).offset(offset).build(),
            (Dir::Write, true, true) => opcode::WriteFixed::new(fixed, p, len, idx)
                .offset(offset)
                .build(),
            (Dir::Write, true, false) => opcode::WriteFixed::new(fd, p, len, idx)
                .offset(offset)
                .build(),
            (Dir::Write, false, true) => opcode::Write::new(fixed, p, len).offset(offset).build(),
            (Dir::Write, false, false) => opcode::Write::new(fd, p, len).offset(offset).build(),
        };
        self.push(entry.user_data(u64::from(slot)))
    }
    fn reap(&mut self, min: u32, out: &mut Vec<Completion>) -> io::Result<()> {
        let mut got = 0u32;
        loop {
            // One system call both submits the batch and waits.
            match self.ring.submit_and_wait((min - got.min(min)) as usize) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(e),
            }
            self.pacer.flushed();
            for cqe in self.ring.completion() {
                self.pacer.reaped();
                out.push(Completion {
                    slot: cqe.user_data() as u32,
                    result: i64::from(cqe.result()),
                });
                got += 1;
            }
            if got >= min {
                return Ok(());
            }
        }
    }
    fn sync(&mut self, data_only: bool) -> io::Result<()> {
        // Nothing is in flight here, and IORING_OP_FSYNC always blocks, so the
        // kernel would hand it to an io-wq worker: a plain system call is
        // cheaper and just as ordered.
        if data_only {
            self.file.sync_data()
        } else {
            self.file.sync_all()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Pacer;

    /// Queues `n` SQEs; returns the sizes of the chunks submitted on the way.
    fn turn(p: &mut Pacer, n: u32) -> Vec<u32> {
        let mut chunks = Vec::new();
        let mut since = 0;
        for _ in 0..n {
            since += 1;
            if p.queued() {
                chunks.push(since);
                since = 0;
            }
        }
        chunks
    }

    #[test]
    fn a_turn_submits_one_at_once_then_doubling_chunks_and_leaves_the_last_to_the_wait() {
        let mut p = Pacer::new(32);
        // The first fill: 1 + 2 + 4 + 8 + 16 = 31; the 32nd waits for the reap.
        assert_eq!(turn(&mut p, 32), vec![1, 2, 4, 8, 16]);
        assert_eq!(p.queued, 1);
        p.flushed();
        for _ in 0..25 {
            p.reaped();
        }
        // 25 free again: 1 + 2 + 4 + 8 at once, the other 10 with the wait.
        assert_eq!(turn(&mut p, 25), vec![1, 2, 4, 8]);
        assert_eq!((p.in_flight, p.queued), (32, 10));
    }

    #[test]
    fn at_depth_one_nothing_is_submitted_before_the_wait() {
        let mut p = Pacer::new(1);
        for _ in 0..3 {
            assert_eq!(turn(&mut p, 1), Vec::<u32>::new());
            p.flushed();
            p.reaped();
        }
        assert_eq!(p.in_flight, 0);
    }

    #[test]
    fn a_single_free_slot_goes_out_with_the_wait() {
        let mut p = Pacer::new(4);
        assert_eq!(turn(&mut p, 4), vec![1, 2]);
        p.flushed();
        p.reaped();
        assert_eq!(turn(&mut p, 1), Vec::<u32>::new());
    }
}
