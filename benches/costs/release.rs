//! Figure 5, release: from the app's exit to the quit requests and to tandem's own
//! exit, with endpoints that answer late and endpoints that never answer.

use crate::Bench;
use crate::process::{path_str, read_probe};
use crate::report::{Summary, ms, ms_summary};
use fake_sidecar::{FakeAdmin, Fault, Script, mono_ns};
use std::io;
use std::time::Duration;

/// The quit phase ends within this of its bound, whatever the endpoints do.
const QUIT_BOUND_SLACK: Duration = Duration::from_millis(20);
/// tandem's default quit bound (`--quit-timeout`).
const QUIT_BOUND: Duration = Duration::from_secs(5);
/// How late each quit endpoint answers in figure 5.
const QUIT_DELAY: Duration = Duration::from_millis(200);

impl Bench {
    /// Figure 5: app exit → quit request arrival and → tandem's exit, with 1 and 5
    /// generic quit endpoints that each answer 200 ms late.
    pub(crate) fn release(&mut self) -> io::Result<()> {
        let mut first = [Vec::new(), Vec::new()];
        let mut last = [Vec::new(), Vec::new()];
        let mut exit = [Vec::new(), Vec::new()];
        for _ in 0..self.plan.release_runs {
            for (slot, endpoints) in [1usize, 5].into_iter().enumerate() {
                let fakes = (0..endpoints)
                    .map(|_| FakeAdmin::start(Script::generic().delay(QUIT_DELAY)))
                    .collect::<io::Result<Vec<_>>>()?;
                let mut args: Vec<String> = Vec::new();
                for fake in &fakes {
                    args.push("--quit".to_owned());
                    args.push(format!("{}/quitquitquit", fake.url()));
                }
                let file = self.scratch();
                args.extend(["--".to_owned(), self.probe.clone()]);
                args.extend([path_str(&file).to_owned(), "exit".to_owned()]);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let mut child = self.tandem(&[], &args).spawn()?;
                child.wait()?;
                let ended = mono_ns();
                let record = read_probe(&file)?;
                let app_exit = *record
                    .get("exit")
                    .ok_or_else(|| io::Error::other("release run produced no exit record"))?;
                let arrivals: Vec<u64> = fakes
                    .iter()
                    .filter_map(|f| {
                        f.requests()
                            .iter()
                            .find(|r| r.method == "POST")
                            .map(|r| r.mono_ns)
                    })
                    .collect();
                if arrivals.len() != endpoints {
                    return Err(io::Error::other(format!(
                        "{} of {endpoints} quit requests arrived",
                        arrivals.len()
                    )));
                }
                let min = *arrivals.iter().min().unwrap_or(&app_exit);
                let max = *arrivals.iter().max().unwrap_or(&app_exit);
                first[slot].push(min.saturating_sub(app_exit) as f64);
                last[slot].push(max.saturating_sub(app_exit) as f64);
                exit[slot].push(ended.saturating_sub(app_exit) as f64);
            }
        }
        let delay = QUIT_DELAY.as_nanos() as f64;
        let one_exit = Summary::of(&exit[0]);
        for (slot, endpoints) in [1usize, 5].into_iter().enumerate() {
            let arrival = if endpoints == 1 {
                Summary::of(&first[slot])
            } else {
                Summary::of(&last[slot])
            };
            let (which, label) = if endpoints == 1 {
                ("the", "1 endpoint".to_owned())
            } else {
                ("the last", format!("{endpoints} endpoints"))
            };
            self.row(
                &format!("5 release, {label}: app exit → {which} quit arrives"),
                ms_summary(&arrival),
                "0".to_owned(),
                "—",
                None,
            );
            let s = Summary::of(&exit[slot]);
            let (goal, met) = if endpoints == 1 {
                ("—", None)
            } else {
                (
                    "≈ 1 endpoint's (≤ +20 ms)",
                    Some(s.p50 <= one_exit.p50 + 20e6),
                )
            };
            self.row(
                &format!("5 release, {label}: app exit → tandem exits"),
                ms_summary(&s),
                format!("{} (one delay)", ms(delay)),
                goal,
                met,
            );
        }
        self.notes.push(format!(
            "release: {} runs per endpoint count, alternating; each endpoint answers {} ms \
             after the request arrives; median [p10–p90]",
            self.plan.release_runs,
            QUIT_DELAY.as_millis()
        ));
        Ok(())
    }

    /// Figure 5: the quit phase against endpoints that never answer, the default
    /// bound: a generic endpoint and Envoy's `/quitquitquit` both hang, so both the
    /// concurrent requests and the Istio/Envoy stop run into the deadline.
    pub(crate) fn quit_bound(&mut self) -> io::Result<()> {
        let mut ends = Vec::new();
        for _ in 0..self.plan.hang_runs {
            let generic = FakeAdmin::start(Script::generic().fault(Fault::Hang))?;
            let envoy = FakeAdmin::start(Script::envoy().fault_on("/quitquitquit", Fault::Hang))?;
            let file = self.scratch();
            let quit = format!("{}/quitquitquit", generic.url());
            let env = [("ENVOY_ADMIN_API", envoy.url())];
            let mut child = self
                .tandem(
                    &env,
                    &["--quit", &quit, "--", &self.probe, path_str(&file), "exit"],
                )
                .spawn()?;
            child.wait()?;
            let ended = mono_ns();
            let record = read_probe(&file)?;
            let app_exit = *record
                .get("exit")
                .ok_or_else(|| io::Error::other("quit-bound run produced no exit record"))?;
            ends.push(ended.saturating_sub(app_exit) as f64);
        }
        let s = Summary::of(&ends);
        let limit = (QUIT_BOUND + QUIT_BOUND_SLACK).as_nanos() as f64;
        self.row(
            "5 quit phase, hanging endpoints: app exit → tandem exits",
            format!("{} [{}–{}]", ms(s.p50), ms(s.min), ms(s.max)),
            format!("{} (the default bound)", ms(QUIT_BOUND.as_nanos() as f64)),
            &format!("≤ bound + {} ms", QUIT_BOUND_SLACK.as_millis()),
            Some(s.max <= limit),
        );
        self.notes.push(format!(
            "quit bound: {} run(s); a generic endpoint and Envoy's /quitquitquit read the \
             request and never answer; default --quit-timeout; median [min–max]",
            self.plan.hang_runs
        ));
        Ok(())
    }
}
