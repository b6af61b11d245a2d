//! The sidecar containers the injector recognises by name, and what each one
//! means for tandem: its `--mesh` preset (SPEC §6) when it runs as a classic
//! sidecar, and the readiness URL tandem waits on when it runs as a native one.

/// One sidecar the mesh's own injector adds to a Pod.
#[derive(Debug, PartialEq, Eq)]
pub struct Sidecar {
    /// The container name its injector gives it.
    pub container: &'static str,
    /// tandem's preset for it (`TANDEM_MESH`).
    pub preset: &'static str,
    /// The preset's readiness URL, or `None` when there is nothing to wait for.
    pub ready: Option<&'static str>,
    /// A variable of the job container that replaces the port of `ready`
    /// (the Dapr injector sets `DAPR_HTTP_PORT`).
    pub port_var: Option<&'static str>,
}

/// Every sidecar the injector knows, in the order `TANDEM_MESH` lists them.
pub const SIDECARS: &[Sidecar] = &[
    Sidecar {
        container: "istio-proxy",
        preset: "istio",
        ready: Some("http://127.0.0.1:15021/healthz/ready"),
        port_var: None,
    },
    Sidecar {
        container: "linkerd-proxy",
        preset: "linkerd",
        ready: Some("http://127.0.0.1:4191/ready"),
        port_var: None,
    },
    Sidecar {
        container: "cloud-sql-proxy",
        preset: "cloudsql",
        ready: Some("http://127.0.0.1:9090/startup"),
        port_var: None,
    },
    Sidecar {
        container: "daprd",
        preset: "dapr",
        ready: Some("http://127.0.0.1:3500/v1.0/healthz/outbound"),
        port_var: Some("DAPR_HTTP_PORT"),
    },
    Sidecar {
        container: "vault-agent",
        preset: "vault",
        ready: None,
        port_var: None,
    },
];

/// The known sidecar with this container name.
pub fn find(container: &str) -> Option<&'static Sidecar> {
    SIDECARS.iter().find(|s| s.container == container)
}

impl Sidecar {
    /// The readiness URL with the port a job container's `port_var` gives (a
    /// literal port number; anything else keeps the preset's default port).
    pub fn ready_url(&self, var: impl Fn(&str) -> Option<String>) -> Option<String> {
        let url = self.ready?;
        let port = self
            .port_var
            .and_then(var)
            .filter(|p| p.parse::<u16>().is_ok_and(|n| n > 0));
        Some(match port {
            Some(port) => {
                // The default port sits between "127.0.0.1:" and the next '/'.
                let host_end = "http://127.0.0.1:".len();
                let path = url[host_end..]
                    .find('/')
                    .map_or(url.len(), |i| host_end + i);
                format!("{}{port}{}", &url[..host_end], &url[path..])
            }
            None => url.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sidecar_matches_the_wrappers_preset_of_the_same_name() {
        for s in SIDECARS {
            let preset = tandem::config::presets::find(s.preset)
                .unwrap_or_else(|| panic!("{}: no such preset in tandem", s.preset));
            assert_eq!(s.ready, preset.ready, "{}", s.preset);
            assert_eq!(s.port_var, preset.port_var, "{}", s.preset);
        }
    }

    #[test]
    fn dapr_ready_url_takes_a_numeric_port_from_the_job_container() {
        let dapr = find("daprd").unwrap();
        let port = |v: &str| (v == "DAPR_HTTP_PORT").then(|| "3600".to_string());
        assert_eq!(
            dapr.ready_url(port).as_deref(),
            Some("http://127.0.0.1:3600/v1.0/healthz/outbound")
        );
        let bad = |_: &str| Some("$(PORT)".to_string());
        assert_eq!(
            dapr.ready_url(bad).as_deref(),
            Some("http://127.0.0.1:3500/v1.0/healthz/outbound")
        );
        assert_eq!(find("vault-agent").unwrap().ready_url(port), None);
        assert_eq!(find("fluent-bit"), None);
    }
}
