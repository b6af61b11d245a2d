//! A readiness check as `--ready` and its variables write it (SPEC §3): the scheme
//! picks the kind (`http://` is `url`'s), `tcp://HOST:PORT`, `unix:///PATH` and
//! `file:///PATH` are parsed here, with docker-compose-wait's bare `HOST:PORT` and
//! paths, and each check's name as the log writes it. The parsers say what they
//! expected; the caller adds the variable or option name.

use std::path::PathBuf;

use crate::settings::Check;
use crate::value::url::{parse_port, split_host_port};

/// What a `--ready` value looks like, when its scheme is none of the kinds.
#[cfg(feature = "rustls")]
pub(super) const EXPECTED_CHECK: &str =
    "an http:// or https:// URL, tcp://HOST:PORT, unix:///PATH or file:///PATH";
#[cfg(not(feature = "rustls"))]
pub(super) const EXPECTED_CHECK: &str =
    "an http:// URL, tcp://HOST:PORT, unix:///PATH or file:///PATH";
/// What a `tcp://` check looks like.
pub(super) const EXPECTED_TCP: &str = "tcp://HOST:PORT with a port from 1 to 65535";
/// What a `unix://` check looks like: the path must fit a socket address.
pub(super) const EXPECTED_UNIX: &str = "unix:///PATH with an absolute path of at most 107 bytes";
/// What a `file://` check looks like.
pub(super) const EXPECTED_FILE: &str = "file:///PATH with an absolute path";
/// What an item of docker-compose-wait's `WAIT_HOSTS` looks like.
pub(super) const EXPECTED_HOST_PORT: &str = "HOST:PORT items with a port from 1 to 65535";

/// Longest socket path: `sun_path` holds 108 bytes with the final NUL (Linux).
const UNIX_PATH_MAX: usize = 107;

/// The kinds that are not HTTP, by their scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scheme {
    Tcp,
    Unix,
    File,
}

impl Scheme {
    fn prefix(self) -> &'static str {
        match self {
            Scheme::Tcp => "tcp://",
            Scheme::Unix => "unix://",
            Scheme::File => "file://",
        }
    }

    /// The kind `value` names by its scheme (any case), and the rest after `://`.
    pub(super) fn of(value: &str) -> Option<(Scheme, &str)> {
        [Scheme::Tcp, Scheme::Unix, Scheme::File]
            .into_iter()
            .find_map(|scheme| {
                let prefix = scheme.prefix();
                let head = value.get(..prefix.len())?;
                head.eq_ignore_ascii_case(prefix)
                    .then(|| (scheme, &value[prefix.len()..]))
            })
    }

    fn expected(self) -> &'static str {
        match self {
            Scheme::Tcp => EXPECTED_TCP,
            Scheme::Unix => EXPECTED_UNIX,
            Scheme::File => EXPECTED_FILE,
        }
    }
}

/// Parses a `tcp://`, `unix://` or `file://` check; `None` for any other scheme
/// (the caller tries HTTP, or says what a check looks like).
pub(super) fn parse(value: &str) -> Option<Result<Check, &'static str>> {
    let (scheme, rest) = Scheme::of(value)?;
    let check = match scheme {
        // One trailing slash is what a URL-minded user adds; it names nothing.
        Scheme::Tcp => host_port(rest.strip_suffix('/').unwrap_or(rest)),
        Scheme::Unix => absolute(rest)
            .filter(|path| path.as_os_str().len() <= UNIX_PATH_MAX)
            .map(Check::Unix),
        Scheme::File => absolute(rest).map(Check::File),
    };
    Some(check.ok_or(scheme.expected()))
}

/// An item of docker-compose-wait's `WAIT_HOSTS`: `HOST:PORT`, a TCP check.
pub(super) fn parse_host_port(item: &str) -> Result<Check, &'static str> {
    host_port(item).ok_or(EXPECTED_HOST_PORT)
}

/// An item of docker-compose-wait's `WAIT_PATHS`: a file or directory that must
/// exist, relative to the working directory unless absolute, as it reads them.
pub(super) fn parse_path(item: &str) -> Check {
    Check::File(PathBuf::from(item))
}

/// `HOST:PORT` or `[V6]:PORT` with a host as `url` accepts one, and nothing else.
fn host_port(s: &str) -> Option<Check> {
    if s.contains(['/', '?', '#', '@']) || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (host, port) = split_host_port(s)?;
    Some(Check::Tcp {
        host: host.to_string(),
        port: parse_port(port?)?,
    })
}

/// The path after `scheme://`: absolute (the third slash), nothing else.
fn absolute(rest: &str) -> Option<PathBuf> {
    rest.starts_with('/').then(|| PathBuf::from(rest))
}

/// The fix for a `--ready` value that missed its scheme or one slash, when one is
/// obvious: `db:5432` is a port (`tcp://`), `/run/x.sock` a socket, any other
/// absolute path a file, `file://x/y` a path that lost its third slash. `None`
/// otherwise (a `HOST:PORT/PATH` is left to `url`'s `http://` fix).
pub(super) fn likely_fix(value: &str, expected: &str) -> Option<String> {
    let candidate = match (expected, Scheme::of(value)) {
        (EXPECTED_CHECK, None) if !value.contains("://") => {
            if value.starts_with('/') {
                let kind = if value.ends_with(".sock") {
                    "unix"
                } else {
                    "file"
                };
                format!("{kind}://{value}")
            } else if host_port(value).is_some() {
                format!("tcp://{value}")
            } else {
                return None;
            }
        }
        (EXPECTED_UNIX | EXPECTED_FILE, Some((scheme, rest)))
            if !rest.is_empty() && !rest.starts_with('/') =>
        {
            format!("{}/{rest}", scheme.prefix())
        }
        _ => return None,
    };
    matches!(parse(&candidate), Some(Ok(_))).then_some(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> Check {
        Check::Tcp {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn the_three_kinds_parse() {
        let cases = [
            ("tcp://db:5432", tcp("db", 5432)),
            ("TCP://127.0.0.1:1/", tcp("127.0.0.1", 1)),
            ("tcp://[::1]:65535", tcp("[::1]", 65535)),
            (
                "tcp://postgres.svc.cluster.local.:5432",
                tcp("postgres.svc.cluster.local.", 5432),
            ),
            (
                "unix:///run/dapr.sock",
                Check::Unix("/run/dapr.sock".into()),
            ),
            (
                "file:///vault/secrets/db",
                Check::File("/vault/secrets/db".into()),
            ),
            ("File:///", Check::File("/".into())),
            ("file:///data/dir/", Check::File("/data/dir/".into())),
        ];
        for (value, want) in cases {
            assert_eq!(parse(value), Some(Ok(want)), "{value}");
        }
        for other in ["http://x:1/", "ftp://x", "db:5432", "/x", "tcp:/x:1", ""] {
            assert_eq!(parse(other), None, "{other}");
        }
    }

    #[test]
    fn bad_values_say_what_was_expected() {
        for bad in [
            "tcp://",
            "tcp://db",
            "tcp://db:",
            "tcp://db:0",
            "tcp://db:00",
            "tcp://db:65536",
            "tcp://:5432",
            "tcp://db:54x",
            "tcp://db:+5",
            "tcp://db:-1",
            "tcp://::1:5432",
            "tcp://[db]:1",
            "tcp://[::1]",
            "tcp://u@db:1",
            "tcp://u:p@db:1",
            "tcp://db:5432/x",
            "tcp://db:5432//",
            "tcp://db:5432?x",
            "tcp://d b:1",
            "tcp://db:1 ",
            "tcp://db:1:2",
        ] {
            assert_eq!(parse(bad), Some(Err(EXPECTED_TCP)), "{bad}");
        }
        let long = format!("unix:///{}", "s".repeat(UNIX_PATH_MAX));
        for bad in ["unix://", "unix://run/x.sock", long.as_str()] {
            assert_eq!(parse(bad), Some(Err(EXPECTED_UNIX)), "{bad}");
        }
        let longest = format!("unix:///{}", "s".repeat(UNIX_PATH_MAX - 1));
        assert!(matches!(parse(&longest), Some(Ok(Check::Unix(_)))));
        for bad in ["file://", "file://vault/x", "file://./x"] {
            assert_eq!(parse(bad), Some(Err(EXPECTED_FILE)), "{bad}");
        }
    }

    #[test]
    fn docker_compose_wait_items_parse() {
        assert_eq!(parse_host_port("postgres:5432"), Ok(tcp("postgres", 5432)));
        assert_eq!(parse_host_port("[::1]:80"), Ok(tcp("[::1]", 80)));
        for bad in [
            "postgres",
            "postgres:0",
            "tcp://postgres:5432",
            ":1",
            "a:1/x",
        ] {
            assert_eq!(parse_host_port(bad), Err(EXPECTED_HOST_PORT), "{bad}");
        }
        assert_eq!(parse_path("data/ready"), Check::File("data/ready".into()));
        assert_eq!(parse_path("data/ready").name(), "file:data/ready");
    }

    #[test]
    fn names_round_trip_through_parse() {
        for value in [
            "tcp://db:5432",
            "tcp://[::1]:80",
            "unix:///a/b.sock",
            "file:///c",
        ] {
            let check = parse(value).and_then(Result::ok).expect(value);
            assert_eq!(check.name(), value);
        }
    }

    #[test]
    fn likely_fix_only_where_it_is_obvious_and_valid() {
        let cases = [
            ("postgres:5432", EXPECTED_CHECK, Some("tcp://postgres:5432")),
            ("[::1]:5432", EXPECTED_CHECK, Some("tcp://[::1]:5432")),
            (
                "/vault/secrets/db",
                EXPECTED_CHECK,
                Some("file:///vault/secrets/db"),
            ),
            (
                "/run/dapr.sock",
                EXPECTED_CHECK,
                Some("unix:///run/dapr.sock"),
            ),
            ("file://vault/x", EXPECTED_FILE, Some("file:///vault/x")),
            (
                "unix://run/x.sock",
                EXPECTED_UNIX,
                Some("unix:///run/x.sock"),
            ),
            ("localhost:4191/ready", EXPECTED_CHECK, None),
            ("postgres", EXPECTED_CHECK, None),
            ("postgres:0", EXPECTED_CHECK, None),
            ("ftp://x", EXPECTED_CHECK, None),
            ("tcp://db", EXPECTED_TCP, None),
            ("unix://", EXPECTED_UNIX, None),
            ("file://", EXPECTED_FILE, None),
            ("postgres:5432", EXPECTED_TCP, None),
        ];
        for (value, expected, want) in cases {
            assert_eq!(likely_fix(value, expected).as_deref(), want, "{value}");
        }
    }
}
