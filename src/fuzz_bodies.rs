//! The body of each fuzz target, one function each, shared by the fuzzers
//! (`fuzz/fuzz_targets/*.rs`, nightly) and the corpus replay
//! (`tests/fuzz_replay.rs`, stable), so both run the same code. Here, in the
//! library both link, rather than a file each includes; tandem's binary never
//! calls it, so none of it is linked there. Each body panics only when an invariant of
//! tandem's own fails; a panic inside tandem is a finding too.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener};
use std::os::unix::ffi::OsStringExt;
use std::thread;

use tandem_common::exit_codes::ExitCodes;

use crate::value::url::{HttpUrl, redact};
use crate::value::{boolean, duration, words};
use crate::{cli, config, http, ready};

/// Go's largest duration: what `parse_duration` may return at most.
const MAX_NANOS: u128 = i64::MAX as u128;
/// The body limit of `http::get_text` (64 KiB).
const BODY_LIMIT: usize = 64 * 1024;

/// Durations: never above Go's range, never negative, and a parsed value
/// written back as plain nanoseconds parses to the same value.
pub fn duration(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(d) = duration::parse(s) else {
        return;
    };
    assert!(d.as_nanos() <= MAX_NANOS, "{s:?} → {d:?} beyond Go's range");
    assert!(!s.starts_with('-'), "{s:?} is negative but parsed");
    assert!(s.trim() == s, "{s:?} has blanks but parsed");
    let again = duration::parse(&format!("{}ns", d.as_nanos()));
    assert_eq!(again, Ok(d), "{s:?} → {d:?} does not round-trip");
}

/// Booleans: accepted only as the six words (any case, blanks around), and the
/// same in upper case.
pub fn boolean(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let got = boolean::parse(s);
    let word = s.trim().to_ascii_lowercase();
    let want = match word.as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    };
    assert_eq!(got.ok(), want, "{s:?}");
    assert_eq!(boolean::parse(&s.to_ascii_uppercase()), got, "{s:?}");
}

/// URLs: `redact` never panics; a parsed URL is local only for `localhost` or a
/// loopback address, keeps its host and locality on another port, and its redacted
/// form has no userinfo left.
pub fn url(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let redacted = redact(s);
    assert!(redacted.len() <= s.len(), "{s:?} grew when redacted");
    let Ok(url) = HttpUrl::parse(s) else {
        return;
    };
    assert!(url.port != 0, "{s:?} parsed with port 0");
    let local = url.is_local();
    if local {
        let host = url.host.trim_start_matches('[').trim_end_matches(']');
        let by_std = host.parse::<std::net::IpAddr>().is_ok_and(|ip| match ip {
            std::net::IpAddr::V4(v4) => v4.is_loopback(),
            std::net::IpAddr::V6(v6) => {
                v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
        });
        let name =
            host.eq_ignore_ascii_case("localhost") || host.eq_ignore_ascii_case("localhost.");
        assert!(by_std || name, "{s:?}: host {:?} called local", url.host);
    }
    let other = url.with_port(15020);
    let moved = HttpUrl::parse(&other).unwrap_or_else(|e| panic!("{s:?} → {other:?}: {e}"));
    assert_eq!(moved.host, url.host, "{s:?} → {other:?}");
    assert_eq!(moved.is_local(), local, "{s:?} → {other:?}");
    let shown = url.redacted();
    let after_scheme = shown.split_once("://").map_or(shown.as_str(), |(_, r)| r);
    let authority = &after_scheme[..after_scheme
        .find(['/', '?', '#'])
        .unwrap_or(after_scheme.len())];
    assert!(!authority.contains('@'), "{s:?} redacted to {shown:?}");
    let joined = url.join("/ready");
    assert!(joined.ends_with("/ready"), "{s:?} joined to {joined:?}");
}

/// `/server_info`: the state read from any body is a slice of it without quotes.
pub fn server_info(data: &[u8]) {
    let body = String::from_utf8_lossy(data);
    if let Some(state) = ready::poller::json_state(&body) {
        assert!(!state.contains('"'), "{body:?} → {state:?}");
        assert!(body.contains(state), "{body:?} → {state:?}");
    }
}

/// HTTP answers: `data[0]` picks the request (GET status, GET text, POST), the rest
/// is sent back verbatim by a one-shot loopback server that then closes. tandem's
/// client must end with a status or a one-line failure, and never read more than
/// its body limit.
pub fn http_answer(data: &[u8]) {
    let Some((&pick, answer)) = data.split_first() else {
        return;
    };
    let Ok(listener) = TcpListener::bind("127.0.0.1:0") else {
        return;
    };
    let Ok(addr) = listener.local_addr() else {
        return;
    };
    let answer = answer.to_vec();
    let server = thread::spawn(move || {
        let Ok((mut conn, _)) = listener.accept() else {
            return;
        };
        // Read the whole request head first, so closing sends FIN, not RST.
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let _ = conn.write_all(&answer);
        let _ = conn.shutdown(Shutdown::Write);
        // Drain until the client closes: no RST while it still reads.
        while let Ok(n) = conn.read(&mut buf) {
            if n == 0 {
                break;
            }
        }
    });
    let agent = http::agent();
    let url = format!("http://{addr}/ready");
    let failure = match pick % 3 {
        0 => http::get_status(&agent, &url).err(),
        1 => match http::get_text(&agent, &url) {
            Ok((_, body)) => {
                assert!(body.len() <= BODY_LIMIT, "read {} bytes", body.len());
                None
            }
            Err(f) => Some(f),
        },
        _ => http::post_empty(&agent, &url, None).err(),
    };
    drop(agent);
    let _ = server.join();
    if let Some(f) = failure {
        assert!(!f.what.is_empty(), "empty failure");
    }
}

/// Configuration: `data[0] % 8` arguments, then `NAME=VALUE` variables, each
/// piece ended by a NUL byte (any bytes, not only UTF-8). The command line and
/// configuration either build or fail with a usage error (exit 64). The message
/// may hold the user's control characters: `log` escapes them into one line.
pub fn config(data: &[u8]) {
    configure(data, |args, _| cli::parse(args));
}

/// The linkerd-await command line (tandem invoked by that name), in the same
/// input format as [`config`]: translated into tandem's options, then configured,
/// it builds or fails with a usage error.
pub fn linkerd_await(data: &[u8]) {
    configure(data, |args, _| cli::linkerd_await::parse(args));
}

/// docker-compose-wait's usage (tandem invoked as `wait`), in the same input
/// format as [`config`]: the arguments and `WAIT_COMMAND` (split as a shell
/// would) give the task, then the configuration builds or fails with a usage
/// error.
pub fn compose_wait(data: &[u8]) {
    configure(data, cli::compose_wait::parse);
}

/// Command lines (`--on-exit`, `WAIT_COMMAND`): split words, each quoted back in
/// single quotes and joined by blanks, split into the same words; a line without
/// quotes or backslashes splits at its blanks alone; a refused line has a quote
/// or backslash in it.
pub fn words(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let plain = !text.contains(['\'', '"', '\\']);
    let Ok(split) = words::split(text) else {
        assert!(!plain, "{text:?} refused without a quote or backslash");
        return;
    };
    if plain {
        let blanks: Vec<&str> = text
            .split([' ', '\t', '\n'])
            .filter(|w| !w.is_empty())
            .collect();
        assert_eq!(split, blanks, "{text:?}");
    }
    let quoted: Vec<String> = split
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect();
    let again = words::split(&quoted.join(" "));
    assert_eq!(again.as_ref(), Ok(&split), "{text:?} does not round-trip");
}

/// `--keep-on-exit` sets: whatever parses holds at least one status and only
/// digits, commas, dashes and blanks; its canonical writing (ascending runs,
/// apart by at least one status) parses to the same set and writes the same bytes.
pub fn keep_on_exit(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(set) = ExitCodes::parse(text) else {
        return;
    };
    assert!(!set.is_empty(), "{text:?} parsed to no status");
    let allowed = |c: char| c.is_ascii_digit() || c == ',' || c == '-' || c.is_whitespace();
    assert!(text.chars().all(allowed), "{text:?} parsed");
    let canonical = set.to_string();
    let again = ExitCodes::parse(&canonical);
    assert_eq!(again, Ok(set), "{text:?} → {canonical:?} is another set");
    assert_eq!(set.to_string(), canonical, "{text:?}: two writings");
    let mut after: Option<u16> = None;
    for (first, last) in set.runs() {
        assert!(first <= last, "{canonical:?}");
        assert!(
            after.is_none_or(|end| u16::from(first) > end + 1),
            "{canonical:?}"
        );
        after = Some(u16::from(last));
    }
}

/// How a body reads a command line: its arguments, and the environment.
type Parse =
    fn(Vec<OsString>, &dyn Fn(&str) -> Option<OsString>) -> Result<cli::Cli, crate::exit::Error>;

/// Splits `data` into arguments and variables, parses the arguments with `parse`
/// and builds the configuration; any error must be a usage error.
fn configure(data: &[u8], parse: Parse) {
    let Some((&count, rest)) = data.split_first() else {
        return;
    };
    let mut pieces = rest.split(|b| *b == 0);
    let args: Vec<OsString> = pieces
        .by_ref()
        .take(usize::from(count % 8))
        .map(|a| OsString::from_vec(a.to_vec()))
        .collect();
    let vars: Vec<(Vec<u8>, OsString)> = pieces
        .filter_map(|p| {
            let eq = p.iter().position(|b| *b == b'=')?;
            Some((p[..eq].to_vec(), OsString::from_vec(p[eq + 1..].to_vec())))
        })
        .collect();
    let env = |name: &str| {
        vars.iter()
            .rev()
            .find(|(n, _)| n.as_slice() == name.as_bytes())
            .map(|(_, v)| v.clone())
    };
    let check = |e: &crate::exit::Error| {
        let line = e.to_string();
        assert_eq!(e.exit_code(), crate::exit::EX_USAGE, "{line}");
        assert!(!line.is_empty(), "an empty error");
    };
    let cli = match parse(args, &env) {
        Ok(cli) => cli,
        Err(e) => return check(&e),
    };
    let _ = config::log_format_hint(&cli, &env);
    if let Err(e) = config::build(&cli, &env) {
        check(&e);
    }
}
