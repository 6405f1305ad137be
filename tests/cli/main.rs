//! The one integration-test binary: runs the real `nastune` binary.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

mod util;

mod bench_crypto;
mod generate;
mod probe;
mod store;
