//! Sidecar URLs (SPEC §2, §5, §8): `http(s)://` parsed and validated, whether the
//! host is local, the paths tandem adds, and `user:password@` removed for logs.
//! The parser says what it expected; the caller adds the variable or option name.

use std::net::{Ipv4Addr, Ipv6Addr};

// Only the schemes this build accepts: naming https:// in a build without TLS
// would send the user to a value that is refused next.
#[cfg(feature = "rustls")]
pub(crate) const EXPECTED_URL: &str =
    "an http:// or https:// URL with a host and a port from 1 to 65535";
#[cfg(not(feature = "rustls"))]
pub(crate) const EXPECTED_URL: &str = "an http:// URL with a host and a port from 1 to 65535";

/// URL scheme accepted for sidecar endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http://`
    Http,
    /// `https://`
    Https,
}

impl Scheme {
    /// The scheme's name as written in a URL, lowercase.
    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// A validated `http://` or `https://` URL of a sidecar endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// Scheme of the URL.
    pub scheme: Scheme,
    /// Host as written, IPv6 literals keep their brackets (`[::1]`).
    pub host: String,
    /// Explicit port, or 80/443 by scheme.
    pub port: u16,
    /// The URL exactly as given.
    pub raw: String,
}

impl HttpUrl {
    /// Parses and validates a URL: `http://` or `https://`, a host, port 1..=65535.
    ///
    /// SPEC §2: a bad URL is refused before anything is contacted. The host is a
    /// DNS-style name (ASCII letters, digits, `-`, `.`, `_`, `~`), an IPv4 address,
    /// or a bracketed IPv6 literal; an optional `user:password@` is allowed.
    pub fn parse(s: &str) -> Result<HttpUrl, &'static str> {
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(EXPECTED_URL);
        }
        let (scheme, rest) = s.split_once("://").ok_or(EXPECTED_URL)?;
        let scheme = if scheme.eq_ignore_ascii_case("http") {
            Scheme::Http
        } else if scheme.eq_ignore_ascii_case("https") {
            Scheme::Https
        } else {
            return Err(EXPECTED_URL);
        };
        let authority = &rest[..authority_len(rest)];
        // rsplit: a password with a raw '@' must not become part of the host.
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
        let (host, port) = split_host_port(host_port).ok_or(EXPECTED_URL)?;
        let port = match port {
            None => match scheme {
                Scheme::Http => 80,
                Scheme::Https => 443,
            },
            Some(p) => parse_port(p).ok_or(EXPECTED_URL)?,
        };
        Ok(HttpUrl {
            scheme,
            host: host.to_string(),
            port,
            raw: s.to_string(),
        })
    }

    /// True when the host is `localhost`, in `127.0.0.0/8` or `::1` (parsed, not substring-matched).
    ///
    /// SPEC §2, §5: only a local sidecar is stopped, so anything doubtful counts as
    /// remote: `127.1` and octets with leading zeros are not read as loopback.
    pub fn is_local(&self) -> bool {
        let host = self.host.as_str();
        if host.eq_ignore_ascii_case("localhost") || host.eq_ignore_ascii_case("localhost.") {
            return true;
        }
        if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            return inner.parse::<Ipv6Addr>().is_ok_and(|ip| {
                ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            });
        }
        host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// The URL with `path` appended to it (one `/` between them).
    ///
    /// Admin base URLs carry no query string; if one does, `path` simply lands
    /// after it, which keeps this a plain string operation.
    pub fn join(&self, path: &str) -> String {
        let base = self.raw.trim_end_matches('/');
        let path = path.strip_prefix('/').unwrap_or(path);
        format!("{base}/{path}")
    }

    /// [`join`](Self::join), parsed: the same server, so nothing to validate again.
    pub fn joined(&self, path: &str) -> HttpUrl {
        HttpUrl {
            raw: self.join(path),
            ..self.clone()
        }
    }

    /// `scheme://host:port` of this URL with another port (used for 15000 → 15020).
    ///
    /// Userinfo and path are dropped: the other port is another server.
    pub fn with_port(&self, port: u16) -> String {
        format!("{}://{}:{}", self.scheme.as_str(), self.host, port)
    }

    /// [`with_port`](Self::with_port), parsed.
    pub fn on_port(&self, port: u16) -> HttpUrl {
        HttpUrl {
            raw: self.with_port(port),
            port,
            ..self.clone()
        }
    }

    /// The path, without query or fragment: `/shutdown`; empty for none.
    pub fn path(&self) -> &str {
        let rest = self.raw.split_once("://").map_or("", |(_, rest)| rest);
        let rest = &rest[authority_len(rest)..];
        rest.split(['?', '#']).next().unwrap_or("")
    }

    /// The URL without any `user:password@` part, for logs.
    pub fn redacted(&self) -> String {
        redact(&self.raw)
    }
}

/// Length of the authority at the start of `rest`: up to the path, query or fragment.
fn authority_len(rest: &str) -> usize {
    rest.find(['/', '?', '#']).unwrap_or(rest.len())
}

/// Splits `host[:port]` into a validated host and the port text, if any.
pub(crate) fn split_host_port(host_port: &str) -> Option<(&str, Option<&str>)> {
    if host_port.starts_with('[') {
        let close = host_port.find(']')?;
        let (host, after) = host_port.split_at(close + 1);
        host[1..close].parse::<Ipv6Addr>().ok()?;
        return match after {
            "" => Some((host, None)),
            _ => Some((host, Some(after.strip_prefix(':')?))),
        };
    }
    let (host, port) = match host_port.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (host_port, None),
    };
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    host_ok.then_some((host, port))
}

/// Parses a port in 1..=65535 from digits only (no sign, no blanks).
pub(crate) fn parse_port(p: &str) -> Option<u16> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse::<u16>().ok().filter(|port| *port != 0)
}

/// Parses a TCP port, 1 to 65535, digits only (blanks around it ignored).
pub fn parse_port_number(s: &str) -> Result<u16, &'static str> {
    parse_port(s.trim()).ok_or("a port from 1 to 65535")
}

/// `text` without the `user:password@` part of any URL in it, for logs and the
/// termination message (SPEC §8).
///
/// A URL starts at `scheme://`. A text whose first `/`, `?`, `#` or blank comes
/// before any `scheme://` starts with a URL given without its scheme
/// (`user:pw@host:1/x`). A URL's authority ends at its first `/`, `?` or `#`, as
/// [`HttpUrl::parse`] reads it, so what is left names the host tandem contacts:
/// `http://evil.example?@127.0.0.1/` keeps `evil.example`. A URL ends at a blank
/// or a control character, which no URL tandem accepts holds. Only authorities
/// are touched: an `@` in a path or a query, or a URL in a query, stays as it is.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let first_end = text
        .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace() || c.is_control())
        .unwrap_or(text.len());
    if next_url(text).is_none_or(|(_, authority)| authority - 3 > first_end) {
        rest = push_without_userinfo(&mut out, rest);
    }
    while let Some((_, authority)) = next_url(rest) {
        out.push_str(&rest[..authority]);
        rest = push_without_userinfo(&mut out, &rest[authority..]);
    }
    out.push_str(rest);
    out
}

/// Appends the URL that starts with its authority at the start of `rest`, up to
/// its end and without its userinfo; returns the text after it.
fn push_without_userinfo<'a>(out: &mut String, rest: &'a str) -> &'a str {
    let end = rest
        .find(|c: char| c.is_whitespace() || c.is_control())
        .unwrap_or(rest.len());
    let (url, after) = rest.split_at(end);
    let host = url[..authority_len(url)].rfind('@').map_or(0, |at| at + 1);
    out.push_str(&url[host..]);
    after
}

/// Where the first `scheme://` in `text` starts, and where its authority starts.
/// A scheme is a letter, then letters, digits, `+`, `-` or `.` (RFC 3986).
fn next_url(text: &str) -> Option<(usize, usize)> {
    text.match_indices("://").find_map(|(i, _)| {
        let before = &text[..i];
        let run = before
            .bytes()
            .rev()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
            .count();
        let scheme = &before[i - run..];
        let start = i - run + scheme.find(|c: char| c.is_ascii_alphabetic())?;
        Some((start, i + 3))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_url_parse_accepts_valid_urls() {
        let cases: &[(&str, Scheme, &str, u16)] = &[
            ("http://127.0.0.1:15000", Scheme::Http, "127.0.0.1", 15000),
            ("http://127.0.0.1:15000/", Scheme::Http, "127.0.0.1", 15000),
            ("http://localhost", Scheme::Http, "localhost", 80),
            ("https://localhost", Scheme::Https, "localhost", 443),
            (
                "HTTP://Example.COM:8080/x",
                Scheme::Http,
                "Example.COM",
                8080,
            ),
            ("HttpS://example.com", Scheme::Https, "example.com", 443),
            ("http://[::1]:15020", Scheme::Http, "[::1]", 15020),
            ("http://[::1]", Scheme::Http, "[::1]", 80),
            (
                "http://[::ffff:127.0.0.1]:1/",
                Scheme::Http,
                "[::ffff:127.0.0.1]",
                1,
            ),
            (
                "http://user:pw@127.0.0.1:9091/quit",
                Scheme::Http,
                "127.0.0.1",
                9091,
            ),
            ("http://user@host", Scheme::Http, "host", 80),
            ("http://us@er:p@ss@host:81", Scheme::Http, "host", 81),
            ("http://host:65535", Scheme::Http, "host", 65535),
            ("http://host:080", Scheme::Http, "host", 80),
            ("http://host/a@b?c=d@e", Scheme::Http, "host", 80),
            ("http://host?q=1", Scheme::Http, "host", 80),
            ("http://host#frag", Scheme::Http, "host", 80),
            (
                "http://my_host-1.svc.cluster.local.:9000",
                Scheme::Http,
                "my_host-1.svc.cluster.local.",
                9000,
            ),
        ];
        for (input, scheme, host, port) in cases {
            let url = HttpUrl::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(url.scheme, *scheme, "input {input:?}");
            assert_eq!(url.host, *host, "input {input:?}");
            assert_eq!(url.port, *port, "input {input:?}");
            assert_eq!(url.raw, *input, "input {input:?}");
        }
    }

    #[test]
    fn http_url_parse_rejects_bad_urls() {
        let cases = [
            "",
            "127.0.0.1:15000",
            "localhost",
            "ftp://host",
            "unix:///tmp/sock",
            "http:/host",
            "http:host",
            "http://",
            "http:///path",
            "http://:80",
            "http://user@",
            "http://user@:80",
            "http://host:",
            "http://host:/",
            "http://host:0",
            "http://host:00000",
            "http://host:65536",
            "http://host:99999999999999999999",
            "http://host:-1",
            "http://host:+80",
            "http://host:8o",
            "http://host:80:81",
            "http://ho st",
            " http://host",
            "http://host ",
            "http://host/pa th",
            "http://host/\n",
            "http://host\t",
            "http://ho\u{7f}st",
            "http://h\u{e9}st",
            "http://ho!st",
            "http://::1",
            "http://[::1",
            "http://[::1]x",
            "http://[::1]:",
            "http://[::1]:0",
            "http://[not-ipv6]",
            "http://[127.0.0.1]",
            "http://[]",
            "httpx://host",
            "xhttp://host",
        ];
        for input in cases {
            assert_eq!(HttpUrl::parse(input), Err(EXPECTED_URL), "input {input:?}");
        }
    }

    fn url(s: &str) -> HttpUrl {
        HttpUrl::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn is_local_parses_the_host() {
        let cases: &[(&str, bool)] = &[
            ("http://localhost:15000", true),
            ("http://LocalHost:15000", true),
            ("http://localhost.:15000", true),
            ("http://127.0.0.1:15000", true),
            ("http://127.255.255.254", true),
            ("http://127.1.2.3", true),
            ("http://user:pw@127.0.0.1", true),
            ("http://[::1]:15020", true),
            ("http://[0:0:0:0:0:0:0:1]", true),
            ("http://[::ffff:127.0.0.1]", true),
            ("http://[::ffff:127.9.9.9]", true),
            ("http://127.0.0.1.example.com", false),
            ("http://localhost.example.com", false),
            ("http://localhost..", false),
            ("http://mylocalhost", false),
            ("http://127.1", false),
            ("http://127.0.0.01", false),
            ("http://128.0.0.1", false),
            ("http://10.0.0.1", false),
            ("http://0.0.0.0", false),
            ("http://[::]", false),
            ("http://[::2]", false),
            ("http://[::ffff:10.0.0.1]", false),
            ("http://[::127.0.0.1]", false),
            ("http://example.com/127.0.0.1", false),
            ("http://example.com/?h=localhost", false),
            ("http://localhost@example.com", false),
        ];
        for (input, local) in cases {
            assert_eq!(url(input).is_local(), *local, "input {input:?}");
        }
    }

    #[test]
    fn join_puts_one_slash_between() {
        let cases = [
            (
                "http://127.0.0.1:15000",
                "/ready",
                "http://127.0.0.1:15000/ready",
            ),
            (
                "http://127.0.0.1:15000/",
                "/ready",
                "http://127.0.0.1:15000/ready",
            ),
            (
                "http://127.0.0.1:15000//",
                "/ready",
                "http://127.0.0.1:15000/ready",
            ),
            (
                "http://127.0.0.1:15020",
                "quitquitquit",
                "http://127.0.0.1:15020/quitquitquit",
            ),
            (
                "http://h/admin/",
                "/server_info",
                "http://h/admin/server_info",
            ),
            ("http://u:p@h:1", "/ready", "http://u:p@h:1/ready"),
            ("http://h/?a=1", "/ready", "http://h/?a=1/ready"),
        ];
        for (base, path, want) in cases {
            assert_eq!(url(base).join(path), want, "base {base:?} path {path:?}");
        }
    }

    #[test]
    fn parsed_joins_and_ports_match_the_strings_and_keep_the_server() {
        let base = url("http://u:p@[::1]:15000/x");
        let joined = base.joined("/quitquitquit");
        assert_eq!(joined, url(&base.join("/quitquitquit")));
        let moved = base.on_port(15020).joined("/quitquitquit");
        assert_eq!(moved, url("http://[::1]:15020/quitquitquit"));
    }

    #[test]
    fn the_path_leaves_out_the_authority_query_and_fragment() {
        for (input, want) in [
            ("http://127.0.0.1:4191/shutdown", "/shutdown"),
            ("http://u:p@h:8200/agent/v1/quit?x=1", "/agent/v1/quit"),
            ("http://h:1/a#b", "/a"),
            ("http://h:1", ""),
            ("http://h:1?q", ""),
        ] {
            assert_eq!(url(input).path(), want, "{input}");
        }
    }

    #[test]
    fn with_port_keeps_scheme_and_host_only() {
        let cases = [
            ("http://127.0.0.1:15000", 15020, "http://127.0.0.1:15020"),
            ("http://[::1]:15000/x", 15020, "http://[::1]:15020"),
            ("HTTPS://u:p@Host/a?b", 8443, "https://Host:8443"),
            ("http://localhost", 1, "http://localhost:1"),
        ];
        for (input, port, want) in cases {
            assert_eq!(url(input).with_port(port), want, "input {input:?}");
        }
    }

    #[test]
    fn redact_removes_userinfo_only() {
        let cases = [
            ("http://user:pw@host:1/p", "http://host:1/p"),
            ("http://user@host", "http://host"),
            ("https://u:p@ss@host/x", "https://host/x"),
            ("http://@host", "http://host"),
            ("http://host/a@b", "http://host/a@b"),
            ("http://host?x=u:p@y", "http://host?x=u:p@y"),
            ("http://host#u:p@y", "http://host#u:p@y"),
            ("http://u:p@host/a@b?c@d", "http://host/a@b?c@d"),
            ("user:pw@host/p", "host/p"),
            ("host/p?next=http://u:p@x", "host/p?next=http://u:p@x"),
            ("http://host", "http://host"),
            ("", ""),
            ("@", ""),
            ("://", "://"),
            ("://u@h", "://u@h"),
            ("h\u{e9}:p\u{e9}@h\u{f6}st/\u{1f600}", "h\u{f6}st/\u{1f600}"),
            ("http://\u{e9}@\u{e9}", "http://\u{e9}"),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "input {input:?}");
        }
        assert_eq!(
            url("http://u:secret@127.0.0.1:9/q").redacted(),
            "http://127.0.0.1:9/q"
        );
    }

    #[test]
    fn redact_removes_the_userinfo_of_every_url_in_a_text() {
        let cases = [
            (
                "GET http://u:p@127.0.0.1:1/x then https://a@h/y",
                "GET http://127.0.0.1:1/x then https://h/y",
            ),
            ("no url, a@b", "no url, a@b"),
            ("http://h/p@q", "http://h/p@q"),
            ("tail ://", "tail ://"),
            (
                "a\nb http://u:secret@127.0.0.1:1/x",
                "a\nb http://127.0.0.1:1/x",
            ),
            ("(url=http://u:p@h:1)", "(url=http://h:1)"),
            ("x: \"HTTPS://u@h\", y", "x: \"HTTPS://h\", y"),
            ("1://u@h 9x+y://u@h", "1://u@h 9x+y://h"),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "input {input:?}");
        }
    }

    // The authority ends at `?` as the parser reads it, so the host
    // left is the one tandem contacts, never the one after the `@` in the query.
    #[test]
    fn redact_never_names_a_host_from_a_query() {
        let evil = "http://evil.example?@127.0.0.1:15000/x";
        assert_eq!(url(evil).host, "evil.example");
        assert_eq!(redact(evil), evil);
        assert_eq!(url(evil).redacted(), evil);
        let line = format!("quit POST {evil} failed: connection refused");
        assert_eq!(redact(&line), line);
        assert_eq!(
            redact("see http://evil.example#@127.0.0.1 and http://u@h?@x"),
            "see http://evil.example#@127.0.0.1 and http://h?@x"
        );
    }
}
