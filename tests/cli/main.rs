//! The one integration-test binary: runs the real `nastune` binary.

#![allow(clippy::unwrap_used)]
// a failed unwrap is a failed test
// Helpers say what they skipped or measured to the test harness, which
// captures stdout and stderr; nastune's own output rules do not apply here.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod loopdev;
mod netns_pair;
mod private_etc;
mod ttar;
mod util;
// Shared with the quiet binary, which holds the tests that change the dirty limits.
#[allow(dead_code)]
mod writeback;

mod advise;
mod bad_input;
mod bench_crypto;
mod bench_disk;
mod bench_disk_safety;
mod bench_disk_shared;
mod bench_disk_timeline;
mod bench_http;
mod bench_smb;
mod bench_smb_faults;
mod bench_smb_netns;
mod check;
mod doctors;
mod foreign;
mod generate;
mod history;
mod hostile_tree;
mod lab;
mod memory;
mod net;
mod net_netns;
mod netns;
mod netsys_fixtures;
mod probe;
mod probe_storage;
mod progress;
mod readme;
mod report;
mod report_golden;
mod schemas;
mod services;
mod smb_client;
mod smb_hostile;
mod smbd;
mod store;
mod store_edges;
mod tune;
mod tune_files;
mod tune_folklore;
mod tune_kinds;
mod tune_try;
mod tune_try_devices;
mod tune_try_judges;
mod watch;
