//! Shared helpers: run the binary with a throw-away store and no colour; say
//! why a test skips (and fail instead under NASTUNE_REQUIRE_ALL=1).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The binary under test: this build's, or NASTUNE_TEST_BIN (an executable: dist/smoke
/// points it at a wrapper that runs an ARM build under qemu-user, so the same tests
/// check 32-bit counters, sizes and times on the binaries that ship).
pub fn nastune() -> Command {
    let bin = std::env::var_os("NASTUNE_TEST_BIN");
    let mut c = Command::new(
        bin.as_deref()
            .unwrap_or(env!("CARGO_BIN_EXE_nastune").as_ref()),
    );
    c.env("NO_COLOR", "1");
    c
}

/// The generator of nastune's man pages, rules.md and completions (src/bin/nastune-gen.rs).
pub fn nastune_gen() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nastune-gen"));
    c.env("NO_COLOR", "1");
    c
}

/// Runs nastune with `args` and a `--db` inside `dir`.
pub fn run_with_db(dir: &Path, args: &[&str]) -> Output {
    nastune()
        .args(args)
        .arg("--db")
        .arg(dir.join("nastune.db"))
        .output()
        .expect("run nastune")
}

/// The quickest real `bench crypto`: one cipher family, one size, 10 ms a point.
pub const QUICK_CRYPTO: [&str; 9] = [
    "bench",
    "crypto",
    "--no-kdf",
    "--duration",
    "0.01",
    "--size",
    "4096",
    "--cipher",
    "gcm",
];

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON a successful run printed; a failed run fails the test with its stderr.
pub fn json_of(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_str(&stdout(o)).expect("JSON on stdout")
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Whether golden files should be rewritten instead of compared (UPDATE_GOLDEN=1).
pub fn update_golden() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

/// Compares `actual` with the golden file, or rewrites it under UPDATE_GOLDEN=1.
pub fn assert_golden(path: &Path, actual: &str) {
    if update_golden() {
        std::fs::create_dir_all(path.parent().expect("golden parent")).expect("mkdir");
        std::fs::write(path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "golden file '{}' unreadable ({e}); run with UPDATE_GOLDEN=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let diff_line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "'{}' differs from the output at line {}:\n  golden: {:?}\n  actual: {:?}\n(UPDATE_GOLDEN=1 rewrites it after review)",
            path.display(),
            diff_line + 1,
            expected.lines().nth(diff_line),
            actual.lines().nth(diff_line)
        );
    }
}

/// Something a test needs from the machine it runs on.
pub enum Need<'a> {
    /// Effective uid 0 (loop devices, mounts, namespaces).
    Root,
    /// A program on PATH; the packages CI installs are in .ci/apt-packages.
    Tool(&'a str),
    /// A file or device node, e.g. `/dev/loop-control`.
    Path(&'a str),
    /// A kernel feature or other capability, by name, with a probe that says
    /// why it is missing.
    Feature(&'a str, &'a dyn Fn() -> Result<(), String>),
}

/// Whether a program is on PATH, without running it.
pub fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| {
            std::fs::metadata(dir.join(tool))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn missing(need: &Need) -> Option<String> {
    match need {
        Need::Root => (!is_root()).then(|| "needs root".to_string()),
        Need::Tool(t) => {
            (!on_path(t)).then(|| format!("'{t}' is not installed (see .ci/apt-packages)"))
        }
        Need::Path(p) => (!Path::new(p).exists()).then(|| format!("no '{p}'")),
        Need::Feature(name, probe) => probe().err().map(|why| format!("{name}: {why}")),
    }
}

/// True when every need is met. Otherwise the first missing one is a skip:
/// printed as `SKIP <test>: <reason>` and false, or a panic under
/// NASTUNE_REQUIRE_ALL=1 (see [`skip`]).
pub fn require(needs: &[Need]) -> bool {
    match needs.iter().find_map(missing) {
        Some(reason) => {
            skip(&reason);
            false
        }
        None => true,
    }
}

/// Says why the running test stops here (or leaves some of its checks out).
/// Under NASTUNE_REQUIRE_ALL=1 (CI,
/// which installs everything the tests use) a skip is a failure instead, so
/// nothing is skipped silently there.
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("this test");
    if std::env::var_os("NASTUNE_REQUIRE_ALL").is_some_and(|v| v == "1") {
        panic!("{test}: required by NASTUNE_REQUIRE_ALL: {reason}");
    }
    println!("SKIP {test}: {reason}");
}

/// A loopback port free for both TCP and UDP (iperf3 and `net serve` use both).
pub fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Waits up to 10 s for something to accept on the loopback `port`.
pub fn wait_port(port: u16) {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on port {port}");
}

/// A connection to 127.0.0.1:`port` from the loopback address `source`: all of
/// 127.0.0.0/8 is local on Linux, so one unprivileged test can be many hosts.
pub fn connect_from(source: [u8; 4], port: u16) -> std::io::Result<TcpStream> {
    use std::os::fd::FromRawFd;
    let sin = |addr: [u8; 4], port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(addr),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a fresh socket owned by the TcpStream at once; both addresses are
    // valid sockaddr_in values that live across the calls.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let s = TcpStream::from_raw_fd(fd);
        let (src, dst) = (sin(source, 0), sin([127, 0, 0, 1], port));
        if libc::bind(fd, (&raw const src).cast(), len) != 0
            || libc::connect(fd, (&raw const dst).cast(), len) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run by `require_reports_skips_or_fails_under_require_all` in a child
    /// process; ignored so NASTUNE_REQUIRE_ALL=1 on the whole suite passes.
    #[test]
    #[ignore = "run by require_reports_skips_or_fails_under_require_all"]
    fn missing_needs_skip() {
        assert!(require(&[Need::Path("/")]));
        assert!(require(&[Need::Tool("sh"), Need::Feature("x", &|| Ok(()))]));
        assert!(!require(&[
            Need::Tool("sh"),
            Need::Tool("no-such-tool-ntt")
        ]));
        assert!(!require(&[Need::Path("/no/such/node")]));
        assert!(!require(&[Need::Feature("AF_FOO", &|| Err(
            "EAFNOSUPPORT".into()
        ))]));
        println!("all said");
    }

    fn child(require_all: bool) -> Output {
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.args([
            "util::tests::missing_needs_skip",
            "--exact",
            "--ignored",
            "--nocapture",
        ]);
        if require_all {
            c.env("NASTUNE_REQUIRE_ALL", "1");
        } else {
            c.env_remove("NASTUNE_REQUIRE_ALL");
        }
        c.output().unwrap()
    }

    #[test]
    fn require_reports_skips_or_fails_under_require_all() {
        let o = child(false);
        let out = stdout(&o);
        assert!(o.status.success(), "{out}{}", stderr(&o));
        let skips: Vec<&str> = out.lines().filter(|l| l.starts_with("SKIP ")).collect();
        let name = "util::tests::missing_needs_skip";
        assert_eq!(
            skips,
            [
                format!("SKIP {name}: 'no-such-tool-ntt' is not installed (see .ci/apt-packages)"),
                format!("SKIP {name}: no '/no/such/node'"),
                format!("SKIP {name}: AF_FOO: EAFNOSUPPORT"),
            ],
            "{out}"
        );
        assert!(out.contains("all said"), "{out}");

        let o = child(true);
        assert!(!o.status.success(), "{}", stdout(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!(
                "{name}: required by NASTUNE_REQUIRE_ALL: 'no-such-tool-ntt' is not installed"
            )),
            "{err}"
        );
        assert!(!stdout(&o).contains("all said"));
    }
}
