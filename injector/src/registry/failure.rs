//! Why a lookup found no entrypoint, and the fix each answer implies. Two
//! renderings: [`Failure::words`], what the Pod's readers see (the
//! `tandem.dev/injection` annotation, the warning): the kind of failure and the
//! fix, never an address, a system error or a TLS detail; and `Display`, the
//! whole story, for the injector's log only (SPEC §10 "Where lookups may go").

use std::fmt;

/// A failed lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The reference itself is not one the injector reads (the Pod's own words).
    Reference(String),
    /// `--registry-allow` or the address rule refused it: nothing was contacted.
    NotAllowed(String),
    /// The lookup's deadline passed (a slow registry or token endpoint).
    Timeout,
    /// Every lookup slot stayed taken until the deadline: the injector was
    /// running its most lookups at once, and this one never started.
    Busy,
    /// 401/403: no credentials, or ones the registry refuses.
    Denied(String),
    /// 404: no such repository, tag or digest.
    NotFound(String),
    /// No connection: the name did not resolve, or the connection failed.
    Unreachable(String),
    /// The TLS handshake failed (an untrusted certificate, most often).
    Tls(String),
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
            Failure::NotAllowed(_) => {
                "list the registry in the injector's --registry-allow, or set the entrypoint annotation"
            }
            Failure::Timeout | Failure::Busy => {
                "retried on the next Pod; or set the entrypoint annotation, or command"
            }
            Failure::Denied(_) => {
                "give the injector a read-only login for this registry (--registry-auth), or set the entrypoint annotation"
            }
            Failure::Unreachable(_) => {
                "let the injector reach the registry over HTTPS, or set the entrypoint annotation"
            }
            Failure::Tls(_) => {
                "trust the registry's CA (--registry-ca), or set the entrypoint annotation"
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
            Failure::NotAllowed(_) => "not-allowed",
            Failure::Timeout => "timeout",
            Failure::Busy => "busy",
            Failure::Denied(_) => "unauthorized",
            Failure::NotFound(_) => "not-found",
            Failure::Unreachable(_) => "unreachable",
            Failure::Tls(_) => "tls",
            Failure::Malformed(_) => "not-an-image",
            Failure::Disagree(_) => "platforms-disagree",
        }
    }

    /// What the Pod's readers see: the kind, then the fix in parentheses.
    /// Only a bad reference, the Pod's own text, says more.
    pub fn words(&self) -> String {
        let kind = match self {
            Failure::Reference(why) => why.as_str(),
            Failure::NotAllowed(_) => "registry not allowed",
            Failure::Timeout => "timeout: the registry did not answer within the lookup's deadline",
            Failure::Busy => "busy: the injector's lookups were all in use until the deadline",
            Failure::Denied(_) => "unauthorized",
            Failure::NotFound(_) => "not found",
            Failure::Unreachable(_) => "unreachable",
            Failure::Tls(_) => "TLS failed",
            Failure::Malformed(_) => "not an image the injector reads",
            Failure::Disagree(_) => {
                "not guessed: its linux/amd64 and linux/arm64 images run different commands"
            }
        };
        format!("{kind} ({})", self.fix())
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Reference(why) => write!(f, "{why}"),
            Failure::NotAllowed(why) => write!(f, "registry not allowed: {why}"),
            Failure::Timeout => write!(
                f,
                "the registry did not answer within the lookup's deadline"
            ),
            Failure::Busy => write!(
                f,
                "not started: every lookup slot stayed taken until the deadline"
            ),
            Failure::Denied(why) => write!(f, "unauthorized: {why}"),
            Failure::NotFound(what) => write!(f, "not found: {what}"),
            Failure::Unreachable(why) => write!(f, "unreachable: {why}"),
            Failure::Tls(why) => write!(f, "TLS failed: {why}"),
            Failure::Malformed(why) => write!(f, "not an image: {why}"),
            Failure::Disagree(why) => write!(f, "not guessed: {why}"),
        }
    }
}
