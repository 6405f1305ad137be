//! The `file_services` section: Samba and NFS server configuration. A box
//! without either is a valid answer, not a failure, so each part carries the
//! reason it is absent.

use serde::{Deserialize, Serialize};

use super::ProbeError;
use super::exports::{self, Nfs};
use super::smb::{self, Samba};
use crate::root::Root;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileServices {
    pub samba: Option<Samba>,
    pub samba_absent: Option<String>,
    pub nfs: Option<Nfs>,
    pub nfs_absent: Option<String>,
}

/// Something wrong in a configuration file, at a 1-based line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConfigProblem {
    pub file: String,
    pub line: usize,
    pub message: String,
}

pub fn read_file_services(root: &Root) -> Result<FileServices, ProbeError> {
    let samba = smb::read_samba(root)?;
    let nfs = exports::read_nfs(root)?;
    Ok(FileServices {
        samba_absent: samba.is_none().then(|| {
            format!(
                "'/{}' does not exist (no Samba configuration)",
                smb::SMB_CONF
            )
        }),
        samba,
        nfs_absent: nfs.is_none().then(|| {
            format!(
                "neither '/{}' nor '/{}/*.exports' exists (no NFS exports)",
                exports::EXPORTS,
                exports::EXPORTS_D
            )
        }),
        nfs,
    })
}
