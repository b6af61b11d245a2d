//! Parsers for configuration values: Go-style durations, lenient booleans,
//! `http(s)://` URLs (with locality and redaction) and comma-separated lists.
//! Each parser says what it expected; the caller adds the variable or option name.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

const EXPECTED_DURATION: &str = "a duration like 300ms, 1.5s or 2m30s";
// Only the schemes this build accepts: naming https:// in a build without TLS
// would send the user to a value that is refused next.
#[cfg(feature = "rustls")]
const EXPECTED_URL: &str = "an http:// or https:// URL with a host and a port from 1 to 65535";
#[cfg(not(feature = "rustls"))]
const EXPECTED_URL: &str = "an http:// URL with a host and a port from 1 to 65535";

/// The value the user most likely meant, when a rejected `value` is one obvious
/// step from a valid one: a bare number given as a duration (`30` for `30s`, as
/// scuttle's users write seconds), or a URL without its scheme
/// (`127.0.0.1:15000`). `expected` is what the parser answered.
pub fn likely_fix(value: &str, expected: &str) -> Option<String> {
    let candidate = if expected == EXPECTED_DURATION {
        let number = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        number.then(|| format!("{value}s"))?
    } else if expected == EXPECTED_URL && !value.contains("://") {
        format!("http://{value}")
    } else {
        return None;
    };
    let valid = if expected == EXPECTED_DURATION {
        parse_duration(&candidate).is_ok()
    } else {
        HttpUrl::parse(&candidate).is_ok()
    };
    valid.then_some(candidate)
}

/// Go's `time.Duration` is an `i64` of nanoseconds; values it cannot hold are
/// rejected here too, so a setting means the same thing under scuttle and tandem.
const MAX_NANOS: u64 = i64::MAX as u64;

/// Beyond this many fraction digits, more precision than a nanosecond of an hour
/// is meaningless, and stopping keeps the scale from overflowing.
const MAX_FRACTION_SCALE: u64 = 10_u64.pow(18);

/// Parses a Go `time.ParseDuration` string (`300ms`, `1.5s`, `2m30s`, `10µs`, bare `0`).
///
/// SPEC §2: negative durations are errors. Any leading `-` is refused, even in
/// `-0`, so that the rule needs no exception. Surrounding blanks are refused, as
/// Go refuses them. A fraction finer than a nanosecond is truncated, as in Go.
pub fn parse_duration(s: &str) -> Result<Duration, &'static str> {
    let body = s.strip_prefix('+').unwrap_or(s);
    if body == "0" {
        return Ok(Duration::ZERO);
    }
    if body.is_empty() {
        return Err(EXPECTED_DURATION);
    }
    let mut total: u64 = 0;
    let mut rest = body;
    while !rest.is_empty() {
        let (nanos, after) = parse_duration_term(rest).ok_or(EXPECTED_DURATION)?;
        total = total
            .checked_add(nanos)
            .filter(|t| *t <= MAX_NANOS)
            .ok_or(EXPECTED_DURATION)?;
        rest = after;
    }
    Ok(Duration::from_nanos(total))
}

/// Parses one `<number>[.<fraction>]<unit>` term; returns its nanoseconds and the rest.
fn parse_duration_term(s: &str) -> Option<(u64, &str)> {
    let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
    let (int_digits, rest) = s.split_at(int_len);
    let (frac_digits, rest) = match rest.strip_prefix('.') {
        Some(after_dot) => {
            let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            after_dot.split_at(frac_len)
        }
        None => ("", rest),
    };
    // Go accepts `.5s` and `1.s` but not a lone `.s`.
    if int_digits.is_empty() && frac_digits.is_empty() {
        return None;
    }
    let unit_len = rest
        .char_indices()
        .find(|(_, c)| *c == '.' || c.is_ascii_digit())
        .map_or(rest.len(), |(i, _)| i);
    let (unit, rest) = rest.split_at(unit_len);
    let unit_nanos = duration_unit_nanos(unit)?;

    let mut whole: u64 = 0;
    for d in int_digits.bytes() {
        whole = whole.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    let mut frac: u64 = 0;
    let mut scale: u64 = 1;
    for d in frac_digits.bytes() {
        if scale >= MAX_FRACTION_SCALE {
            break;
        }
        frac = frac * 10 + u64::from(d - b'0');
        scale *= 10;
    }
    let whole_nanos = whole.checked_mul(unit_nanos)?;
    // u128 because frac * unit can exceed u64 before the division brings it back.
    let frac_nanos =
        u64::try_from(u128::from(frac) * u128::from(unit_nanos) / u128::from(scale)).ok()?;
    let nanos = whole_nanos.checked_add(frac_nanos)?;
    (nanos <= MAX_NANOS).then_some((nanos, rest))
}

/// Nanoseconds in one Go duration unit; both micro signs are accepted, as in Go.
fn duration_unit_nanos(unit: &str) -> Option<u64> {
    match unit {
        "ns" => Some(1),
        "us" | "\u{b5}s" | "\u{3bc}s" => Some(1_000),
        "ms" => Some(1_000_000),
        "s" => Some(1_000_000_000),
        "m" => Some(60 * 1_000_000_000),
        "h" => Some(3_600 * 1_000_000_000),
        _ => None,
    }
}

/// A duration for the log: `850ms`, `1.2s`, `2m5.0s` (whole tenths, rounded down).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    let tenths = ms % 1000 / 100;
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{}.{tenths}s", ms / 1000)
    } else {
        format!("{}m{}.{tenths}s", ms / 60_000, ms % 60_000 / 1000)
    }
}

/// Parses `true`/`false`, `1`/`0`, `yes`/`no` in any case.
///
/// Surrounding blanks are ignored: YAML manifests make them easy to add by accident.
pub fn parse_bool(s: &str) -> Result<bool, &'static str> {
    let s = s.trim();
    let is = |word: &str| s.eq_ignore_ascii_case(word);
    if is("true") || is("1") || is("yes") {
        Ok(true)
    } else if is("false") || is("0") || is("no") {
        Ok(false)
    } else {
        Err("true or false (or 1/0, yes/no)")
    }
}

/// Parses a TCP port, 1 to 65535, digits only (blanks around it ignored).
pub fn parse_port_number(s: &str) -> Result<u16, &'static str> {
    parse_port(s.trim()).ok_or("a port from 1 to 65535")
}

/// Parses whole seconds, 0 or more, as scuttle's integer sleeps take them.
pub fn parse_seconds(s: &str) -> Result<u64, &'static str> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err("whole seconds, 0 or more");
    }
    s.parse().map_err(|_| "whole seconds, 0 or more")
}

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

    /// `scheme://host:port` of this URL with another port (used for 15000 → 15020).
    ///
    /// Userinfo and path are dropped: the other port is another server.
    pub fn with_port(&self, port: u16) -> String {
        format!("{}://{}:{}", self.scheme.as_str(), self.host, port)
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
fn split_host_port(host_port: &str) -> Option<(&str, Option<&str>)> {
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
fn parse_port(p: &str) -> Option<u16> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse::<u16>().ok().filter(|port| *port != 0)
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

/// Splits a comma-separated list, trimming blanks and dropping empty items.
pub fn split_list(s: &str) -> Vec<&str> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn likely_fix_only_where_the_fix_is_valid() {
        let url = HttpUrl::parse("x").unwrap_err();
        let dur = parse_duration("x").unwrap_err();
        assert_eq!(likely_fix("30", dur).as_deref(), Some("30s"));
        assert_eq!(likely_fix("0.5", dur).as_deref(), Some("0.5s"));
        assert_eq!(likely_fix("1.2.3", dur), None);
        assert_eq!(likely_fix("", dur), None);
        assert_eq!(likely_fix("5m30", dur), None);
        assert_eq!(
            likely_fix("localhost:4191", url).as_deref(),
            Some("http://localhost:4191")
        );
        assert_eq!(likely_fix("ftp://x", url), None);
        assert_eq!(likely_fix("a b", url), None);
        assert_eq!(likely_fix("30", "something else"), None);
    }

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    #[test]
    fn parse_duration_accepts_go_syntax() {
        let cases: &[(&str, u64)] = &[
            ("0", 0),
            ("+0", 0),
            ("0s", 0),
            ("00s", 0),
            ("300ms", 300 * MS),
            ("1.5s", 1_500 * MS),
            ("2m30s", 150 * S),
            ("1h", 3_600 * S),
            ("1h2m3s4ms5us6ns", 3_723 * S + 4 * MS + 5_000 + 6),
            ("10us", 10_000),
            ("10\u{b5}s", 10_000),
            ("10\u{3bc}s", 10_000),
            ("10ns", 10),
            (".5s", 500 * MS),
            ("1.s", S),
            ("+5s", 5 * S),
            ("1.000000001s", S + 1),
            ("1.0000000019s", S + 1),
            ("0.1ns", 0),
            ("1.5h", 5_400 * S),
            ("3s3s", 6 * S),
            ("0.333333333333333333333333333s", 333_333_333),
            ("9223372036854775807ns", i64::MAX as u64),
            ("2562047h", 2_562_047 * 3_600 * S),
        ];
        for (input, nanos) in cases {
            assert_eq!(
                parse_duration(input),
                Ok(Duration::from_nanos(*nanos)),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn parse_duration_rejects_everything_else() {
        let cases = [
            "",
            "+",
            "-",
            "-0",
            "-1s",
            "-0s",
            "5",
            "00",
            "5x",
            "5S",
            "5 s",
            " 5s",
            "5s ",
            ".",
            ".s",
            "s",
            "1.5",
            "1..5s",
            "1s5",
            "++1s",
            "1e3s",
            "0x10s",
            "5µ",
            "5\u{3bc}",
            "\u{b5}s",
            "1\u{1f600}",
            "1sé",
            "9223372036854775808ns",
            "2562048h",
            "99999999999999999999999s",
            "18446744073709551616ns",
            "9223372036s9223372036s",
        ];
        for input in cases {
            assert_eq!(
                parse_duration(input),
                Err(EXPECTED_DURATION),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn parse_duration_never_panics_on_odd_bytes() {
        let alphabet = [
            "0", "1", "9", ".", "+", "-", "s", "m", "h", "µ", "μ", "é", "n", "u", " ",
        ];
        for a in alphabet {
            for b in alphabet {
                for c in alphabet {
                    let _ = parse_duration(&format!("{a}{b}{c}"));
                }
            }
        }
    }

    #[test]
    fn parse_bool_table() {
        let cases: &[(&str, Result<bool, ()>)] = &[
            ("true", Ok(true)),
            ("TRUE", Ok(true)),
            ("True", Ok(true)),
            ("1", Ok(true)),
            ("yes", Ok(true)),
            ("YeS", Ok(true)),
            (" true\n", Ok(true)),
            ("false", Ok(false)),
            ("FALSE", Ok(false)),
            ("0", Ok(false)),
            ("no", Ok(false)),
            ("No", Ok(false)),
            ("\tno ", Ok(false)),
            ("", Err(())),
            ("  ", Err(())),
            ("t", Err(())),
            ("y", Err(())),
            ("on", Err(())),
            ("off", Err(())),
            ("2", Err(())),
            ("01", Err(())),
            ("truee", Err(())),
            ("tru\u{e9}", Err(())),
        ];
        for (input, want) in cases {
            assert_eq!(parse_bool(input).map_err(|_| ()), *want, "input {input:?}");
        }
    }

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

    // Issue 22: the authority ends at `?` as the parser reads it, so the host
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

    #[test]
    fn format_duration_rounds_down_to_tenths() {
        for (ms, text) in [
            (0, "0ms"),
            (999, "999ms"),
            (1000, "1.0s"),
            (1234, "1.2s"),
            (59_999, "59.9s"),
            (60_000, "1m0.0s"),
            (125_050, "2m5.0s"),
        ] {
            assert_eq!(format_duration(Duration::from_millis(ms)), text, "{ms} ms");
        }
    }

    #[test]
    fn split_list_trims_and_drops_blanks() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            (" ", &[]),
            (",,", &[]),
            ("a", &["a"]),
            ("a,b", &["a", "b"]),
            (" a , b ,", &["a", "b"]),
            (
                "http://a:1/x, ,http://b:2/y",
                &["http://a:1/x", "http://b:2/y"],
            ),
            ("\ta\n,b", &["a", "b"]),
        ];
        for (input, want) in cases {
            assert_eq!(split_list(input), *want, "input {input:?}");
        }
    }
}
