//! `--registry-allow HOST[:PORT][,…]` (SPEC §10 "Where lookups may go"): the
//! registries the injector may look images up in. `*.example.com` matches
//! every name below `example.com`; an entry without a port matches every port.
//! Without the option any registry may be looked up. Hosts are compared as the
//! image reference names them (Docker Hub's aliases as one, lowercase, IP
//! addresses parsed, an IPv4-mapped IPv6 address as its IPv4).

use std::fmt;
use std::net::IpAddr;

use super::reference::is_docker_hub;

/// A host and an optional port, as an entry or an image's registry names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    /// The name, lowercase without a trailing dot (`docker.io` for Docker
    /// Hub), or an IP address as Rust prints it.
    pub host: String,
    /// The port, when named.
    pub port: Option<u16>,
}

impl HostPort {
    /// Reads `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address.
    pub fn parse(text: &str) -> Result<HostPort, String> {
        let (host, port) = split_port(text)?;
        let host = if let Ok(ip) = host.parse::<IpAddr>() {
            canonical_ip(ip).to_string()
        } else {
            let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
            let label_ok = |l: &str| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            };
            if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
                return Err(format!("{host:?} is not a host name or IP address"));
            }
            if is_docker_hub(&name) {
                super::reference::DOCKER_HUB.to_string()
            } else {
                name
            }
        };
        Ok(HostPort { host, port })
    }

    /// The port, 443 (HTTPS) when not named.
    pub fn port_or_https(&self) -> u16 {
        self.port.unwrap_or(443)
    }
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.host.contains(':'), self.port) {
            (true, Some(port)) => write!(f, "[{}]:{port}", self.host),
            (true, None) => write!(f, "[{}]", self.host),
            (false, Some(port)) => write!(f, "{}:{port}", self.host),
            (false, None) => write!(f, "{}", self.host),
        }
    }
}

/// `text` split into its host and port, brackets dropped.
fn split_port(text: &str) -> Result<(&str, Option<u16>), String> {
    let port = |p: &str| match p.parse::<u16>() {
        Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(n)),
        _ => Err(format!("{p:?} is not a port (1 to 65535)")),
    };
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("{text:?} has no closing ]"))?;
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(p) => Ok((host, port(p)?)),
                None => Err(format!("{text:?}: expected :PORT after ]")),
            },
        };
    }
    match text.matches(':').count() {
        0 => Ok((text, None)),
        1 => {
            let (host, p) = text.split_once(':').unwrap_or((text, ""));
            Ok((host, port(p)?))
        }
        // A bare IPv6 address, which the caller checks.
        _ => Ok((text, None)),
    }
}

/// `ip`, an IPv4-mapped IPv6 address as its IPv4.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// One entry: a host, or every name below a domain (`*.example.com`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    wildcard: bool,
    at: HostPort,
}

impl Entry {
    fn matches(&self, registry: &HostPort) -> bool {
        let host = if self.wildcard {
            registry
                .host
                .strip_suffix(&self.at.host)
                .is_some_and(|below| below.len() > 1 && below.ends_with('.'))
        } else {
            registry.host == self.at.host
        };
        host && self.at.port.is_none_or(|p| p == registry.port_or_https())
    }
}

/// The allow-list; empty: any registry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allow {
    entries: Vec<Entry>,
}

impl Allow {
    /// Reads a comma-separated list; `Err` names the entry and what is wrong.
    pub fn parse(text: &str) -> Result<Allow, String> {
        let mut entries = Vec::new();
        for raw in text.split(',') {
            let item = raw.trim();
            let bad = |why: String| format!("entry {item:?}: {why}");
            if item.is_empty() {
                return Err(bad("empty (expected HOST[:PORT] or *.DOMAIN[:PORT])".into()));
            }
            let (wildcard, rest) = match item.strip_prefix("*.") {
                Some(rest) => (true, rest),
                None => (false, item),
            };
            let at = HostPort::parse(rest).map_err(bad)?;
            if wildcard && at.host.parse::<IpAddr>().is_ok() {
                return Err(bad("a wildcard needs a domain name, not an address".into()));
            }
            entries.push(Entry { wildcard, at });
        }
        Ok(Allow { entries })
    }

    /// Whether no list was given (any registry may be looked up).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether images of `registry` may be looked up.
    pub fn permits(&self, registry: &HostPort) -> bool {
        self.is_empty() || self.entries.iter().any(|e| e.matches(registry))
    }

    /// Whether `registry` is listed by name (not a wildcard), with its port if
    /// the entry names one: only then may it be at a loopback, link-local,
    /// unspecified or multicast address.
    pub fn names(&self, registry: &HostPort) -> bool {
        self.entries
            .iter()
            .any(|e| !e.wildcard && e.matches(registry))
    }
}

impl fmt::Display for Allow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.entries.iter().enumerate() {
            let star = if e.wildcard { "*." } else { "" };
            let comma = if i == 0 { "" } else { "," };
            write!(f, "{comma}{star}{}", e.at)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(text: &str) -> HostPort {
        HostPort::parse(text).unwrap()
    }

    #[test]
    fn entries_match_their_host_and_port_and_wildcards_the_names_below() {
        let allow =
            Allow::parse("registry.example.com, *.corp.example:5000,127.0.0.1:5000,Docker.IO")
                .unwrap();
        for yes in [
            "registry.example.com",
            "registry.example.com:8443",
            "REGISTRY.example.com.",
            "a.corp.example:5000",
            "a.b.corp.example:5000",
            "127.0.0.1:5000",
            "[::ffff:127.0.0.1]:5000",
            "docker.io",
            "index.docker.io",
            "registry.hub.docker.com",
        ] {
            assert!(allow.permits(&hp(yes)), "{yes}");
        }
        for no in [
            "example.com",
            "corp.example:5000",
            "a.corp.example",
            "xcorp.example:5000",
            "127.0.0.1",
            "127.0.0.1:5001",
            "localhost:5000",
            "other.example",
        ] {
            assert!(!allow.permits(&hp(no)), "{no}");
        }
        assert!(allow.names(&hp("127.0.0.1:5000")));
        assert!(
            !allow.names(&hp("a.corp.example:5000")),
            "a wildcard names none"
        );
        assert!(Allow::default().permits(&hp("anything.example")));
        assert!(!Allow::default().names(&hp("localhost")));
        assert_eq!(
            allow.to_string(),
            "registry.example.com,*.corp.example:5000,127.0.0.1:5000,docker.io"
        );
    }

    #[test]
    fn ipv6_entries_with_and_without_ports() {
        let allow = Allow::parse("[::1]:5000,fe80::1").unwrap();
        assert!(allow.names(&hp("[::1]:5000")));
        assert!(!allow.names(&hp("[::1]:5001")));
        assert!(allow.names(&hp("[fe80::1]:443")));
        assert_eq!(allow.to_string(), "[::1]:5000,[fe80::1]");
    }

    #[test]
    fn a_bad_entry_is_named_with_what_is_wrong() {
        for (text, why) in [
            ("", "entry \"\": empty"),
            ("a.example,,b.example", "entry \"\": empty"),
            ("a.example:0", "is not a port"),
            ("a.example:99999", "is not a port"),
            ("a.example:+5", "is not a port"),
            ("*.10.0.0.1", "a wildcard needs a domain name"),
            ("ho st", "is not a host name"),
            ("https://r.example", "is not a port"),
            ("*", "is not a host name"),
            ("[::1", "no closing ]"),
            ("a..example", "is not a host name"),
        ] {
            let err = Allow::parse(text).unwrap_err();
            assert!(err.contains(why), "{text:?}: {err}");
        }
    }
}
