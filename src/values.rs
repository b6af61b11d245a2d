//! Parsers for configuration values: Go-style durations, lenient booleans,
//! `http(s)://` URLs (with locality and redaction) and comma-separated lists.
//! Each parser says what it expected; the caller adds the variable or option name.

use std::time::Duration;

/// Parses a Go `time.ParseDuration` string (`300ms`, `1.5s`, `2m30s`, `10µs`, bare `0`).
pub(crate) fn parse_duration(_s: &str) -> Result<Duration, &'static str> {
    Err("a duration like 300ms, 1.5s or 2m30s")
}

/// Parses `true`/`false`, `1`/`0`, `yes`/`no` in any case.
pub(crate) fn parse_bool(_s: &str) -> Result<bool, &'static str> {
    Err("true or false (or 1/0, yes/no)")
}

/// URL scheme accepted for sidecar endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// `http://`
    Http,
    /// `https://`
    Https,
}

/// A validated `http://` or `https://` URL of a sidecar endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpUrl {
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
    pub(crate) fn parse(_s: &str) -> Result<HttpUrl, &'static str> {
        Err("an http:// URL with a host, like http://127.0.0.1:15000")
    }

    /// True when the host is `localhost`, in `127.0.0.0/8` or `::1` (parsed, not substring-matched).
    pub(crate) fn is_local(&self) -> bool {
        false
    }

    /// The URL with `path` appended to it (one `/` between them).
    pub(crate) fn join(&self, path: &str) -> String {
        format!("{}{}", self.raw, path)
    }

    /// `scheme://host:port` of this URL with another port (used for 15000 → 15020).
    pub(crate) fn with_port(&self, port: u16) -> String {
        format!("http://{}:{}", self.host, port)
    }

    /// The URL without any `user:password@` part, for logs.
    pub(crate) fn redacted(&self) -> String {
        redact(&self.raw)
    }
}

/// Removes a `user:password@` part from any URL-like string, for logs.
pub(crate) fn redact(url: &str) -> String {
    url.to_string()
}

/// Splits a comma-separated list, trimming blanks and dropping empty items.
pub(crate) fn split_list(s: &str) -> Vec<&str> {
    s.split(',').map(str::trim).filter(|p| !p.is_empty()).collect()
}
