//! Listeners on loopback that record what reaches them, for the tests of where
//! the injector may connect (SPEC §10 "Where lookups may go"): a TCP listener
//! that counts every connection accepted, and a small HTTPS server that records
//! each request's target and `Authorization` header and answers by a route.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::Pki;

/// A TCP listener that records when each connection came, and holds it open
/// (`hold`) or closes it at once.
pub struct Counter {
    /// Where it listens.
    pub addr: SocketAddr,
    /// When each connection was accepted.
    pub accepted: Arc<Mutex<Vec<Instant>>>,
}

impl Counter {
    /// Listens on `ip`:0.
    pub fn start(ip: &str, hold: bool) -> Counter {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(Mutex::new(Vec::new()));
        let record = accepted.clone();
        thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().map_while(Result::ok) {
                record.lock().unwrap().push(Instant::now());
                if hold {
                    held.push(stream);
                }
            }
        });
        Counter { addr, accepted }
    }

    /// Connections accepted so far.
    pub fn count(&self) -> usize {
        self.accepted.lock().unwrap().len()
    }
}

/// One request an [`Https`] server got: its target and `Authorization` header.
#[derive(Debug, Clone)]
pub struct Asked {
    /// Path and query.
    pub target: String,
    /// The `Authorization` header, if sent.
    pub authorization: Option<String>,
}

/// An answer: status, extra headers, body.
pub type Reply = (u16, Vec<(String, String)>, Vec<u8>);

/// An HTTPS server on 127.0.0.1 with a certificate from `pki`, answering each
/// request through `route`.
pub struct Https {
    /// `127.0.0.1:PORT`.
    pub host: String,
    /// Every request, in order.
    pub asked: Arc<Mutex<Vec<Asked>>>,
}

impl Https {
    /// Starts it, its certificate written to `dir`.
    pub fn start(
        pki: &Pki,
        dir: &Path,
        route: impl Fn(&Asked) -> Reply + Send + Sync + 'static,
    ) -> Https {
        let (config, route) = (pki.server_config(dir, "listener"), Arc::new(route));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let record = asked.clone();
        thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (config, record, route) = (config.clone(), record.clone(), route.clone());
                thread::spawn(move || {
                    let _ = serve(config, stream, &record, &*route);
                });
            }
        });
        Https { host, asked }
    }

    /// The requests so far.
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }
}

fn serve(
    config: Arc<ServerConfig>,
    stream: TcpStream,
    record: &Mutex<Vec<Asked>>,
    route: &dyn Fn(&Asked) -> Reply,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let conn = ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut reader = BufReader::new(StreamOwned::new(conn, stream));
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let target = line.split(' ').nth(1).unwrap_or("").to_string();
        let mut authorization = None;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("authorization")
            {
                authorization = Some(value.trim().to_string());
            }
        }
        let asked = Asked {
            target,
            authorization,
        };
        record.lock().unwrap().push(asked.clone());
        let (status, headers, body) = route(&asked);
        let tls = reader.get_mut();
        write!(
            tls,
            "HTTP/1.1 {status} X\r\nContent-Length: {}\r\n",
            body.len()
        )?;
        for (name, value) in headers {
            write!(tls, "{name}: {value}\r\n")?;
        }
        tls.write_all(b"\r\n")?;
        tls.write_all(&body)?;
        tls.flush()?;
    }
}
