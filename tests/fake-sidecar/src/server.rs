//! The server: one listener, one accept thread and one thread per connection,
//! and the [`FakeAdmin`] handle that starts, observes and stops it.

use crate::http::{Head, HeadError, MAX_BODY_BYTES, read_body, read_head};
use crate::routes::{self, Kind, Response};
use crate::script::{Fault, Script};
use crate::{Xorshift, mono_ns};
use std::collections::HashMap;
use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

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

/// One request the fake parsed, in arrival order.
#[derive(Clone, Debug)]
pub struct Req {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target as sent, query string included.
    pub path: String,
    /// `HTTP/1.1` or `HTTP/1.0`.
    pub version: String,
    /// Every header field, in order, as sent (names in the client's case).
    pub headers: Vec<(String, String)>,
    /// The body, decoded if it was chunked.
    pub body: Vec<u8>,
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

impl Req {
    /// The value of the first header field named `name` (any case), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(field, _)| field.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
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
    fn plan(&self, head: &Head, body: Vec<u8>, conn: u64) -> Plan {
        let path = head.path();
        let kind = routes::kind(self.script.flavor, &head.method, path);
        let ready = self.ready_now(kind == Kind::Probe);
        let plan = match (self.script.fault_for(path), self.script.response_for(path)) {
            (Some(fault), _) => Plan::Fault(fault),
            (None, Some(response)) => Plan::Answer(response.clone()),
            (None, None) => Plan::Answer(routes::answer(&self.script, &head.method, path, ready)),
        };
        let status = match &plan {
            Plan::Answer(answer) => Some(answer.status),
            Plan::Fault(Fault::EndlessBody | Fault::Trickle) => Some(200),
            Plan::Fault(_) => None,
        };
        let req = Req {
            method: head.method.clone(),
            path: head.target.clone(),
            version: head.version.clone(),
            headers: head.headers.clone(),
            body,
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
        let body = match read_body(&mut reader, &head) {
            Ok(body) => body,
            Err(HeadError::Io) => return,
            Err(HeadError::TooLarge) => return refuse(&stream, 413, "body too large\n"),
            Err(HeadError::Malformed) => return refuse(&stream, 400, "bad body\n"),
        };
        let plan = shared.plan(&head, body, conn);
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
            && routes::kind(shared.script.flavor, &head.method, head.path()) == Kind::Quit;
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
        .write_all(&Response::text(status, body).bytes(false))
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
            for &byte in Response::text(200, "ok\n").bytes(false).iter() {
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
    let mut bytes = Xorshift::new(0x9E37_79B9_7F4A_7C15).bytes(len);
    // Never starts like "HTTP/", whatever the noise.
    bytes[..4.min(len)].copy_from_slice(&[0x00, 0xFF, 0xFE, 0x80][..4.min(len)]);
    bytes
}

/// Makes the next close of `stream` send an RST instead of a FIN.
fn set_linger_zero(stream: &TcpStream) -> io::Result<()> {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let len = libc::socklen_t::try_from(size_of::<libc::linger>()).unwrap_or(libc::socklen_t::MAX);
    // SAFETY: the fd is open for the life of `stream`, and `value`/`len` describe
    // exactly one `struct linger`, which setsockopt only reads.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast::<libc::c_void>(),
            len,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What to do with one request.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Plan {
    Answer(Response),
    Fault(Fault),
}
