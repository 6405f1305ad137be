#![allow(dead_code)] // not every SMB test file uses every helper
//! A private Samba for the SMB tests: its own smb.conf, tdbsam, lock, state,
//! cache and pid directories under a temporary directory, listening on a
//! high port on 127.0.0.1 only (or on an address inside a network namespace,
//! for the shaped-link tests). Shares: `rw` (writable, guest ok), `ro`
//! (read-only) and `small` (a 4 MiB tmpfs, for disk full). Stopped on drop.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use std::time::{Duration, Instant};

use crate::util::{Need, free_port, require};

pub const USER: &str = "nastune-smb";
pub const PASSWORD: &str = "nastune-secret";

pub struct Smbd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    ip: Ipv4Addr,
    /// The network namespace smbd runs in, if not this one.
    netns: Option<String>,
    child: Child,
    small: PathBuf,
}

impl Smbd {
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((self.ip, self.port))
    }

    /// `//IP:PORT/SHARE` for `nastune bench smb`.
    pub fn unc(&self, share: &str) -> String {
        format!("//{}:{}/{share}", self.ip, self.port)
    }

    /// The configuration smbd was started with (`-s`): `etc/samba/smb.conf`
    /// below [`Smbd::dir`], so that directory is a tree for `tune --root`.
    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("etc/samba/smb.conf")
    }

    pub fn share_path(&self, share: &str) -> PathBuf {
        self.dir.path().join(share)
    }

    /// The smbd processes serving client connections (children of the
    /// daemon named plain `smbd`, not its notifyd/cleanupd helpers).
    pub fn connection_pids(&self) -> Vec<i32> {
        let parent = self.child.id().to_string();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    return false;
                };
                let Some((head, rest)) = stat.rsplit_once(')') else {
                    return false;
                };
                let comm = head.split_once('(').map_or("", |(_, c)| c);
                let ppid = rest.split_whitespace().nth(1).unwrap_or("");
                ppid == parent && comm == "smbd"
            })
            .collect()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("smbd.out")).unwrap_or_default()
    }

    /// Starts smbd with `extra` lines in [global]; None (a skip) without root or Samba.
    pub fn start(extra: &str) -> Option<Smbd> {
        Smbd::start_at(Ipv4Addr::LOCALHOST, None, extra, "", None)
    }

    /// Starts smbd with `shares` (more share sections) after the usual ones,
    /// pinned to the CPUs `pin` (`taskset -c`) when given; None (a skip)
    /// without root, Samba or taskset.
    pub fn start_custom(extra: &str, shares: &str, pin: Option<&str>) -> Option<Smbd> {
        if pin.is_some() && !require(&[Need::Tool("taskset")]) {
            return None;
        }
        Smbd::start_at(Ipv4Addr::LOCALHOST, None, extra, shares, pin)
    }

    /// Starts smbd inside network namespace `netns` (`ip netns exec`),
    /// listening on `ip` there; None (a skip) without root or Samba.
    pub fn start_in(netns: &str, ip: Ipv4Addr, extra: &str) -> Option<Smbd> {
        Smbd::start_at(ip, Some(netns), extra, "", None)
    }

    fn start_at(
        ip: Ipv4Addr,
        netns: Option<&str>,
        extra: &str,
        shares: &str,
        pin: Option<&str>,
    ) -> Option<Smbd> {
        if !require(&[
            Need::Root,
            Need::Tool("smbd"),
            Need::Tool("smbpasswd"),
            Need::Tool("useradd"),
        ]) {
            return None;
        }
        let have_user = Command::new("id")
            .arg(USER)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        if !have_user {
            // Parallel tests may race to create it; the loser's failure is harmless.
            let _ = Command::new("useradd")
                .args(["-M", "-s", "/usr/sbin/nologin", USER])
                .status();
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for sub in [
            "private", "lock", "state", "cache", "pid", "ncalrpc", "binddns", "rw", "ro", "small",
        ] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        // Samba serves as the logged-on unix user (or nobody for guests).
        for sub in ["rw", "small"] {
            chmod_777(&d.join(sub));
        }
        std::fs::write(d.join("ro/present.txt"), b"read me").unwrap();
        let small = d.join("small");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4m,mode=0777", "tmpfs"])
            .arg(&small)
            .status()
            .unwrap()
            .success();
        assert!(mounted, "mounting a tmpfs on {}", small.display());
        let port = free_port();
        // Where a tree's smb.conf is, so `tune --root DIR` edits the one smbd reads.
        std::fs::create_dir_all(d.join("etc/samba")).unwrap();
        let conf = d.join("etc/samba/smb.conf");
        let p = d.display();
        std::fs::write(
            &conf,
            format!(
                "[global]
  netbios name = NASTUNETEST
  workgroup = WORKGROUP
  security = user
  map to guest = Bad User
  passdb backend = tdbsam:{p}/private/passdb.tdb
  private dir = {p}/private
  lock directory = {p}/lock
  state directory = {p}/state
  cache directory = {p}/cache
  pid directory = {p}/pid
  ncalrpc dir = {p}/ncalrpc
  binddns dir = {p}/binddns
  log file = {p}/log.%m
  smb ports = {port}
  interfaces = {ip}
  bind interfaces only = yes
  disable netbios = yes
  load printers = no
  printcap name = /dev/null
  disable spoolss = yes
  server min protocol = SMB2_02
{extra}
[rw]
  path = {p}/rw
  read only = no
  guest ok = yes
[ro]
  path = {p}/ro
  read only = yes
[small]
  path = {p}/small
  read only = no
{shares}
"
            ),
        )
        .unwrap();
        let mut pw = Command::new("smbpasswd")
            .arg("-c")
            .arg(&conf)
            .args(["-s", "-a", USER])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        pw.stdin
            .take()
            .unwrap()
            .write_all(format!("{PASSWORD}\n{PASSWORD}\n").as_bytes())
            .unwrap();
        assert!(pw.wait().unwrap().success(), "smbpasswd -a {USER}");
        let out = std::fs::File::create(d.join("smbd.out")).unwrap();
        // `ip netns exec` and `taskset` exec smbd, so the child is still smbd itself.
        let mut cmd = match (netns, pin) {
            (Some(ns), _) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "smbd"]);
                c
            }
            (None, Some(cpus)) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpus, "smbd"]);
                c
            }
            (None, None) => Command::new("smbd"),
        };
        let child = cmd
            .args(["--foreground", "--no-process-group", "--debug-stdout", "-s"])
            .arg(&conf)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        let s = Smbd {
            dir,
            port,
            ip,
            netns: netns.map(str::to_string),
            child,
            small,
        };
        let start = Instant::now();
        while !s.listening() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "smbd did not listen on {}: {}",
                s.addr(),
                s.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(s)
    }

    /// Whether smbd accepts connections yet (seen from its own namespace).
    fn listening(&self) -> bool {
        let Some(ns) = &self.netns else {
            return TcpStream::connect_timeout(&self.addr(), Duration::from_millis(200)).is_ok();
        };
        let o = Command::new("ip")
            .args(["netns", "exec", ns, "ss", "-Hltn"])
            .arg(format!("sport = :{}", self.port))
            .output()
            .unwrap();
        !o.stdout.is_empty()
    }
}

fn chmod_777(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
}

impl Drop for Smbd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // smbd's forked children serve open connections; they exit when the
        // parent is gone and their client closes. Unmount lazily so a
        // straggler cannot keep the tmpfs busy.
        let _ = Command::new("umount").arg("-l").arg(&self.small).status();
    }
}
