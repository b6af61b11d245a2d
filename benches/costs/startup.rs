//! Figure 3, start-up: wall time and CPU of `tandem true` beside `true`, tini and
//! dumb-init, their system calls (strace), and hyperfine's second opinion.

use crate::Bench;
use crate::process::{find_in_path, quiet};
use crate::report::{Summary, ms, ms_summary};
use fake_sidecar::mono_ns;
use std::fs;
use std::io;
use std::process::Command;

/// Most system calls of `tandem true`, its child's included (`strace -f -c`):
/// BENCHMARKS.md's guard of 450. The older goal of ~300 is retired: the relay
/// is signal-hook's by design, and its registry's 56 registrations cost about 200.
const SYSCALL_GOAL: f64 = 450.0;
/// Most start-up CPU of `tandem true` as a multiple of tini's: BENCHMARKS.md's
/// guard (the older "no worse than tini's" is retired for the same reason).
const TINI_CPU_GUARD: f64 = 2.5;

impl Bench {
    /// Figure 3: `true`, `tandem true` and each peer's `true`, round robin, spawn
    /// to waitpid return; CPU (user + system, the child's included) from `wait4`.
    pub(crate) fn startup(&mut self) -> io::Result<()> {
        let true_bin = self.true_bin.clone();
        let peers = self.peers.clone();
        // Slot 0: `true`; 1: tandem; 2…: the peers.
        let mut wall = vec![Vec::new(); 2 + peers.len()];
        let mut cpu = vec![Vec::new(); 2 + peers.len()];
        for i in 0..self.plan.startup_warmup + self.plan.startup_pairs {
            let mut cmds = vec![self.direct(&true_bin, &[]), self.tandem(&[], &["true"])];
            cmds.extend(peers.iter().map(|p| p.command(&[&true_bin])));
            for (slot, cmd) in cmds.into_iter().enumerate() {
                let (w, c) = time_run(cmd)?;
                if i >= self.plan.startup_warmup {
                    wall[slot].push(w);
                    cpu[slot].push(c);
                }
            }
        }
        let d = Summary::of(&wall[0]);
        let t = Summary::of(&wall[1]);
        let added = t.p50 - d.p50;
        let beside = |each: &dyn Fn(usize) -> String| -> String {
            peers
                .iter()
                .enumerate()
                .map(|(k, p)| format!("; {} {}", p.name, each(2 + k)))
                .collect()
        };
        let pairs = self.plan.startup_pairs;
        self.row(
            "3 start-up, wall time",
            ms_summary(&t),
            format!(
                "{} (`true`){}",
                ms_summary(&d),
                beside(&|k| ms(Summary::of(&wall[k]).p50))
            ),
            "—",
            None,
        );
        self.row(
            "3 start-up, added",
            format!("+{} (×{:.1})", ms(added), t.p50 / d.p50),
            format!(
                "0{}",
                beside(&|k| format!("+{}", ms(Summary::of(&wall[k]).p50 - d.p50)))
            ),
            "≤ 1 ms median",
            Some(added <= 1e6),
        );
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let us = |ns: f64| format!("{:.0} µs", ns / 1e3);
        let floor_cpu = mean(&cpu[0]);
        let tandem_cpu = mean(&cpu[1]);
        let tini_cpu = peers
            .iter()
            .position(|p| p.name.starts_with("tini"))
            .map(|k| mean(&cpu[2 + k]));
        self.row(
            "3 start-up CPU, user + system a run (mean)",
            format!("{} (×{:.1})", us(tandem_cpu), tandem_cpu / floor_cpu),
            format!(
                "{} (`true`){}",
                us(floor_cpu),
                beside(&|k| format!("{} (×{:.1})", us(mean(&cpu[k])), mean(&cpu[k]) / floor_cpu))
            ),
            "≤ 2.5× tini's",
            tini_cpu.map(|tini| tandem_cpu <= TINI_CPU_GUARD * tini),
        );
        self.notes.push(format!(
            "start-up: {pairs} rounds of `true`, `tandem true`{} after {} warm-up rounds, \
             spawn to waitpid return, median [p10–p90]; CPU is wait4's ru_utime + ru_stime \
             (the process and its reaped child), mean",
            peers
                .iter()
                .map(|p| format!(", `{} true`", p.name))
                .collect::<String>(),
            self.plan.startup_warmup
        ));
        self.syscalls()?;
        if let Some(note) = self.hyperfine_cross_check()? {
            self.notes.push(note);
        }
        Ok(())
    }

    /// Figure 3: system calls of `true`, `tandem true` and the peers' `true`, child
    /// included, as `strace -f -c` counts them (median of a few runs: tandem's relay
    /// thread may or may not finish its registrations before `true` exits).
    fn syscalls(&mut self) -> io::Result<()> {
        if find_in_path("strace").is_none() || self.plan.strace_runs == 0 {
            self.notes
                .push("system calls: not counted, strace is not installed".to_owned());
            return Ok(());
        }
        let true_bin = self.true_bin.clone();
        let tandem = self.args.tandem.to_string_lossy().into_owned();
        let mut runs: Vec<(String, Vec<String>)> = vec![
            ("`true`".to_owned(), vec![true_bin.clone()]),
            ("tandem".to_owned(), vec![tandem, true_bin.clone()]),
        ];
        for peer in &self.peers {
            let mut argv = vec![peer.path.clone()];
            argv.extend(peer.prefix.iter().map(|a| (*a).to_owned()));
            argv.push(true_bin.clone());
            runs.push((peer.name.clone(), argv));
        }
        let mut counts = Vec::new();
        for (_, argv) in &runs {
            let mut samples = Vec::new();
            for _ in 0..self.plan.strace_runs {
                let out = self.scratch();
                let mut cmd = Command::new("strace");
                cmd.args(["-f", "-c", "-o"]).arg(&out).arg("--").args(argv);
                quiet(&mut cmd, &[]);
                if !cmd.status()?.success() {
                    // ptrace may be forbidden in some sandboxes: say so, do not stop.
                    self.notes
                        .push(format!("system calls: not counted, strace {argv:?} failed"));
                    return Ok(());
                }
                // "100.00  0.000123  1  211  3 total": calls is the fourth column.
                let text = fs::read_to_string(&out)?;
                let calls = text
                    .lines()
                    .rev()
                    .find(|l| l.trim_end().ends_with("total"))
                    .and_then(|l| l.split_whitespace().nth(3)?.parse::<f64>().ok())
                    .ok_or_else(|| io::Error::other("strace -c printed no total"))?;
                samples.push(calls);
            }
            counts.push(Summary::of(&samples));
        }
        let tandem = &counts[1];
        let others: String = runs
            .iter()
            .zip(&counts)
            .filter(|((name, _), _)| name != "tandem")
            .map(|((name, _), c)| format!("{name} {:.0}", c.p50))
            .collect::<Vec<_>>()
            .join("; ");
        self.row(
            "3 start-up, system calls (strace -f -c, child included)",
            format!("{:.0} [{:.0}–{:.0}]", tandem.p50, tandem.min, tandem.max),
            others,
            &format!("≤ {SYSCALL_GOAL:.0}"),
            Some(tandem.p50 <= SYSCALL_GOAL),
        );
        self.notes.push(format!(
            "system calls: strace -f -c, {} run(s) each, median [min–max]",
            self.plan.strace_runs
        ));
        Ok(())
    }

    /// Runs hyperfine (when installed) on the same two commands, for a second opinion.
    fn hyperfine_cross_check(&mut self) -> io::Result<Option<String>> {
        if find_in_path("hyperfine").is_none() || self.plan.hyperfine_runs == 0 {
            return Ok(None);
        }
        let csv = self.scratch();
        let tandem_true = format!("{} true", self.args.tandem.display());
        let mut cmd = Command::new("hyperfine");
        cmd.args(["-N", "--style", "none", "--warmup", "20", "--runs"])
            .arg(self.plan.hyperfine_runs.to_string())
            .arg("--export-csv")
            .arg(&csv)
            .arg(&self.true_bin)
            .arg(&tandem_true);
        quiet(&mut cmd, &[]);
        if !cmd.status()?.success() {
            return Ok(Some("cross-check: hyperfine failed".to_owned()));
        }
        let text = fs::read_to_string(&csv)?;
        // command,mean,stddev,median,user,system,min,max (seconds)
        let medians: Vec<f64> = text
            .lines()
            .skip(1)
            .filter_map(|line| line.split(',').nth(3)?.parse().ok())
            .collect();
        Ok(match medians.as_slice() {
            [floor, tandem] => Some(format!(
                "cross-check: hyperfine -N ({} runs each, not alternating) gives median {} for \
                 `true`, {} for `tandem true`: +{}",
                self.plan.hyperfine_runs,
                ms(floor * 1e9),
                ms(tandem * 1e9),
                ms((tandem - floor) * 1e9)
            )),
            _ => Some("cross-check: hyperfine wrote no medians".to_owned()),
        })
    }
}

/// Wall time of one run, from just before spawn to waitpid's return, and its CPU
/// time (user + system of the process and its reaped children), both in ns.
fn time_run(mut cmd: Command) -> io::Result<(f64, f64)> {
    let start = mono_ns();
    let child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; zeroed is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is this harness's unreaped child; status and usage are writable.
        let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if got == pid {
            break;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    let end = mono_ns();
    // Reaped above: std's Child is only dropped, never waited for again.
    drop(child);
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(io::Error::other(format!(
            "{cmd:?} failed: wait status {status}"
        )));
    }
    let ns = |tv: libc::timeval| tv.tv_sec as f64 * 1e9 + tv.tv_usec as f64 * 1e3;
    Ok((
        (end - start) as f64,
        ns(usage.ru_utime) + ns(usage.ru_stime),
    ))
}
