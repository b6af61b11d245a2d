//! Waiting for readiness (SPEC §3): whether to wait at all, then a poller thread
//! that checks every sidecar with a capped backoff while the main thread waits
//! for the first of "ready", a terminating signal or a timeout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ureq::Agent;

use crate::config::{Check, ReadyConfig};
use crate::event::{Channel, Event, Events, Sender};
use crate::exit::Outcome;
use crate::http;
use crate::log::{self, Field};
use crate::signals::TERMINATING;

/// How the wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WaitEnd {
    /// Every check passed.
    Ready,
    /// `--wait-timeout` elapsed: start the app anyway.
    TimedOut,
    /// `--fail-timeout` elapsed: do not start the app.
    Failed,
    /// A terminating signal arrived.
    Interrupted(i32),
}

/// First interval between polls; it grows ×1.5 up to `poll_max`.
const FIRST_INTERVAL: Duration = Duration::from_millis(10);
/// First progress line after this long, then one every `PROGRESS_EVERY`.
const FIRST_PROGRESS: Duration = Duration::from_secs(2);
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// 404s in a row after which the progress line calls the URL wrong.
const NOT_FOUND_HINT_AFTER: u32 = 3;

/// Waits for the sidecars as `cfg` says (SPEC §3): `Ok` when the app (or the
/// caller) may go on, ready or after `--wait-timeout`; else how the run ends,
/// logged here. `app_follows` only words the `--fail-timeout` line.
///
/// `channel` carries signals from the relay; its sender is lent to the poller.
pub fn wait(cfg: &ReadyConfig, channel: &Channel, app_follows: bool) -> Result<(), Outcome> {
    if cfg.checks.is_empty() {
        return Ok(());
    }
    if !cfg.wait {
        log::info!("--no-wait/START_WITHOUT_ENVOY: not waiting for the sidecars");
        return Ok(());
    }
    let answers = Arc::new(Mutex::new(String::from("none yet")));
    let end = wait_until_ready(cfg, &channel.events, &channel.sender, &answers);
    // The poller may still hold the lock for one round; a poisoned one still has text.
    let last = answers
        .lock()
        .map_or_else(|p| p.into_inner().clone(), |a| a.clone());
    match end {
        WaitEnd::Ready => Ok(()),
        WaitEnd::TimedOut => {
            let limit = log::human(cfg.wait_timeout.unwrap_or_default());
            log::warning!(
                "sidecars not ready within {limit} (--wait-timeout/WAIT_FOR_ENVOY_TIMEOUT): starting the app anyway"
            );
            Ok(())
        }
        WaitEnd::Failed => {
            let then = if app_follows {
                ": not starting the app"
            } else {
                ""
            };
            let limit = log::human(cfg.fail_timeout.unwrap_or_default());
            let line = format!(
                "sidecars not ready within {limit} (--fail-timeout/QUIT_WITHOUT_ENVOY_TIMEOUT){then}"
            );
            log::error!("{line}");
            Err(Outcome::NotReady(format!("{line}; last answers: {last}")))
        }
        WaitEnd::Interrupted(sig) => Err(Outcome::Interrupted(sig)),
    }
}

/// `--wait-only` (SPEC §1): the same wait, with nothing to start after it; done
/// (exit 0) when ready or after `--wait-timeout`.
pub fn wait_only(cfg: &ReadyConfig, channel: &Channel) -> Outcome {
    wait(cfg, channel, false)
        .err()
        .unwrap_or(Outcome::Exited(0))
}

/// Polls until every check passes or the wait is cut short.
fn wait_until_ready(
    cfg: &ReadyConfig,
    events: &Events,
    sender: &Sender,
    answers: &Arc<Mutex<String>>,
) -> WaitEnd {
    let start = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (checks, poll_max, stop, sender, answers) = (
            cfg.checks.clone(),
            cfg.poll_max,
            Arc::clone(&stop),
            sender.clone(),
            Arc::clone(answers),
        );
        thread::Builder::new()
            .name("readiness".into())
            .spawn(move || poll_until_ready(checks, poll_max, &stop, &sender, start, &answers))
    };
    let poller = match poller {
        Ok(p) => p,
        Err(e) => {
            log::error!("cannot start the readiness poller: {e}");
            return WaitEnd::Failed;
        }
    };
    // QUIT_WITHOUT_ENVOY_TIMEOUT takes precedence over WAIT_FOR_ENVOY_TIMEOUT (SPEC §2).
    let (limit, on_limit) = match (cfg.fail_timeout, cfg.wait_timeout) {
        (Some(d), _) => (Some(d), WaitEnd::Failed),
        (None, Some(d)) => (Some(d), WaitEnd::TimedOut),
        (None, None) => (None, WaitEnd::Ready),
    };
    let outcome = loop {
        let event = match limit {
            Some(limit) => events.recv_timeout(limit.saturating_sub(start.elapsed())),
            None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match event {
            Ok(Event::Ready) => break WaitEnd::Ready,
            Ok(Event::Signal(sig)) if TERMINATING.contains(&sig) => {
                log::info!("signal {sig} while waiting for the sidecars: giving up");
                break WaitEnd::Interrupted(sig);
            }
            Ok(Event::Signal(sig)) => log::debug!("ignoring signal {sig}: the app has not started"),
            Err(RecvTimeoutError::Timeout) => break on_limit,
            // Cannot happen while the caller holds `sender`; if it did, nothing could
            // ever report "ready", so this is a failed wait, not an endless one.
            Err(RecvTimeoutError::Disconnected) => break WaitEnd::Failed,
        }
    };
    stop.store(true, Ordering::Relaxed);
    poller.thread().unpark();
    if matches!(outcome, WaitEnd::Ready | WaitEnd::TimedOut) {
        // The app must start beside the relay thread only (SPEC §4). After Ready the
        // poller has already returned; after a timeout it may finish one request (≤ 1 s).
        let _ = poller.join();
    }
    outcome
}

/// The state of one check between polls.
struct Probe {
    check: Check,
    ready: bool,
    /// `/ready` answered 404 once: ask `/server_info` directly from then on.
    old_envoy: bool,
    last: String,
    /// Polls in a row answered 404 (for Envoy: `/ready` and `/server_info` both).
    not_found: u32,
}

fn poll_until_ready(
    checks: Vec<Check>,
    poll_max: Duration,
    stop: &AtomicBool,
    sender: &Sender,
    start: Instant,
    answers: &Mutex<String>,
) {
    let agent = http::agent();
    let mut probes: Vec<Probe> = checks
        .into_iter()
        .map(|check| Probe {
            check,
            ready: false,
            old_envoy: false,
            last: "not asked yet".into(),
            not_found: 0,
        })
        .collect();
    log::info!("waiting for {}", describe(&probes, false));
    let mut interval = FIRST_INTERVAL;
    let mut polls: u64 = 0;
    let mut next_progress = start + FIRST_PROGRESS;
    while !stop.load(Ordering::Relaxed) {
        polls += 1;
        for probe in probes.iter_mut().filter(|p| !p.ready) {
            poll(&agent, probe);
        }
        if let Ok(mut last) = answers.lock() {
            *last = describe(&probes, true);
        }
        if probes.iter().all(|p| p.ready) {
            log_ready(start.elapsed(), polls);
            let _ = sender.send(Event::Ready);
            return;
        }
        if Instant::now() >= next_progress {
            log::info!(
                "still waiting after {} ({polls} polls): {}",
                log::human(start.elapsed()),
                describe(&probes, true)
            );
            next_progress += PROGRESS_EVERY;
        }
        // Parked, not slept, so an abandoned wait ends the poller at once.
        thread::park_timeout(interval);
        interval = (interval * 3 / 2).min(poll_max);
    }
}

/// The "ready" line, with how long it took.
fn log_ready(waited: Duration, polls: u64) {
    let int = |n: u128| Field::Int(i64::try_from(n).unwrap_or(i64::MAX));
    log::event(
        log::Level::Info,
        format_args!(
            "sidecars ready after {} ({polls} polls)",
            log::human(waited)
        ),
        &[
            ("waited_ms", int(waited.as_millis())),
            ("polls", int(u128::from(polls))),
        ],
    );
}

fn describe(probes: &[Probe], with_answers: bool) -> String {
    let parts: Vec<String> = probes
        .iter()
        .map(|p| {
            let name = match &p.check {
                Check::Envoy(admin) => format!("envoy {}", admin.redacted()),
                Check::Url(url) => url.redacted(),
            };
            if !with_answers {
                name
            } else if p.not_found >= NOT_FOUND_HINT_AFTER {
                // A starting sidecar answers 503 or refuses; 404 means nothing
                // there has that path: a wrong URL or port (SPEC §3, issue 10).
                let check = match &p.check {
                    Check::Envoy(_) => "ENVOY_ADMIN_API/--admin (the admin base URL, no path)",
                    Check::Url(_) => "TANDEM_READY_URLS/--ready, or the --mesh preset's port",
                };
                format!(
                    "{name}: {} (probably the wrong URL or port, not a sidecar still starting: check {check})",
                    p.last
                )
            } else {
                format!("{name}: {}", p.last)
            }
        })
        .collect();
    parts.join(", ")
}

fn poll(agent: &Agent, probe: &mut Probe) {
    let answer = match &probe.check {
        Check::Url(url) => http::get_status(agent, &url.raw).map(|s| ((200..300).contains(&s), s)),
        Check::Envoy(admin) if !probe.old_envoy => {
            match http::get_status(agent, &admin.join("/ready")) {
                Ok(404) => {
                    log::debug!(
                        "{}/ready answered 404: asking /server_info",
                        admin.redacted()
                    );
                    probe.old_envoy = true;
                    server_info_live(agent, &admin.join("/server_info"))
                }
                other => other.map(|s| (s == 200, s)),
            }
        }
        Check::Envoy(admin) => server_info_live(agent, &admin.join("/server_info")),
    };
    match answer {
        Ok((ready, status)) => {
            probe.ready = ready;
            probe.last = status.to_string();
            probe.not_found = if status == 404 {
                probe.not_found + 1
            } else {
                0
            };
        }
        Err(failure) => {
            probe.last = failure.what;
            probe.not_found = 0;
        }
    }
    log::debug!(
        "poll {}: {}",
        describe(std::slice::from_ref(probe), false),
        probe.last
    );
}

/// Envoy before `/ready`: ready when `/server_info` says `"state": "LIVE"`.
fn server_info_live(agent: &Agent, url: &str) -> Result<(bool, u16), http::Failure> {
    let (status, body) = http::get_text(agent, url)?;
    Ok((status == 200 && json_state(&body) == Some("LIVE"), status))
}

/// The string value of the top-level-looking `"state"` key, found without a JSON
/// library: Envoy prints `"state": "LIVE"` once, and its value has no escapes.
/// Public for the fuzzer (`fuzz/bodies.rs`), which feeds it arbitrary bodies.
pub fn json_state(body: &str) -> Option<&str> {
    let after_key = &body[body.find("\"state\"")? + "\"state\"".len()..];
    let after_colon = after_key.trim_start().strip_prefix(':')?.trim_start();
    let value = after_colon.strip_prefix('"')?;
    Some(&value[..value.find('"')?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_info_state_is_read_from_envoy_json() {
        let live = "{\n \"version\": \"abc/1.0\",\n \"state\": \"LIVE\",\n \"uptime\": \"3s\"\n}";
        assert_eq!(json_state(live), Some("LIVE"));
        assert_eq!(
            json_state("{\"state\":\"PRE_INITIALIZING\"}"),
            Some("PRE_INITIALIZING")
        );
        for bad in [
            "",
            "{}",
            "{\"state\": LIVE}",
            "{\"state\"",
            "{\"state\": \"LIVE",
            "\u{0}\"state\":",
        ] {
            assert_ne!(json_state(bad), Some("LIVE"), "{bad:?}");
        }
    }

    #[test]
    fn backoff_reaches_poll_max_and_stays_there() {
        let poll_max = Duration::from_millis(250);
        let mut interval = FIRST_INTERVAL;
        let mut total = Duration::ZERO;
        for _ in 0..100 {
            total += interval;
            interval = (interval * 3 / 2).min(poll_max);
        }
        assert_eq!(interval, poll_max);
        assert!(total < Duration::from_secs(30));
    }
}
