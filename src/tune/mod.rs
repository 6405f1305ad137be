//! `nastune tune`: changes to the running system and its configuration files,
//! each read, journaled, applied, verified and revertible.
//!
//! Building blocks: lossless editors for fstab and smb.conf, network device
//! settings through ethtool ioctls, export of changes to other tools' formats,
//! and the statistics of `tune try` (measure, apply, measure again, keep or revert).

pub mod edit;
pub mod edit_fstab;
pub mod edit_smbconf;
pub mod export;
pub mod netdev;
pub mod trial;
