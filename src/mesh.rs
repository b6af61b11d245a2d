//! The `--mesh` presets of SPEC §6, as a const table.

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
    /// Readiness URL (`GET`, 2xx); for `Envoy`, the admin base URL.
    pub ready: &'static str,
    /// Quit URL (`POST`); for `Istio`, the pilot-agent base URL.
    pub quit: &'static str,
}

/// Every preset, in the order of SPEC §6.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "istio",
        role: Role::Istio,
        ready: "http://127.0.0.1:15021/healthz/ready",
        quit: "http://127.0.0.1:15020",
    },
    Preset {
        name: "envoy",
        role: Role::Envoy,
        ready: "http://127.0.0.1:9901",
        quit: "http://127.0.0.1:9901/quitquitquit",
    },
    Preset {
        name: "linkerd",
        role: Role::Generic,
        ready: "http://127.0.0.1:4191/ready",
        quit: "http://127.0.0.1:4191/shutdown",
    },
    Preset {
        name: "cloudsql",
        role: Role::Generic,
        ready: "http://127.0.0.1:9090/readiness",
        quit: "http://127.0.0.1:9091/quitquitquit",
    },
];

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
    }

    #[test]
    fn every_preset_url_is_valid_and_local() {
        for p in PRESETS {
            for url in [p.ready, p.quit] {
                let parsed = crate::values::HttpUrl::parse(url).unwrap();
                assert!(parsed.is_local(), "{url}");
            }
        }
    }
}
