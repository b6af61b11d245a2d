//! Name resolution that works in an empty root (`scratch`, distroless static).
//!
//! A static musl binary resolves names by reading `/etc/hosts` and `/etc/resolv.conf`;
//! in an image without them even `localhost` turns into a DNS query to a nameserver
//! that is not there. Sidecar admin URLs are nearly always `127.0.0.1`, `[::1]` or
//! `localhost`, so those are answered here without any file or lookup, and every
//! other name goes to ureq's system resolver as before. The `tcp://` readiness
//! checks resolve through the same resolver ([`addrs`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;
use ureq::unversioned::transport::time::Duration as Budget;

/// `localhost` is both loopbacks, IPv4 first: Envoy's admin listens on 127.0.0.1 in
/// most meshes, and the connector falls back to `::1` for IPv6-only Pods.
const LOCALHOST: [IpAddr; 2] = [
    IpAddr::V4(Ipv4Addr::LOCALHOST),
    IpAddr::V6(Ipv6Addr::LOCALHOST),
];

/// Answers IP literals and `localhost` itself; asks `system` about any other name.
#[derive(Debug, Default)]
pub struct LocalFirst<R = DefaultResolver> {
    system: R,
}

impl LocalFirst {
    /// Falls back to ureq's resolver (`getaddrinfo`, with the request's timeout).
    pub fn new() -> Self {
        Self::default()
    }
}

impl<R: Resolver> Resolver for LocalFirst<R> {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let fixed = uri.authority().and_then(|authority| {
            let port = authority.port_u16().or(match uri.scheme_str() {
                Some("http") => Some(80),
                Some("https") => Some(443),
                _ => None,
            })?;
            Some((fixed_ips(authority.host())?, port))
        });
        // Anything unusual (no port, another scheme) goes to ureq, which reports it.
        let Some((ips, port)) = fixed else {
            // A failed lookup is "no connection" for the pilot-agent fallback (SPEC §5.2):
            // ureq reports it as a bare I/O error, indistinguishable from a mid-answer one.
            return self
                .system
                .resolve(uri, config, timeout)
                .map_err(|e| match e {
                    ureq::Error::Io(_) => ureq::Error::HostNotFound,
                    other => other,
                });
        };
        let mut addrs = self.empty();
        let wanted = ips.into_iter().map(|ip| SocketAddr::new(ip, port));
        for addr in config.ip_family().keep_wanted(wanted) {
            addrs.push(addr);
        }
        if addrs.is_empty() {
            // e.g. `[::1]` with an IPv4-only agent: the same error ureq would give.
            return Err(ureq::Error::HostNotFound);
        }
        Ok(addrs)
    }
}

/// The addresses of `host` (as in a URL: an IPv6 literal in brackets) on `port`,
/// as an HTTP request to it would connect: IP literals and `localhost` at once,
/// any other name through the system resolver within `timeout`.
pub fn addrs(host: &str, port: u16, timeout: Duration) -> Result<Vec<SocketAddr>, ureq::Error> {
    let uri: Uri = format!("http://{host}:{port}/")
        .parse()
        .map_err(|_| ureq::Error::HostNotFound)?;
    let budget = NextTimeout {
        after: Budget::Exact(timeout),
        ..NextTimeout::default()
    };
    let found = LocalFirst::new().resolve(&uri, &Config::default(), budget)?;
    Ok(found.iter().copied().collect())
}

/// The addresses of `host` (as in a URL: IPv6 in brackets) when they are known
/// without a lookup; `None` means "ask the system".
fn fixed_ips(host: &str) -> Option<Vec<IpAddr>> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Some(vec![ip]);
    }
    // A trailing dot is the same name written fully qualified.
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.eq_ignore_ascii_case("localhost") {
        return Some(LOCALHOST.to_vec());
    }
    None
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use ureq::config::IpFamily;

    use super::*;

    /// Stands in for the system resolver: counts calls and answers one marker address.
    #[derive(Debug, Default)]
    struct Recording {
        calls: AtomicUsize,
    }

    const MARKER: &str = "192.0.2.7:9";

    impl Resolver for Recording {
        fn resolve(
            &self,
            _uri: &Uri,
            _config: &Config,
            _timeout: NextTimeout,
        ) -> Result<ResolvedSocketAddrs, ureq::Error> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let mut addrs = self.empty();
            addrs.push(MARKER.parse().unwrap());
            Ok(addrs)
        }
    }

    /// Resolves `url` with a recording fallback: the addresses and whether the
    /// system resolver was asked.
    fn resolve_with(url: &str, config: &Config) -> (Vec<String>, bool) {
        let resolver = LocalFirst::<Recording>::default();
        let uri: Uri = url.parse().unwrap();
        let addrs = resolver
            .resolve(&uri, config, NextTimeout::default())
            .unwrap();
        let asked = resolver.system.calls.load(Ordering::SeqCst) > 0;
        (addrs.iter().map(ToString::to_string).collect(), asked)
    }

    fn resolve(url: &str) -> (Vec<String>, bool) {
        resolve_with(url, &Config::default())
    }

    #[test]
    fn ipv4_literal_is_used_as_is() {
        assert_eq!(
            resolve("http://127.0.0.1:15000/ready"),
            (vec!["127.0.0.1:15000".to_string()], false)
        );
    }

    #[test]
    fn bracketed_ipv6_literal_is_used_as_is() {
        assert_eq!(
            resolve("http://[::1]:15020/quitquitquit"),
            (vec!["[::1]:15020".to_string()], false)
        );
        assert_eq!(
            fixed_ips("[fd00::5]"),
            Some(vec!["fd00::5".parse().unwrap()])
        );
    }

    #[test]
    fn scheme_default_port_applies_to_fixed_hosts() {
        assert_eq!(
            resolve("http://10.1.2.3/ready"),
            (vec!["10.1.2.3:80".to_string()], false)
        );
        assert_eq!(
            resolve("https://[::1]/ready"),
            (vec!["[::1]:443".to_string()], false)
        );
    }

    #[test]
    fn localhost_is_both_loopbacks_without_any_file() {
        for host in ["localhost", "LocalHost", "LOCALHOST", "localhost."] {
            assert_eq!(
                resolve(&format!("http://{host}:4191/ready")),
                (
                    vec!["127.0.0.1:4191".to_string(), "[::1]:4191".to_string()],
                    false
                ),
                "{host}"
            );
        }
    }

    #[test]
    fn localhost_respects_the_agents_ip_family() {
        let v4 = Config::builder().ip_family(IpFamily::Ipv4Only).build();
        assert_eq!(
            resolve_with("http://localhost:9901/ready", &v4),
            (vec!["127.0.0.1:9901".to_string()], false)
        );
    }

    #[test]
    fn other_names_go_to_the_system_resolver() {
        for url in [
            "http://envoy.example:15000/ready",
            "http://localhost.example.com:15000/ready",
            "http://my-localhost:15000/ready",
            "http://localhost..:15000/ready",
            "http://127.0.0.1.example.com/ready",
        ] {
            assert_eq!(resolve(url), (vec![MARKER.to_string()], true), "{url}");
        }
    }

    #[test]
    fn unknown_scheme_without_port_goes_to_the_system_resolver() {
        assert_eq!(
            resolve("ftp://127.0.0.1/x"),
            (vec![MARKER.to_string()], true)
        );
    }

    #[test]
    fn addrs_of_a_tcp_check_need_no_lookup_for_literals_and_localhost() {
        let found = |host| addrs(host, 5432, Duration::from_secs(1)).unwrap();
        assert_eq!(found("127.0.0.1"), ["127.0.0.1:5432".parse().unwrap()]);
        assert_eq!(found("[::1]"), ["[::1]:5432".parse().unwrap()]);
        assert_eq!(
            found("localhost"),
            [
                "127.0.0.1:5432".parse::<SocketAddr>().unwrap(),
                "[::1]:5432".parse().unwrap()
            ]
        );
    }

    #[test]
    fn unwanted_family_is_host_not_found() {
        let v4 = Config::builder().ip_family(IpFamily::Ipv4Only).build();
        let uri: Uri = "http://[::1]:1/".parse().unwrap();
        let err = LocalFirst::<Recording>::default()
            .resolve(&uri, &v4, NextTimeout::default())
            .unwrap_err();
        assert!(matches!(err, ureq::Error::HostNotFound), "{err:?}");
    }
}
