//! The smbd on this box behind a bench smb target: the share's directory in
//! that smbd's own configuration (another smbd with another configuration may
//! run beside it) and the CPUs it may use. With the directory the sequential
//! read can start from a cold page cache, as a user's copy of a large file does.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::Plan;
use crate::bench::validity::observe;
use crate::root::Root;

#[derive(Debug, Default)]
pub struct LocalServer {
    /// The share's directory on this box.
    pub share_path: Option<String>,
    /// The CPUs smbd may use (its affinity), when readable.
    pub cpus: Option<BTreeSet<u32>>,
}

/// The smbd processes listening on `port`; `None` when none is seen.
pub fn local_server(root: &Root, port: u16, share: &str) -> Option<LocalServer> {
    use crate::probe::smb;
    let pids: Vec<u32> = observe::port_owners(root, port)
        .into_iter()
        .filter(|pid| {
            root.read_value(&format!("proc/{pid}/comm"))
                .is_ok_and(|c| c.starts_with("smbd"))
        })
        .collect();
    if pids.is_empty() {
        return None;
    }
    let mut found = LocalServer::default();
    for pid in &pids {
        if let Some(cpus) = crate::probe::cpu_list::read_cpus_allowed(root, pid) {
            found.cpus.get_or_insert_with(BTreeSet::new).extend(cpus);
        }
        if found.share_path.is_some() {
            continue;
        }
        let conf = root
            .read_head(&format!("proc/{pid}/cmdline"), 4096)
            .ok()
            .and_then(|raw| smb::config_of_cmdline(&raw))
            .map(|c| c.trim_start_matches('/').to_string())
            .unwrap_or_else(|| smb::SMB_CONF.to_string());
        let Ok(main) = root.read_string(&conf) else {
            continue;
        };
        found.share_path = smb::resolve(&main, |rel| root.read_string(rel))
            .shares
            .into_iter()
            .find(|s| s.name.eq_ignore_ascii_case(share))
            .and_then(|s| s.path);
    }
    Some(found)
}

/// The configuration files of the smbd processes listening on `port`
/// (`-s`/`--configfile`, else the default), as absolute paths.
pub fn configs_on_port(root: &Root, port: u16) -> Vec<PathBuf> {
    use crate::probe::smb;
    let mut out: Vec<PathBuf> = observe::port_owners(root, port)
        .into_iter()
        .filter(|pid| {
            root.read_value(&format!("proc/{pid}/comm"))
                .is_ok_and(|c| c.starts_with("smbd"))
        })
        .map(|pid| {
            let conf = root
                .read_head(&format!("proc/{pid}/cmdline"), 4096)
                .ok()
                .and_then(|raw| smb::config_of_cmdline(&raw))
                .unwrap_or_else(|| format!("/{}", smb::SMB_CONF));
            PathBuf::from(conf)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The smbd serving `plan`'s target when it is this box's.
pub fn served_here(root: &Root, plan: &Plan) -> Option<LocalServer> {
    use std::net::ToSocketAddrs;
    let addr = (plan.target.host.as_str(), plan.target.port)
        .to_socket_addrs()
        .ok()?
        .next()?;
    if !super::server::is_local(root, &addr) {
        return None;
    }
    local_server(root, addr.port(), &plan.target.share)
}

/// The file behind an SMB path (`dir\name`, relative to the share) in the
/// share's directory on this box.
pub fn local_file(share_dir: &str, smb_path: &str) -> PathBuf {
    let mut p = PathBuf::from(share_dir);
    for part in smb_path.split('\\').filter(|s| !s.is_empty()) {
        p.push(part);
    }
    p
}

/// Writes `file`'s dirty pages and drops its cached ones, so the next read
/// comes from the storage. `Err` says why it could not (the read is then
/// reported as possibly cached).
pub fn evict(file: &Path) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(file).map_err(|e| format!("'{}': {e}", file.display()))?;
    // Dirty pages cannot be dropped until they are written.
    f.sync_data()
        .map_err(|e| format!("syncing '{}': {e}", file.display()))?;
    // SAFETY: a valid open descriptor; advice only, no memory is touched.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(format!(
            "dropping '{}' from the page cache: {}",
            file.display(),
            std::io::Error::from_raw_os_error(rc)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smb_paths_map_into_the_share_directory() {
        assert_eq!(
            local_file("/srv/share", "a\\nastune-bench-1\\seq.bin"),
            PathBuf::from("/srv/share/a/nastune-bench-1/seq.bin")
        );
        assert_eq!(
            local_file("/srv/share/", "seq.bin"),
            PathBuf::from("/srv/share/seq.bin")
        );
    }

    #[test]
    fn evicting_a_file_leaves_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x");
        std::fs::write(&f, b"abc").unwrap();
        evict(&f).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"abc");
        assert!(
            evict(&dir.path().join("missing"))
                .unwrap_err()
                .contains("missing")
        );
    }
}
