//! `make bench`: what tandem costs its users, measured beside the floor.
//!
//! ```text
//! cargo bench --bench costs -- --tandem PATH --probe PATH [--size-floor PATH]
//!       [--build TEXT] [--out DIR] [--markdown PATH] [--smoke]
//! ```
//!
//! Runs seven figures (size, peak RSS, start-up, readiness detection, release,
//! signal relay, idle cost) with the fake sidecar (`tests/fake-sidecar`) in this
//! process and `bench-probe` (`benches/probe`) as the app, then prints one table:
//! figure, tandem, floor, goal, met. Every timestamp is `CLOCK_MONOTONIC`
//! nanoseconds, read by the fake (request arrival, the moment it turns ready), the
//! probe (first instruction, exit, signal handler) and this harness (kill, waitpid
//! return), so they compare directly. `--smoke` is the short mode CI runs: few repetitions, no 30 s wait.
//! Numbers are reported, never asserted: the exit status is non-zero only when a
//! measurement could not be made at all.
//!
//! One module a figure: `footprint` (1 and 2), `startup` (3), `readiness` (4;
//! `kinds`: its `tcp://` and `file://` rows), `release` (5), `relay` (6), `idle` (7); `process` starts what is measured and
//! reads the probe's records, `report` makes the table.

mod footprint;
mod idle;
mod kinds;
mod process;
mod readiness;
mod relay;
mod release;
mod report;
mod startup;

use process::{absolute, find_in_path, quiet};
use report::{Row, describe_machine, markdown, text_table};
use std::fs;
use std::io;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// How many times each figure is measured.
struct Plan {
    rss_runs: usize,
    startup_pairs: usize,
    startup_warmup: usize,
    /// (wait, samples, concurrent runs per batch)
    ready_waits: Vec<(Duration, usize, usize)>,
    /// tcp:// and file:// readiness: (samples of each, concurrent runs per batch)
    kind_runs: (usize, usize),
    release_runs: usize,
    hang_runs: usize,
    strace_runs: usize,
    signal_pairs: usize,
    idle_runs: usize,
    idle_sleep: Duration,
    gnu_time_runs: usize,
    hyperfine_runs: usize,
}

impl Plan {
    fn full() -> Plan {
        Plan {
            rss_runs: 30,
            startup_pairs: 300,
            startup_warmup: 20,
            ready_waits: vec![
                (Duration::from_millis(500), 100, 10),
                (Duration::from_secs(5), 40, 20),
                (Duration::from_secs(30), 20, 20),
            ],
            kind_runs: (100, 10),
            release_runs: 20,
            hang_runs: 3,
            strace_runs: 5,
            signal_pairs: 100,
            idle_runs: 3,
            idle_sleep: Duration::from_secs(5),
            gnu_time_runs: 10,
            hyperfine_runs: 300,
        }
    }

    fn smoke() -> Plan {
        Plan {
            rss_runs: 3,
            startup_pairs: 20,
            startup_warmup: 3,
            ready_waits: vec![
                (Duration::from_millis(500), 10, 10),
                (Duration::from_secs(5), 4, 4),
            ],
            kind_runs: (10, 10),
            release_runs: 3,
            hang_runs: 1,
            strace_runs: 1,
            signal_pairs: 10,
            idle_runs: 1,
            idle_sleep: Duration::from_secs(2),
            gnu_time_runs: 2,
            hyperfine_runs: 20,
        }
    }
}

struct Args {
    tandem: PathBuf,
    probe: PathBuf,
    size_floor: Option<PathBuf>,
    build: String,
    out: PathBuf,
    markdown: Option<PathBuf>,
    smoke: bool,
}

/// Collects rows and notes, and hands out scratch file names.
struct Bench {
    args: Args,
    plan: Plan,
    rows: Vec<Row>,
    notes: Vec<String>,
    files: usize,
    /// Absolute paths of the probe and `true`.
    probe: String,
    true_bin: String,
    /// Other init-like prefixes measured side by side (those installed).
    peers: Vec<Peer>,
}

/// Another process supervisor, run as `PATH PREFIX… COMMAND…` like tandem.
#[derive(Clone)]
struct Peer {
    /// "tini 0.19.0".
    name: String,
    path: String,
    prefix: Vec<&'static str>,
}

impl Peer {
    /// tini (`-s`: a subreaper, as tandem is, and no warning off PID 1) and
    /// dumb-init, Debian's packages, when found in `PATH`.
    fn installed() -> Vec<Peer> {
        let mut peers = Vec::new();
        for (bin, prefix) in [("tini", vec!["-s", "--"]), ("dumb-init", vec![])] {
            let Some(path) = find_in_path(bin) else {
                continue;
            };
            let version = Command::new(&path)
                .arg("--version")
                .output()
                .map(|out| {
                    let text = String::from_utf8_lossy(&out.stdout).into_owned()
                        + &String::from_utf8_lossy(&out.stderr);
                    text.split_whitespace()
                        .last()
                        .unwrap_or("?")
                        .trim_start_matches('v')
                        .to_owned()
                })
                .unwrap_or_else(|_| "?".to_owned());
            peers.push(Peer {
                name: format!("{bin} {version}"),
                path,
                prefix,
            });
        }
        peers
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.args(&self.prefix).args(args);
        quiet(&mut cmd, &[]);
        cmd
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("bench: {message}");
            eprintln!(
                "usage: cargo bench --bench costs -- --tandem PATH --probe PATH \
                 [--size-floor PATH] [--build TEXT] [--out DIR] [--markdown PATH] [--smoke]"
            );
            return ExitCode::from(64);
        }
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("bench: {err}");
            ExitCode::FAILURE
        }
    }
}

fn parse_args() -> Result<Args, String> {
    let mut parsed = Args {
        tandem: PathBuf::new(),
        probe: PathBuf::new(),
        size_floor: None,
        build: "release".to_owned(),
        out: PathBuf::from("target/bench"),
        markdown: None,
        smoke: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--tandem" => parsed.tandem = value()?.into(),
            "--probe" => parsed.probe = value()?.into(),
            "--size-floor" => parsed.size_floor = Some(value()?.into()),
            "--build" => parsed.build = value()?,
            "--out" => parsed.out = value()?.into(),
            "--markdown" => parsed.markdown = Some(value()?.into()),
            "--smoke" => parsed.smoke = true,
            // `cargo bench` adds it to the arguments after `--`.
            "--bench" => {}
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    if parsed.tandem.as_os_str().is_empty() || parsed.probe.as_os_str().is_empty() {
        return Err("--tandem and --probe are required".to_owned());
    }
    Ok(parsed)
}

fn run(args: Args) -> io::Result<()> {
    let started = Instant::now();
    let plan = if args.smoke {
        Plan::smoke()
    } else {
        Plan::full()
    };
    let tmp = args.out.join("tmp");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    let probe = absolute(&args.probe)?;
    let true_bin = find_in_path("true").ok_or_else(|| io::Error::other("no `true` in PATH"))?;
    let machine = describe_machine(&args);
    eprintln!("bench: {}", machine.replace('\n', "; "));
    let mut bench = Bench {
        args,
        plan,
        rows: Vec::new(),
        notes: Vec::new(),
        files: 0,
        probe,
        true_bin,
        peers: Peer::installed(),
    };
    if bench.peers.len() < 2 {
        bench.notes.push(
            "tini or dumb-init is not installed (`make bench-deps` installs Debian's): \
             its columns are missing"
                .to_owned(),
        );
    }
    type Step = fn(&mut Bench) -> io::Result<()>;
    let steps: [(&str, Step); 10] = [
        ("1 binary size", Bench::size),
        ("2 peak RSS", Bench::peak_rss),
        ("3 start-up", Bench::startup),
        ("4 readiness detection", Bench::readiness),
        ("4 readiness, tcp:// and file://", Bench::readiness_kinds),
        ("4 readiness, real Envoy", Bench::readiness_real_envoy),
        ("5 release", Bench::release),
        ("5 quit bound", Bench::quit_bound),
        ("6 signal relay", Bench::signal_relay),
        ("7 idle cost", Bench::idle),
    ];
    for (name, step) in steps {
        let at = Instant::now();
        eprintln!("bench: {name} …");
        step(&mut bench)?;
        eprintln!("bench: {name} done in {:.1} s", at.elapsed().as_secs_f64());
    }
    let load_after = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut footer = format!(
        "load average after: {}\nwall time: {:.0} s{}",
        load_after
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
        started.elapsed().as_secs_f64(),
        if bench.args.smoke {
            " (smoke mode: few repetitions, no 30 s wait; not for quoting)"
        } else {
            ""
        }
    );
    for note in &bench.notes {
        footer += &format!("\nnote: {note}");
    }
    println!("{}", text_table(&bench.rows));
    println!("{machine}\n{footer}");
    if let Some(path) = &bench.args.markdown {
        fs::write(path, markdown(&machine, &bench.rows, &footer))?;
        eprintln!("bench: wrote {}", path.display());
    }
    let _ = fs::remove_dir_all(&tmp);
    Ok(())
}

impl Bench {
    /// A fresh scratch file name for one probe run.
    fn scratch(&mut self) -> PathBuf {
        self.files += 1;
        self.args
            .out
            .join("tmp")
            .join(format!("probe-{}", self.files))
    }

    /// `tandem ARGS…` with an empty environment plus `PATH` and `env`, stdio closed.
    fn tandem(&self, env: &[(&str, String)], args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.args.tandem);
        cmd.args(args);
        quiet(&mut cmd, env);
        cmd
    }

    /// The probe run directly (the floor) with the same environment rules.
    fn direct(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args);
        quiet(&mut cmd, &[]);
        cmd
    }

    fn row(&mut self, figure: &str, tandem: String, floor: String, goal: &str, met: Option<bool>) {
        self.rows.push(Row {
            figure: figure.to_owned(),
            tandem,
            floor,
            goal: goal.to_owned(),
            met,
        });
    }
}
