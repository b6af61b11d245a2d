//! A scriptable fake sidecar admin server (Envoy, old Envoy, pilot-agent, Linkerd or
//! a generic helper), std only, listening on loopback.
//!
//! It owns one listener, one accept thread and one thread per connection. Each
//! parsed request is logged (with `Instant` and `CLOCK_MONOTONIC` nanoseconds)
//! before its answer is delayed or sent, so tests can assert on what tandem asked
//! and when. Answers follow a [`Script`]: the flavor's routes, readiness timing,
//! a delay, fixed statuses, and faults (hang, reset, garbage, endless body,
//! trickle) that a robust client must survive (SPEC §3: "never hangs tandem and
//! never makes it use unbounded memory").
//!
//! Nothing spins: the accept thread blocks in `accept`, connection threads block in
//! `read`/`write` or on a condition variable. `Drop` sets the stop flag, shuts down
//! every open connection (which wakes blocked reads and writes), wakes `accept`
//! with a connect to itself, and joins the accept thread.
//!
//! This file is also compiled into `examples/fake_sidecar.rs` through `#[path]`, so
//! it must not refer to any other test module.

// Shared by the test crate and the example, and each uses a different subset.
#![allow(dead_code)]

use std::collections::HashMap;
use std::ffi::{c_int, c_long, c_void};
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Largest request line plus headers accepted; more gets `431` and a close.
const MAX_HEADER_BYTES: u64 = 16 * 1024;
/// Largest request body read and discarded; more gets `413` and a close.
const MAX_BODY_BYTES: u64 = 1024 * 1024;
/// Pause between bytes in [`Fault::Trickle`].
const TRICKLE_INTERVAL: Duration = Duration::from_millis(200);
/// Size of the binary answer in [`Fault::Garbage`].
const GARBAGE_BYTES: usize = 64 * 1024;
/// Size of each write in [`Fault::EndlessBody`].
const ENDLESS_CHUNK: usize = 64 * 1024;
/// The `Content-Length` that [`Fault::EndlessBody`] promises (about 1 TB).
const ENDLESS_LENGTH: u64 = 1_000_000_000_000;
/// How long a refused connection waits for the peer to stop sending.
const REFUSE_LINGER: Duration = Duration::from_secs(1);
/// Bound on the self-connect that wakes the accept thread.
const WAKE_TIMEOUT: Duration = Duration::from_secs(1);

/// Which sidecar admin API the fake imitates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Envoy admin: `GET /ready`, `GET /server_info`, `POST /quitquitquit`.
    Envoy,
    /// An Envoy older than `/ready`: `GET /ready` is `404`, so clients must read
    /// `state` from `GET /server_info` (SPEC §3).
    OldEnvoy,
    /// Istio's pilot-agent: `GET /healthz/ready`, `POST /quitquitquit`.
    PilotAgent,
    /// linkerd2-proxy admin: `GET /ready`, `GET /live`, `POST /shutdown`.
    Linkerd,
    /// Any helper: every `GET` is a readiness probe, every `POST` is a quit.
    Generic,
}

impl Flavor {
    /// The name used on the example's command line (`old-envoy`, …).
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Envoy => "envoy",
            Flavor::OldEnvoy => "old-envoy",
            Flavor::PilotAgent => "pilot-agent",
            Flavor::Linkerd => "linkerd",
            Flavor::Generic => "generic",
        }
    }

    /// Parses a name produced by [`Flavor::name`].
    pub fn parse(name: &str) -> Option<Flavor> {
        [
            Flavor::Envoy,
            Flavor::OldEnvoy,
            Flavor::PilotAgent,
            Flavor::Linkerd,
            Flavor::Generic,
        ]
        .into_iter()
        .find(|flavor| flavor.name() == name)
    }

    /// What a request means to this flavor, before readiness is considered.
    fn kind(self, method: &str, path: &str) -> Kind {
        match (self, method, path) {
            (Flavor::Envoy, "GET", "/ready" | "/server_info")
            | (Flavor::OldEnvoy, "GET", "/server_info")
            | (Flavor::PilotAgent, "GET", "/healthz/ready")
            | (Flavor::Linkerd, "GET", "/ready")
            | (Flavor::Generic, "GET", _) => Kind::Probe,
            (Flavor::Envoy | Flavor::OldEnvoy | Flavor::PilotAgent, "POST", "/quitquitquit")
            | (Flavor::Linkerd, "POST", "/shutdown")
            | (Flavor::Generic, "POST", _) => Kind::Quit,
            _ => Kind::Other,
        }
    }

    /// The answer this flavor gives, as a real sidecar would.
    fn answer(self, method: &str, path: &str, ready: bool, script: &Script) -> Answer {
        let state = if ready { "LIVE" } else { "PRE_INITIALIZING" };
        match (self, method, path) {
            (Flavor::Envoy, "GET", "/ready") if ready => Answer::text(200, "LIVE\n"),
            (Flavor::Envoy, "GET", "/ready") => Answer::text(503, "PRE_INITIALIZING\n"),
            // Envoy answers /server_info in every state; only the field changes.
            (Flavor::Envoy | Flavor::OldEnvoy, "GET", "/server_info") => Answer::json(
                200,
                format!(
                    "{{\"version\":\"fake/1.0\",\"state\":\"{state}\",\"hot_restart_version\":\"fake\",\"command_line_options\":{{}}}}\n"
                ),
            ),
            (Flavor::Envoy | Flavor::OldEnvoy | Flavor::PilotAgent, "POST", "/quitquitquit") => {
                Answer::text(200, "OK\n")
            }
            // Envoy refuses state-changing admin paths on GET.
            (Flavor::Envoy | Flavor::OldEnvoy | Flavor::PilotAgent, _, "/quitquitquit") => {
                Answer::text(405, "method not allowed, use POST\n")
            }
            (Flavor::PilotAgent, "GET", "/healthz/ready") if ready => Answer::text(200, ""),
            (Flavor::PilotAgent, "GET", "/healthz/ready") => Answer::text(503, ""),
            (Flavor::Linkerd, "GET", "/ready") if ready => Answer::text(200, "ready\n"),
            (Flavor::Linkerd, "GET", "/ready") => Answer::text(503, "not ready\n"),
            (Flavor::Linkerd, "GET", "/live") => Answer::text(200, "live\n"),
            // linkerd2-proxy hides /shutdown unless the endpoint is enabled.
            (Flavor::Linkerd, "POST", "/shutdown") if script.shutdown_enabled => {
                Answer::text(200, "shutdown\n")
            }
            (Flavor::Linkerd, "POST", "/shutdown") => Answer::text(404, "not found\n"),
            (Flavor::Generic, "GET", _) if ready => Answer::text(200, "ok\n"),
            (Flavor::Generic, "GET", _) => Answer::text(503, "not ready\n"),
            (Flavor::Generic, "POST", _) => Answer::text(200, "ok\n"),
            (Flavor::Generic, _, _) => Answer::text(405, "method not allowed\n"),
            _ => Answer::text(404, "not found\n"),
        }
    }
}

/// A misbehaviour the fake shows instead of a proper answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Read the request and never answer; the socket stays open until the peer
    /// closes it or the fake is dropped.
    Hang,
    /// Read the request, then close with a TCP RST (`SO_LINGER` set to 0 through
    /// `setsockopt`, since `TcpStream::set_linger` is unstable).
    Reset,
    /// Answer with 64 KiB of non-HTTP bytes, then close.
    Garbage,
    /// Answer `200` with `Content-Length: 1000000000000` and write body bytes as
    /// fast as the peer reads, until it goes away or the fake is dropped.
    EndlessBody,
    /// Send a valid `200` response one byte every 200 ms, then close.
    Trickle,
}

impl Fault {
    /// The name used on the example's command line (`hang`, `endless`, …).
    pub fn name(self) -> &'static str {
        match self {
            Fault::Hang => "hang",
            Fault::Reset => "reset",
            Fault::Garbage => "garbage",
            Fault::EndlessBody => "endless",
            Fault::Trickle => "trickle",
        }
    }

    /// Parses a name produced by [`Fault::name`].
    pub fn parse(name: &str) -> Option<Fault> {
        [
            Fault::Hang,
            Fault::Reset,
            Fault::Garbage,
            Fault::EndlessBody,
            Fault::Trickle,
        ]
        .into_iter()
        .find(|fault| fault.name() == name)
    }
}

/// Called for every parsed request, after it is logged and before it is answered.
pub type OnRequest = Arc<dyn Fn(&Req) + Send + Sync>;

/// What the fake answers. Build with [`Script::new`] (or a flavor shortcut) and the
/// builder methods; every field is public for tests that prefer a struct literal.
#[derive(Clone)]
pub struct Script {
    /// Which admin API to imitate. Default: [`Flavor::Envoy`].
    pub flavor: Flavor,
    /// Time from start until readiness probes succeed; `None` never. Default: ready at once.
    pub ready_after: Option<Duration>,
    /// When set, the first N readiness probes fail and later ones succeed
    /// (`ready_after` is then ignored). Default: `None`.
    pub ready_after_polls: Option<u32>,
    /// Pause before every answer (also before a faulty one). Default: none.
    pub delay: Duration,
    /// Fixed status per path (query string excluded), for every method. Default: none.
    pub status_overrides: Vec<(String, u16)>,
    /// Misbehaviours: `(None, f)` applies to every path, `(Some(p), f)` to path `p`.
    /// The first match wins. Default: none.
    pub faults: Vec<(Option<String>, Fault)>,
    /// Linkerd only: whether `POST /shutdown` is enabled. Default: `true`.
    pub shutdown_enabled: bool,
    /// Stop serving right after a quit request was answered with 2xx. Default: `false`.
    pub exit_on_quit: bool,
    /// Hook for each request (the example logs with it). Default: none.
    pub on_request: Option<OnRequest>,
}

impl Default for Script {
    fn default() -> Script {
        Script::new(Flavor::Envoy)
    }
}

impl fmt::Debug for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Script")
            .field("flavor", &self.flavor)
            .field("ready_after", &self.ready_after)
            .field("ready_after_polls", &self.ready_after_polls)
            .field("delay", &self.delay)
            .field("status_overrides", &self.status_overrides)
            .field("faults", &self.faults)
            .field("shutdown_enabled", &self.shutdown_enabled)
            .field("exit_on_quit", &self.exit_on_quit)
            .field("on_request", &self.on_request.is_some())
            .finish()
    }
}

impl Script {
    /// A script for `flavor` that is ready at once and answers normally.
    pub fn new(flavor: Flavor) -> Script {
        Script {
            flavor,
            ready_after: Some(Duration::ZERO),
            ready_after_polls: None,
            delay: Duration::ZERO,
            status_overrides: Vec::new(),
            faults: Vec::new(),
            shutdown_enabled: true,
            exit_on_quit: false,
            on_request: None,
        }
    }

    /// `Script::new(Flavor::Envoy)`.
    pub fn envoy() -> Script {
        Script::new(Flavor::Envoy)
    }

    /// `Script::new(Flavor::OldEnvoy)`.
    pub fn old_envoy() -> Script {
        Script::new(Flavor::OldEnvoy)
    }

    /// `Script::new(Flavor::PilotAgent)`.
    pub fn pilot_agent() -> Script {
        Script::new(Flavor::PilotAgent)
    }

    /// `Script::new(Flavor::Linkerd)`.
    pub fn linkerd() -> Script {
        Script::new(Flavor::Linkerd)
    }

    /// `Script::new(Flavor::Generic)`.
    pub fn generic() -> Script {
        Script::new(Flavor::Generic)
    }

    /// Readiness probes fail until `after` has passed since start.
    pub fn ready_after(mut self, after: Duration) -> Script {
        self.ready_after = Some(after);
        self
    }

    /// Readiness probes fail until [`FakeAdmin::make_ready`] is called.
    pub fn never_ready(mut self) -> Script {
        self.ready_after = None;
        self
    }

    /// The first `polls` readiness probes fail ("503 × n, then 200").
    pub fn ready_after_polls(mut self, polls: u32) -> Script {
        self.ready_after_polls = Some(polls);
        self
    }

    /// Every answer is sent `delay` after its request was read.
    pub fn delay(mut self, delay: Duration) -> Script {
        self.delay = delay;
        self
    }

    /// `path` always answers `status` (any method), whatever the flavor says.
    pub fn status_override(mut self, path: &str, status: u16) -> Script {
        self.status_overrides.push((path.to_owned(), status));
        self
    }

    /// Every request gets `fault` instead of an answer.
    pub fn fault(mut self, fault: Fault) -> Script {
        self.faults.push((None, fault));
        self
    }

    /// Requests for `path` get `fault`; other paths answer normally.
    pub fn fault_on(mut self, path: &str, fault: Fault) -> Script {
        self.faults.push((Some(path.to_owned()), fault));
        self
    }

    /// Linkerd: whether `POST /shutdown` answers 200 (enabled) or 404.
    pub fn shutdown_enabled(mut self, enabled: bool) -> Script {
        self.shutdown_enabled = enabled;
        self
    }

    /// Stop serving after answering a quit request with 2xx
    /// (see [`FakeAdmin::wait_until_stopped`]).
    pub fn exit_on_quit(mut self, exit: bool) -> Script {
        self.exit_on_quit = exit;
        self
    }

    /// Calls `hook` for each request, after logging it and before answering.
    pub fn on_request(mut self, hook: impl Fn(&Req) + Send + Sync + 'static) -> Script {
        self.on_request = Some(Arc::new(hook));
        self
    }

    fn fault_for(&self, path: &str) -> Option<Fault> {
        self.faults
            .iter()
            .find(|(only, _)| only.as_deref().is_none_or(|only| only == path))
            .map(|&(_, fault)| fault)
    }

    fn status_for(&self, path: &str) -> Option<u16> {
        self.status_overrides
            .iter()
            .find(|(only, _)| only == path)
            .map(|&(_, status)| status)
    }
}

/// One request the fake parsed, in arrival order.
#[derive(Clone, Debug)]
pub struct Req {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target as sent, query string included.
    pub path: String,
    /// When the request head was parsed.
    pub at: Instant,
    /// Same moment as `at`, in `CLOCK_MONOTONIC` nanoseconds (comparable across processes).
    pub mono_ns: u64,
    /// Which connection carried it (numbered from 0 per fake), to check keep-alive.
    pub conn: u64,
    /// Whether this is a quit request for the flavor (`POST /quitquitquit`, …).
    pub quit: bool,
    /// The status the fake answers with; `None` for hang, reset and garbage.
    pub status: Option<u16>,
}

/// A running fake admin server; dropping it stops the server.
pub struct FakeAdmin {
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl FakeAdmin {
    /// Starts serving `script` on `127.0.0.1` at a free port.
    pub fn start(script: Script) -> io::Result<FakeAdmin> {
        FakeAdmin::start_on("127.0.0.1:0", script)
    }

    /// Starts serving `script` on `addr` (e.g. a fixed port for a preset).
    pub fn start_on(addr: impl ToSocketAddrs, script: Script) -> io::Result<FakeAdmin> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let start = Instant::now();
        let start_mono_ns = mono_ns();
        let ready_at = match script.ready_after_polls {
            Some(_) => None,
            None => script.ready_after.map(|after| start + after),
        };
        let shared = Arc::new(Shared {
            script,
            addr,
            start,
            start_mono_ns,
            log: Mutex::new(Vec::new()),
            changed: Condvar::new(),
            stopped: AtomicBool::new(false),
            conns: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(0),
            ready: Mutex::new(Readiness {
                at: ready_at,
                probes: 0,
            }),
        });
        let accept_shared = Arc::clone(&shared);
        let accept = thread::Builder::new()
            .name("fake-admin-accept".into())
            .spawn(move || accept_loop(&listener, &accept_shared))?;
        Ok(FakeAdmin {
            shared,
            accept: Some(accept),
        })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// The listening port.
    pub fn port(&self) -> u16 {
        self.shared.addr.port()
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// The script being served.
    pub fn script(&self) -> &Script {
        &self.shared.script
    }

    /// When the server started.
    pub fn started_at(&self) -> Instant {
        self.shared.start
    }

    /// A copy of the request log, in arrival order.
    pub fn requests(&self) -> Vec<Req> {
        lock(&self.shared.log).clone()
    }

    /// How many `method path` requests arrived (`path` as sent, query included).
    pub fn count(&self, method: &str, path: &str) -> usize {
        lock(&self.shared.log)
            .iter()
            .filter(|req| req.method == method && req.path == path)
            .count()
    }

    /// How many quit requests (any of the flavor's quit paths) arrived.
    pub fn quit_requests(&self) -> usize {
        lock(&self.shared.log).iter().filter(|req| req.quit).count()
    }

    /// Blocks until a `method path` request has arrived (possibly already), or
    /// `timeout` passes; `true` if it arrived.
    pub fn wait_for_request(&self, method: &str, path: &str, timeout: Duration) -> bool {
        let log = lock(&self.shared.log);
        let (log, _) = self
            .shared
            .changed
            .wait_timeout_while(log, timeout, |log| {
                !log.iter()
                    .any(|req| req.method == method && req.path == path)
            })
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        log.iter()
            .any(|req| req.method == method && req.path == path)
    }

    /// When readiness probes started succeeding, if they have.
    pub fn became_ready_at(&self) -> Option<Instant> {
        let at = lock(&self.shared.ready).at?;
        (Instant::now() >= at).then_some(at)
    }

    /// When readiness probes start (or started) succeeding, if that is known yet.
    pub fn ready_at(&self) -> Option<Instant> {
        lock(&self.shared.ready).at
    }

    /// [`FakeAdmin::ready_at`] in `CLOCK_MONOTONIC` nanoseconds.
    pub fn ready_mono_ns(&self) -> Option<u64> {
        let at = self.ready_at()?;
        let since_start = at.saturating_duration_since(self.shared.start).as_nanos();
        Some(self.shared.start_mono_ns + u64::try_from(since_start).unwrap_or(u64::MAX))
    }

    /// Whether a readiness probe would succeed now.
    pub fn is_ready(&self) -> bool {
        self.became_ready_at().is_some()
    }

    /// Readiness probes succeed from now on (no effect if already ready).
    pub fn make_ready(&self) {
        let now = Instant::now();
        let mut ready = lock(&self.shared.ready);
        if ready.at.is_none_or(|at| at > now) {
            ready.at = Some(now);
        }
    }

    /// Blocks until the server stopped (after a quit with `exit_on_quit`); without
    /// `exit_on_quit` this blocks until the fake is dropped elsewhere, i.e. forever.
    pub fn wait_until_stopped(&self) {
        let log = lock(&self.shared.log);
        let _log = self
            .shared
            .changed
            .wait_while(log, |_| !self.shared.stopped.load(Ordering::SeqCst))
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }

    /// Whether the server has stopped.
    pub fn is_stopped(&self) -> bool {
        self.shared.stopped.load(Ordering::SeqCst)
    }

    /// The request log as text for failure messages: times relative to start.
    pub fn dump(&self) -> String {
        let mut out = format!(
            "fake {} at {}:\n",
            self.shared.script.flavor.name(),
            self.url()
        );
        for req in self.requests() {
            let status = req.status.map_or("-".to_owned(), |s| s.to_string());
            let since = req.at.saturating_duration_since(self.shared.start);
            out += &format!(
                "  +{since:?} conn {} {} {} -> {status}\n",
                req.conn, req.method, req.path
            );
        }
        out
    }
}

impl Drop for FakeAdmin {
    fn drop(&mut self) {
        self.shared.stop();
        if let Some(accept) = self.accept.take() {
            // A panic in the accept thread is a bug in the fake; do not panic in drop.
            let _ = accept.join();
        }
    }
}

/// The current `CLOCK_MONOTONIC` time in nanoseconds, the clock `Instant` uses on
/// Linux but cannot expose; log files of several processes can be compared with it.
pub fn mono_ns() -> u64 {
    let mut now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a writable `struct timespec` with the C layout, and
    // CLOCK_MONOTONIC always exists on Linux, so the call only writes `now`.
    let rc = unsafe { clock_gettime(CLOCK_MONOTONIC, &mut now) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// `struct timespec` on Linux with a 64-bit `time_t` (x86_64, aarch64, musl and glibc).
#[repr(C)]
struct Timespec {
    tv_sec: c_long,
    tv_nsec: c_long,
}

/// `struct linger` from `<sys/socket.h>`.
#[repr(C)]
struct Linger {
    l_onoff: c_int,
    l_linger: c_int,
}

/// Linux values (x86_64 and aarch64 use the generic ones).
const CLOCK_MONOTONIC: c_int = 1;
const SOL_SOCKET: c_int = 1;
const SO_LINGER: c_int = 13;

// std links libc already; these two declarations avoid a dependency for two calls.
unsafe extern "C" {
    fn clock_gettime(clock_id: c_int, tp: *mut Timespec) -> c_int;
    fn setsockopt(fd: c_int, level: c_int, name: c_int, value: *const c_void, len: u32) -> c_int;
}

/// Makes the next close of `stream` send an RST instead of a FIN.
fn set_linger_zero(stream: &TcpStream) -> io::Result<()> {
    let linger = Linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: the fd is open for the life of `stream`, and `value`/`len` describe
    // exactly one `struct linger`, which setsockopt only reads.
    let rc = unsafe {
        setsockopt(
            stream.as_raw_fd(),
            SOL_SOCKET,
            SO_LINGER,
            (&raw const linger).cast::<c_void>(),
            size_of::<Linger>() as u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// State shared by the handle, the accept thread and the connection threads.
struct Shared {
    script: Script,
    addr: SocketAddr,
    start: Instant,
    start_mono_ns: u64,
    /// The request log; `changed` is notified on each append and on stop.
    log: Mutex<Vec<Req>>,
    changed: Condvar,
    /// Set (while holding `conns`) once; never cleared.
    stopped: AtomicBool,
    /// Clones of open connections, so stop can shut them down and wake their threads.
    conns: Mutex<HashMap<u64, TcpStream>>,
    next_conn: AtomicU64,
    ready: Mutex<Readiness>,
}

/// When probes start succeeding, and how many probes arrived (for `ready_after_polls`).
struct Readiness {
    at: Option<Instant>,
    probes: u32,
}

impl Shared {
    /// Stops serving: idempotent, callable from any thread, never blocks for long.
    fn stop(&self) {
        {
            // Set the flag under `conns` so the accept thread cannot register a
            // connection after this sweep (it checks the flag under the same lock).
            let conns = lock(&self.conns);
            if self.stopped.swap(true, Ordering::SeqCst) {
                return;
            }
            for conn in conns.values() {
                // Wakes the thread blocked in read or write on this socket.
                let _ = conn.shutdown(Shutdown::Both);
            }
        }
        // Take the log lock so a waiter between its check and its wait cannot miss this.
        drop(lock(&self.log));
        self.changed.notify_all();
        // Wake the blocking accept; it sees the flag and returns.
        let _ = TcpStream::connect_timeout(&self.addr, WAKE_TIMEOUT);
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Waits `pause`, cut short by stop, so a delayed or trickling thread ends with the fake.
    fn sleep(&self, pause: Duration) {
        if pause.is_zero() {
            return;
        }
        let log = lock(&self.log);
        let _log = self
            .changed
            .wait_timeout_while(log, pause, |_| !self.is_stopped())
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }

    /// Whether a readiness probe succeeds now; counts it when `probe` is set.
    fn ready_now(&self, probe: bool) -> bool {
        let now = Instant::now();
        let mut ready = lock(&self.ready);
        if probe && let Some(fail_first) = self.script.ready_after_polls {
            ready.probes = ready.probes.saturating_add(1);
            if ready.probes > fail_first && ready.at.is_none() {
                ready.at = Some(now);
            }
        }
        ready.at.is_some_and(|at| now >= at)
    }

    /// Decides the answer to `head`, logs the request, and runs the hook.
    fn plan(&self, head: &Head, conn: u64) -> Plan {
        let path = head.target.split('?').next().unwrap_or_default();
        let flavor = self.script.flavor;
        let kind = flavor.kind(&head.method, path);
        let ready = self.ready_now(kind == Kind::Probe);
        let plan = match self.script.fault_for(path) {
            Some(fault) => Plan::Fault(fault),
            None => {
                let mut answer = flavor.answer(&head.method, path, ready, &self.script);
                if let Some(status) = self.script.status_for(path) {
                    answer = Answer::text(status, &format!("status {status}\n"));
                }
                Plan::Answer(answer)
            }
        };
        let status = match &plan {
            Plan::Answer(answer) => Some(answer.status),
            Plan::Fault(Fault::EndlessBody | Fault::Trickle) => Some(200),
            Plan::Fault(_) => None,
        };
        let req = Req {
            method: head.method.clone(),
            path: head.target.clone(),
            at: Instant::now(),
            mono_ns: mono_ns(),
            conn,
            quit: kind == Kind::Quit,
            status,
        };
        lock(&self.log).push(req.clone());
        self.changed.notify_all();
        if let Some(hook) = &self.script.on_request {
            hook(&req);
        }
        plan
    }
}

/// Locks `mutex`, ignoring poison: a panicking test thread must not break the fake.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Accepts until stopped; one detached thread per connection.
fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for incoming in listener.incoming() {
        if shared.is_stopped() {
            return;
        }
        let stream = match incoming {
            Ok(stream) => stream,
            // A signal interrupted accept: just accept again.
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // E.g. EMFILE: back off briefly instead of spinning on the error.
                thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
        {
            let mut conns = lock(&shared.conns);
            if shared.is_stopped() {
                return;
            }
            match stream.try_clone() {
                Ok(clone) => conns.insert(id, clone),
                Err(_) => continue,
            };
        }
        let conn_shared = Arc::clone(shared);
        let spawned = thread::Builder::new()
            .name(format!("fake-admin-conn-{id}"))
            .spawn(move || {
                serve_connection(&conn_shared, stream, id);
                // Dropping the last clone closes the socket (with RST after `Reset`).
                lock(&conn_shared.conns).remove(&id);
            });
        if spawned.is_err() {
            lock(&shared.conns).remove(&id);
        }
    }
}

/// Serves requests on one connection until it closes, a fault ends it, or the fake stops.
fn serve_connection(shared: &Shared, stream: TcpStream, conn: u64) {
    let mut reader = BufReader::new(&stream);
    let mut writer = &stream;
    loop {
        let head = match read_head(&mut reader) {
            Ok(Some(head)) => head,
            Ok(None) | Err(HeadError::Io) => return,
            Err(HeadError::TooLarge) => return refuse(&stream, 431, "headers too large\n"),
            Err(HeadError::Malformed) => return refuse(&stream, 400, "bad request\n"),
        };
        match discard_body(&mut reader, &head) {
            Ok(()) => {}
            Err(HeadError::Io) => return,
            Err(HeadError::TooLarge) => return refuse(&stream, 413, "body too large\n"),
            Err(HeadError::Malformed) => return refuse(&stream, 400, "bad body\n"),
        }
        let plan = shared.plan(&head, conn);
        if plan != Plan::Fault(Fault::Hang) {
            shared.sleep(shared.script.delay);
        }
        if shared.is_stopped() {
            return;
        }
        let answer = match plan {
            Plan::Answer(answer) => answer,
            Plan::Fault(fault) => return serve_fault(shared, &mut reader, &stream, fault),
        };
        let quit_done = answer.status / 100 == 2
            && shared.script.exit_on_quit
            && shared.script.flavor.kind(&head.method, head.path()) == Kind::Quit;
        let keep_alive = head.keep_alive && !quit_done;
        if writer.write_all(&answer.bytes(keep_alive)).is_err() {
            return;
        }
        if quit_done {
            shared.stop();
            return;
        }
        if !keep_alive {
            return;
        }
    }
}

/// Answers a request the fake could not read, then closes gently: closing with
/// unread input would send an RST that can destroy the answer before the peer reads it.
fn refuse(stream: &TcpStream, status: u16, body: &str) {
    let mut writer = stream;
    if writer
        .write_all(&Answer::text(status, body).bytes(false))
        .is_err()
    {
        return;
    }
    let _ = stream.shutdown(Shutdown::Write);
    // Bounded in bytes and time; the peer normally closes on seeing the answer.
    let _ = stream.set_read_timeout(Some(REFUSE_LINGER));
    let _ = io::copy(&mut stream.take(MAX_BODY_BYTES), &mut io::sink());
}

/// Plays `fault` on the connection; the caller closes it afterwards.
fn serve_fault(shared: &Shared, reader: &mut impl Read, stream: &TcpStream, fault: Fault) {
    let mut writer = stream;
    match fault {
        // Blocks until the peer closes or stop shuts the socket down; reads nothing
        // into memory beyond a small buffer.
        Fault::Hang => {
            let _ = io::copy(reader, &mut io::sink());
        }
        Fault::Reset => {
            let _ = set_linger_zero(stream);
        }
        Fault::Garbage => {
            let _ = writer.write_all(&garbage(GARBAGE_BYTES));
        }
        Fault::EndlessBody => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {ENDLESS_LENGTH}\r\n\r\n"
            );
            if writer.write_all(head.as_bytes()).is_err() {
                return;
            }
            // Each write blocks while the peer does not read; stop's shutdown
            // turns a blocked write into an error.
            let chunk = vec![b'x'; ENDLESS_CHUNK];
            while !shared.is_stopped() && writer.write_all(&chunk).is_ok() {}
        }
        Fault::Trickle => {
            for &byte in Answer::text(200, "ok\n").bytes(false).iter() {
                if shared.is_stopped() || writer.write_all(&[byte]).is_err() {
                    return;
                }
                shared.sleep(TRICKLE_INTERVAL);
            }
        }
    }
}

/// `len` bytes that are not HTTP: a fixed non-ASCII prefix, then xorshift noise.
fn garbage(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut bytes: Vec<u8> = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8
        })
        .collect();
    // Never starts like "HTTP/", whatever the noise.
    bytes[..4.min(len)].copy_from_slice(&[0x00, 0xFF, 0xFE, 0x80][..4.min(len)]);
    bytes
}

/// What a request means to the flavor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Probe,
    Quit,
    Other,
}

/// A complete, well-formed answer.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    content_type: &'static str,
    body: String,
}

impl Answer {
    fn text(status: u16, body: &str) -> Answer {
        Answer {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.to_owned(),
        }
    }

    fn json(status: u16, body: String) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            body,
        }
    }

    fn bytes(&self, keep_alive: bool) -> Vec<u8> {
        let connection = if keep_alive { "keep-alive" } else { "close" };
        format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n{}",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len(),
            self.body
        )
        .into_bytes()
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// What to do with one request.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Plan {
    Answer(Answer),
    Fault(Fault),
}

/// The parts of a request head the fake needs.
#[derive(Debug)]
struct Head {
    method: String,
    target: String,
    keep_alive: bool,
    content_length: u64,
    chunked: bool,
}

impl Head {
    fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }
}

/// Why a request could not be read.
#[derive(Debug)]
enum HeadError {
    /// The connection failed or closed mid-request: just close.
    Io,
    /// Over a size bound: answer 431/413, close.
    TooLarge,
    /// Not HTTP/1.x: answer 400, close.
    Malformed,
}

/// Reads one request head; `Ok(None)` on a clean close between requests.
fn read_head(reader: &mut impl BufRead) -> Result<Option<Head>, HeadError> {
    let mut budget = MAX_HEADER_BYTES;
    let mut line = Vec::new();
    // Skip empty lines before the request line (RFC 9112 §2.2).
    loop {
        line.clear();
        if read_line(reader, &mut line, &mut budget)? == 0 {
            return Ok(None);
        }
        if !trim_eol(&line).is_empty() {
            break;
        }
    }
    let request_line = std::str::from_utf8(trim_eol(&line)).map_err(|_| HeadError::Malformed)?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::Malformed);
    };
    if method.is_empty() || !target.starts_with('/') || !version.starts_with("HTTP/1.") {
        return Err(HeadError::Malformed);
    }
    let mut head = Head {
        method: method.to_owned(),
        target: target.to_owned(),
        // HTTP/1.1 keeps the connection by default, HTTP/1.0 closes it.
        keep_alive: version != "HTTP/1.0",
        content_length: 0,
        chunked: false,
    };
    loop {
        line.clear();
        if read_line(reader, &mut line, &mut budget)? == 0 {
            return Err(HeadError::Io);
        }
        let field = trim_eol(&line);
        if field.is_empty() {
            return Ok(Some(head));
        }
        let field = std::str::from_utf8(field).map_err(|_| HeadError::Malformed)?;
        let (name, value) = field.split_once(':').ok_or(HeadError::Malformed)?;
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => {
                head.content_length = value.parse().map_err(|_| HeadError::Malformed)?;
            }
            "transfer-encoding" => head.chunked = value.to_ascii_lowercase().contains("chunked"),
            "connection" => {
                for option in value.split(',').map(|o| o.trim().to_ascii_lowercase()) {
                    match option.as_str() {
                        "close" => head.keep_alive = false,
                        "keep-alive" => head.keep_alive = true,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}

/// Reads one line (through `\n`) within `budget` bytes; returns its length (0 at EOF).
fn read_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    budget: &mut u64,
) -> Result<usize, HeadError> {
    let read = (&mut *reader)
        .take(*budget)
        .read_until(b'\n', line)
        .map_err(|_| HeadError::Io)?;
    *budget -= read as u64;
    if read > 0 && !line.ends_with(b"\n") {
        // Either the budget ran out or the peer closed mid-line.
        return Err(if *budget == 0 {
            HeadError::TooLarge
        } else {
            HeadError::Io
        });
    }
    Ok(read)
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Reads and drops the request body (Content-Length or chunked), at most 1 MiB.
fn discard_body(reader: &mut impl BufRead, head: &Head) -> Result<(), HeadError> {
    if !head.chunked {
        if head.content_length > MAX_BODY_BYTES {
            return Err(HeadError::TooLarge);
        }
        return skip(reader, head.content_length);
    }
    let mut budget = MAX_BODY_BYTES;
    let mut line = Vec::new();
    loop {
        line.clear();
        if read_line(reader, &mut line, &mut budget)? == 0 {
            return Err(HeadError::Io);
        }
        let size = std::str::from_utf8(trim_eol(&line)).map_err(|_| HeadError::Malformed)?;
        let size = size.split(';').next().unwrap_or_default().trim();
        let size = u64::from_str_radix(size, 16).map_err(|_| HeadError::Malformed)?;
        if size == 0 {
            break;
        }
        // The chunk and its CRLF.
        let size = size.checked_add(2).ok_or(HeadError::TooLarge)?;
        budget = budget.checked_sub(size).ok_or(HeadError::TooLarge)?;
        skip(reader, size)?;
    }
    // Trailer fields, up to the empty line.
    loop {
        line.clear();
        if read_line(reader, &mut line, &mut budget)? == 0 {
            return Err(HeadError::Io);
        }
        if trim_eol(&line).is_empty() {
            return Ok(());
        }
    }
}

/// Reads and drops exactly `len` bytes.
fn skip(reader: &mut impl BufRead, len: u64) -> Result<(), HeadError> {
    let copied =
        io::copy(&mut (&mut *reader).take(len), &mut io::sink()).map_err(|_| HeadError::Io)?;
    if copied == len {
        Ok(())
    } else {
        Err(HeadError::Io)
    }
}
