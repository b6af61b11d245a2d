//! What the injector's tests and benchmark share: a throw-away CA and server
//! certificates (rcgen), the injector binary started on an ephemeral loopback
//! port with its log captured, and an HTTPS client that trusts that CA.

#![allow(dead_code)] // each test crate takes the parts it needs

pub mod listener;
pub mod pods;
pub mod registry;
/// The one skip helper (`fake_sidecar::skips`), with this build's records file.
pub mod skips {
    /// The calling test gives up because `prerequisite` is missing (fails under `CI=true`).
    pub fn skip(prerequisite: &str, why: &str) {
        let tmpdir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        fake_sidecar::skips::skip(tmpdir, prerequisite, why);
    }
}

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine as _;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, SanType};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serde_json::Value;

/// The injector binary under test.
pub const INJECTOR: &str = env!("CARGO_BIN_EXE_tandem-injector");

/// A fresh directory for one test under cargo's target tmp dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("injector")
        .join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// A test CA that issues server certificates for the injector.
pub struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl Pki {
    /// A new CA.
    pub fn new() -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "tandem-injector test CA");
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Pki { ca }
    }

    /// The CA certificate (PEM), what a webhook's `caBundle` holds.
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// Issues a certificate for `localhost`/127.0.0.1 with common name `cn` and
    /// writes it and its key to `dir`/tls.crt and tls.key, replacing any by
    /// rename, as kubelet updates a mounted Secret.
    pub fn issue(&self, dir: &Path, cn: &str) -> (PathBuf, PathBuf) {
        self.issue_until(dir, cn, None)
    }

    /// [`Pki::issue`] with `notAfter` at midnight (UTC) of `until`, a
    /// (year, month, day); rcgen's far-off default without it.
    pub fn issue_until(
        &self,
        dir: &Path,
        cn: &str,
        until: Option<(i32, u8, u8)>,
    ) -> (PathBuf, PathBuf) {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        if let Some((year, month, day)) = until {
            params.not_after = rcgen::date_time_ymd(year, month, day);
        }
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        let paths = (dir.join("tls.crt"), dir.join("tls.key"));
        for (path, text) in [(&paths.0, cert.pem()), (&paths.1, key.serialize_pem())] {
            let tmp = path.with_extension("new");
            fs::write(&tmp, text).unwrap();
            fs::rename(&tmp, path).unwrap();
        }
        paths
    }

    /// A TLS server configuration with a certificate issued as [`Pki::issue`]
    /// does (files in `dir`), for the test servers beside the injector.
    pub fn server_config(&self, dir: &Path, cn: &str) -> Arc<rustls::ServerConfig> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let (cert, key) = self.issue(dir, cn);
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let key = PrivateKeyDer::from_pem_file(&key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        Arc::new(config)
    }

    /// A client that trusts this CA.
    pub fn client(&self) -> Client {
        let mut roots = RootCertStore::empty();
        roots.add(self.ca.der().clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        // Every connection a full handshake, as the API server's webhook client
        // makes them: the certificate served is the one the server chose now.
        config.resumption = rustls::client::Resumption::disabled();
        Client {
            config: Arc::new(config),
        }
    }
}

/// The injector running as a process; killed on drop.
pub struct Injector {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
    /// Told once its stderr is read to the end (it closes when the injector exits).
    read_all: mpsc::Receiver<()>,
}

impl Injector {
    /// Starts the injector with a fresh certificate from `pki` in `dir`.
    pub fn start(pki: &Pki, dir: &Path) -> Injector {
        Injector::start_env(pki, dir, &[])
    }

    /// `start` with these variables set (the hidden time limits, `--drain`…).
    pub fn start_env(pki: &Pki, dir: &Path, vars: &[(&str, &str)]) -> Injector {
        let (cert, key) = pki.issue(dir, "first");
        Injector::start_bin_env(Path::new(INJECTOR), &cert, &key, vars)
    }

    /// Starts the injector on 127.0.0.1:0 with these files; waits until it listens.
    pub fn start_with(cert: &Path, key: &Path) -> Injector {
        Injector::start_bin(Path::new(INJECTOR), cert, key)
    }

    /// `start_with` for another build of the injector (`bin`).
    pub fn start_bin(bin: &Path, cert: &Path, key: &Path) -> Injector {
        Injector::start_bin_env(bin, cert, key, &[])
    }

    /// `start_bin` with these variables set.
    pub fn start_bin_env(bin: &Path, cert: &Path, key: &Path, vars: &[(&str, &str)]) -> Injector {
        let mut child = Command::new(bin)
            .env_clear()
            .envs(vars.iter().copied())
            .args(["--listen", "127.0.0.1:0", "--image", pods::TANDEM_IMAGE])
            .arg("--tls-cert")
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the injector starts");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        let (done, read_all) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
            let _ = done.send(());
        });
        let mut injector = Injector {
            child,
            addr: "0.0.0.0:0".parse().unwrap(),
            log,
            read_all,
        };
        let line = injector.wait_log("listening on ");
        let addr = line
            .split("listening on ")
            .nth(1)
            .unwrap()
            .split(';')
            .next()
            .unwrap();
        injector.addr = addr.parse().unwrap();
        injector
    }

    /// Everything it has logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits (at most 30 s, a hang guard) for a log line containing `text`.
    pub fn wait_log(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(line) = self.log().lines().find(|l| l.contains(text)) {
                return line.to_string();
            }
            assert!(
                Instant::now() < deadline,
                "no log line with {text:?}; log:\n{}",
                self.log()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` to the injector.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid, which it still is (not reaped).
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(rc, 0, "kill");
    }

    /// Waits (at most 30 s) for the injector to exit.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the injector did not exit; log:\n{}",
                self.log()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the injector to exit, and checks it stopped cleanly: status 0,
    /// its last line the one of a finished shutdown, read once its stderr has
    /// been read to the end (the exit can be seen before its last lines are).
    pub fn assert_stopped_cleanly(&mut self) {
        let status = self.wait_exit();
        let read = self.read_all.recv_timeout(Duration::from_secs(30));
        assert!(read.is_ok(), "its stderr never ended; log:\n{}", self.log());
        assert_eq!(status.code(), Some(0), "{}", self.log());
        assert!(
            self.log().ends_with("tandem-injector: stopped\n"),
            "{}",
            self.log()
        );
    }

    /// Its pid, for /proc.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Injector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTPS client trusting the test CA.
#[derive(Clone)]
pub struct Client {
    config: Arc<ClientConfig>,
}

/// One HTTPS connection to the injector.
pub struct Conn {
    /// The TLS stream (public so tests can write partial requests).
    pub tls: StreamOwned<ClientConnection, TcpStream>,
    buf: Vec<u8>,
}

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    /// Its status code.
    pub status: u16,
    /// Its headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Client {
    /// Connects to `addr` as `localhost` and completes the TLS handshake before
    /// any request, as Go's client (the API server's) does.
    pub fn connect(&self, addr: SocketAddr) -> Conn {
        let sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        // As Go's net package, the API server's, does by default.
        sock.set_nodelay(true).unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let conn = ClientConnection::new(self.config.clone(), name).unwrap();
        let mut tls = StreamOwned::new(conn, sock);
        while tls.conn.is_handshaking() {
            tls.conn
                .complete_io(&mut tls.sock)
                .expect("the TLS handshake");
        }
        Conn {
            tls,
            buf: Vec::new(),
        }
    }

    /// POSTs `body` to `path` on a new connection.
    pub fn post(&self, addr: SocketAddr, path: &str, body: &[u8]) -> Response {
        self.connect(addr).send("POST", path, body).unwrap()
    }

    /// Starts a POST of `body` to `path` on a new connection and sends only its
    /// head and first half: a request in flight. The rest is for the caller.
    pub fn post_half<'b>(&self, addr: SocketAddr, path: &str, body: &'b [u8]) -> (Conn, &'b [u8]) {
        let (first, rest) = body.split_at(body.len() / 2);
        let mut conn = self.connect(addr);
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        conn.tls.write_all(head.as_bytes()).unwrap();
        conn.tls.write_all(first).unwrap();
        conn.tls.flush().unwrap();
        (conn, rest)
    }

    /// POSTs a review as the API server does.
    pub fn review(&self, addr: SocketAddr, review: &serde_json::Value) -> Response {
        self.post(addr, "/mutate?timeout=10s", review.to_string().as_bytes())
    }
}

impl Conn {
    /// Sends one request with `Content-Length` and reads the response.
    pub fn send(&mut self, method: &str, path: &str, body: &[u8]) -> std::io::Result<Response> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        );
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        self.tls.write_all(&bytes)?;
        self.tls.flush()?;
        self.read_response()
    }

    /// Reads one response.
    pub fn read_response(&mut self) -> std::io::Result<Response> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut parsed = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(n) = parsed.parse(&self.buf).unwrap() {
                let status = parsed.code.unwrap();
                let headers: Vec<(String, String)> = parsed
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_ascii_lowercase(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                let length: usize = headers
                    .iter()
                    .find(|(n, _)| n == "content-length")
                    .map_or(0, |(_, v)| v.parse().unwrap());
                self.buf.drain(..n);
                while self.buf.len() < length {
                    self.more()?;
                }
                let body = self.buf.drain(..length).collect();
                return Ok(Response {
                    status,
                    headers,
                    body,
                });
            }
            self.more()?;
        }
    }

    fn more(&mut self) -> std::io::Result<()> {
        let mut chunk = [0u8; 16384];
        let n = self.tls.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    /// Whether the server has closed the connection (a read gets EOF or an error).
    pub fn closed_by_server(&mut self) -> bool {
        self.more().is_err()
    }
}

/// The patch in an admission answer applied to `pod` (the Pod as the API
/// server stores it), and the answer's response object.
pub fn answered(pod: &Value, answer: &Value) -> (Value, Value) {
    let response = answer["response"].clone();
    let Some(patch) = response["patch"].as_str() else {
        return (pod.clone(), response);
    };
    assert_eq!(response["patchType"], "JSONPatch");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .unwrap();
    let ops: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
    (pods::apply(pod, &ops), response)
}
