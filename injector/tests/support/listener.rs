//! Listeners on loopback that record what reaches them, for the tests of where
//! the injector may connect (SPEC §10 "Where lookups may go"): a TCP listener
//! that counts every connection accepted, one that holds each connection until
//! the test releases it, and a small HTTPS server that records each request's
//! target and `Authorization` header and answers by a route.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::Pki;

/// A TCP listener that counts every connection accepted, and closes it.
pub struct Counter {
    /// Where it listens.
    pub addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
}

impl Counter {
    /// Listens on `ip`:0.
    pub fn start(ip: &str) -> Counter {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let record = accepted.clone();
        thread::spawn(move || {
            for _stream in listener.incoming().map_while(Result::ok) {
                record.fetch_add(1, Ordering::SeqCst);
            }
        });
        Counter { addr, accepted }
    }

    /// Connections accepted so far.
    pub fn count(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// What a [`Holder`] did, in the one order it did it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// Connection N (counted from 0) was accepted.
    Accepted(usize),
    /// Connection N was released: closed by the test.
    Released(usize),
}

/// A TCP listener that holds every connection open, never answering, until
/// the test releases it: the test, not the clock, decides when a client's
/// connection ends. Accepts and releases go into one list under one lock: an
/// accept is recorded after the client connected, a release before the
/// socket closes, so connections the list shows open together were open
/// together on the client's side too.
pub struct Holder {
    /// Where it listens.
    pub addr: SocketAddr,
    state: Arc<(Mutex<HolderState>, Condvar)>,
}

#[derive(Default)]
struct HolderState {
    events: Vec<Held>,
    open: BTreeMap<usize, TcpStream>,
    accepted: usize,
}

impl Holder {
    /// Listens on `ip`:0.
    pub fn start(ip: &str) -> Holder {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new((Mutex::new(HolderState::default()), Condvar::new()));
        let record = state.clone();
        thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let (lock, changed) = &*record;
                let mut state = lock.lock().unwrap();
                let n = state.accepted;
                state.accepted += 1;
                state.events.push(Held::Accepted(n));
                state.open.insert(n, stream);
                changed.notify_all();
            }
        });
        Holder { addr, state }
    }

    /// Until `n` connections were accepted in all; a panic naming what it saw
    /// after `bound`, which only a hang reaches.
    pub fn wait_accepted(&self, n: usize, bound: Duration) {
        let (lock, changed) = &*self.state;
        let end = Instant::now() + bound;
        let mut state = lock.lock().unwrap();
        while state.accepted < n {
            let left = end.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "{} connections accepted, not {n}, after {bound:?}: {:?}",
                state.accepted,
                state.events
            );
            state = changed.wait_timeout(state, left).unwrap().0;
        }
    }

    /// Closes the connection open the longest; its number.
    pub fn release_oldest(&self) -> usize {
        let mut state = self.state.0.lock().unwrap();
        let (n, stream) = state.open.pop_first().expect("no connection open");
        state.events.push(Held::Released(n));
        drop(stream);
        n
    }

    /// Closes every connection open.
    pub fn release_all(&self) {
        while !self.state.0.lock().unwrap().open.is_empty() {
            self.release_oldest();
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.state.0.lock().unwrap().accepted
    }

    /// Everything it did so far, in order.
    pub fn events(&self) -> Vec<Held> {
        self.state.0.lock().unwrap().events.clone()
    }
}

/// The most connections open at once in `events`.
pub fn most_open(events: &[Held]) -> usize {
    let mut open = 0usize;
    let mut most = 0;
    for event in events {
        match event {
            Held::Accepted(_) => open += 1,
            Held::Released(_) => open -= 1,
        }
        most = most.max(open);
    }
    most
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
