//! `upload FILE URL`: PUTs FILE to an `http://` URL and says how it went, on
//! stdout. The `--on-exit` program of `make pods`' upload Pod (tests/pods/pods.py,
//! examples/k8s/on-exit-job.yaml): a second static program in a job image with
//! no shell and no curl, as a user's uploader would be. Exits 0 when the answer
//! is 2xx, 1 when it is not or the upload failed, 64 on bad arguments.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::time::Duration;

/// Bound on the connection and on each read and write.
const TIMEOUT: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, url] = args.as_slice() else {
        eprintln!("usage: upload FILE http://HOST:PORT/PATH");
        return ExitCode::from(64);
    };
    match upload(file, url) {
        Ok(status) if (200..300).contains(&status) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(message) => {
            println!("upload: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Reads `file`, PUTs it to `url`, prints what it read and the answer's status.
fn upload(file: &str, url: &str) -> Result<u16, String> {
    let body = std::fs::read(file).map_err(|e| format!("cannot read {file}: {e}"))?;
    let first = String::from_utf8_lossy(&body);
    let first = first.lines().next().unwrap_or_default();
    let code = std::env::var("TANDEM_EXIT_CODE").unwrap_or_else(|_| "unset".into());
    println!(
        "upload: read {file}: {} bytes, first line {first:?}; the job's status {code}",
        body.len()
    );
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: not an http:// URL"))?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let addr = std::net::ToSocketAddrs::to_socket_addrs(host)
        .map_err(|e| format!("{host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host}: no address"))?;
    let mut conn = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| format!("{url}: {e}"))?;
    let _ = conn.set_read_timeout(Some(TIMEOUT));
    let _ = conn.set_write_timeout(Some(TIMEOUT));
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())
        .and_then(|()| conn.write_all(&body))
        .map_err(|e| format!("{url}: {e}"))?;
    let mut answer = Vec::new();
    conn.read_to_end(&mut answer)
        .map_err(|e| format!("{url}: {e}"))?;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{url}: no HTTP status in the answer"))?;
    println!("upload: PUT {url}: {status}");
    Ok(status)
}
