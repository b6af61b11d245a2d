//! The address rule (SPEC §10 "Where lookups may go"): the injector never
//! connects to a loopback, link-local, unspecified or multicast address unless
//! `--registry-allow` names that host (and its port, if the entry has one).
//! It is the registry client's name resolver, so it holds for every connection
//! the client makes (the registry, its token realm, every redirect): a name is
//! resolved once, its addresses checked, and only the checked ones are handed
//! to the connector, so an answer that changes after the check is never used.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

use super::allow::{Allow, HostPort, canonical_ip};

/// Why an address is never connected to without an explicit entry, or `None`.
pub fn special(ip: IpAddr) -> Option<&'static str> {
    match canonical_ip(ip) {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            if v4.is_loopback() {
                Some("loopback")
            } else if a == 169 && b == 254 {
                Some("link-local")
            } else if a == 0 {
                Some("unspecified")
            } else if v4.is_multicast() || v4.is_broadcast() {
                Some("multicast")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.segments()[0] & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if v6.is_multicast() {
                Some("multicast")
            } else {
                None
            }
        }
    }
}

/// The addresses of `to` the rule lets the injector connect to, given what
/// its name resolved to; `Err` (for the log) when none is left.
pub fn check(
    allow: &Allow,
    to: &HostPort,
    found: &[SocketAddr],
) -> Result<Vec<SocketAddr>, String> {
    if allow.names(to) {
        return Ok(found.to_vec());
    }
    let kept: Vec<SocketAddr> = found
        .iter()
        .filter(|a| special(a.ip()).is_none())
        .copied()
        .collect();
    if kept.is_empty() {
        let kinds: Vec<String> = found
            .iter()
            .map(|a| format!("{} ({})", a.ip(), special(a.ip()).unwrap_or("?")))
            .collect();
        return Err(format!(
            "{to} is at {}, where the injector connects only to a host --registry-allow names",
            kinds.join(", ")
        ));
    }
    Ok(kept)
}

/// Refused by the address rule: what and why, for the log.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// The registry client's resolver: the system's, then [`check`].
#[derive(Debug)]
pub struct Guard {
    allow: Arc<Allow>,
}

impl Guard {
    /// A resolver applying the rule with `allow`'s explicit entries.
    pub fn new(allow: Arc<Allow>) -> Guard {
        Guard { allow }
    }
}

impl Resolver for Guard {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let refuse = |why: String| ureq::Error::Other(Box::new(Refused(why)));
        let authority = uri
            .authority()
            .ok_or_else(|| refuse(format!("{uri} names no host")))?;
        let port = authority.port_u16().unwrap_or(443);
        let to = HostPort::parse(&format!("{}:{port}", authority.host())).map_err(refuse)?;
        let found = DefaultResolver::default().resolve(uri, config, timeout)?;
        let kept = check(&self.allow, &to, &found).map_err(refuse)?;
        let mut out = self.empty();
        for addr in kept {
            out.push(addr);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn loopback_link_local_unspecified_and_multicast_are_special_mapped_or_not() {
        for (text, kind) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("169.254.169.254", "link-local"),
            ("::ffff:169.254.169.254", "link-local"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("0.0.0.0", "unspecified"),
            ("::", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "multicast"),
            ("ff02::1", "multicast"),
        ] {
            assert_eq!(special(ip(text)), Some(kind), "{text}");
        }
        for text in [
            "10.0.0.5",
            "192.168.1.1",
            "8.8.8.8",
            "fec0::1",
            "fd00::1",
            "2001:db8::1",
        ] {
            assert_eq!(special(ip(text)), None, "{text}");
        }
    }

    #[test]
    fn special_addresses_are_dropped_unless_the_host_is_named() {
        let at = |a: &str| -> SocketAddr { a.parse().unwrap() };
        let to = HostPort::parse("reg.example:443").unwrap();
        let mixed = [at("127.0.0.1:443"), at("10.1.2.3:443")];
        assert_eq!(
            check(&Allow::default(), &to, &mixed),
            Ok(vec![at("10.1.2.3:443")])
        );
        let err = check(&Allow::default(), &to, &mixed[..1]).unwrap_err();
        assert!(err.contains("127.0.0.1 (loopback)"), "{err}");
        let wildcard = Allow::parse("*.example").unwrap();
        assert!(check(&wildcard, &to, &mixed[..1]).is_err());
        let other_port = Allow::parse("reg.example:5000").unwrap();
        assert!(check(&other_port, &to, &mixed[..1]).is_err());
        let named = Allow::parse("reg.example").unwrap();
        assert_eq!(check(&named, &to, &mixed), Ok(mixed.to_vec()));
    }
}
