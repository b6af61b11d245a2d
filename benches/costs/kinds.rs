//! Figure 4 for the readiness kinds beside HTTP: from a TCP port opening and from a
//! file appearing to the app's first instruction, the ready moments spread over
//! tandem's poll cycle as `readiness` spreads them; the connections a TCP wait
//! opens and what they carry; and what a file check costs a poll (`stat` calls,
//! counted by strace).

use crate::Bench;
use crate::process::{find_in_path, path_str, quiet, read_probe};
use crate::readiness::{POLL_MAX, READY_GOAL, READY_P50_GOAL, READY_P99_GOAL, STAGGER, phases};
use crate::report::{Summary, ms};
use fake_sidecar::listeners::LatePort;
use fake_sidecar::{Xorshift, mono_ns};
use std::fs;
use std::io::{self, ErrorKind, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How long after tandem starts each kind turns ready (plus 0–`POLL_MAX`).
const WAIT: Duration = Duration::from_millis(500);
/// The stat-family system calls, as strace names them on x86_64 and aarch64.
const STAT_CALLS: &str = "trace=stat,lstat,fstat,newfstatat,fstatat64,statx";

/// What turns ready in one run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tcp,
    File,
}

/// One run's sidecar: a port that opens late, or a file that appears late.
enum Target {
    Port(LatePort),
    File(PathBuf),
}

impl Bench {
    /// Figure 4, `tcp://` and `file://`: latency from ready to the app, and the
    /// cost of a poll.
    pub(crate) fn readiness_kinds(&mut self) -> io::Result<()> {
        let (samples, batch) = self.plan.kind_runs;
        let mut seed = Xorshift::new(mono_ns());
        for kind in [Kind::Tcp, Kind::File] {
            let phases = phases(samples, &mut seed);
            let mut latencies = Vec::new();
            let mut connections = Vec::new();
            let mut bytes = 0;
            while latencies.len() < samples {
                let n = batch.min(samples - latencies.len());
                let mut runs = Vec::new();
                for k in 0..n {
                    let at = WAIT + POLL_MAX.mul_f64(phases[latencies.len() + k]);
                    runs.push(self.start_kind_run(kind, at)?);
                    thread::sleep(STAGGER);
                }
                for (mut child, trigger, file) in runs {
                    let status = child.wait()?;
                    let (ready, listener) = trigger
                        .join()
                        .map_err(|_| io::Error::other("trigger thread panicked"))??;
                    let record = read_probe(&file)?;
                    let Some(start) = record.get("start") else {
                        return Err(io::Error::other(format!(
                            "kind readiness run produced no start record (tandem: {status})"
                        )));
                    };
                    latencies.push(start.saturating_sub(ready) as f64);
                    if let Some(listener) = listener {
                        let (opened, sent) = drain(&listener)?;
                        connections.push(opened as f64);
                        bytes += sent;
                    }
                }
            }
            let s = Summary::of(&latencies);
            let (name, what) = match kind {
                Kind::Tcp => ("tcp://", "port opening"),
                Kind::File => ("file://", "appearing"),
            };
            self.row(
                &format!(
                    "4 readiness, {name} {what} after {} ms, p50 / p99 (n={samples})",
                    WAIT.as_millis()
                ),
                format!("{} / {}", ms(s.p50), ms(s.p99)),
                "0".to_owned(),
                READY_GOAL,
                Some(s.p50 <= READY_P50_GOAL && s.p99 <= READY_P99_GOAL),
            );
            if kind == Kind::Tcp {
                let c = Summary::of(&connections);
                self.row(
                    "4 tcp:// connections a wait opens (max) / bytes sent on them",
                    format!("{:.0} / {bytes}", c.max),
                    "—".to_owned(),
                    "1 / 0",
                    Some(c.max <= 1.0 && bytes == 0),
                );
            }
        }
        self.notes.push(format!(
            "tcp:// and file://: the port starts listening (bound from the start, so \
             refused until then) or the file is created {} ms + 0–{} ms after tandem \
             starts, spread over the poll cycle as for HTTP, up to {} runs at once; ready \
             = the harness's clock just before listen() or open(); connections counted \
             from the listener's backlog after each run",
            WAIT.as_millis(),
            POLL_MAX.as_millis(),
            self.plan.kind_runs.1
        ));
        self.stat_calls_per_poll()
    }

    /// Starts tandem waiting for a `kind` that turns ready `at` after now, with a
    /// thread that makes it ready; the thread returns the ready moment (and, for a
    /// port, the listener, so its connections can be counted).
    #[allow(clippy::type_complexity, reason = "one tuple, used once")]
    fn start_kind_run(
        &mut self,
        kind: Kind,
        at: Duration,
    ) -> io::Result<(
        std::process::Child,
        thread::JoinHandle<io::Result<(u64, Option<TcpListener>)>>,
        PathBuf,
    )> {
        let file = self.scratch();
        let (check, target) = match kind {
            Kind::Tcp => {
                let port = LatePort::v4();
                (
                    format!("tcp://127.0.0.1:{}", port.port()),
                    Target::Port(port),
                )
            }
            Kind::File => {
                let flag = PathBuf::from(format!("{}.ready", file.display()));
                let absolute = std::path::absolute(&flag)?;
                (
                    format!("file://{}", absolute.display()),
                    Target::File(absolute),
                )
            }
        };
        let limit = format!("{}s", WAIT.as_secs() + 30);
        let started = Instant::now();
        let child = self
            .tandem(&[], &["--ready", &check, "--fail-timeout", &limit, "--"])
            .args([self.probe.as_str(), path_str(&file), "exit"])
            .spawn()?;
        let trigger = thread::spawn(move || {
            thread::sleep((started + at).saturating_duration_since(Instant::now()));
            let ready = mono_ns();
            match target {
                Target::Port(port) => Ok((ready, Some(port.into_listener()))),
                Target::File(path) => fs::write(&path, "").map(|()| (ready, None)),
            }
        });
        Ok((child, trigger, file))
    }

    /// What a file check costs a poll: the stat-family calls of a run that waits
    /// about a second, less those of a run ready at the first poll, over the polls
    /// between them (strace -f, every thread).
    fn stat_calls_per_poll(&mut self) -> io::Result<()> {
        if find_in_path("strace").is_none() || self.plan.strace_runs == 0 {
            self.notes
                .push("file:// stat calls: not counted, strace is not installed".to_owned());
            return Ok(());
        }
        let mut counts = Vec::new();
        for late in [None, Some(Duration::from_secs(1))] {
            let flag = std::path::absolute(self.scratch())?;
            if late.is_none() {
                fs::write(&flag, "")?;
            }
            let (calls, polls) = self.strace_file_wait(&flag, late)?;
            counts.push((calls, polls));
        }
        let [(calls_now, polls_now), (calls_late, polls_late)] = counts[..] else {
            return Err(io::Error::other("two strace runs expected"));
        };
        let per_poll = if polls_late > polls_now {
            (calls_late - calls_now) as f64 / (polls_late - polls_now) as f64
        } else {
            f64::NAN
        };
        self.row(
            "4 file:// check: stat calls a poll (strace -f)",
            format!("{per_poll:.2} ({calls_late} calls, {polls_late} polls)"),
            format!("{calls_now} calls, {polls_now} poll ready at once"),
            "≤ 1",
            Some(per_poll <= 1.0),
        );
        Ok(())
    }

    /// Runs tandem under strace waiting for `flag` (created `late` after the start
    /// when given): its stat-family calls and the polls its log reports.
    fn strace_file_wait(&mut self, flag: &Path, late: Option<Duration>) -> io::Result<(u64, u64)> {
        let out = self.scratch();
        let log = self.scratch();
        let mut cmd = Command::new("strace");
        cmd.args(["-f", "-c", "-e", STAT_CALLS, "-o"])
            .arg(&out)
            .arg("--")
            .arg(&self.args.tandem)
            .arg("--ready")
            .arg(format!("file://{}", flag.display()))
            .args(["--fail-timeout", "30s", "--"])
            .arg(&self.true_bin);
        quiet(&mut cmd, &[("TANDEM_LOG", "info".to_owned())]);
        cmd.stderr(Stdio::from(fs::File::create(&log)?));
        let mut child = cmd.spawn()?;
        if let Some(late) = late {
            thread::sleep(late);
            fs::write(flag, "")?;
        }
        if !child.wait()?.success() {
            return Err(io::Error::other("strace of a file:// wait failed"));
        }
        // "100.00  0.000123  1  211  3 total": calls is the fourth column.
        let calls = fs::read_to_string(&out)?
            .lines()
            .rev()
            .find(|l| l.trim_end().ends_with("total"))
            .and_then(|l| l.split_whitespace().nth(3)?.parse().ok())
            .ok_or_else(|| io::Error::other("strace -c printed no total"))?;
        // "sidecars ready after 1.0s (14 polls)"
        let polls = fs::read_to_string(&log)?
            .lines()
            .find_map(|l| {
                let (_, tail) = l.split_once(" (")?;
                tail.strip_suffix(" polls)")?.parse().ok()
            })
            .ok_or_else(|| io::Error::other("tandem logged no ready line"))?;
        Ok((calls, polls))
    }
}

/// The connections waiting in `listener`'s backlog, and the bytes they carried
/// before their peer closed them (tandem sends none and closes at once).
fn drain(listener: &TcpListener) -> io::Result<(usize, usize)> {
    listener.set_nonblocking(true)?;
    let (mut opened, mut sent) = (0, 0);
    loop {
        match listener.accept() {
            Ok((mut stream, _)) => {
                opened += 1;
                stream.set_nonblocking(false)?;
                stream.set_read_timeout(Some(Duration::from_secs(1)))?;
                let mut buf = [0u8; 256];
                loop {
                    match stream.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => sent += n,
                        Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
                        Err(e) => return Err(e),
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok((opened, sent)),
            Err(e) => return Err(e),
        }
    }
}
