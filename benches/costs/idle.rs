//! Figure 7, idle cost: tandem's CPU time, context switches and threads while the
//! app sleeps, from `/proc/PID/task/*`.

use crate::Bench;
use crate::process::{path_str, wait_for_record};
use crate::report::Summary;
use fake_sidecar::{FakeAdmin, Script, mono_ns};
use std::collections::HashMap;
use std::fs;
use std::io;
use std::thread;
use std::time::Duration;

impl Bench {
    /// Figure 7: tandem's CPU time, context switches and threads while the app sleeps.
    pub(crate) fn idle(&mut self) -> io::Result<()> {
        let sleep = self.plan.idle_sleep;
        let secs = format!("{}", sleep.as_secs_f64());
        // Every run goes at once: they are all asleep, and 5 s is 5 s.
        let mut runs = Vec::new();
        let mut fakes = Vec::new();
        for _ in 0..self.plan.idle_runs {
            for sidecar in [false, true] {
                let file = self.scratch();
                let env = if sidecar {
                    let fake = FakeAdmin::start(Script::envoy())?;
                    let env = vec![("ENVOY_ADMIN_API", fake.url())];
                    fakes.push(fake);
                    env
                } else {
                    Vec::new()
                };
                let child = self
                    .tandem(&env, &["--", &self.probe, path_str(&file), "sleep", &secs])
                    .spawn()?;
                runs.push((sidecar, child, file));
            }
        }
        let mut starts = Vec::new();
        for (_, _, file) in &runs {
            starts.push(wait_for_record(file, "start", Duration::from_secs(10))?);
        }
        // Let tandem settle (the readiness poller ends after the app starts).
        thread::sleep(Duration::from_millis(300));
        let before: Vec<TaskSample> = runs.iter().map(|(_, c, _)| sample_tasks(c.id())).collect();
        let window_start = mono_ns();
        let first_start = starts.iter().copied().min().unwrap_or(window_start);
        let end = first_start + sleep.as_nanos() as u64 - 300_000_000;
        thread::sleep(Duration::from_nanos(end.saturating_sub(mono_ns())));
        let after: Vec<TaskSample> = runs.iter().map(|(_, c, _)| sample_tasks(c.id())).collect();
        let window = mono_ns() - window_start;
        let mut results: [Vec<(f64, f64, f64)>; 2] = [Vec::new(), Vec::new()];
        for (((sidecar, child, _), b), a) in runs.iter_mut().zip(&before).zip(&after) {
            child.wait()?;
            let (cpu, switches) = a.since(b);
            results[usize::from(*sidecar)].push((cpu, switches, a.threads.len() as f64));
        }
        drop(fakes);
        for (slot, name) in ["no sidecar", "ready sidecar"].into_iter().enumerate() {
            let cpu = Summary::of(&results[slot].iter().map(|r| r.0).collect::<Vec<_>>());
            let sw = Summary::of(&results[slot].iter().map(|r| r.1).collect::<Vec<_>>());
            let th = Summary::of(&results[slot].iter().map(|r| r.2).collect::<Vec<_>>());
            self.row(
                &format!("7 idle, {name}: CPU / switches / threads"),
                format!(
                    "{:.0} µs / {:.0} / {:.0} (max {:.0} µs / {:.0} / {:.0})",
                    cpu.p50 / 1e3,
                    sw.p50,
                    th.p50,
                    cpu.max / 1e3,
                    sw.max,
                    th.max
                ),
                "0 µs / 0 / 1".to_owned(),
                "0 wake-ups",
                Some(sw.max == 0.0),
            );
        }
        self.notes.push(format!(
            "idle: {} run(s) of each, all at once; counted over {:.1} s of the app's {} s sleep \
             from /proc/PID/task/*/schedstat (CPU ns) and status (voluntary + involuntary \
             context switches); threads counted at the end of the window",
            self.plan.idle_runs,
            window as f64 / 1e9,
            sleep.as_secs_f64()
        ));
        Ok(())
    }
}

/// Per-thread CPU time (ns) and context switches of one process at one moment.
struct TaskSample {
    threads: HashMap<String, (f64, f64)>,
}

impl TaskSample {
    /// CPU ns and context switches since `before`, over the threads alive now.
    fn since(&self, before: &TaskSample) -> (f64, f64) {
        let mut cpu = 0.0;
        let mut switches = 0.0;
        for (tid, (c, s)) in &self.threads {
            let (c0, s0) = before.threads.get(tid).copied().unwrap_or((0.0, 0.0));
            cpu += c - c0;
            switches += s - s0;
        }
        (cpu, switches)
    }
}

fn sample_tasks(pid: u32) -> TaskSample {
    let mut threads = HashMap::new();
    let dir = format!("/proc/{pid}/task");
    for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
        let tid = entry.file_name().to_string_lossy().into_owned();
        let base = entry.path();
        let cpu = fs::read_to_string(base.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
            .unwrap_or(0.0);
        let status = fs::read_to_string(base.join("status")).unwrap_or_default();
        let switches: f64 = status
            .lines()
            .filter(|l| {
                l.starts_with("voluntary_ctxt_switches")
                    || l.starts_with("nonvoluntary_ctxt_switches")
            })
            .filter_map(|l| l.split(':').nth(1)?.trim().parse::<f64>().ok())
            .sum();
        threads.insert(tid, (cpu, switches));
    }
    TaskSample { threads }
}
