//! The fake sidecar admin server as a program, for `make demo`, `make smoke`,
//! `make pods` and scripts: this crate's library, the one the integration tests and
//! the bench use, driven from the command line.
//!
//! ```text
//! fake-sidecar [--addr 127.0.0.1:0] [--flavor envoy|old-envoy|pilot-agent|linkerd|generic]
//!              [--ready-after 2s|500ms] [--never-ready] [--delay 200ms]
//!              [--fault hang|reset|garbage|endless|trickle] [--no-shutdown]
//!              [--exit-on-quit] [--port-file PATH] [--log-file PATH]
//! ```
//!
//! It logs each request to stderr, writes the port to `--port-file` atomically so
//! scripts can find it, and with `--log-file` appends `<mono_ns> <METHOD> <PATH>`
//! lines and one `<mono_ns> READY` line (`CLOCK_MONOTONIC` nanoseconds, comparable
//! with other processes' timestamps).

use fake_sidecar::{FakeAdmin, Fault, Flavor, Script};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Exit status for bad arguments (EX_USAGE), as tandem uses.
const EXIT_USAGE: u8 = 64;

const USAGE: &str = "usage: fake-sidecar [--addr 127.0.0.1:0] \
[--flavor envoy|old-envoy|pilot-agent|linkerd|generic] [--ready-after DUR] [--never-ready] \
[--delay DUR] [--fault hang|reset|garbage|endless|trickle] [--no-shutdown] [--exit-on-quit] \
[--port-file PATH] [--log-file PATH]   (DUR: 500ms, 2s, 1.5s, 0)";

/// The parsed command line.
struct Args {
    addr: String,
    script: Script,
    port_file: Option<PathBuf>,
    log_file: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("fake-sidecar: {message}\n{USAGE}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("fake-sidecar: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Starts the fake, announces it, and blocks until a quit with `--exit-on-quit`
/// (otherwise until the process is killed).
fn serve(args: Args) -> Result<(), String> {
    let log_file = match &args.log_file {
        Some(path) => Some(Arc::new(Mutex::new(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|err| format!("cannot open {}: {err}", path.display()))?,
        ))),
        None => None,
    };
    let hook_log = log_file.clone();
    // Readiness polls repeat the same line dozens of times: print a run once, then its count.
    let last_line = std::sync::Mutex::new((String::new(), 0u32));
    let script = args.script.on_request(move |req| {
        let status = match req.status {
            Some(status) => status.to_string(),
            None => "no answer".to_owned(),
        };
        let line = format!("{} {} -> {status}", req.method, req.path);
        let mut last = last_line.lock().unwrap_or_else(|p| p.into_inner());
        if last.0 == line {
            last.1 += 1;
        } else {
            if last.1 > 0 {
                eprintln!("fake-sidecar:   … and {} more like it", last.1);
            }
            eprintln!("fake-sidecar: {line}");
            *last = (line, 0);
        }
        drop(last);
        if let Some(file) = &hook_log {
            append(
                file,
                &format!("{} {} {}", req.mono_ns, req.method, req.path),
            );
        }
    });
    let flavor = script.flavor.name();
    let fake = FakeAdmin::start_on(args.addr.as_str(), script)
        .map_err(|err| format!("cannot listen on {}: {err}", args.addr))?;
    let ready = match fake.script().ready_after {
        Some(after) => format!("ready after {after:?}"),
        None => "never ready".to_owned(),
    };
    eprintln!(
        "fake-sidecar: {flavor} listening on {} ({ready})",
        fake.url()
    );
    if let Some(path) = &args.port_file {
        write_atomically(path, &format!("{}\n", fake.port()))
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    }
    if let (Some(file), Some(at), Some(mono_ns)) = (log_file, fake.ready_at(), fake.ready_mono_ns())
    {
        // Detached: the process ends with main, and the thread only sleeps once.
        thread::spawn(move || {
            thread::sleep(at.saturating_duration_since(Instant::now()));
            append(&file, &format!("{mono_ns} READY"));
        });
    }
    fake.wait_until_stopped();
    eprintln!("fake-sidecar: quit received, exiting");
    Ok(())
}

/// Appends one line; a failed log write must not take the fake down.
fn append(file: &Mutex<File>, line: &str) {
    let mut file = file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let _ = writeln!(file, "{line}");
}

/// Writes `contents` to a temporary file beside `path`, then renames it, so a
/// reader never sees a partial port number.
fn write_atomically(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp.{}", std::process::id()));
    std::fs::write(&temp, contents)?;
    std::fs::rename(&temp, path)
}

/// Parses the arguments; `Ok(None)` for `--help`.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Option<Args>, String> {
    let mut args = args.into_iter();
    let mut parsed = Args {
        addr: "127.0.0.1:0".to_owned(),
        script: Script::envoy(),
        port_file: None,
        log_file: None,
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        let script = &mut parsed.script;
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--addr" => parsed.addr = value()?,
            "--flavor" => {
                let name = value()?;
                script.flavor =
                    Flavor::parse(&name).ok_or_else(|| format!("unknown flavor {name:?}"))?;
            }
            "--ready-after" => script.ready_after = Some(parse_duration(&value()?)?),
            "--never-ready" => script.ready_after = None,
            "--delay" => script.delay = parse_duration(&value()?)?,
            "--fault" => {
                let name = value()?;
                let fault = Fault::parse(&name).ok_or_else(|| format!("unknown fault {name:?}"))?;
                script.faults.push((None, fault));
            }
            "--no-shutdown" => script.shutdown_enabled = false,
            "--exit-on-quit" => script.exit_on_quit = true,
            "--port-file" => parsed.port_file = Some(value()?.into()),
            "--log-file" => parsed.log_file = Some(value()?.into()),
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    Ok(Some(parsed))
}

/// Parses `0`, `500ms`, `2s`, `1.5s`, `100us`, `1m`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {text:?} (expected e.g. 500ms, 2s, 0)");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let seconds_per_unit = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(number * seconds_per_unit).map_err(|_| bad())
}
