//! The set-up most integration tests share: a fake sidecar, a tandem aimed at it,
//! a port nothing listens on, and an app whose start leaves a mark.

use super::{FakeAdmin, Script, default_signals, tandem, temp_dir};
use std::fs::{File, OpenOptions};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// A fake sidecar serving `script` on a free loopback port; stopped when dropped.
pub fn start(script: Script) -> FakeAdmin {
    FakeAdmin::start(script).expect("fake admin starts")
}

/// [`tandem`] with `ENVOY_ADMIN_API` at `fake`: it waits for the fake's `/ready`
/// and quits it with `POST /quitquitquit`, the default route for a plain Envoy
/// admin (SPEC §5.2). The fake pilot-agents of `quit` run in nested PID
/// namespaces, which tandem ignores, so no test's tandem signals another's.
/// A real pilot-agent in this PID namespace would get the SIGINT instead (`quit` skips).
pub fn tandem_at(fake: &FakeAdmin) -> Command {
    tandem_at_url(&fake.url())
}

/// [`tandem_at`] for a URL that is not a fake's (credentials, a closed port).
pub fn tandem_at_url(url: &str) -> Command {
    let mut cmd = tandem();
    cmd.env("ENVOY_ADMIN_API", url);
    cmd
}

/// This build's tandem through a symlink named `name` (`linkerd-await`, `wait`:
/// the names that select a peer's usage), with a clean environment as [`tandem`].
pub fn tandem_named(name: &str) -> Command {
    let link = temp_dir(name).join(name);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_tandem"), &link)
        .unwrap_or_else(|e| panic!("symlink {}: {e}", link.display()));
    let mut cmd = Command::new(link);
    cmd.env_clear();
    cmd.envs(std::env::var_os("PATH").map(|p| ("PATH", p)));
    default_signals(&mut cmd);
    cmd
}

/// A loopback port that nothing listens on: a connection to it is refused.
///
/// The port stays bound (by a socket that never listens) until the test process
/// ends, so no fake started later in this process can get it: a released port
/// came back to a sibling test's fake under load, and "refused" became "reset".
pub fn closed_port() -> u16 {
    static HELD: Mutex<Vec<OwnedFd>> = Mutex::new(Vec::new());
    // SAFETY: socket takes plain integers; the result is checked below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
    // SAFETY: fd is a new socket that nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let ptr = (&raw mut addr).cast::<libc::sockaddr>();
    // SAFETY: ptr points to a sockaddr_in of `len` bytes.
    let bound = unsafe { libc::bind(socket.as_raw_fd(), ptr, len) };
    assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
    // SAFETY: ptr and len describe a writable sockaddr_in.
    let named = unsafe { libc::getsockname(socket.as_raw_fd(), ptr, &mut len) };
    assert_eq!(named, 0, "getsockname: {}", std::io::Error::last_os_error());
    HELD.lock().unwrap_or_else(|p| p.into_inner()).push(socket);
    u16::from_be(addr.sin_port)
}

/// Appends an app that creates `marker` and exits 0: its absence proves the app
/// never started.
pub fn app_touching(cmd: &mut Command, marker: &Path) {
    cmd.args(["sh", "-c", ": > \"$1\"", "sh"]).arg(marker);
}

/// Sidecar ports that are fixed by the product (Istio's 15000/15020/15021, the
/// presets' 9901, 4191, 9090, 9091): tests that bind them take turns here, so a
/// sibling test never makes one skip.
static FIXED_PORTS: Mutex<()> = Mutex::new(());

/// The file whose lock passes the same turn between test processes: the glibc
/// and musl suites, or two checkouts, run at once on one machine share the ports.
const FIXED_PORTS_LOCK: &str = "/tmp/tandem-tests-fixed-ports.lock";

/// The turn on the fixed sidecar ports, held until dropped: within this test
/// process, and across processes through an advisory lock on a file.
pub struct FixedPortsTurn {
    _in_process: MutexGuard<'static, ()>,
    // Closing the file releases the lock; `None` where it cannot be had (an
    // unwritable /tmp): the in-process turn still holds.
    _across_processes: Option<File>,
}

/// Waits for, then holds, the turn on the fixed sidecar ports.
pub fn fixed_ports_turn() -> FixedPortsTurn {
    let in_process = FIXED_PORTS.lock().unwrap_or_else(|p| p.into_inner());
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(FIXED_PORTS_LOCK)
        .ok()
        .filter(|file| {
            // SAFETY: flock takes a descriptor this File owns and a constant.
            unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) == 0 }
        });
    FixedPortsTurn {
        _in_process: in_process,
        _across_processes: file,
    }
}
