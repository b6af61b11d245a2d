//! One HTTP/1.1 request read within bounds (httparse does the parsing), and one
//! response written. The API server sends `POST` with `Content-Length` over a
//! kept-alive connection; anything the injector does not accept is a 4xx (or
//! 501) with a one-line reason, and the connection closes after it.

use std::io::{self, Read, Write};
use std::time::Duration;

use crate::duration;

/// The request line and headers together, at most (16 KiB).
pub const MAX_HEAD: usize = 16 * 1024;
/// A request body, at most: a Pod is at most etcd's 1.5 MiB request limit, and
/// its review adds a few KiB around it (2 MiB).
pub const MAX_BODY: usize = 2 * 1024 * 1024;
/// Headers per request, at most.
pub const MAX_HEADERS: usize = 32;

/// An HTTP status line's code and reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(pub u16, pub &'static str);

/// 200.
pub const OK: Status = Status(200, "OK");
/// 400: not HTTP, or not a review.
pub const BAD_REQUEST: Status = Status(400, "Bad Request");
/// 404: another path.
pub const NOT_FOUND: Status = Status(404, "Not Found");
/// 405: another method.
pub const METHOD_NOT_ALLOWED: Status = Status(405, "Method Not Allowed");
/// 411: a POST without `Content-Length`.
pub const LENGTH_REQUIRED: Status = Status(411, "Length Required");
/// 413: a body above `MAX_BODY`.
pub const TOO_LARGE: Status = Status(413, "Content Too Large");
/// 431: a head above `MAX_HEAD` or `MAX_HEADERS`.
pub const HEADERS_TOO_LARGE: Status = Status(431, "Request Header Fields Too Large");
/// 503: `/healthz` while draining.
pub const UNAVAILABLE: Status = Status(503, "Service Unavailable");
/// 501: `Transfer-Encoding` (chunked bodies).
pub const NOT_IMPLEMENTED: Status = Status(501, "Not Implemented");

/// One request, read whole.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`…
    pub method: String,
    /// The path without its query (the API server adds `?timeout=10s`).
    pub path: String,
    /// The query's `timeout`: how long the client waits for the answer (the
    /// API server's webhook client sends the webhook's `timeoutSeconds`, or
    /// what is left of its own request's time when that is less).
    pub timeout: Option<Duration>,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
    /// Whether the client keeps the connection for another request.
    pub keep_alive: bool,
}

/// Why no request came.
#[derive(Debug)]
pub enum NoRequest {
    /// The client closed the connection between requests.
    Closed,
    /// A request the injector refuses: answer with this status and reason.
    Refused(Status, String),
    /// The connection failed (timeout, reset, TLS).
    Io(io::Error),
}

impl From<io::Error> for NoRequest {
    fn from(e: io::Error) -> NoRequest {
        NoRequest::Io(e)
    }
}

/// Reads one request from `stream`. `buf` holds bytes already read past the
/// previous request and keeps what arrives past this one.
pub fn read_request(stream: &mut impl Read, buf: &mut Vec<u8>) -> Result<Request, NoRequest> {
    let (head_len, method, (path, timeout), length, keep_alive) = loop {
        if let Some(head) = parse_head(buf)? {
            break head;
        }
        if buf.len() >= MAX_HEAD {
            return Err(NoRequest::Refused(
                HEADERS_TOO_LARGE,
                format!("the request head is above {} KiB", MAX_HEAD / 1024),
            ));
        }
        if fill(stream, buf, MAX_HEAD - buf.len())? == 0 {
            return Err(if buf.is_empty() {
                NoRequest::Closed
            } else {
                NoRequest::Io(io::ErrorKind::UnexpectedEof.into())
            });
        }
    };
    buf.drain(..head_len);
    while buf.len() < length {
        if fill(stream, buf, length - buf.len())? == 0 {
            return Err(NoRequest::Io(io::ErrorKind::UnexpectedEof.into()));
        }
    }
    let body: Vec<u8> = buf.drain(..length).collect();
    Ok(Request {
        method,
        path,
        timeout,
        body,
        keep_alive,
    })
}

type Head = (usize, String, (String, Option<Duration>), usize, bool);

/// The head at the start of `buf` once complete: its length, method, path,
/// body length and keep-alive; `None` while it is incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, NoRequest> {
    if buf.is_empty() {
        return Ok(None);
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(NoRequest::Refused(
                HEADERS_TOO_LARGE,
                format!("more than {MAX_HEADERS} headers"),
            ));
        }
        Err(e) => {
            return Err(NoRequest::Refused(
                BAD_REQUEST,
                format!("not an HTTP/1.1 request: {e}"),
            ));
        }
    };
    let method = req.method.unwrap_or_default().to_string();
    let target = split_target(req.path.unwrap_or_default());
    let (length, keep_alive) = read_headers(req.headers, req.version == Some(1))?;
    let length = body_length(length, &method)?;
    Ok(Some((head_len, method, target, length, keep_alive)))
}

/// The request target's path, and its query's `timeout` when that is a Go
/// duration (anything else there is not the API server's, and ignored).
fn split_target(target: &str) -> (String, Option<Duration>) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let timeout = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("timeout="))
        .and_then(|value| duration::parse(value).ok());
    (path.to_string(), timeout)
}

/// What the headers say: the body's length (if given) and whether the
/// connection is kept (`keep_alive`: HTTP/1.1's default).
fn read_headers(
    headers: &[httparse::Header],
    mut keep_alive: bool,
) -> Result<(Option<usize>, bool), NoRequest> {
    let mut length = None;
    for h in headers {
        let value = String::from_utf8_lossy(h.value);
        let value = value.trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            let n: usize = value.parse().map_err(|_| {
                NoRequest::Refused(
                    BAD_REQUEST,
                    format!("Content-Length {value:?} is not a number"),
                )
            })?;
            if length.is_some_and(|m| m != n) {
                return Err(NoRequest::Refused(
                    BAD_REQUEST,
                    "two different Content-Length headers".into(),
                ));
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(NoRequest::Refused(
                NOT_IMPLEMENTED,
                format!("Transfer-Encoding {value:?} is not accepted: send Content-Length"),
            ));
        } else if h.name.eq_ignore_ascii_case("connection") {
            let says = |word: &str| {
                value
                    .split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case(word))
            };
            if says("close") {
                keep_alive = false;
            } else if says("keep-alive") {
                keep_alive = true;
            }
        }
    }
    Ok((length, keep_alive))
}

/// The body's length: `Content-Length` within the limit; required of a POST.
fn body_length(length: Option<usize>, method: &str) -> Result<usize, NoRequest> {
    match length {
        Some(n) if n > MAX_BODY => Err(NoRequest::Refused(
            TOO_LARGE,
            format!(
                "a body of {n} bytes is above the {} MiB limit",
                MAX_BODY / (1024 * 1024)
            ),
        )),
        Some(n) => Ok(n),
        None if method == "POST" => Err(NoRequest::Refused(
            LENGTH_REQUIRED,
            "a POST needs Content-Length".into(),
        )),
        None => Ok(0),
    }
}

/// Reads at most `most` more bytes into `buf`; the count read (0 at the end).
fn fill(stream: &mut impl Read, buf: &mut Vec<u8>, most: usize) -> io::Result<usize> {
    let mut chunk = [0u8; 8192];
    let want = most.min(chunk.len());
    let n = loop {
        match stream.read(&mut chunk[..want]) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

/// Writes one response with a body, and says whether the connection stays open.
pub fn write_response(
    stream: &mut impl Write,
    status: Status,
    content_type: &str,
    body: &[u8],
    keep_alive: bool,
) -> io::Result<()> {
    let Status(code, reason) = status;
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let mut out = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: {connection}\r\n",
        body.len()
    );
    if status == METHOD_NOT_ALLOWED {
        out.push_str("Allow: GET, POST\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads requests from `input` delivered in `step`-byte pieces.
    fn read_all(input: &[u8], step: usize) -> Vec<Result<Request, String>> {
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut stream = Trickle(input, step);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_request(&mut stream, &mut buf) {
                Ok(r) => out.push(Ok(r)),
                Err(NoRequest::Closed) => return out,
                Err(NoRequest::Refused(s, m)) => {
                    out.push(Err(format!("{} {m}", s.0)));
                    return out;
                }
                Err(NoRequest::Io(e)) => {
                    out.push(Err(format!("io {e}")));
                    return out;
                }
            }
        }
    }

    #[test]
    fn kept_alive_requests_in_any_pieces_are_read_one_by_one() {
        let input = b"POST /mutate?timeout=10s HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}\
                      GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n";
        for step in [1, 3, 1000] {
            let got = read_all(input, step);
            assert_eq!(got.len(), 2, "step {step}: {got:?}");
            let first = got[0].as_ref().unwrap();
            assert_eq!(
                (first.method.as_str(), first.path.as_str()),
                ("POST", "/mutate")
            );
            assert_eq!(first.timeout, Some(Duration::from_secs(10)));
            assert_eq!(
                (first.body.as_slice(), first.keep_alive),
                (&b"{}"[..], true)
            );
            let second = got[1].as_ref().unwrap();
            assert_eq!(
                (second.path.as_str(), second.keep_alive),
                ("/healthz", false)
            );
        }
    }

    #[test]
    fn the_query_timeout_is_read_as_a_go_duration_and_anything_else_ignored() {
        let ms = Duration::from_millis;
        let cases = [
            ("/mutate?timeout=5s", "/mutate", Some(ms(5000))),
            ("/mutate?a=b&timeout=1m0s", "/mutate", Some(ms(60_000))),
            (
                "/mutate/namespace?timeout=4.25s",
                "/mutate/namespace",
                Some(ms(4250)),
            ),
            ("/mutate?timeout=5", "/mutate", None),
            ("/mutate?xtimeout=5s", "/mutate", None),
            ("/healthz", "/healthz", None),
        ];
        for (target, path, timeout) in cases {
            assert_eq!(
                split_target(target),
                (path.to_string(), timeout),
                "{target}"
            );
        }
    }

    #[test]
    fn requests_the_injector_refuses_get_a_status_and_a_reason() {
        let big = format!(
            "POST /mutate HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_HEAD));
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            "A: b\r\n".repeat(MAX_HEADERS + 1)
        );
        let cases: Vec<(&[u8], &str)> = vec![
            (b"\x16\x03\x01\x02\x00", "400 not an HTTP/1.1 request"),
            (
                b"POST /mutate HTTP/1.1\r\n\r\n",
                "411 a POST needs Content-Length",
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                "400 Content-Length \"x\"",
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "400 two",
            ),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                "501 Transfer-Encoding",
            ),
            (
                big.as_bytes(),
                "413 a body of 2097153 bytes is above the 2 MiB limit",
            ),
            (long.as_bytes(), "431 the request head is above 16 KiB"),
            (many.as_bytes(), "431 more than 32 headers"),
            (b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", "io "),
        ];
        for (input, expected) in cases {
            let got = read_all(input, 7);
            let last = got.last().unwrap().as_ref().unwrap_err();
            assert!(last.starts_with(expected), "{expected}: {last}");
        }
    }

    #[test]
    fn a_response_names_its_length_and_whether_the_connection_stays() {
        let mut out = Vec::new();
        write_response(&mut out, METHOD_NOT_ALLOWED, "text/plain", b"no\n", false).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\
             Connection: close\r\nAllow: GET, POST\r\n\r\nno\n"
        );
    }
}
