//! HTTP/1.x request parsing for the fake: one head, then the body, both bounded
//! in size so a hostile client cannot make the fake use unbounded memory.

use std::io::{self, BufRead, Read};

/// Largest request line plus headers accepted; more gets `431` and a close.
const MAX_HEADER_BYTES: u64 = 16 * 1024;
/// Largest request body read; more gets `413` and a close.
pub(crate) const MAX_BODY_BYTES: u64 = 1024 * 1024;

/// A parsed request head.
#[derive(Debug)]
pub(crate) struct Head {
    pub method: String,
    pub target: String,
    /// `HTTP/1.1` or `HTTP/1.0`.
    pub version: String,
    /// Every header field, in order, as sent.
    pub headers: Vec<(String, String)>,
    pub keep_alive: bool,
    content_length: u64,
    chunked: bool,
}

impl Head {
    /// The target without its query string.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }
}

/// Why a request could not be read.
#[derive(Debug)]
pub(crate) enum HeadError {
    /// The connection failed or closed mid-request: just close.
    Io,
    /// Over a size bound: answer 431/413, close.
    TooLarge,
    /// Not HTTP/1.x: answer 400, close.
    Malformed,
}

/// Reads one request head; `Ok(None)` on a clean close between requests.
pub(crate) fn read_head(reader: &mut impl BufRead) -> Result<Option<Head>, HeadError> {
    let mut budget = MAX_HEADER_BYTES;
    let mut line = Vec::new();
    // Skip empty lines before the request line (RFC 9112 §2.2).
    loop {
        line.clear();
        if read_line(reader, &mut line, &mut budget)? == 0 {
            return Ok(None);
        }
        if !trim_eol(&line).is_empty() {
            break;
        }
    }
    let request_line = std::str::from_utf8(trim_eol(&line)).map_err(|_| HeadError::Malformed)?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::Malformed);
    };
    if method.is_empty() || !target.starts_with('/') || !version.starts_with("HTTP/1.") {
        return Err(HeadError::Malformed);
    }
    let mut head = Head {
        method: method.to_owned(),
        target: target.to_owned(),
        version: version.to_owned(),
        headers: Vec::new(),
        // HTTP/1.1 keeps the connection by default, HTTP/1.0 closes it.
        keep_alive: version != "HTTP/1.0",
        content_length: 0,
        chunked: false,
    };
    loop {
        line.clear();
        if read_line(reader, &mut line, &mut budget)? == 0 {
            return Err(HeadError::Io);
        }
        let field = trim_eol(&line);
        if field.is_empty() {
            return Ok(Some(head));
        }
        let field = std::str::from_utf8(field).map_err(|_| HeadError::Malformed)?;
        let (name, value) = field.split_once(':').ok_or(HeadError::Malformed)?;
        let value = value.trim();
        head.headers.push((name.to_owned(), value.to_owned()));
        match name.to_ascii_lowercase().as_str() {
            "content-length" => {
                head.content_length = value.parse().map_err(|_| HeadError::Malformed)?;
            }
            "transfer-encoding" => head.chunked = value.to_ascii_lowercase().contains("chunked"),
            "connection" => {
                for option in value.split(',').map(|o| o.trim().to_ascii_lowercase()) {
                    match option.as_str() {
                        "close" => head.keep_alive = false,
                        "keep-alive" => head.keep_alive = true,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}

/// Reads one line (through `\n`) within `budget` bytes; returns its length (0 at EOF).
fn read_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    budget: &mut u64,
) -> Result<usize, HeadError> {
    let read = (&mut *reader)
        .take(*budget)
        .read_until(b'\n', line)
        .map_err(|_| HeadError::Io)?;
    *budget -= read as u64;
    if read > 0 && !line.ends_with(b"\n") {
        // Either the budget ran out or the peer closed mid-line.
        return Err(if *budget == 0 {
            HeadError::TooLarge
        } else {
            HeadError::Io
        });
    }
    Ok(read)
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Reads the request body (Content-Length or chunked, decoded), at most 1 MiB.
pub(crate) fn read_body(reader: &mut impl BufRead, head: &Head) -> Result<Vec<u8>, HeadError> {
    let mut body = Vec::new();
    if !head.chunked {
        if head.content_length > MAX_BODY_BYTES {
            return Err(HeadError::TooLarge);
        }
        read_exactly(reader, head.content_length, &mut body)?;
        return Ok(body);
    }
    let mut budget = MAX_BODY_BYTES;
    let mut line = Vec::new();
    loop {
        line.clear();
        if read_line(reader, &mut line, &mut budget)? == 0 {
            return Err(HeadError::Io);
        }
        let size = std::str::from_utf8(trim_eol(&line)).map_err(|_| HeadError::Malformed)?;
        let size = size.split(';').next().unwrap_or_default().trim();
        let size = u64::from_str_radix(size, 16).map_err(|_| HeadError::Malformed)?;
        if size == 0 {
            break;
        }
        // The chunk and its CRLF.
        budget = budget
            .checked_sub(size.saturating_add(2))
            .ok_or(HeadError::TooLarge)?;
        read_exactly(reader, size, &mut body)?;
        read_exactly(reader, 2, &mut Vec::new())?;
    }
    // Trailer fields, up to the empty line.
    loop {
        line.clear();
        if read_line(reader, &mut line, &mut budget)? == 0 {
            return Err(HeadError::Io);
        }
        if trim_eol(&line).is_empty() {
            return Ok(body);
        }
    }
}

/// Appends exactly `len` bytes to `out`.
fn read_exactly(reader: &mut impl BufRead, len: u64, out: &mut Vec<u8>) -> Result<(), HeadError> {
    let copied = io::copy(&mut (&mut *reader).take(len), out).map_err(|_| HeadError::Io)?;
    if copied == len {
        Ok(())
    } else {
        Err(HeadError::Io)
    }
}
