//! Tuning: turn findings into a plan, apply it journaled (old values are on disk
//! before anything is written), verify it, roll it back, and keep network changes
//! behind a dead-man timer until they are confirmed.
//!
//! Each kind of change (sysctl, sysfs attribute, udev rule, fstab option,
//! smb.conf parameter, device setting, qdisc, IRQ affinity, RPS/XPS mask,
//! dm-crypt flag, advice) is one module under
//! [`kinds`] implementing [`kinds::ChangeKind`]: plan, edit, reload and export
//! ask the kind, never match on the change.
//!
//! Every write is an [`action::Action`]: a runtime value under /proc/sys or /sys,
//! a network device setting (ethtool ioctls, [`netdev`]), or a whole file: owned by
//! nastune (`99-zz-nastune.conf` in /etc/sysctl.d, `99-zz-nastune.rules` in
//! /etc/udev/rules.d) or edited in place without losing a byte of what is around
//! the change ([`edit_fstab`], [`edit_smbconf`]). [`trial`] holds the statistics of
//! `tune try`; [`export`] hands a plan to other tools.

pub mod action;
pub mod apply;
pub mod boot_unit;
#[cfg(test)]
mod change_json;
pub mod cpuset;
pub mod deadman;
pub mod dmcrypt;
pub mod edit;
pub mod edit_file;
pub mod edit_fstab;
pub mod edit_smbconf;
pub mod export;
pub mod file_meta;
pub mod folklore;
pub mod kinds;
pub mod netdev;
pub mod plan;
pub mod reload;
pub mod remount;
pub mod rollback;
pub mod security;
pub mod sysctl_d;
#[cfg(test)]
pub mod test_tree;
pub mod trial;
pub mod udev_rules;
pub mod validate;
pub mod verify;
