//! Stopping the sidecars (SPEC §5): nothing after a status the kubelet runs the
//! container again on (restart in place); else decide what to stop, POST every
//! generic endpoint concurrently, then stop Istio/Envoy through the first
//! applicable route, all within one deadline.
//!
//! This module decides (`plan`) and runs the phase (`send`); `fanout` carries the
//! generic POSTs, `sidecar` the Istio/Envoy route, `pilot_agent` the SIGINT found
//! through `/proc`, `hints` the log lines and what a user can set when a known
//! sidecar refuses. With several job containers (SPEC §9) `siblings` says whether
//! this tandem is the one to stop the sidecars.

mod fanout;
mod hints;
mod pilot_agent;
mod sidecar;

use std::time::{Duration, Instant};

use crate::event::Channel;
use crate::exit::{Error, Outcome};
use crate::http;
use crate::settings::{PkillFallback, QuitConfig};
use crate::siblings::{self, Turn};
use crate::value::url::HttpUrl;
use fanout::Fanout;
use sidecar::{SidecarStop, stop_sidecar_by};

/// Port of Envoy's admin inside Istio: never quit through it (pilot-agent restarts Envoy).
const ISTIO_ENVOY_ADMIN_PORT: u16 = 15000;
/// pilot-agent's port, which does take `/quitquitquit`.
const PILOT_AGENT_PORT: u16 = 15020;

/// What the quit phase will do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct QuitPlan {
    /// Generic endpoints, POSTed concurrently first.
    pub generic: Vec<HttpUrl>,
    /// Istio/Envoy, stopped after them.
    pub sidecar: Option<SidecarStop>,
    /// Why Istio/Envoy is left running, for the log.
    pub kept: Option<&'static str>,
}

/// The quit phase (SPEC §5): stops what `q` says after a run that ended as
/// `outcome`, or nothing when its status is one the kubelet runs this container
/// again on. With several job containers, only once all have finished, and only
/// by the last (SPEC §9); `channel` brings a terminating signal that ends the
/// wait for them. Returns the first quit that failed (no answer, a non-2xx answer
/// of Istio/Envoy, a known sidecar's "not enabled"), in one line for the
/// termination log (SPEC §7).
/// `stopping`: tandem got SIGTERM first, so the sidecars did too (SPEC §5.3).
pub fn after(
    q: &QuitConfig,
    outcome: &Outcome,
    channel: &Channel,
    stopping: bool,
) -> Option<String> {
    let status = outcome.status();
    if q.keep_on_exit.contains(status) {
        // A sidecar told to quit is never restarted: the next run would wait for it.
        // Without one, local development stays quiet (SPEC §8).
        if q.has_sidecars() {
            log::info!(
                "the kubelet restarts this container on exit {status} (--keep-on-exit {}): keeping the sidecars",
                q.keep_on_exit
            );
        }
        return match &q.job_containers {
            Some(jobs) => siblings::run_again(jobs, status).err(),
            None => None,
        };
    }
    if let Some(jobs) = &q.job_containers {
        match siblings::finish(jobs, status, channel) {
            Ok(Turn::Last) => {}
            Ok(Turn::Others) => return None,
            Err(line) => return Some(line),
        }
    }
    send(&plan(q), q.pkill_fallback, q.timeout, stopping)
}

/// What the quit phase needs before anything else starts: the settings that have
/// no effect said once, and with several job containers, this container's place
/// in the shared directory when this task `sends_quits` (a failure to take it is
/// a bad value, SPEC §9). `--wait-only` takes no place: it ends without
/// recording, and would count as a container that vanished.
pub fn prepare(q: &QuitConfig, sends_quits: bool) -> Result<(), Error> {
    warn_about_ignored(q);
    match &q.job_containers {
        Some(jobs) if sends_quits => siblings::join(jobs, q.keep_on_exit),
        _ => Ok(()),
    }
}

/// Settings that are valid but have no effect in this combination (as in scuttle).
fn warn_about_ignored(q: &QuitConfig) {
    if q.envoy_configured {
        return;
    }
    // Warnings quote the value involved (SPEC §8).
    for (name, url) in [
        ("ISTIO_QUIT_API", &q.istio_quit),
        ("ENVOY_KILL_API", &q.envoy_quit),
    ] {
        if let Some(url) = url {
            log::warn!(
                "{name} {} takes effect only with ENVOY_ADMIN_API or --mesh istio|envoy",
                url.redacted()
            );
        }
    }
}

/// Decides what to stop after a run the kubelet does not repeat (SPEC §5.1).
fn plan(q: &QuitConfig) -> QuitPlan {
    let generic = q.generic.clone();
    // Without an admin URL only the istio preset can enable this, and its URL is loopback.
    let local = q.admin.as_ref().is_none_or(|a| a.is_local());
    let (sidecar, kept) = if !q.envoy_configured {
        (None, None)
    } else if q.never_quit {
        (
            None,
            Some("NEVER_KILL_ISTIO/NEVER_KILL_ENVOY is set: leaving Istio/Envoy running"),
        )
    } else if q.generic_only {
        (
            None,
            Some("GENERIC_QUIT_ONLY is set: leaving Istio/Envoy running"),
        )
    } else if !local {
        (
            None,
            Some("the Envoy admin URL is not local: leaving that Envoy running"),
        )
    } else if let Some(istio) = &q.istio_quit {
        (
            Some(SidecarStop::PilotAgent(istio.joined("/quitquitquit"))),
            None,
        )
    } else if let Some(kill) = &q.envoy_quit {
        (Some(SidecarStop::EnvoyKill(kill.clone())), None)
    } else if let Some(admin) = &q.admin {
        if admin.port == ISTIO_ENVOY_ADMIN_PORT {
            let pilot = admin.on_port(PILOT_AGENT_PORT).joined("/quitquitquit");
            (Some(SidecarStop::PilotAgent(pilot)), None)
        } else {
            (
                Some(SidecarStop::SignalElseAdmin(admin.joined("/quitquitquit"))),
                None,
            )
        }
    } else {
        (None, None)
    };
    QuitPlan {
        generic,
        sidecar,
        kept,
    }
}

/// Carries out `plan`, all within `timeout` (`None`: as long as the endpoints take).
///
/// The generic endpoints go first and get at most half of the budget before
/// Istio/Envoy is stopped: one hanging endpoint must not use up the time the
/// sidecar's own quit needs, or the Pod would never complete. Their answers are
/// still collected until the deadline.
fn send(
    plan: &QuitPlan,
    fallback: PkillFallback,
    timeout: Option<Duration>,
    stopping: bool,
) -> Option<String> {
    if let Some(why) = plan.kept {
        log::info!("{why}");
    }
    let start = Instant::now();
    let deadline = timeout.map(|t| start + t);
    let agent = http::agent();
    let mut generic = Fanout::start(&agent, &plan.generic, deadline, stopping);
    let mut sidecar_failed = None;
    if let Some(stop) = &plan.sidecar {
        generic.collect(timeout.map(|t| start + t / 2));
        sidecar_failed = stop_sidecar_by(&agent, stop, fallback, deadline, stopping);
    }
    generic.collect(deadline);
    generic.give_up();
    generic.failed.or(sidecar_failed)
}
#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    const GENERIC: &str = "http://127.0.0.1:8080/quit";

    /// A fake environment: variable names and values.
    type Env<'a> = &'a [(&'a str, &'a str)];

    /// The quit settings `config::build` makes of a command line and an environment.
    fn quit_config(args: &str, env: Env) -> QuitConfig {
        let cli = crate::cli::parse(args.split_whitespace().map(OsString::from)).unwrap();
        let vars: HashMap<&str, OsString> =
            env.iter().map(|(k, v)| (*k, OsString::from(v))).collect();
        crate::config::build(&cli, &|name| vars.get(name).cloned())
            .unwrap_or_else(|e| panic!("{args:?} {env:?}: {e}"))
            .quit
    }

    fn parsed(url: &str) -> HttpUrl {
        HttpUrl::parse(url).unwrap()
    }

    fn pilot(url: &str) -> Option<SidecarStop> {
        Some(SidecarStop::PilotAgent(parsed(url)))
    }

    fn envoy_kill(url: &str) -> Option<SidecarStop> {
        Some(SidecarStop::EnvoyKill(parsed(url)))
    }

    fn signal_else_admin(url: &str) -> Option<SidecarStop> {
        Some(SidecarStop::SignalElseAdmin(parsed(url)))
    }

    /// The generic URLs of a plan, as given.
    fn generic(p: &QuitPlan) -> Vec<&str> {
        p.generic.iter().map(|u| u.raw.as_str()).collect()
    }

    #[test]
    fn generic_endpoints_are_always_sent() {
        let cases: &[(&str, Env)] = &[
            ("", &[]),
            ("--never-quit", &[]),
            ("--generic-quit-only", &[]),
            ("--admin http://127.0.0.1:15000", &[]),
            ("--admin http://10.0.0.1:15000", &[]),
            ("--mesh istio --never-quit", &[]),
            ("", &[("NEVER_KILL_ISTIO", "true")]),
            ("", &[("NEVER_KILL_ENVOY", "true")]),
        ];
        for (args, env) in cases {
            let mut env = env.to_vec();
            env.push(("GENERIC_QUIT_ENDPOINTS", GENERIC));
            let p = plan(&quit_config(args, &env));
            assert_eq!(generic(&p), [GENERIC], "{args} {env:?}");
        }
    }

    #[test]
    fn generic_endpoints_keep_their_order_with_preset_quits_last() {
        let q = quit_config(
            "--quit http://127.0.0.1:1/a,http://127.0.0.1:2/b --mesh linkerd",
            &[],
        );
        let p = plan(&q);
        assert_eq!(
            generic(&p),
            [
                "http://127.0.0.1:1/a",
                "http://127.0.0.1:2/b",
                "http://127.0.0.1:4191/shutdown",
            ]
        );
        assert_eq!(p.sidecar, None);
    }

    #[test]
    fn sidecar_is_left_running_when_told_or_not_local() {
        let cases: &[(&str, Env)] = &[
            ("--admin http://127.0.0.1:15000 --never-quit", &[]),
            (
                "--admin http://127.0.0.1:15000",
                &[("NEVER_KILL_ISTIO", "true")],
            ),
            (
                "--admin http://127.0.0.1:9901",
                &[("NEVER_KILL_ENVOY", "1")],
            ),
            ("--mesh istio", &[("NEVER_KILL_ISTIO", "yes")]),
            ("--admin http://127.0.0.1:15000 --generic-quit-only", &[]),
            ("--mesh envoy", &[("GENERIC_QUIT_ONLY", "true")]),
            ("--admin http://10.0.0.1:15000", &[]),
            ("--admin http://127.0.0.1.example.com:15000", &[]),
            ("--admin http://envoy.mesh:9901", &[]),
            ("--admin http://[::2]:15000", &[]),
            (
                "--admin http://10.0.0.1:15000",
                &[("ISTIO_QUIT_API", "http://127.0.0.1:15020")],
            ),
            (
                "--admin http://10.0.0.1:9901",
                &[("ENVOY_KILL_API", "http://127.0.0.1:9901/quitquitquit")],
            ),
        ];
        for (args, env) in cases {
            let p = plan(&quit_config(args, env));
            assert_eq!(p.sidecar, None, "{args} {env:?}");
            assert!(p.kept.is_some(), "{args} {env:?}: the log should say why");
        }
    }

    #[test]
    fn without_an_admin_url_or_preset_no_sidecar_is_stopped() {
        let cases: &[(&str, Env)] = &[
            ("", &[]),
            ("", &[("ISTIO_QUIT_API", "http://127.0.0.1:15020")]),
            ("--envoy-quit http://127.0.0.1:9901/quitquitquit", &[]),
            ("--mesh linkerd,cloudsql", &[]),
        ];
        for (args, env) in cases {
            let p = plan(&quit_config(args, env));
            assert_eq!((p.sidecar, p.kept), (None, None), "{args} {env:?}");
        }
    }

    #[test]
    fn sidecar_stop_follows_the_cascade() {
        let cases: &[(&str, Env, Option<SidecarStop>)] = &[
            // 1. ISTIO_QUIT_API wins over everything else.
            (
                "--admin http://127.0.0.1:15000",
                &[
                    ("ISTIO_QUIT_API", "http://127.0.0.1:15021/"),
                    ("ENVOY_KILL_API", "http://127.0.0.1:9901/kill"),
                ],
                pilot("http://127.0.0.1:15021/quitquitquit"),
            ),
            (
                "--admin http://localhost:9901 --istio-quit http://localhost:15020",
                &[],
                pilot("http://localhost:15020/quitquitquit"),
            ),
            // The istio preset's pilot-agent is the Istio quit, with or without an admin URL.
            (
                "--mesh istio",
                &[],
                pilot("http://127.0.0.1:15020/quitquitquit"),
            ),
            (
                "--mesh istio --admin http://127.0.0.1:15000",
                &[],
                pilot("http://127.0.0.1:15020/quitquitquit"),
            ),
            // 2. Else ENVOY_KILL_API, as given.
            (
                "--admin http://127.0.0.1:15000",
                &[("ENVOY_KILL_API", "http://127.0.0.1:9901/kill")],
                envoy_kill("http://127.0.0.1:9901/kill"),
            ),
            (
                "--mesh envoy --envoy-quit http://127.0.0.1:9901/stop",
                &[],
                envoy_kill("http://127.0.0.1:9901/stop"),
            ),
            // 3. Else admin port 15000 means Istio: pilot-agent on 15020 of that host.
            (
                "--admin http://127.0.0.1:15000",
                &[],
                pilot("http://127.0.0.1:15020/quitquitquit"),
            ),
            (
                "--admin http://localhost:15000/",
                &[],
                pilot("http://localhost:15020/quitquitquit"),
            ),
            (
                "--admin http://[::1]:15000",
                &[],
                pilot("http://[::1]:15020/quitquitquit"),
            ),
            (
                "--admin http://127.0.0.2:15000",
                &[],
                pilot("http://127.0.0.2:15020/quitquitquit"),
            ),
            // 4. Else plain Envoy through its own admin.
            (
                "--admin http://127.0.0.1:9901",
                &[],
                signal_else_admin("http://127.0.0.1:9901/quitquitquit"),
            ),
            (
                "--admin http://127.0.0.1:9901/",
                &[],
                signal_else_admin("http://127.0.0.1:9901/quitquitquit"),
            ),
            (
                "--mesh envoy",
                &[],
                signal_else_admin("http://127.0.0.1:9901/quitquitquit"),
            ),
            (
                "--admin http://[::1]:9901",
                &[],
                signal_else_admin("http://[::1]:9901/quitquitquit"),
            ),
        ];
        for (args, env, expected) in cases {
            let p = plan(&quit_config(args, env));
            assert_eq!(&p.sidecar, expected, "{args} {env:?}");
            assert_eq!(p.kept, None, "{args} {env:?}");
            assert!(p.generic.is_empty(), "{args} {env:?}");
        }
    }

    #[test]
    fn presets_combine_generic_quits_with_the_istio_quit() {
        let p = plan(&quit_config("--mesh istio,cloudsql", &[]));
        assert_eq!(generic(&p), ["http://127.0.0.1:9091/quitquitquit"]);
        assert_eq!(p.sidecar, pilot("http://127.0.0.1:15020/quitquitquit"));
    }

    #[test]
    fn istio_quit_without_an_admin_url_counts_as_local() {
        let q = QuitConfig {
            istio_quit: Some(parsed("http://127.0.0.1:15020")),
            envoy_configured: true,
            ..QuitConfig::default()
        };
        assert_eq!(
            plan(&q).sidecar,
            pilot("http://127.0.0.1:15020/quitquitquit")
        );
    }
}
