//! The I/O buffer pool: one allocation aligned for O_DIRECT, one slot per
//! in-flight I/O, filled once with incompressible data (xorshift output) so that
//! compressing or deduplicating storage sees realistic data and no CPU is spent
//! per I/O generating it.

use std::alloc::{Layout, alloc_zeroed, dealloc};

#[derive(Debug, thiserror::Error)]
pub enum BufferError {
    #[error(
        "cannot allocate {bytes} bytes aligned to {align} for I/O buffers; lower --iodepth or --bs"
    )]
    Alloc { bytes: usize, align: usize },
}

pub struct Buffers {
    ptr: *mut u8,
    layout: Layout,
    slot_bytes: usize,
    slots: usize,
}

// SAFETY: the pool owns its allocation exclusively; moving it to another thread is fine.
unsafe impl Send for Buffers {}

/// A small fast generator: xorshift64*. Not for secrets, only for data and offsets.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

impl Buffers {
    pub fn new(
        slots: usize,
        slot_bytes: usize,
        align: usize,
        seed: u64,
    ) -> Result<Self, BufferError> {
        let bytes = slots.max(1) * slot_bytes.max(1);
        let err = || BufferError::Alloc { bytes, align };
        let layout = Layout::from_size_align(bytes, align.max(8)).map_err(|_| err())?;
        // SAFETY: layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(err());
        }
        let mut b = Buffers {
            ptr,
            layout,
            slot_bytes,
            slots,
        };
        let mut rng = Rng::new(seed);
        for chunk in b.all_mut().chunks_mut(8) {
            let v = rng.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        Ok(b)
    }

    fn all_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is a live allocation of layout.size() bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// Raw pointer to a slot, for engines that hand it to the kernel.
    pub fn slot_ptr(&self, slot: usize) -> *mut u8 {
        debug_assert!(slot < self.slots);
        // SAFETY: slot < slots, so the offset stays inside the allocation.
        unsafe { self.ptr.add(slot * self.slot_bytes) }
    }

    pub fn slot_mut(&mut self, slot: usize) -> &mut [u8] {
        let p = self.slot_ptr(slot);
        // SAFETY: p points at slot_bytes bytes inside our allocation, borrowed mutably through self.
        unsafe { std::slice::from_raw_parts_mut(p, self.slot_bytes) }
    }

    pub fn slot(&self, slot: usize) -> &[u8] {
        // SAFETY: as slot_mut, shared borrow.
        unsafe { std::slice::from_raw_parts(self.slot_ptr(slot), self.slot_bytes) }
    }

    /// iovecs covering every slot, for io_uring buffer registration.
    pub fn iovecs(&self) -> Vec<libc::iovec> {
        (0..self.slots)
            .map(|s| libc::iovec {
                iov_base: self.slot_ptr(s).cast(),
                iov_len: self.slot_bytes,
            })
            .collect()
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        // SAFETY: allocated in new() with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_aligned_distinct_and_incompressible() {
        let mut b = Buffers::new(4, 4096, 4096, 7).unwrap();
        for s in 0..4 {
            assert_eq!(b.slot_ptr(s) as usize % 4096, 0);
        }
        assert_ne!(b.slot(0), b.slot(1));
        // Random data: every byte value shows up, no long runs of zeros.
        let mut seen = [false; 256];
        for &x in b.slot_mut(2).iter() {
            seen[x as usize] = true;
        }
        assert!(seen.iter().filter(|s| **s).count() > 250);
        assert_eq!(b.iovecs().len(), 4);
    }
}
