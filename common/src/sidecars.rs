//! Every sidecar tandem knows, one row each (SPEC §6): its `--mesh` preset, the
//! container name its injector gives it, the endpoints tandem waits on and quits
//! through (each a port and a path, typed by what tandem does with it), and what
//! its answers mean when its quit endpoint is off.
//!
//! The one home of that knowledge: the wrapper reads it for `--mesh`
//! (`config::endpoints`) and for the quit lines (`quit::hints`); tandem-injector
//! reads it to recognise the sidecars of a Pod and to write their variables and
//! its policy's CEL. A new sidecar is one row here, plus its tests.

mod endpoint;

pub use endpoint::{Endpoint, HOST, Quit, Ready};

/// An answer to a quit request, as far as a sidecar's row tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// This HTTP status.
    Status(u16),
    /// No connection: nothing listens there.
    NoConnection,
}

/// A sidecar's quit endpoint that is off unless a setting turns it on: how it
/// answers then, and the setting, in the user's terms.
#[derive(Debug, PartialEq, Eq)]
pub struct Off {
    /// The answers that mean the endpoint is off.
    pub answers: &'static [Answer],
    /// What the line says is off (or missing).
    pub what: &'static str,
    /// How the user sets `setting`: a Pod annotation, a flag.
    pub how: &'static str,
    /// The setting that turns the endpoint on, as the user writes it.
    pub setting: &'static str,
    /// What the setting does beneath, when the user may know it by that name.
    pub beneath: Option<&'static str>,
}

impl Off {
    /// The hint of the quit line: what is off and what turns it on.
    pub fn hint(&self) -> String {
        let beneath = self.beneath.map(|b| format!(" ({b})")).unwrap_or_default();
        format!("{}: {} {}{beneath}", self.what, self.how, self.setting)
    }
}

/// One sidecar tandem knows.
#[derive(Debug, PartialEq, Eq)]
pub struct Sidecar {
    /// Name used by `--mesh` / `TANDEM_MESH`.
    pub preset: &'static str,
    /// The container name its injector gives it; `None` when no injector adds
    /// it (plain Envoy).
    pub container: Option<&'static str>,
    /// What tandem waits on.
    pub ready: Ready,
    /// How tandem tells it to quit.
    pub quit: Quit,
    /// A variable that, when set, replaces the port of both endpoints (the Dapr
    /// injector sets `DAPR_HTTP_PORT` in every container of the Pod).
    pub port_var: Option<&'static str>,
    /// Its quit endpoint, when a setting must turn it on.
    pub off: Option<Off>,
    /// A mesh proxy: the Pod's traffic is redirected through it. On the native
    /// route (SPEC §12) it starts before every other sidecar, whose traffic
    /// would otherwise go to a proxy that does not run yet.
    pub redirects: bool,
}

/// Every sidecar, in the order of SPEC §6 (and of the injector's `TANDEM_MESH`).
pub const SIDECARS: &[Sidecar] = &[
    Sidecar {
        preset: "istio",
        container: Some("istio-proxy"),
        ready: Ready::Get(Endpoint {
            port: 15021,
            path: "/healthz/ready",
        }),
        quit: Quit::PilotAgent(Endpoint {
            port: 15020,
            path: "",
        }),
        port_var: None,
        off: None,
        redirects: true,
    },
    Sidecar {
        preset: "envoy",
        container: None,
        ready: Ready::EnvoyAdmin(Endpoint {
            port: 9901,
            path: "",
        }),
        quit: Quit::EnvoyAdmin(Endpoint {
            port: 9901,
            path: "/quitquitquit",
        }),
        port_var: None,
        off: None,
        redirects: false,
    },
    Sidecar {
        preset: "linkerd",
        container: Some("linkerd-proxy"),
        ready: Ready::Get(Endpoint {
            port: 4191,
            path: "/ready",
        }),
        quit: Quit::Post(Endpoint {
            port: 4191,
            path: "/shutdown",
        }),
        port_var: None,
        off: Some(Off {
            answers: &[Answer::Status(404)],
            what: "Linkerd's /shutdown is off",
            how: "set the Pod annotation",
            setting: "config.linkerd.io/proxy-admin-shutdown: enabled",
            beneath: Some("it sets the proxy's LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED=true"),
        }),
        redirects: true,
    },
    Sidecar {
        preset: "cloudsql",
        container: Some("cloud-sql-proxy"),
        // What `cloud-sql-proxy wait` polls; `/readiness` turns 503 under load.
        ready: Ready::Get(Endpoint {
            port: 9090,
            path: "/startup",
        }),
        quit: Quit::Post(Endpoint {
            port: 9091,
            path: "/quitquitquit",
        }),
        port_var: None,
        // The admin port is not even open without the flag.
        off: Some(Off {
            answers: &[Answer::NoConnection],
            what: "nothing listens on 9091",
            how: "start the Cloud SQL Auth Proxy with",
            setting: "--quitquitquit",
            beneath: None,
        }),
        redirects: false,
    },
    Sidecar {
        preset: "dapr",
        container: Some("daprd"),
        // `/outbound`: daprd is usable, without waiting for the app's own channel
        // (the app is what tandem has not started yet).
        ready: Ready::Get(Endpoint {
            port: 3500,
            path: "/v1.0/healthz/outbound",
        }),
        quit: Quit::Post(Endpoint {
            port: 3500,
            path: "/v1.0/shutdown",
        }),
        port_var: Some("DAPR_HTTP_PORT"),
        off: None,
        redirects: false,
    },
    Sidecar {
        preset: "vault",
        container: Some("vault-agent"),
        // The injector's init container has rendered the secrets before the app's
        // container starts: there is nothing to wait for.
        ready: Ready::Nothing,
        quit: Quit::Post(Endpoint {
            port: 8200,
            path: "/agent/v1/quit",
        }),
        port_var: None,
        off: Some(Off {
            answers: &[Answer::Status(404), Answer::Status(405)],
            what: "Vault Agent's quit endpoint is off",
            how: "set the Pod annotation",
            setting: "vault.hashicorp.com/agent-enable-quit: \"true\"",
            beneath: None,
        }),
        redirects: false,
    },
];

/// Every preset name, as an error line lists them: `istio, envoy, … or vault`.
pub fn names() -> String {
    let mut names = String::new();
    for (i, s) in SIDECARS.iter().enumerate() {
        if i > 0 {
            names.push_str(if i + 1 == SIDECARS.len() {
                " or "
            } else {
                ", "
            });
        }
        names.push_str(s.preset);
    }
    names
}

/// The sidecar of this preset name, ignoring ASCII case.
pub fn by_preset(name: &str) -> Option<&'static Sidecar> {
    SIDECARS
        .iter()
        .find(|s| s.preset.eq_ignore_ascii_case(name))
}

/// The sidecar its injector names `container`.
pub fn by_container(container: &str) -> Option<&'static Sidecar> {
    SIDECARS.iter().find(|s| s.container == Some(container))
}

/// The sidecars a mesh's injector adds, with the container name it gives each,
/// in table order.
pub fn containers() -> impl Iterator<Item = (&'static str, &'static Sidecar)> {
    SIDECARS.iter().filter_map(|s| Some((s.container?, s)))
}

/// The sidecar whose quit a POST to `path` on `port` is: the path of its quit
/// URL, and its port too where another sidecar's quit has the same path
/// (`/quitquitquit`). So a user's own `--quit` URL for a known sidecar, on
/// another port, still gets that sidecar's hints. A quit URL without a path
/// (Istio's pilot-agent base) names no endpoint, so nothing is known by it.
pub fn by_quit(path: &str, port: u16) -> Option<&'static Sidecar> {
    SIDECARS.iter().find(|s| {
        let own = s.quit.endpoint();
        let shared = SIDECARS
            .iter()
            .any(|other| other.preset != s.preset && other.quit.endpoint().path == own.path);
        !own.path.is_empty() && path == own.path && (!shared || port == own.port)
    })
}

impl Sidecar {
    /// The line's hint for `answer` to its quit, when that answer means the
    /// endpoint is off.
    pub fn off_hint(&self, answer: Answer) -> Option<String> {
        self.off
            .as_ref()
            .filter(|off| off.answers.contains(&answer))
            .map(Off::hint)
    }

    /// The URL of its readiness endpoint, on `port` when one replaces the
    /// default (`port_var`); `None` when there is nothing to wait for.
    pub fn ready_on(&self, port: Option<u16>) -> Option<String> {
        self.ready.endpoint().map(|e| e.url(port))
    }

    /// The URL of its quit endpoint, on `port` when one replaces the default
    /// (`port_var`).
    pub fn quit_on(&self, port: Option<u16>) -> String {
        self.quit.endpoint().url(port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_found_by_its_names_in_any_case() {
        for s in SIDECARS {
            assert_eq!(by_preset(s.preset), Some(s));
            assert_eq!(by_preset(&s.preset.to_uppercase()), Some(s));
            if let Some(container) = s.container {
                assert_eq!(by_container(container), Some(s));
                assert!(containers().any(|(c, row)| c == container && row == s));
            }
        }
        assert_eq!(names(), "istio, envoy, linkerd, cloudsql, dapr or vault");
        assert_eq!(by_preset("consul"), None);
        assert_eq!(by_container("fluent-bit"), None);
    }

    #[test]
    fn the_mesh_proxies_are_istios_and_linkerds() {
        let proxies: Vec<&str> = SIDECARS
            .iter()
            .filter(|s| s.redirects)
            .map(|s| s.preset)
            .collect();
        assert_eq!(proxies, ["istio", "linkerd"]);
    }

    #[test]
    fn every_endpoint_has_a_port_and_a_path_from_the_root() {
        for s in SIDECARS {
            for e in s.ready.endpoint().into_iter().chain([s.quit.endpoint()]) {
                assert!(e.port > 0, "{}", s.preset);
                assert!(e.path.is_empty() || e.path.starts_with('/'), "{}", s.preset);
                assert!(e.url(None).starts_with(HOST), "{}", s.preset);
            }
        }
    }

    #[test]
    fn only_envoy_and_istio_have_endpoints_of_their_own_kinds() {
        for s in SIDECARS {
            let envoy = matches!(s.ready, Ready::EnvoyAdmin(_));
            assert_eq!(envoy, matches!(s.quit, Quit::EnvoyAdmin(_)), "{}", s.preset);
            assert_eq!(envoy, s.preset == "envoy");
            assert_eq!(matches!(s.quit, Quit::PilotAgent(_)), s.preset == "istio");
        }
    }

    #[test]
    fn a_quit_url_is_known_by_its_path_and_a_shared_path_by_its_port_too() {
        let preset = |path, port| by_quit(path, port).map(|s| s.preset);
        assert_eq!(preset("/shutdown", 4191), Some("linkerd"));
        assert_eq!(preset("/shutdown", 8080), Some("linkerd"));
        assert_eq!(preset("/agent/v1/quit", 1), Some("vault"));
        assert_eq!(preset("/quitquitquit", 9091), Some("cloudsql"));
        assert_eq!(preset("/quitquitquit", 9092), None);
        assert_eq!(preset("/quitquitquit", 9901), Some("envoy"));
        assert_eq!(preset("/v1.0/shutdown", 3600), Some("dapr"));
        assert_eq!(preset("/quit", 4191), None);
        assert_eq!(preset("", 15020), None);
        assert_eq!(preset("/quitquitquit", 15020), None);
    }

    #[test]
    fn off_hints_name_the_setting_the_user_sets() {
        let hint = |preset, answer| by_preset(preset).and_then(|s| s.off_hint(answer));
        let status = Answer::Status;
        assert_eq!(
            hint("linkerd", status(404)).as_deref(),
            Some(
                "Linkerd's /shutdown is off: set the Pod annotation \
                 config.linkerd.io/proxy-admin-shutdown: enabled \
                 (it sets the proxy's LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED=true)"
            )
        );
        assert_eq!(
            hint("vault", status(405)).as_deref(),
            Some(
                "Vault Agent's quit endpoint is off: set the Pod annotation \
                 vault.hashicorp.com/agent-enable-quit: \"true\""
            )
        );
        assert_eq!(
            hint("cloudsql", Answer::NoConnection).as_deref(),
            Some("nothing listens on 9091: start the Cloud SQL Auth Proxy with --quitquitquit")
        );
        assert_eq!(hint("linkerd", status(405)), None);
        assert_eq!(hint("linkerd", Answer::NoConnection), None);
        assert_eq!(hint("cloudsql", status(404)), None);
        assert_eq!(hint("dapr", status(404)), None);
        for s in SIDECARS {
            if let Some(off) = &s.off {
                assert!(off.hint().contains(off.setting), "{}", s.preset);
            }
        }
    }

    #[test]
    fn a_port_replaces_the_default_of_both_urls() {
        let dapr = by_preset("dapr").unwrap();
        assert_eq!(
            dapr.ready_on(Some(3600)).as_deref(),
            Some("http://127.0.0.1:3600/v1.0/healthz/outbound")
        );
        assert_eq!(
            dapr.quit_on(Some(3600)),
            "http://127.0.0.1:3600/v1.0/shutdown"
        );
        assert_eq!(dapr.quit_on(None), "http://127.0.0.1:3500/v1.0/shutdown");
        let istio = by_preset("istio").unwrap();
        assert_eq!(istio.quit_on(Some(1)), "http://127.0.0.1:1");
        assert_eq!(by_preset("vault").unwrap().ready_on(Some(1)), None);
    }
}
