//! Waiting for readiness (SPEC §3): whether to wait at all, then a poller thread
//! that checks every sidecar with a capped backoff while the main thread waits
//! for the first of "ready", a terminating signal or a timeout. `poller` is the
//! poller thread; `probe` polls the checks that are not HTTP.

pub mod poller;
mod probe;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use crate::deadline;
use crate::event::{Channel, Event, Events, Sender};
use crate::exit::Outcome;
use crate::settings::ReadyConfig;
use crate::signals::TERMINATING;
use crate::value::duration;
use poller::poll_until_ready;

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

/// Waits for the sidecars before the app starts, as `cfg` says (SPEC §3): `Ok`
/// when the app may start, ready or after `--wait-timeout`; else how the run
/// ends, logged here.
///
/// `channel` carries signals from the relay; its sender is lent to the poller.
pub fn wait(cfg: &ReadyConfig, channel: &Channel) -> Result<(), Outcome> {
    wait_then(cfg, channel, true)
}

/// `--wait-only` (SPEC §1): the same wait, with nothing to start after it; done
/// (exit 0) when ready or after `--wait-timeout`.
pub fn wait_only(cfg: &ReadyConfig, channel: &Channel) -> Outcome {
    wait_then(cfg, channel, false)
        .err()
        .unwrap_or(Outcome::Exited(0))
}

/// The wait of both; `app_follows` only words the `--fail-timeout` line.
fn wait_then(cfg: &ReadyConfig, channel: &Channel, app_follows: bool) -> Result<(), Outcome> {
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
            let limit = duration::format(cfg.wait_timeout.unwrap_or_default());
            log::warn!(
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
            let limit = duration::format(cfg.fail_timeout.unwrap_or_default());
            let setting = cfg.fail_timeout_setting;
            let line = format!("sidecars not ready within {limit} ({setting}){then}");
            log::error!("{line}");
            Err(Outcome::NotReady(format!("{line}; last answers: {last}")))
        }
        WaitEnd::Interrupted(sig) => Err(Outcome::Interrupted(sig)),
    }
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
    let until = limit.and_then(|limit| start.checked_add(limit));
    let outcome = loop {
        let event = deadline::recv_by(events, until);
        match event {
            Ok(Event::Ready) => break WaitEnd::Ready,
            Ok(Event::Signal(sig)) if TERMINATING.contains(&sig) => {
                log::info!("signal {sig} while waiting for the sidecars: giving up");
                break WaitEnd::Interrupted(sig);
            }
            Ok(Event::Signal(sig)) => log::debug!("ignoring signal {sig}: the app has not started"),
            // Sent only once the app has ended (SPEC §9, §11).
            Ok(Event::Sibling(_) | Event::OnExitEnded) => {}
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
