//! The sidecar URLs as set, with the `--mesh` presets filled in where nothing
//! explicit was (SPEC §2, §6).

use super::peers;
use super::sources::{Sources, parse_checks, parse_with};
use crate::cli::options;
use crate::cli::peers::GENERIC_READY_ENDPOINTS;
use crate::exit::{Error, invalid};
use crate::settings::Check;
use crate::sidecars::{self, Quit, Ready, Sidecar};
use crate::value::list;
use crate::value::url::{self, HttpUrl};

/// The sidecar URLs as set, with the `--mesh` presets filled in.
pub(super) struct Endpoints {
    pub(super) admin: Option<HttpUrl>,
    pub(super) istio_quit: Option<HttpUrl>,
    pub(super) envoy_quit: Option<HttpUrl>,
    /// `--ready`'s checks, the peers' lists' and the presets', in that order.
    pub(super) ready: Vec<Check>,
    pub(super) generic: Vec<HttpUrl>,
    pub(super) envoy_configured: bool,
}

impl Endpoints {
    /// Reads every URL setting, then applies each preset named by `--mesh`.
    pub(super) fn read(src: &Sources) -> Result<Endpoints, Error> {
        let admin = src.url(&options::ADMIN)?;
        let mut endpoints = Endpoints {
            envoy_configured: admin.is_some(),
            admin,
            istio_quit: src.url(&options::ISTIO_QUIT)?,
            envoy_quit: src.url(&options::ENVOY_QUIT)?,
            ready: src.check_list(&options::READY)?,
            generic: src.url_list(&options::QUIT)?,
        };
        // scuttle forks' list joins ours whatever replaced TANDEM_READY_URLS.
        if let Some(found) = src.var(&[GENERIC_READY_ENDPOINTS])? {
            endpoints.ready.extend(parse_checks(&found)?);
        }
        endpoints.ready.extend(peers::wait_checks(src)?);
        for found in &src.list(&options::MESH)? {
            for name in list::split(&found.value) {
                let preset = sidecars::by_preset(name).ok_or_else(|| {
                    invalid(
                        found.name,
                        name,
                        &format!("a preset: {}", sidecars::names()),
                    )
                })?;
                endpoints.add(preset, src)?;
            }
        }
        Ok(endpoints)
    }

    /// A preset only fills in what was not set explicitly (SPEC §2, §6).
    fn add(&mut self, preset: &Sidecar, src: &Sources) -> Result<(), Error> {
        let port = match preset.port_var {
            Some(var) => match src.var(&[var])? {
                Some(found) => Some(parse_with(&found, url::parse_port_number)?),
                None => None,
            },
            None => None,
        };
        let url = |s: String| {
            HttpUrl::parse(&s).map_err(|e| Error::Usage(format!("preset {}: {e}", preset.preset)))
        };
        match preset.ready {
            Ready::Nothing => {}
            Ready::Get(e) => self.ready.push(Check::Url(url(e.url(port))?)),
            Ready::EnvoyAdmin(e) => {
                self.envoy_configured = true;
                if self.admin.is_none() {
                    self.admin = Some(url(e.url(port))?);
                }
            }
        }
        match preset.quit {
            Quit::Post(e) => self.generic.push(url(e.url(port))?),
            Quit::PilotAgent(e) => {
                self.envoy_configured = true;
                if self.istio_quit.is_none() {
                    self.istio_quit = Some(url(e.url(port))?);
                }
            }
            // Envoy's quit is its admin's `/quitquitquit`, from `admin` above.
            Quit::EnvoyAdmin(_) => {}
        }
        Ok(())
    }

    /// The readiness checks: Envoy's admin first, then the readiness URLs (taken).
    pub(super) fn checks(&mut self) -> Vec<Check> {
        let mut checks: Vec<Check> = self.admin.iter().cloned().map(Check::Envoy).collect();
        checks.append(&mut self.ready);
        checks
    }
}

#[cfg(test)]
mod tests {
    use crate::sidecars::SIDECARS;
    use crate::value::url::HttpUrl;

    #[test]
    fn every_preset_url_is_valid_and_local() {
        for s in SIDECARS {
            for url in s.ready_on(None).into_iter().chain([s.quit_on(None)]) {
                let parsed = HttpUrl::parse(&url).unwrap();
                assert!(parsed.is_local(), "{url}");
            }
        }
    }
}
