//! The peers' variables tandem reads for compatibility (scuttle, its forks): the
//! pilot-agent fallback, ones validated but without effect, and the warnings.

use super::PkillFallback;
use super::sources::{Sources, parse_with};
use super::{boolean, duration, url};
use crate::exit::Error;
use crate::options;

/// When pilot-agent gets SIGINT (`ISTIO_FALLBACK_PKILL`). `ALWAYS_KILL_ENVOY` is
/// validated first, for compatibility only: stopping after a failure is already
/// the default, and NEVER_KILL_ISTIO_ON_FAILURE wins over it (SPEC §2).
pub(super) fn pkill_fallback(src: &Sources) -> Result<PkillFallback, Error> {
    src.flag_vars(&[options::ALWAYS_KILL_ENVOY])?;
    Ok(match src.var(&[options::ISTIO_FALLBACK_PKILL])? {
        None => PkillFallback::OnRefused,
        Some(found) if parse_with(&found, boolean::parse)? => PkillFallback::OnAnyFailure,
        Some(_) => PkillFallback::Never,
    })
}

/// One warning for each peer variable that is set and has no effect in tandem;
/// a bad value is still an error (SPEC §2).
pub(super) fn no_effect_warnings(src: &Sources) -> Result<Vec<String>, Error> {
    let mut warnings = Vec::new();
    for item in options::NO_EFFECT {
        let Some(found) = src.var(&[item.var])? else {
            continue;
        };
        match item.shape {
            options::Shape::Bool => {
                parse_with(&found, boolean::parse)?;
            }
            options::Shape::Seconds => {
                parse_with(&found, duration::parse_seconds)?;
            }
            options::Shape::Text => {}
        }
        let shown = url::redact(&found.value);
        warnings.push(format!(
            "{}={shown:?} has no effect: {}",
            item.var, item.why
        ));
    }
    Ok(warnings)
}
