//! Tests whose verdicts are timings: the path model's predictions against
//! known truth, a trial's "no effect", SMB encryption's measured cost, and cipher
//! speeds beside a busy loop. Their own test binary: cargo runs
//! test binaries one after another, so no other test of ours loads the CPU
//! they measure; within it they run one at a time.

// Helpers say what they skipped or measured to the test harness, which
// captures stdout and stderr; nastune's own output rules do not apply here.
#![allow(clippy::print_stdout, clippy::print_stderr)]
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

// The helpers of the cli binary, shared by path; not every one is used here.
#[allow(dead_code)]
#[path = "../cli/loopdev.rs"]
mod loopdev;
#[allow(dead_code)]
#[path = "../cli/netns_pair.rs"]
mod netns_pair;
#[allow(dead_code)]
#[path = "../cli/private_etc.rs"]
mod private_etc;
#[path = "../cli/smbd.rs"]
mod smbd;
#[allow(dead_code)]
#[path = "../cli/util.rs"]
mod util;
#[path = "../cli/writeback.rs"]
mod writeback;

/// The names the shared tests use in the cli binary.
mod bench_disk {
    pub use crate::loopdev::{loop_dev, sh};
}
mod net_netns {
    pub use crate::netns_pair::{serve, shaped_pair_or_skip};
}
mod tune {
    pub(crate) use crate::private_etc::{PrivateEtc, json_of};
}
mod net {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// One test at a time: each measures the whole box.
    pub fn heavy() -> std::sync::MutexGuard<'static, ()> {
        ONE.lock().unwrap_or_else(|p| p.into_inner())
    }
}

mod check_truth;
mod crypto_contention;
mod no_effect;
mod smb_encryption;
mod writeback_timeline;
