//! An image reference as a container's `image` field writes it, read the way the
//! container runtime reads it: Docker Hub's short names (`busybox` is
//! `docker.io/library/busybox`), a registry host with an optional port, a tag
//! (default `latest`) and a digest.

use std::fmt;

/// Docker Hub's name in image references and credential files.
pub const DOCKER_HUB: &str = "docker.io";
/// Where Docker Hub's distribution API answers.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The registry as named (`docker.io` for Docker Hub), port kept.
    pub host: String,
    /// The repository inside it (`library/busybox`).
    pub repository: String,
    /// The tag, when one is written.
    pub tag: Option<String>,
    /// The digest (`sha256:…`), when one is written; it wins over the tag.
    pub digest: Option<String>,
}

impl Reference {
    /// Reads `image`; `Err` says what is wrong with it.
    pub fn parse(image: &str) -> Result<Reference, String> {
        let bad = |why: &str| format!("image {image:?} is not a valid reference: {why}");
        if image.is_empty() || image.len() > 4096 {
            return Err(bad("empty or longer than 4096 bytes"));
        }
        let (rest, digest) = match image.split_once('@') {
            Some((rest, digest)) => {
                check_digest(digest).map_err(|why| bad(&why))?;
                (rest, Some(digest.to_string()))
            }
            None => (image, None),
        };
        let (name, tag) = split_tag(rest).map_err(|why| bad(&why))?;
        let (host, path) = split_host(name);
        if host.is_empty()
            || !host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        {
            return Err(bad(&format!("bad registry host {host:?}")));
        }
        let repository = if host == DOCKER_HUB && !path.contains('/') {
            format!("library/{path}")
        } else {
            path.to_string()
        };
        check_repository(&repository).map_err(|why| bad(&why))?;
        Ok(Reference {
            host,
            repository,
            tag: tag.map(str::to_string),
            digest,
        })
    }

    /// The host the distribution API is asked on.
    pub fn api_host(&self) -> &str {
        if self.host == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.host
        }
    }

    /// What the manifest is asked for: the digest, else the tag, else `latest`.
    pub fn target(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// Whether it names its content for good (a digest), so its answer never
    /// goes stale.
    pub fn pinned(&self) -> bool {
        self.digest.is_some()
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.host, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// Docker Hub's names: in image references, credential files and
/// `--registry-allow` alike, each is Docker Hub ([`DOCKER_HUB`]).
pub const DOCKER_HUB_ALIASES: [&str; 4] = [
    DOCKER_HUB,
    "index.docker.io",
    DOCKER_HUB_API,
    "registry.hub.docker.com",
];

/// Whether `host` (any case) is one of Docker Hub's names.
pub fn is_docker_hub(host: &str) -> bool {
    DOCKER_HUB_ALIASES
        .iter()
        .any(|alias| alias.eq_ignore_ascii_case(host))
}

/// `name[:tag]` split at the tag: a ':' after the last '/' starts it, one
/// before it is a port. `Err` says what is wrong with the tag.
fn split_tag(rest: &str) -> Result<(&str, Option<&str>), String> {
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    let Some(i) = rest[slash..].find(':') else {
        return Ok((rest, None));
    };
    let (name, tag) = (&rest[..slash + i], &rest[slash + i + 1..]);
    let ok = !tag.is_empty()
        && tag.len() <= 128
        && !tag.starts_with(['.', '-'])
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if ok {
        Ok((name, Some(tag)))
    } else {
        Err(format!("bad tag {tag:?}"))
    }
}

/// The registry host (Docker Hub's aliases as [`DOCKER_HUB`]) and the path:
/// the first component is a host when it has a '.' or ':', is `localhost`, or
/// has capitals; else the name is Docker Hub's.
fn split_host(name: &str) -> (String, &str) {
    match name.split_once('/') {
        Some((first, path))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first != first.to_lowercase() =>
        {
            if is_docker_hub(first) {
                (DOCKER_HUB.to_string(), path)
            } else {
                (first.to_string(), path)
            }
        }
        _ => (DOCKER_HUB.to_string(), name),
    }
}

/// Lowercase letters, digits and `._-` between slashes, each component
/// starting and ending alphanumeric, 255 bytes at most.
fn check_repository(repository: &str) -> Result<(), String> {
    let component_ok = |c: &str| {
        !c.is_empty()
            && c.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
            && c.starts_with(|ch: char| ch.is_ascii_alphanumeric())
            && c.ends_with(|ch: char| ch.is_ascii_alphanumeric())
    };
    if repository.len() > 255 || !repository.split('/').all(component_ok) {
        return Err(format!(
            "bad repository {repository:?} (lowercase letters, digits and . _ - between slashes)"
        ));
    }
    Ok(())
}

/// A digest the injector can check: `sha256:` and 64 lowercase hex digits.
pub fn check_digest(digest: &str) -> Result<(), String> {
    match digest.strip_prefix("sha256:") {
        Some(hex)
            if hex.len() == 64
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "bad digest {digest:?} (expected sha256: and 64 lowercase hex digits)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn parts(image: &str) -> (String, String, Option<String>, Option<String>) {
        let r = Reference::parse(image).unwrap();
        (r.host, r.repository, r.tag, r.digest)
    }

    #[test]
    fn short_names_are_docker_hub_and_its_library() {
        let hub = |repo: &str, tag: Option<&str>| {
            (
                DOCKER_HUB.to_string(),
                repo.to_string(),
                tag.map(String::from),
                None,
            )
        };
        assert_eq!(parts("busybox"), hub("library/busybox", None));
        assert_eq!(parts("busybox:1.36"), hub("library/busybox", Some("1.36")));
        assert_eq!(parts("bitnami/kubectl"), hub("bitnami/kubectl", None));
        assert_eq!(parts("docker.io/busybox"), hub("library/busybox", None));
        assert_eq!(
            parts("index.docker.io/library/busybox:x"),
            hub("library/busybox", Some("x"))
        );
        assert_eq!(parts("registry-1.docker.io/a/b"), hub("a/b", None));
        assert_eq!(parts("registry.hub.docker.com/a/b"), hub("a/b", None));
        let r = Reference::parse("busybox").unwrap();
        assert_eq!(r.api_host(), DOCKER_HUB_API);
        assert_eq!(r.target(), "latest");
        assert_eq!(r.to_string(), "docker.io/library/busybox");
    }

    #[test]
    fn hosts_ports_tags_and_digests() {
        assert_eq!(
            parts("localhost:5000/app:v1"),
            (
                "localhost:5000".into(),
                "app".into(),
                Some("v1".into()),
                None
            )
        );
        assert_eq!(
            parts("127.0.0.1:5000/team/app"),
            ("127.0.0.1:5000".into(), "team/app".into(), None, None)
        );
        assert_eq!(
            parts("ghcr.io/org/app/sub:1.0-rc.1"),
            (
                "ghcr.io".into(),
                "org/app/sub".into(),
                Some("1.0-rc.1".into()),
                None
            )
        );
        let pinned = format!("quay.io/a/b:v2@{D}");
        assert_eq!(
            parts(&pinned),
            (
                "quay.io".into(),
                "a/b".into(),
                Some("v2".into()),
                Some(D.into())
            )
        );
        let r = Reference::parse(&pinned).unwrap();
        assert_eq!(r.target(), D);
        assert!(r.pinned());
        assert_eq!(r.to_string(), pinned);
        assert_eq!(Reference::parse("localhost/app").unwrap().host, "localhost");
    }

    #[test]
    fn what_is_not_a_reference_says_why() {
        for (image, why) in [
            ("", "empty"),
            ("Busybox", "bad repository"),
            ("a//b", "bad repository"),
            ("app:", "bad tag"),
            ("app:-x", "bad tag"),
            ("app@sha256:12", "bad digest"),
            ("app@md5:0123", "bad digest"),
            ("ho st.io/app", "bad registry host"),
            ("ghcr.io/", "bad repository"),
        ] {
            let err = Reference::parse(image).unwrap_err();
            assert!(err.contains(why), "{image:?}: {err}");
        }
    }
}
