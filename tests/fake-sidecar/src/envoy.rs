//! A real Envoy for the tests: where its binary is (`TANDEM_TEST_ENVOY`, set by
//! `make test` to the pinned build from `make envoy`), a bootstrap written per
//! test (admin and listeners on loopback, an admin access log), starting and
//! stopping it, and a stand-in for Istio's pilot-agent that stops Envoy on
//! `POST /quitquitquit`.
//!
//! The admin access log is what the tests read to learn what tandem asked Envoy:
//! Envoy writes one line per admin request, so it shows every poll and every quit
//! that reached the real server, which no stat counter does for `/quitquitquit`.
//!
//! Part of the fake-sidecar crate, beside the fake it complements, so the tests and
//! `make bench` share it as one module.

// Shared by the test crate and the benchmark, and each uses a different subset.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The variable that names the Envoy binary the tests run.
pub const ENVOY_VAR: &str = "TANDEM_TEST_ENVOY";
/// Hang guard on Envoy binding its admin port (it takes about 0.1 s when idle).
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How often Envoy writes its access log to disk. Its default (10 s) would leave
/// the log empty for the whole of a short test while Envoy runs.
const FLUSH_MSEC: &str = "50";
/// Bound on each request the helpers send themselves.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Interval of the helpers' own polls.
const POLL: Duration = Duration::from_millis(10);
/// The `User-Agent` of the requests the tests send Envoy themselves, so that
/// [`Envoy::count`] leaves them out and counts only tandem's.
pub const HARNESS_AGENT: &str = "tandem-test-harness";

/// The Envoy binary from `TANDEM_TEST_ENVOY`, or why it cannot be had (the
/// caller skips, or fails under `CI=true`).
pub fn binary() -> Result<PathBuf, String> {
    match std::env::var_os(ENVOY_VAR).filter(|path| !path.is_empty()) {
        Some(path) if Path::new(&path).is_file() => Ok(PathBuf::from(path)),
        Some(path) => Err(format!(
            "{ENVOY_VAR}={} is not a file",
            Path::new(&path).display()
        )),
        None => Err(format!(
            "{ENVOY_VAR} is not set (`make test` sets it after `make envoy`)"
        )),
    }
}

/// The loopback address a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `127.0.0.1`
    V4,
    /// `[::1]`
    V6,
}

impl Family {
    /// The loopback address of this family.
    pub fn ip(self) -> IpAddr {
        match self {
            Family::V4 => IpAddr::V4(Ipv4Addr::LOCALHOST),
            Family::V6 => IpAddr::V6(Ipv6Addr::LOCALHOST),
        }
    }

    /// `http://127.0.0.1:PORT` or `http://[::1]:PORT`.
    pub fn url(self, port: u16) -> String {
        format!("http://{}", SocketAddr::new(self.ip(), port))
    }

    /// Whether this machine has the family's loopback (a container may have no
    /// IPv6), or why not.
    pub fn usable(self) -> Result<(), String> {
        TcpListener::bind((self.ip(), 0))
            .map(drop)
            .map_err(|err| format!("cannot bind {}: {err}", self.ip()))
    }

    /// A port on this loopback that nothing listens on (bound, then released).
    pub fn free_port(self) -> u16 {
        let listener = TcpListener::bind((self.ip(), 0)).expect("bind an ephemeral port");
        listener.local_addr().expect("local addr").port()
    }
}

/// What one Envoy is configured with.
#[derive(Clone, Debug)]
pub struct Bootstrap {
    family: Family,
    admin_port: u16,
    upstream: Option<SocketAddr>,
    never_ready: bool,
}

impl Bootstrap {
    /// An Envoy with only an admin, on an ephemeral port of `family`'s loopback:
    /// it is ready (`/ready` 200) as soon as it has started.
    pub fn new(family: Family) -> Bootstrap {
        Bootstrap {
            family,
            admin_port: 0,
            upstream: None,
            never_ready: false,
        }
    }

    /// The admin on `port` instead of an ephemeral one.
    pub fn admin_port(mut self, port: u16) -> Bootstrap {
        self.admin_port = port;
        self
    }

    /// A TCP listener named `app`, on an ephemeral port, that proxies every
    /// connection to `upstream`.
    pub fn proxy_to(mut self, upstream: SocketAddr) -> Bootstrap {
        self.upstream = Some(upstream);
        self
    }

    /// Listeners come from an xDS server that does not exist, with no fetch
    /// timeout: Envoy stays `INITIALIZING` (`/ready` 503) until it is stopped.
    pub fn never_ready(mut self) -> Bootstrap {
        self.never_ready = true;
        self
    }

    /// The bootstrap as YAML, with the admin access log at `access_log`.
    fn yaml(&self, access_log: &Path) -> String {
        let host = self.family.ip();
        let mut yaml = format!(
            "node: {{ id: tandem-test, cluster: tandem-test }}\n\
             admin:\n\
             \x20 access_log:\n\
             \x20 - name: envoy.access_loggers.file\n\
             \x20   typed_config:\n\
             \x20     \"@type\": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog\n\
             \x20     path: \"{}\"\n\
             \x20 address:\n\
             \x20   socket_address: {{ address: \"{host}\", port_value: {} }}\n",
            access_log.display(),
            self.admin_port
        );
        if self.never_ready {
            // initial_fetch_timeout 0 disables the 15 s after which Envoy would
            // give up on the first LDS answer and turn LIVE anyway.
            yaml += "dynamic_resources:\n\
                     \x20 lds_config:\n\
                     \x20   resource_api_version: V3\n\
                     \x20   initial_fetch_timeout: 0s\n\
                     \x20   api_config_source:\n\
                     \x20     api_type: GRPC\n\
                     \x20     transport_api_version: V3\n\
                     \x20     grpc_services:\n\
                     \x20     - envoy_grpc: { cluster_name: xds }\n";
        }
        yaml += "static_resources:\n";
        if self.upstream.is_some() {
            let _ = write!(
                yaml,
                "\x20 listeners:\n\
                 \x20 - name: app\n\
                 \x20   address:\n\
                 \x20     socket_address: {{ address: \"{host}\", port_value: 0 }}\n\
                 \x20   filter_chains:\n\
                 \x20   - filters:\n\
                 \x20     - name: envoy.filters.network.tcp_proxy\n\
                 \x20       typed_config:\n\
                 \x20         \"@type\": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy\n\
                 \x20         stat_prefix: app\n\
                 \x20         cluster: upstream\n"
            );
        }
        yaml += "  clusters:\n";
        if let Some(upstream) = self.upstream {
            yaml += &cluster("upstream", upstream, false);
        }
        if self.never_ready {
            let nowhere = SocketAddr::new(host, self.family.free_port());
            yaml += &cluster("xds", nowhere, true);
        }
        if self.upstream.is_none() && !self.never_ready {
            // `clusters: []` keeps the YAML valid with no cluster at all.
            yaml = yaml.replace("  clusters:\n", "  clusters: []\n");
        }
        yaml
    }
}

/// One static cluster of a single endpoint, HTTP/2 for a gRPC (xDS) cluster.
fn cluster(name: &str, addr: SocketAddr, http2: bool) -> String {
    let mut yaml = format!(
        "  - name: {name}\n\
         \x20   type: STATIC\n\
         \x20   connect_timeout: 1s\n"
    );
    if http2 {
        yaml += "    typed_extension_protocol_options:\n\
                 \x20     envoy.extensions.upstreams.http.v3.HttpProtocolOptions:\n\
                 \x20       \"@type\": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions\n\
                 \x20       explicit_http_config: { http2_protocol_options: {} }\n";
    }
    let _ = write!(
        yaml,
        "\x20   load_assignment:\n\
         \x20     cluster_name: {name}\n\
         \x20     endpoints:\n\
         \x20     - lb_endpoints:\n\
         \x20       - endpoint:\n\
         \x20           address:\n\
         \x20             socket_address: {{ address: \"{}\", port_value: {} }}\n",
        addr.ip(),
        addr.port()
    );
    yaml
}

/// One admin request as Envoy's access log records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target, query string included.
    pub path: String,
    /// The status Envoy answered.
    pub status: u16,
    /// The `User-Agent` header, `-` when there was none.
    pub user_agent: String,
}

/// A running Envoy; dropping it kills and reaps it.
pub struct Envoy {
    child: Child,
    dir: PathBuf,
    family: Family,
    /// The admin port: the one asked for, or Envoy's choice once known.
    admin_port: u16,
    status: Option<ExitStatus>,
}

impl Envoy {
    /// Starts `binary` with `bootstrap`, its files in `dir`, and returns at once:
    /// with an ephemeral admin port, [`Envoy::wait_admin`] learns it.
    pub fn spawn(binary: &Path, dir: &Path, bootstrap: &Bootstrap) -> Envoy {
        let config = dir.join("envoy.yaml");
        fs::write(&config, bootstrap.yaml(&dir.join("admin.log"))).expect("write the bootstrap");
        let output = fs::File::create(dir.join("envoy.out")).expect("create envoy.out");
        let errors = output.try_clone().expect("dup envoy.out");
        let mut cmd = Command::new(binary);
        cmd.arg("--config-path")
            .arg(&config)
            .arg("--admin-address-path")
            .arg(dir.join("admin.address"))
            // No shared memory: parallel tests each run their own Envoy.
            .arg("--disable-hot-restart")
            .args(["--concurrency", "1", "--log-level", "warning"])
            .args(["--file-flush-interval-msec", FLUSH_MSEC])
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors);
        // SAFETY: the closure runs between fork and exec and calls only prctl and
        // signal, which are async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                // An Envoy must not outlive a test process that was killed.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // The test harness may run with signals ignored (nohup); Envoy
                // must stop on SIGTERM as it does in a Pod.
                for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {}: {err}", binary.display()));
        Envoy {
            child,
            dir: dir.to_path_buf(),
            family: bootstrap.family,
            admin_port: bootstrap.admin_port,
            status: None,
        }
    }

    /// [`Envoy::spawn`], then [`Envoy::wait_admin`].
    pub fn start(binary: &Path, dir: &Path, bootstrap: &Bootstrap) -> Envoy {
        let mut envoy = Envoy::spawn(binary, dir, bootstrap);
        envoy.wait_admin();
        envoy
    }

    /// Waits until the admin port is bound (Envoy writes its address file then),
    /// and learns the port; panics with Envoy's output if it exits first.
    pub fn wait_admin(&mut self) {
        let file = self.dir.join("admin.address");
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            // Written as `127.0.0.1:PORT` or `[::1]:PORT`, then a newline.
            let port = fs::read_to_string(&file).ok().and_then(|text| {
                let text = text.trim();
                text.parse::<SocketAddr>().ok().map(|addr| addr.port())
            });
            if let Some(port) = port {
                self.admin_port = port;
                return;
            }
            assert!(
                self.is_running(),
                "Envoy exited before binding its admin\n{}",
                self.dump()
            );
            assert!(
                Instant::now() < deadline,
                "Envoy did not bind its admin within {START_TIMEOUT:?}\n{}",
                self.dump()
            );
            thread::sleep(POLL);
        }
    }

    /// The process id.
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("pid fits in i32")
    }

    /// The admin base URL, `http://127.0.0.1:PORT` or `http://[::1]:PORT`.
    pub fn admin_url(&self) -> String {
        self.family.url(self.admin_port)
    }

    /// The admin address.
    pub fn admin_addr(&self) -> SocketAddr {
        SocketAddr::new(self.family.ip(), self.admin_port)
    }

    /// The port of the `app` listener, read from the admin's `/listeners`
    /// (`app::127.0.0.1:PORT`).
    pub fn listener_port(&self) -> u16 {
        let (status, body) =
            http_get(self.admin_addr(), "/listeners").expect("GET /listeners from Envoy");
        assert_eq!(status, 200, "GET /listeners: {body}");
        body.lines()
            .find_map(|line| line.strip_prefix("app::"))
            .and_then(|addr| addr.trim().parse::<SocketAddr>().ok())
            .map(|addr| addr.port())
            .unwrap_or_else(|| panic!("no `app` listener in /listeners: {body}"))
    }

    /// `GET /ready` from the admin: Envoy's status code.
    pub fn ready_status(&self) -> io::Result<u16> {
        http_get(self.admin_addr(), "/ready").map(|(status, _)| status)
    }

    /// Whether Envoy is still running.
    pub fn is_running(&mut self) -> bool {
        if self.status.is_none()
            && let Ok(Some(status)) = self.child.try_wait()
        {
            self.status = Some(status);
        }
        self.status.is_none()
    }

    /// Waits up to `timeout` for Envoy to exit; its status, or `None` if it is
    /// still running.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while self.is_running() && Instant::now() < deadline {
            thread::sleep(POLL);
        }
        self.status
    }

    /// Stops Envoy with SIGTERM (which flushes its access log) and reaps it.
    pub fn stop(&mut self) {
        if self.is_running() {
            // SAFETY: kill has no memory effects; the pid is our unreaped child.
            unsafe { libc::kill(self.pid(), libc::SIGTERM) };
            if self.wait_exit(START_TIMEOUT).is_none() {
                let _ = self.child.kill();
                self.status = self.child.wait().ok();
            }
        }
    }

    /// Every admin request in the access log so far. Envoy writes it out every
    /// [`FLUSH_MSEC`] and when it exits; read it after [`Envoy::stop`] or an
    /// awaited exit to see all of it.
    pub fn admin_requests(&self) -> Vec<AdminRequest> {
        let log = fs::read_to_string(self.dir.join("admin.log")).unwrap_or_default();
        log.lines().filter_map(parse_access_line).collect()
    }

    /// How many admin requests had `method`, `path` and (if given) `status`,
    /// leaving out the tests' own ([`HARNESS_AGENT`]).
    pub fn count(&self, method: &str, path: &str, status: Option<u16>) -> usize {
        self.admin_requests()
            .iter()
            .filter(|req| req.user_agent != HARNESS_AGENT)
            .filter(|req| req.method == method && req.path == path)
            .filter(|req| status.is_none_or(|s| req.status == s))
            .count()
    }

    /// Envoy's output, its access log and its exit status, for assertion messages.
    pub fn dump(&self) -> String {
        let read = |name: &str| fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        format!(
            "--- Envoy (pid {}, admin {}, exit {:?}) output ---\n{}--- Envoy admin access log ---\n{}--- end Envoy ---\n",
            self.child.id(),
            self.admin_url(),
            self.status,
            read("envoy.out"),
            read("admin.log")
        )
    }
}

impl Drop for Envoy {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `[2026-01-01T00:00:00.000Z] "GET /ready HTTP/1.1" 200 - 0 5 0 - "X-FORWARDED-FOR"
/// "USER-AGENT" …` (Envoy's default format) → the request.
fn parse_access_line(line: &str) -> Option<AdminRequest> {
    let mut quoted = line.split('"');
    let _time = quoted.next()?;
    let mut words = quoted.next()?.split(' ');
    let method = words.next()?.to_owned();
    let path = words.next()?.to_owned();
    let status = quoted.next()?.split_whitespace().next()?.parse().ok()?;
    let _forwarded_for = quoted.next()?;
    let _gap = quoted.next()?;
    let user_agent = quoted.next()?.to_owned();
    Some(AdminRequest {
        method,
        path,
        status,
        user_agent,
    })
}

/// A plain `GET path` to `addr` over a new connection, as [`HARNESS_AGENT`]:
/// status and body.
pub fn http_get(addr: SocketAddr, path: &str) -> io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: {HARNESS_AGENT}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| io::Error::other(format!("not an HTTP answer: {answer:?}")))?;
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// A stand-in for Istio's pilot-agent on a loopback port: it answers every
/// request, records `METHOD PATH`, and on `POST /quitquitquit` stops Envoy with
/// SIGTERM, as the real pilot-agent ends its Envoy. Stopped when dropped.
pub struct PilotAgent {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PilotAgent {
    /// Listens on `addr`; a quit sends SIGTERM to `envoy_pid`.
    pub fn start(addr: SocketAddr, envoy_pid: i32) -> io::Result<PilotAgent> {
        let listener = TcpListener::bind(addr)?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log, stopping) = (Arc::clone(&requests), Arc::clone(&stop));
        let thread = thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    // One request per connection; errors only lose that request.
                    let _ = serve_pilot_agent(stream, &log, envoy_pid);
                }
            }
        });
        Ok(PilotAgent {
            addr,
            requests,
            stop,
            thread: Some(thread),
        })
    }

    /// Every request so far, as `METHOD PATH`.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for PilotAgent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocked accept; the thread then sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, IO_TIMEOUT);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one request head, records it, and answers; a quit stops Envoy first.
fn serve_pilot_agent(
    stream: TcpStream,
    log: &Mutex<Vec<String>>,
    envoy_pid: i32,
) -> io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let request = format!(
        "{} {}",
        words.next().unwrap_or(""),
        words.next().unwrap_or("")
    );
    // The rest of the head; tandem's quit has an empty body.
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
    }
    let quit = request == "POST /quitquitquit";
    log.lock().unwrap_or_else(|p| p.into_inner()).push(request);
    if quit {
        // SAFETY: kill has no memory effects; the pid is the test's own Envoy.
        unsafe { libc::kill(envoy_pid, libc::SIGTERM) };
    }
    let (status, body) = if quit {
        ("200 OK", "OK\n")
    } else {
        ("404 Not Found", "")
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn access_log_lines_give_method_path_status_and_user_agent() {
    let line = "[2026-11-24T03:05:48.515Z] \"POST /quitquitquit HTTP/1.1\" 200 - 0 3 0 - \
                \"192.0.2.2\" \"tandem/0.1.0\" \"-\" \"[::1]:45793\" \"-\"";
    assert_eq!(
        parse_access_line(line),
        Some(AdminRequest {
            method: "POST".to_owned(),
            path: "/quitquitquit".to_owned(),
            status: 200,
            user_agent: "tandem/0.1.0".to_owned(),
        })
    );
    assert_eq!(parse_access_line("envoy: not an access log line"), None);
}
