//! The one integration-test binary: runs the real `nastune` binary.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

mod util;

mod generate;
mod lab;
mod probe;
mod store;
