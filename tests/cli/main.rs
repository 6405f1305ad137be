//! The one integration-test binary: runs the real `nastune` binary.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

mod ttar;
mod util;

mod foreign;
mod generate;
mod probe;
mod services;
mod store;
