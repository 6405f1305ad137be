//! Tuning: turn findings into a plan, apply it journaled (old values are on disk
//! before anything is written), verify it, roll it back, and keep network changes
//! behind a dead-man timer until they are confirmed.
//!
//! Every write is an [`action::Action`]: a runtime value under /proc/sys or /sys,
//! or a whole file owned by nastune (`99-zz-nastune.conf` in /etc/sysctl.d,
//! `99-zz-nastune.rules` in /etc/udev/rules.d).

pub mod action;
pub mod apply;
pub mod deadman;
pub mod plan;
pub mod rollback;
pub mod sysctl_d;
pub mod udev_rules;
pub mod validate;
pub mod verify;
