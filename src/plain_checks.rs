//! The readiness checks that are not HTTP (SPEC §3): a TCP port that accepts a
//! connection, a unix socket that accepts one, a file that exists. Each is parsed
//! from its `--ready` value and probed once a poll, with nothing sent.

use std::io::ErrorKind;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// A non-HTTP readiness check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlainCheck {
    /// `tcp://HOST:PORT`: a TCP connection is accepted.
    Tcp {
        /// The host as written, without IPv6 brackets.
        host: String,
        /// 1 to 65535.
        port: u16,
    },
    /// `unix:///PATH`: a connection to the socket is accepted.
    Unix(PathBuf),
    /// `file:///PATH`: the file exists.
    File(PathBuf),
}

const EXPECTED_TCP: &str = "tcp://HOST:PORT with a port from 1 to 65535";
const EXPECTED_PATH: &str = "an absolute path after the scheme's three slashes";

impl PlainCheck {
    /// Parses a `tcp://`, `unix://` or `file://` value; `Ok(None)` for any other
    /// scheme (the caller tries HTTP). The error says what was expected.
    pub fn parse(value: &str) -> Result<Option<PlainCheck>, String> {
        if let Some(rest) = value.strip_prefix("tcp://") {
            let (host, port) = split_host_port(rest.strip_suffix('/').unwrap_or(rest))
                .ok_or_else(|| format!("expected {EXPECTED_TCP}"))?;
            Ok(Some(PlainCheck::Tcp { host, port }))
        } else if let Some(rest) = value.strip_prefix("unix://") {
            Ok(Some(PlainCheck::Unix(absolute(rest)?)))
        } else if let Some(rest) = value.strip_prefix("file://") {
            Ok(Some(PlainCheck::File(absolute(rest)?)))
        } else {
            Ok(None)
        }
    }

    /// The check as the log names it.
    pub fn describe(&self) -> String {
        match self {
            PlainCheck::Tcp { host, port } if host.contains(':') => {
                format!("tcp://[{host}]:{port}")
            }
            PlainCheck::Tcp { host, port } => format!("tcp://{host}:{port}"),
            PlainCheck::Unix(path) => format!("unix://{}", path.display()),
            PlainCheck::File(path) => format!("file://{}", path.display()),
        }
    }

    /// One probe: `Ok` with the answer when ready, `Err` with what was seen
    /// (`refused`, `missing`, `timed out`…) when not yet. A TCP or unix connection
    /// is closed at once; a file costs one `stat`.
    pub fn probe(&self, timeout: Duration) -> Result<&'static str, String> {
        match self {
            PlainCheck::Tcp { host, port } => connect_tcp(host, *port, timeout),
            PlainCheck::Unix(path) => match UnixStream::connect(path) {
                Ok(_) => Ok("accepted"),
                Err(e) => Err(short(&e)),
            },
            PlainCheck::File(path) => match std::fs::metadata(path) {
                Ok(_) => Ok("present"),
                Err(e) => Err(short(&e)),
            },
        }
    }
}

/// `HOST:PORT` or `[V6]:PORT`, port 1 to 65535, nothing else.
fn split_host_port(s: &str) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (v6, port) = rest.split_once("]:")?;
        v6.parse::<Ipv6Addr>().ok()?;
        (v6, port)
    } else {
        let (host, port) = s.rsplit_once(':')?;
        if host.contains(':') {
            return None;
        }
        (host, port)
    };
    let bad_host = host.is_empty() || host.contains(['/', '@', '?', '#', ' ']);
    let digits = !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    let port: u16 = port.parse().ok().filter(|&p| digits && p != 0)?;
    (!bad_host).then(|| (host.to_string(), port))
}

fn absolute(rest: &str) -> Result<PathBuf, String> {
    if rest.starts_with('/') && rest.len() > 1 {
        Ok(PathBuf::from(rest))
    } else {
        Err(format!("expected {EXPECTED_PATH}"))
    }
}

/// Tries each address of `host` in turn within `timeout` each, IP literals and
/// `localhost` without any lookup (an empty root has no /etc/hosts).
fn connect_tcp(host: &str, port: u16, timeout: Duration) -> Result<&'static str, String> {
    let addrs: Vec<SocketAddr> = if let Ok(ip) = host.parse::<IpAddr>() {
        vec![SocketAddr::new(ip, port)]
    } else if host.eq_ignore_ascii_case("localhost") {
        vec![
            SocketAddr::from(([127, 0, 0, 1], port)),
            SocketAddr::from((Ipv6Addr::LOCALHOST, port)),
        ]
    } else {
        match (host, port).to_socket_addrs() {
            Ok(found) => found.collect(),
            Err(e) => return Err(format!("cannot resolve {host}: {e}")),
        }
    };
    let mut last = String::from("no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(_) => return Ok("accepted"),
            Err(e) => last = short(&e),
        }
    }
    Err(last)
}

/// The few words a progress line shows for an error.
fn short(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::ConnectionRefused => "refused".into(),
        ErrorKind::NotFound => "missing".into(),
        ErrorKind::TimedOut | ErrorKind::WouldBlock => "timed out".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_kinds_parse() {
        let tcp = |h: &str, p| {
            Some(PlainCheck::Tcp {
                host: h.into(),
                port: p,
            })
        };
        assert_eq!(PlainCheck::parse("tcp://db:5432"), Ok(tcp("db", 5432)));
        assert_eq!(
            PlainCheck::parse("tcp://127.0.0.1:1/"),
            Ok(tcp("127.0.0.1", 1))
        );
        assert_eq!(
            PlainCheck::parse("tcp://[::1]:65535"),
            Ok(tcp("::1", 65535))
        );
        assert_eq!(
            PlainCheck::parse("unix:///run/dapr.sock"),
            Ok(Some(PlainCheck::Unix("/run/dapr.sock".into())))
        );
        assert_eq!(
            PlainCheck::parse("file:///vault/secrets/db"),
            Ok(Some(PlainCheck::File("/vault/secrets/db".into())))
        );
        assert_eq!(PlainCheck::parse("http://x:1/"), Ok(None));
    }

    #[test]
    fn bad_values_say_what_was_expected() {
        for bad in [
            "tcp://db",
            "tcp://db:",
            "tcp://db:0",
            "tcp://db:65536",
            "tcp://:5432",
            "tcp://db:54x",
            "tcp://::1:5432",
            "tcp://[db]:1",
            "tcp://u@db:1",
            "tcp://db:5432/x",
            "tcp://db:+5",
        ] {
            let err = PlainCheck::parse(bad).unwrap_err();
            assert!(err.contains("tcp://HOST:PORT"), "{bad}: {err}");
        }
        for bad in [
            "unix://",
            "unix://run/x.sock",
            "file://",
            "file:///",
            "file://vault/x",
        ] {
            let err = PlainCheck::parse(bad).unwrap_err();
            assert!(err.contains("absolute path"), "{bad}: {err}");
        }
    }

    #[test]
    fn names_round_trip_through_describe() {
        for value in [
            "tcp://db:5432",
            "tcp://[::1]:80",
            "unix:///a/b",
            "file:///c",
        ] {
            let check = PlainCheck::parse(value).unwrap().unwrap();
            assert_eq!(check.describe(), value);
        }
    }
}
