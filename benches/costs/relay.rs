//! Figure 6, signal relay: SIGTERM to tandem until the app's handler runs, beside
//! SIGTERM to the app directly and through tini and dumb-init.

use crate::Bench;
use crate::process::{path_str, read_probe, wait_for_record};
use crate::report::{Summary, ms_summary};
use fake_sidecar::mono_ns;
use std::io;
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::Duration;

impl Bench {
    /// Figure 6: SIGTERM to tandem → the app's handler runs; floor: SIGTERM to the app.
    pub(crate) fn signal_relay(&mut self) -> io::Result<()> {
        let peers = self.peers.clone();
        // Slot 0: the app directly; 1: tandem; 2…: the peers.
        let mut latency = vec![Vec::new(); 2 + peers.len()];
        for _ in 0..self.plan.signal_pairs {
            let probe = self.probe.clone();
            let file = self.scratch();
            let cmd = self.direct(&probe, &[path_str(&file), "signal"]);
            latency[0].push(signal_once(cmd, &file)?);
            let file = self.scratch();
            let cmd = self.tandem(&[], &["--", &probe, path_str(&file), "signal"]);
            latency[1].push(signal_once(cmd, &file)?);
            for (k, peer) in peers.iter().enumerate() {
                let file = self.scratch();
                let cmd = peer.command(&[&probe, path_str(&file), "signal"]);
                latency[2 + k].push(signal_once(cmd, &file)?);
            }
        }
        let d = Summary::of(&latency[0]);
        let t = Summary::of(&latency[1]);
        let others: String = peers
            .iter()
            .enumerate()
            .map(|(k, p)| format!("; {} {}", p.name, ms_summary(&Summary::of(&latency[2 + k]))))
            .collect();
        self.row(
            "6 signal relay, SIGTERM → app handler",
            ms_summary(&t),
            format!("{} (to the app directly){others}", ms_summary(&d)),
            "≤ 0.1 ms median",
            Some(t.p50 <= 0.1e6),
        );
        self.notes.push(format!(
            "signal relay: {} rounds (the app directly, tandem{}), harness clock read just \
             before kill() to the probe's clock read inside its handler; median [p10–p90]",
            self.plan.signal_pairs,
            peers
                .iter()
                .map(|p| format!(", {}", p.name))
                .collect::<String>()
        ));
        Ok(())
    }
}

/// Starts a probe in `signal` mode, waits until its handler is in place, sends
/// SIGTERM to the process started (tandem or the probe) and returns the latency.
fn signal_once(mut cmd: Command, file: &Path) -> io::Result<f64> {
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    if let Err(err) = wait_for_record(file, "start", Duration::from_secs(10)) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(err);
    }
    // Give tandem a moment to be back in waitpid, as it would be in a long job.
    thread::sleep(Duration::from_millis(2));
    let sent = mono_ns();
    // SAFETY: kill takes plain integers; the child is not reaped yet, so the pid is ours.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    child.wait()?;
    let record = read_probe(file)?;
    let handled = record
        .get("signal")
        .ok_or_else(|| io::Error::other("the probe recorded no signal"))?;
    Ok(handled.saturating_sub(sent) as f64)
}
