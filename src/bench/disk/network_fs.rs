//! A target on a network or FUSE filesystem (cifs/smb3, nfs/nfs4, fuse): what
//! a disk bench there measures is the file service — client, wire, server and
//! its disks — so the result says which mount it was, with the options that
//! shape it (protocol version, rsize/wsize, cache mode).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::probe::filesystems::MountInfo;

/// Network filesystems by their mountinfo type.
const NETWORK_TYPES: &[&str] = &["cifs", "smb3", "nfs", "nfs4"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkFs {
    /// `cifs`, `smb3`, `nfs`, `nfs4`, `fuse` or `fuse.<subtype>`.
    pub fs_type: String,
    /// `//server/share`, `server:/export`, or the FUSE source.
    pub source: String,
    pub mount_point: String,
    /// Protocol version (`vers=`).
    pub version: Option<String>,
    pub rsize_bytes: Option<u64>,
    pub wsize_bytes: Option<u64>,
    /// cifs `cache=` (strict, loose, none); nfs has no such option.
    pub cache: Option<String>,
}

impl NetworkFs {
    /// `cifs //nas/share vers=3.1.1 rsize=4 MiB wsize=4 MiB cache=strict`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.fs_type, self.source);
        if let Some(v) = &self.version {
            s.push_str(&format!(" vers={v}"));
        }
        for (k, v) in [("rsize", self.rsize_bytes), ("wsize", self.wsize_bytes)] {
            if let Some(v) = v {
                s.push_str(&format!(" {k}={}", crate::format::bytes(v)));
            }
        }
        if let Some(c) = &self.cache {
            s.push_str(&format!(" cache={c}"));
        }
        s
    }
}

fn is_network_or_fuse(fs_type: &str) -> bool {
    // fuseblk is a local disk through FUSE (ntfs-3g, exfat-fuse): not a service.
    NETWORK_TYPES.contains(&fs_type) || fs_type == "fuse" || fs_type.starts_with("fuse.")
}

/// The mount that holds `path` (already canonical), when it is a network or
/// FUSE filesystem. The innermost mount wins: the one mounted last on the
/// longest matching mount point.
pub fn find(mounts: &[MountInfo], path: &Path) -> Option<NetworkFs> {
    let holder = mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| path.starts_with(&m.mount_point))
        .max_by_key(|(i, m)| (m.mount_point.len(), *i))?
        .1;
    if !is_network_or_fuse(&holder.fs_type) {
        return None;
    }
    let opt = |key: &str| {
        holder
            .super_options
            .iter()
            .chain(&holder.mount_options)
            .find_map(|o| o.strip_prefix(key)?.strip_prefix('=').map(str::to_string))
    };
    let bytes = |key: &str| opt(key).and_then(|v| v.parse::<u64>().ok());
    Some(NetworkFs {
        fs_type: holder.fs_type.clone(),
        source: holder.source.clone(),
        mount_point: holder.mount_point.clone(),
        version: opt("vers"),
        rsize_bytes: bytes("rsize"),
        wsize_bytes: bytes("wsize"),
        cache: opt("cache"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::filesystems::parse_mountinfo;

    // Lines as the kernel writes them for a cifs and an NFSv4.2 mount (credentials
    // trimmed), a FUSE bindfs mount, and a local root.
    const MOUNTINFO: &str = "\
22 1 254:1 / / rw,relatime - ext4 /dev/vda1 rw
97 22 0:52 / /mnt/nas rw,relatime - cifs //192.168.1.10/media rw,vers=3.1.1,cache=strict,username=pi,uid=0,noforceuid,gid=0,noforcegid,addr=192.168.1.10,file_mode=0755,dir_mode=0755,soft,nounix,serverino,mapposix,rsize=4194304,wsize=4194304,bsize=1048576,echo_interval=60,actimeo=1,closetimeo=1
98 22 0:53 / /mnt/export rw,relatime shared:60 - nfs4 nas:/srv/export rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=192.168.1.20,local_lock=none,addr=192.168.1.10
99 22 0:54 / /mnt/fused rw,nosuid,nodev,relatime - fuse.bindfs /srv/data rw,user_id=0,group_id=0,default_permissions
100 22 8:17 / /mnt/usb rw,relatime - fuseblk /dev/sdb1 rw,user_id=0,group_id=0,allow_other,blksize=4096
";

    fn find_in(path: &str) -> Option<NetworkFs> {
        find(&parse_mountinfo(MOUNTINFO).unwrap(), Path::new(path))
    }

    #[test]
    fn cifs_and_nfs_mounts_with_their_options() {
        let c = find_in("/mnt/nas/bench").expect("cifs");
        assert_eq!(
            (c.fs_type.as_str(), c.source.as_str(), c.version.as_deref()),
            ("cifs", "//192.168.1.10/media", Some("3.1.1"))
        );
        assert_eq!(
            (c.rsize_bytes, c.wsize_bytes),
            (Some(4 << 20), Some(4 << 20))
        );
        assert_eq!(c.cache.as_deref(), Some("strict"));
        assert_eq!(
            c.describe(),
            "cifs //192.168.1.10/media vers=3.1.1 rsize=4.0 MiB wsize=4.0 MiB cache=strict"
        );
        let n = find_in("/mnt/export").expect("nfs");
        assert_eq!(n.fs_type, "nfs4");
        assert_eq!(n.version.as_deref(), Some("4.2"));
        assert_eq!(n.rsize_bytes, Some(1 << 20));
        assert_eq!(n.cache, None);
    }

    #[test]
    fn fuse_counts_but_fuseblk_and_local_disks_do_not() {
        assert_eq!(
            find_in("/mnt/fused/x").expect("fuse").fs_type,
            "fuse.bindfs"
        );
        assert_eq!(find_in("/mnt/usb/x"), None);
        assert_eq!(find_in("/home/x"), None);
        // A path that merely shares a prefix with a mount point is not in it.
        assert_eq!(find_in("/mnt/nasty"), None);
    }
}
