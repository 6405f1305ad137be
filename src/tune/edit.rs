//! The error shared by the configuration-file editors ([`super::edit_fstab`],
//! [`super::edit_smbconf`]): every message quotes the bad value and says what to do.

use crate::probe::smb::document;

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum EditError {
    #[error("no line in fstab mounts '{mount_point}'; add the entry by hand first")]
    NoFstabEntry { mount_point: String },
    #[error(
        "fstab lines {lines:?} all mount '{mount_point}'; keep one of them by hand before tuning it"
    )]
    SeveralFstabEntries {
        mount_point: String,
        lines: Vec<usize>,
    },
    #[error("fstab line {line} is malformed ({reason}): '{text}'; fix it by hand first")]
    MalformedFstabLine {
        line: usize,
        text: String,
        reason: String,
    },
    #[error(
        "cannot write mount option '{option}': it must be non-empty and contain no whitespace or ','"
    )]
    BadMountOption { option: String },
    #[error(transparent)]
    SmbConf(#[from] document::EditError),
}
