//! Why a lookup found no entrypoint, and the fix each answer implies: what the
//! `tandem.dev/injection` annotation and the log line say about the container.

use std::fmt;

/// A failed lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The reference itself is not one the injector reads.
    Reference(String),
    /// The lookup's deadline passed (a slow registry or token endpoint).
    Timeout,
    /// 401/403: no credentials, or ones the registry refuses.
    Denied(String),
    /// 404: no such repository, tag or digest.
    NotFound(String),
    /// Connecting or TLS failed.
    Network(String),
    /// The registry answered something the injector does not read.
    Malformed(String),
    /// An index's linux/amd64 and linux/arm64 images run different commands.
    Disagree(String),
}

impl Failure {
    /// What the operator can do about it.
    pub fn fix(&self) -> &'static str {
        match self {
            Failure::Reference(_) | Failure::NotFound(_) => {
                "check the image name, or set the entrypoint annotation"
            }
            Failure::Timeout => {
                "retried on the next Pod; or set the entrypoint annotation, or command"
            }
            Failure::Denied(_) => {
                "give the injector a read-only login for this registry (--registry-auth), or set the entrypoint annotation"
            }
            Failure::Network(_) => {
                "let the injector reach the registry over HTTPS, trust its CA (--registry-ca), or set the entrypoint annotation"
            }
            Failure::Malformed(_) | Failure::Disagree(_) => {
                "set the entrypoint annotation, or command"
            }
        }
    }

    /// A short name for the metrics and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Reference(_) => "reference",
            Failure::Timeout => "timeout",
            Failure::Denied(_) => "denied",
            Failure::NotFound(_) => "not-found",
            Failure::Network(_) => "network",
            Failure::Malformed(_) => "malformed",
            Failure::Disagree(_) => "platforms-disagree",
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Reference(why) => write!(f, "{why}"),
            Failure::Timeout => write!(
                f,
                "the registry did not answer within the lookup's deadline"
            ),
            Failure::Denied(why) => write!(f, "access denied: {why}"),
            Failure::NotFound(what) => write!(f, "not found: {what}"),
            Failure::Network(why) => write!(f, "unreachable: {why}"),
            Failure::Malformed(why) => write!(f, "unreadable: {why}"),
            Failure::Disagree(why) => write!(f, "not guessed: {why}"),
        }
    }
}
