//! The readiness poller thread (SPEC §3): every check polled with a capped
//! backoff, HTTP over one kept-alive connection, Envoy's `/ready` with its
//! `/server_info` fallback, the other kinds through `probe`; and the progress
//! lines naming each last answer.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use ureq::Agent;

use crate::event::{Event, Sender};
use crate::http;
use crate::settings::Check;
use crate::value::duration;

use super::probe;

/// First interval between polls; it grows ×1.5 up to `poll_max`.
const FIRST_INTERVAL: Duration = Duration::from_millis(10);
/// First progress line after this long, then one every `PROGRESS_EVERY`.
const FIRST_PROGRESS: Duration = Duration::from_secs(2);
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// 404s in a row after which the progress line calls the URL wrong.
const NOT_FOUND_HINT_AFTER: u32 = 3;

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

/// Polls every check until all pass (then sends `Event::Ready`) or `stop` is set.
pub(super) fn poll_until_ready(
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
                duration::format(start.elapsed()),
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
    let waited_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
    log::info!(
        waited_ms, polls;
        "sidecars ready after {} ({polls} polls)",
        duration::format(waited)
    );
}

fn describe(probes: &[Probe], with_answers: bool) -> String {
    let parts: Vec<String> = probes
        .iter()
        .map(|p| {
            let name = p.check.name();
            if !with_answers {
                name
            } else if p.not_found >= NOT_FOUND_HINT_AFTER {
                // A starting sidecar answers 503 or refuses; 404 means nothing
                // there has that path: a wrong URL or port (SPEC §3).
                let check = match &p.check {
                    Check::Envoy(_) => "ENVOY_ADMIN_API/--admin (the admin base URL, no path)",
                    _ => "TANDEM_READY_URLS/--ready, or the --mesh preset's port",
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
    let plain = match &probe.check {
        Check::Tcp { host, port } => Some(probe::tcp(host, *port, http::POLL_TIMEOUT)),
        Check::Unix(path) => Some(probe::unix(path)),
        Check::File(path) => Some(probe::file(path)),
        Check::Envoy(_) | Check::Url(_) => None,
    };
    if let Some(answer) = plain {
        probe.ready = answer.is_ok();
        probe.last = answer.map_or_else(|what| what, str::to_string);
        log::debug!("poll {}: {}", probe.check.name(), probe.last);
        return;
    }
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
        Check::Tcp { .. } | Check::Unix(_) | Check::File(_) => return,
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
    log::debug!("poll {}: {}", probe.check.name(), probe.last);
}

/// Envoy before `/ready`: ready when `/server_info` says `"state": "LIVE"`.
fn server_info_live(agent: &Agent, url: &str) -> Result<(bool, u16), http::Failure> {
    let (status, body) = http::get_text(agent, url)?;
    Ok((status == 200 && json_state(&body) == Some("LIVE"), status))
}

/// The string value of the top-level-looking `"state"` key, found without a JSON
/// library: Envoy prints `"state": "LIVE"` once, and its value has no escapes.
/// Public for the fuzzer (`src/fuzz_bodies.rs`), which feeds it arbitrary bodies.
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
