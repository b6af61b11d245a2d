//! Starting the processes measured with a clean environment, finding programs,
//! and reading the probe's records.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// `PATH` for every process the harness starts; the environment is otherwise empty,
/// so no variable of the caller's shell configures tandem by accident.
pub(crate) const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Clears the environment but `PATH` and `env`, and closes stdio.
pub(crate) fn quiet(cmd: &mut Command, env: &[(&str, String)]) {
    cmd.env_clear()
        .env("PATH", PATH)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
}

/// Polls the probe file until it holds `key` (a few ms at most in practice).
pub(crate) fn wait_for_record(file: &Path, key: &str, limit: Duration) -> io::Result<u64> {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(record) = read_probe(file)
            && let Some(&ns) = record.get(key)
        {
            return Ok(ns);
        }
        if Instant::now() > deadline {
            return Err(io::Error::other(format!(
                "no {key} record in {} after {limit:?}",
                file.display()
            )));
        }
        thread::sleep(Duration::from_micros(500));
    }
}

/// Parses the probe's `KEY NS` lines.
pub(crate) fn read_probe(file: &Path) -> io::Result<HashMap<String, u64>> {
    let text = fs::read_to_string(file)?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let (key, ns) = line.split_once(' ')?;
            Some((key.to_owned(), ns.trim().parse().ok()?))
        })
        .collect())
}

pub(crate) fn path_str(path: &Path) -> &str {
    path.to_str().unwrap_or_default()
}

pub(crate) fn absolute(path: &Path) -> io::Result<String> {
    let path = fs::canonicalize(path)?;
    path.into_os_string()
        .into_string()
        .map_err(|_| io::Error::other("non-UTF-8 path"))
}

pub(crate) fn find_in_path(name: &str) -> Option<String> {
    PATH.split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file())
        .and_then(|p| p.into_os_string().into_string().ok())
}
