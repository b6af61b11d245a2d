//! Each setting's value read and checked: the error line names where it came
//! from (option or variable), the value and what is expected.

use std::ffi::OsString;
use std::net::SocketAddr;

use super::options::Opt;
use crate::audit::command::Output;
use crate::duration;
use crate::inject::delivery::Mode;
use crate::inject::route::Route;
use crate::webhook::FailurePolicy;

/// A duration setting; `positive`: zero is refused too.
pub(super) fn parse_duration(
    from: &str,
    value: &OsString,
    positive: bool,
) -> Result<std::time::Duration, String> {
    let expected = if positive {
        "a duration above 0, like 500ms or 10s"
    } else {
        duration::EXPECTED_DURATION
    };
    value
        .to_str()
        .and_then(|s| duration::parse(s).ok())
        .filter(|d| !(positive && d.is_zero()))
        .ok_or_else(|| format!("{from} {value:?}: expected {expected}"))
}

/// The line for a required option given neither way.
pub(super) fn missing(o: &Opt) -> String {
    let example = match o.flag {
        "--image" => ", e.g. ghcr.io/tandem-sidecar/tandem:0.1.0",
        _ => ", e.g. /tls/tls.crt and /tls/tls.key from the Secret cert-manager writes",
    };
    format!(
        "missing {} {} (or {}): {}{example}",
        o.flag, o.value, o.var, o.help
    )
}

/// `--listen`: an IP address and a port.
pub(super) fn parse_listen(from: &str, value: &OsString) -> Result<SocketAddr, String> {
    value.to_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
        format!(
            "{from} {value:?}: expected an IP address and a port, e.g. 0.0.0.0:8443 or [::]:8443"
        )
    })
}

/// `--install`: one of the install modes' names.
pub(super) fn parse_mode(from: &str, value: &OsString) -> Result<Mode, String> {
    value.to_str().and_then(Mode::from_name).ok_or_else(|| {
        format!(
            "{from} {value:?}: expected {} (image-volume needs Kubernetes 1.35+)",
            Mode::NAMES.join(" or ")
        )
    })
}

/// `--route`: one of the routes' names.
pub(super) fn parse_route(from: &str, value: &OsString) -> Result<Route, String> {
    value.to_str().and_then(Route::from_name).ok_or_else(|| {
        format!(
            "{from} {value:?}: expected {} (native needs every kubelet at 1.29+)",
            Route::NAMES.join(" or ")
        )
    })
}

/// `--image`: a reference without blanks or control characters.
pub(super) fn parse_image(from: &str, value: &OsString) -> Result<String, String> {
    match value.to_str() {
        Some(s) if !s.chars().any(|c| c.is_whitespace() || c.is_control()) => Ok(s.to_string()),
        _ => Err(format!(
            "{from} {value:?}: expected an image reference without blanks, e.g. ghcr.io/tandem-sidecar/tandem:0.1.0"
        )),
    }
}

/// `--output`: how `audit` prints its report.
pub(super) fn parse_output(from: &str, value: &OsString) -> Result<Output, String> {
    match value.to_str() {
        Some("table") => Ok(Output::Table),
        Some("json") => Ok(Output::Json),
        _ => Err(format!("{from} {value:?}: expected table or json")),
    }
}

/// `--failure-policy`: Kubernetes' two words, spelled as Kubernetes spells them.
pub(super) fn parse_failure_policy(from: &str, value: &OsString) -> Result<FailurePolicy, String> {
    value
        .to_str()
        .and_then(FailurePolicy::from_name)
        .ok_or_else(|| {
            format!("{from} {value:?}: expected Fail or Ignore (as Kubernetes spells them)")
        })
}
