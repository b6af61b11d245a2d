//! The one shared layer of the integration tests (no test module imports from
//! another): the fake sidecar (the `tests/fake-sidecar` dev crate, with its
//! `wait_until` and `read_retrying`, and its late TCP port and unix socket for the
//! readiness kinds), helpers that run the real `tandem` binary with
//! a clean environment under a kill timeout, capture its output, signal it, and dump
//! everything when a test fails; the `/proc` reader, the recorder app,
//! the prerequisites with their one `skip`, and the harness's tests of itself.

pub use fake_sidecar::envoy;
pub mod prereq;
pub mod procfs;
mod recorder;
mod selftest;
mod setup;

pub use fake_sidecar::listeners::{Accepted, HELD_OPEN, LatePort, accepted, unix_listener};
pub use fake_sidecar::{
    FakeAdmin, Fault, Flavor, Req, Response, Script, Xorshift, read_retrying, wait_until,
};
pub use prereq::{no_real_pilot_agent, on_fixed_ports, pid_namespace_available, python};
pub use procfs::{
    children_of, fd_count, stat_after_comm, state, status_field, status_number, status_text_field,
    task_status_number,
};
pub use recorder::Recorder;
pub use setup::{
    app_touching, closed_port, fixed_ports_turn, start, tandem_at, tandem_at_url, tandem_named,
};

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

pub use libc::{SIGHUP, SIGINT, SIGKILL, SIGTERM, SIGUSR1};

/// Kill timeout of a whole tandem run: a hang guard, generous for a loaded CI box
/// (a run that should take a second gets thirty).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound on any single wait for an app or a process to react.
pub const REACT: Duration = Duration::from_secs(10);

/// `PATH` for the child when the test process has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// How long to wait for the output pipes to close once the child has exited; an
/// orphaned grandchild may hold them open, and then the output so far is kept.
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// `tandem` from this build, with an empty environment except `PATH`, and every
/// signal at its default action (see [`default_signals`]).
pub fn tandem() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tandem"));
    cmd.env_clear();
    cmd.env(
        "PATH",
        std::env::var_os("PATH").unwrap_or_else(|| OsString::from(DEFAULT_PATH)),
    );
    default_signals(&mut cmd);
    cmd
}

/// `unshare` ready to run the command given next as PID 1 of a new PID namespace
/// with its own `/proc`: default signal dispositions, an environment with only
/// `PATH`, and the namespace killed with `unshare` if the run is abandoned.
pub fn in_new_pid_namespace() -> Command {
    let mut cmd = Command::new("unshare");
    default_signals(&mut cmd)
        .env_clear()
        .envs(std::env::var_os("PATH").map(|path| ("PATH", path)))
        .args(["--pid", "--fork", "--kill-child", "--mount-proc"]);
    cmd
}

/// Starts `cmd` with every signal at its default action. The suite may run under
/// `nohup` or as a background job of a non-interactive shell (SIGHUP, SIGINT,
/// SIGQUIT ignored); tandem passes an ignored set on to the app, and a shell app
/// cannot even trap a signal ignored on entry. Use it on every command that runs
/// tandem (`unshare …`, a pty wrapper). (The signal mask is tandem's to empty:
/// `tests/init.rs` checks it.) A test's own `pre_exec`, added later, runs after
/// this one.
pub fn default_signals(cmd: &mut Command) -> &mut Command {
    // SAFETY: the closure runs between fork and exec and calls only `signal`,
    // which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            for sig in 1..=31 {
                if sig != SIGKILL && sig != libc::SIGSTOP {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            Ok(())
        });
    }
    cmd
}

/// Makes `cmd` start with `signals` ignored, as a parent that set them to SIG_IGN
/// (a shell's `trap '' …`, a supervisor) leaves them. Runs after `default_signals`.
pub fn ignoring<'a>(cmd: &'a mut Command, signals: &'static [i32]) -> &'a mut Command {
    // SAFETY: the closure runs between fork and exec and calls only `signal`,
    // which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            for &sig in signals {
                if libc::signal(sig, libc::SIG_IGN) == libc::SIG_ERR {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    cmd
}

/// What a finished run produced.
#[derive(Debug)]
pub struct Out {
    /// The command line and environment, as `Command`'s `Debug` shows them.
    pub command: String,
    pub status: ExitStatus,
    /// The exit code; `None` if tandem itself was killed by a signal.
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
    /// From spawn to exit.
    pub elapsed: Duration,
}

impl Out {
    /// Stdout as (lossy) UTF-8.
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Everything about the run, for assertion messages.
    pub fn dump(&self) -> String {
        format!(
            "command: {}\nstatus: {} (code {:?}) after {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}--- end ---\n",
            self.command,
            self.status,
            self.code,
            self.elapsed,
            self.stdout_str(),
            self.stderr
        )
    }

    /// [`Out::dump`] followed by the request logs of `fakes`.
    pub fn dump_with(&self, fakes: &[&FakeAdmin]) -> String {
        let mut out = self.dump();
        for fake in fakes {
            out += &fake.dump();
        }
        out
    }
}

/// Runs `cmd` to completion with stdout and stderr captured; kills it and panics
/// with a dump if it runs longer than `timeout`.
pub fn run(cmd: &mut Command, timeout: Duration) -> Out {
    spawn(cmd).wait(timeout)
}

/// Starts `cmd` with stdin closed and stdout/stderr captured, for tests that
/// interact with it while it runs.
pub fn spawn(cmd: &mut Command) -> Running {
    let command = format!("{cmd:?}");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|err| panic!("cannot spawn {command}: {err}"));
    let stdout = Pipe::drain(child.stdout.take().expect("stdout is piped"));
    let stderr = Pipe::drain(child.stderr.take().expect("stderr is piped"));
    Running {
        child,
        command,
        started,
        stdout,
        stderr,
        status: None,
    }
}

/// A child's output (a pipe, a terminal's master side), collected by a thread as
/// it arrives, so the writer never blocks on a full buffer.
pub struct Pipe {
    bytes: Arc<Mutex<Vec<u8>>>,
    closed: Receiver<()>,
}

impl Pipe {
    /// Starts reading `source` until EOF or an error (a terminal's master gets EIO
    /// once every slave descriptor is closed).
    pub fn drain(mut source: impl Read + Send + 'static) -> Pipe {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let (done, closed) = mpsc::channel();
        let sink = Arc::clone(&bytes);
        thread::spawn(move || {
            let mut buf = [0; 8192];
            while let Ok(n @ 1..) = read_retrying(&mut source, &mut buf) {
                sink.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(&buf[..n]);
            }
            let _ = done.send(());
        });
        Pipe { bytes, closed }
    }

    /// Everything read so far.
    pub fn snapshot(&self) -> Vec<u8> {
        self.bytes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits up to `grace` for EOF, then returns what arrived.
    fn finish(&self, grace: Duration) -> Vec<u8> {
        let _ = self.closed.recv_timeout(grace);
        self.snapshot()
    }
}

/// A tandem process that is still running; dropping it kills and reaps it.
pub struct Running {
    pub child: Child,
    command: String,
    started: Instant,
    stdout: Pipe,
    stderr: Pipe,
    /// Set once the child is reaped (after which its pid may be reused).
    status: Option<(ExitStatus, Instant)>,
}

impl Running {
    /// The child's process id.
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("pid fits in i32")
    }

    /// Sends signal `sig` to the child; panics if it was already reaped.
    pub fn signal(&mut self, sig: i32) {
        self.reap_if_exited();
        assert!(
            self.status.is_none(),
            "cannot send signal {sig}: tandem already exited\n{}",
            self.dump_so_far()
        );
        // The pid is our unreaped child, so it cannot have been reused.
        kill(self.pid(), sig);
    }

    /// Whether the child is still running.
    pub fn is_running(&mut self) -> bool {
        self.reap_if_exited();
        self.status.is_none()
    }

    /// Stderr written so far (e.g. to wait for a log line before signalling).
    pub fn stderr_so_far(&self) -> String {
        String::from_utf8_lossy(&self.stderr.snapshot()).into_owned()
    }

    /// Stdout written so far.
    #[allow(dead_code, reason = "harness API kept for tests that stream stdout")]
    pub fn stdout_so_far(&self) -> Vec<u8> {
        self.stdout.snapshot()
    }

    /// Waits for the child to exit; kills it and panics with a dump if it takes
    /// longer than `timeout`.
    pub fn wait(mut self, timeout: Duration) -> Out {
        let exited = wait_until(timeout, || {
            self.reap_if_exited();
            self.status.is_some()
        });
        if !exited {
            self.kill_and_reap();
            panic!(
                "tandem did not exit within {timeout:?}; killed it\n{}",
                self.finish().dump()
            );
        }
        self.finish()
    }

    fn reap_if_exited(&mut self) {
        if self.status.is_none()
            && let Ok(Some(status)) = self.child.try_wait()
        {
            self.status = Some((status, Instant::now()));
        }
    }

    fn kill_and_reap(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            if let Ok(status) = self.child.wait() {
                self.status = Some((status, Instant::now()));
            }
        }
    }

    /// The output of a reaped child.
    fn finish(&self) -> Out {
        let (status, ended) = self.status.expect("child was reaped");
        let stdout = self.stdout.finish(PIPE_GRACE);
        let stderr = self.stderr.finish(PIPE_GRACE);
        Out {
            command: self.command.clone(),
            status,
            code: status.code(),
            stdout,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            elapsed: ended.saturating_duration_since(self.started),
        }
    }

    fn dump_so_far(&self) -> String {
        format!(
            "command: {}\n--- stderr so far ---\n{}--- end ---\n",
            self.command,
            self.stderr_so_far()
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

/// Sends `sig` to `pid` (a process, or with a negative pid a group); panics if
/// that fails. The caller knows `pid` is alive and not reused.
pub fn kill(pid: i32, sig: i32) {
    // SAFETY: kill has no memory effects.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(
        rc,
        0,
        "kill({pid}, {sig}): {}",
        std::io::Error::last_os_error()
    );
}

/// A new, empty directory unique to this call, under this process's
/// [`temp_root`].
pub fn temp_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = temp_root().join(format!("{n}-{name}"));
    fs::create_dir_all(&dir).unwrap_or_else(|err| panic!("cannot create {}: {err}", dir.display()));
    dir
}

/// Name of the directory of one test process's [`temp_dir`]s: this, then its pid.
const TEMP_ROOT_PREFIX: &str = "tandem-tests-";
/// Name of each [`temp_dir`] of earlier versions of this harness: this, then
/// `PID-N-NAME`. They were never deleted.
const LEGACY_TEMP_PREFIX: &str = "tandem-test-";

/// `TMP/tandem-tests-PID`, made empty at the first call, which also deletes the
/// directories that test processes no longer running left in `TMP` (tests copy
/// binaries into theirs), so what a run leaves lasts only until the next one.
pub fn temp_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let tmp = std::env::temp_dir();
        remove_stale_temp_dirs(&tmp);
        let root = tmp.join(format!("{TEMP_ROOT_PREFIX}{}", std::process::id()));
        // A leftover from an earlier run with the same pid would leak old files in.
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root)
            .unwrap_or_else(|err| panic!("cannot create {}: {err}", root.display()));
        root
    })
}

/// Deletes the directories in `tmp` named by [`temp_pid`] whose process is gone.
/// Without `/proc` nothing is known to be gone, so nothing is deleted.
fn remove_stale_temp_dirs(tmp: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let stale = entry
            .file_name()
            .to_str()
            .and_then(temp_pid)
            .is_some_and(|pid| {
                pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
            });
        // `file_type` does not follow symlinks: a link is never followed nor deleted.
        if stale && entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            // Another test process may be deleting it too.
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The pid in a name `tandem-tests-PID` or `tandem-test-PID-N-NAME`, else `None`.
fn temp_pid(name: &str) -> Option<u32> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(pid) = name.strip_prefix(TEMP_ROOT_PREFIX) {
        return digits(pid).then(|| pid.parse().ok()).flatten();
    }
    let mut parts = name.strip_prefix(LEGACY_TEMP_PREFIX)?.splitn(3, '-');
    let (pid, n, _name) = (parts.next()?, parts.next()?, parts.next()?);
    (digits(pid) && digits(n))
        .then(|| pid.parse().ok())
        .flatten()
}
