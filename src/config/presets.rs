//! The `--mesh` presets of SPEC §6 (`TANDEM_MESH`), as a const table.

/// How a preset's endpoints join the configuration (SPEC §2, "Lists").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The Istio sidecar: ready URL, and the pilot-agent base as the Istio quit.
    Istio,
    /// Plain Envoy: the admin URL (readiness and the Envoy quit follow from it).
    Envoy,
    /// Any other sidecar: one ready URL and one generic quit URL.
    Generic,
}

/// One preset of SPEC §6.
#[derive(Debug, PartialEq, Eq)]
pub struct Preset {
    /// Name used by `--mesh` / `TANDEM_MESH`.
    pub name: &'static str,
    /// How its URLs are used.
    pub role: Role,
    /// Readiness URL (`GET`, 2xx); for `Envoy`, the admin base URL; `None`
    /// for a sidecar with nothing to wait for.
    pub ready: Option<&'static str>,
    /// Quit URL (`POST`); for `Istio`, the pilot-agent base URL.
    pub quit: &'static str,
    /// A variable that, when set, replaces the port of both URLs (the Dapr
    /// injector sets `DAPR_HTTP_PORT` in every container of the Pod).
    pub port_var: Option<&'static str>,
}

/// Every preset, in the order of SPEC §6.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "istio",
        role: Role::Istio,
        ready: Some("http://127.0.0.1:15021/healthz/ready"),
        quit: "http://127.0.0.1:15020",
        port_var: None,
    },
    Preset {
        name: "envoy",
        role: Role::Envoy,
        ready: Some("http://127.0.0.1:9901"),
        quit: "http://127.0.0.1:9901/quitquitquit",
        port_var: None,
    },
    Preset {
        name: "linkerd",
        role: Role::Generic,
        ready: Some("http://127.0.0.1:4191/ready"),
        quit: "http://127.0.0.1:4191/shutdown",
        port_var: None,
    },
    Preset {
        name: "cloudsql",
        role: Role::Generic,
        // What `cloud-sql-proxy wait` polls; `/readiness` turns 503 under load.
        ready: Some("http://127.0.0.1:9090/startup"),
        quit: "http://127.0.0.1:9091/quitquitquit",
        port_var: None,
    },
    Preset {
        name: "dapr",
        role: Role::Generic,
        // `/outbound`: daprd is usable, without waiting for the app's own channel
        // (the app is what tandem has not started yet).
        ready: Some("http://127.0.0.1:3500/v1.0/healthz/outbound"),
        quit: "http://127.0.0.1:3500/v1.0/shutdown",
        port_var: Some("DAPR_HTTP_PORT"),
    },
    Preset {
        name: "vault",
        role: Role::Generic,
        // The injector's init container has rendered the secrets before the app's
        // container starts: there is nothing to wait for.
        ready: None,
        quit: "http://127.0.0.1:8200/agent/v1/quit",
        port_var: None,
    },
];

/// Every preset name, for error messages and `--help`.
pub const NAMES: &str = "istio, envoy, linkerd, cloudsql, dapr or vault";

/// Looks a preset up by name, ignoring ASCII case.
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_found_by_name_in_any_case() {
        for p in PRESETS {
            assert_eq!(find(p.name), Some(p));
            assert_eq!(find(&p.name.to_uppercase()), Some(p));
        }
        assert_eq!(find("consul"), None);
        for p in PRESETS {
            assert!(NAMES.contains(p.name), "{}", p.name);
        }
    }

    #[test]
    fn every_preset_url_is_valid_and_local() {
        for p in PRESETS {
            for url in p.ready.iter().chain([&p.quit]) {
                let parsed = crate::value::url::HttpUrl::parse(url).unwrap();
                assert!(parsed.is_local(), "{url}");
            }
        }
    }
}
