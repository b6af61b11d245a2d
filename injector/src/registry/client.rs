//! One lookup over the OCI distribution API, within one deadline: the manifest
//! (an index followed to its linux/amd64 and linux/arm64 manifests, which must
//! agree), then the configuration blob. Every body is bounded, what is asked
//! by digest is checked against it, redirects are followed only for blobs
//! (their storage), at most [`MAX_REDIRECTS`], over HTTPS and without the
//! registry's credentials. A 401 is answered once, with a bearer token from the
//! challenge's realm or with basic credentials. A registry `--registry-allow`
//! does not permit is refused before anything is contacted.

use std::sync::Arc;
use std::time::Instant;

use ureq::Agent;

use super::allow::{Allow, HostPort};
use super::auth::Credentials;
use super::failure::Failure;
use super::manifest::{self, Document, ImageConfig};
use super::reference::Reference;
use super::{token, transport};

/// A manifest or index is read up to this size (the distribution registry's own limit).
pub const MAX_MANIFEST: u64 = 4 << 20;
/// An image configuration is read up to this size.
pub const MAX_CONFIG: u64 = 4 << 20;
/// Redirects followed for one blob.
pub const MAX_REDIRECTS: usize = 3;

/// A registry client: one connection pool, the credentials, the trusted CAs
/// and the registries it may contact.
pub struct Client {
    agent: Agent,
    credentials: Credentials,
    allow: Arc<Allow>,
}

impl Client {
    /// A client trusting Mozilla's roots and `extra_roots` (DER), with
    /// `credentials` for the registries they name, contacting only the
    /// registries `allow` permits.
    pub fn new(credentials: Credentials, extra_roots: &[Vec<u8>], allow: Allow) -> Client {
        let allow = Arc::new(allow);
        Client {
            agent: transport::agent(extra_roots, allow.clone()),
            credentials,
            allow,
        }
    }

    /// The image configuration `reference` names, read by `deadline`.
    pub fn image_config(
        &self,
        reference: &Reference,
        deadline: Instant,
    ) -> Result<ImageConfig, Failure> {
        let registry = HostPort::parse(&reference.host).map_err(Failure::Reference)?;
        if !self.allow.permits(&registry) {
            return Err(Failure::NotAllowed(format!(
                "{registry} is not in --registry-allow {}",
                self.allow
            )));
        }
        let mut session = Session {
            client: self,
            reference,
            deadline,
            authorization: None,
        };
        let target = reference.target().to_string();
        match session.manifest(&target)? {
            Document::Manifest { config } => session.config(&config),
            Document::Index(entries) => {
                let picked = manifest::pick(&entries);
                if picked.is_empty() {
                    let listed: Vec<&str> = entries.iter().map(|e| e.platform.as_str()).collect();
                    return Err(Failure::Malformed(format!(
                        "its index has no linux/amd64 or linux/arm64 image (it lists {listed:?})"
                    )));
                }
                let mut found: Vec<(&str, ImageConfig)> = Vec::with_capacity(2);
                for entry in picked {
                    let config = match session.manifest(&entry.digest)? {
                        Document::Manifest { config } => session.config(&config)?,
                        Document::Index(_) => {
                            return Err(Failure::Malformed(format!(
                                "its index's {} entry is another index",
                                entry.platform
                            )));
                        }
                    };
                    found.push((&entry.platform, config));
                }
                if let [(a, first), (b, second)] = &found[..]
                    && first != second
                {
                    return Err(Failure::Disagree(format!(
                        "{a} runs entrypoint {:?} cmd {:?}, {b} entrypoint {:?} cmd {:?}",
                        first.entrypoint, first.cmd, second.entrypoint, second.cmd
                    )));
                }
                Ok(found.swap_remove(0).1)
            }
        }
    }
}

/// One lookup's state: its deadline and the authorization the registry granted.
struct Session<'a> {
    client: &'a Client,
    reference: &'a Reference,
    deadline: Instant,
    authorization: Option<String>,
}

impl Session<'_> {
    fn manifest(&mut self, target: &str) -> Result<Document, Failure> {
        let path = format!("/v2/{}/manifests/{target}", self.reference.repository);
        let (content_type, body) = self.get(&path, manifest::ACCEPT, MAX_MANIFEST, false)?;
        if target.starts_with("sha256:") {
            verify(target, &body)?;
        }
        manifest::document(content_type.as_deref(), &body).map_err(Failure::Malformed)
    }

    fn config(&mut self, digest: &str) -> Result<ImageConfig, Failure> {
        let path = format!("/v2/{}/blobs/{digest}", self.reference.repository);
        let (_, body) = self.get(&path, "*/*", MAX_CONFIG, true)?;
        verify(digest, &body)?;
        manifest::config(&body).map_err(Failure::Malformed)
    }

    /// GETs `path` on the registry: its content type and body.
    fn get(
        &mut self,
        path: &str,
        accept: &str,
        limit: u64,
        blob: bool,
    ) -> Result<(Option<String>, Vec<u8>), Failure> {
        let origin = format!("https://{}", self.reference.api_host());
        let mut url = format!("{origin}{path}");
        let mut hops = 0;
        let mut challenged = false;
        loop {
            let mut headers = vec![("Accept", accept)];
            // Credentials go to the registry only, never to where it redirects.
            if let (0, Some(authorization)) = (hops, &self.authorization) {
                headers.push(("Authorization", authorization.as_str()));
            }
            let agent = &self.client.agent;
            let mut response = transport::get(agent, &url, &[], &headers, self.deadline)?;
            let status = response.status().as_u16();
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            match status {
                200 => {
                    let content_type = header("content-type");
                    let body = transport::read(&url, &mut response, limit)?;
                    return Ok((content_type, body));
                }
                401 if hops == 0 && !challenged => {
                    challenged = true;
                    self.answer(&header("www-authenticate").unwrap_or_default())?;
                }
                401 | 403 => return Err(self.denied(status)),
                404 => return Err(Failure::NotFound(format!("HTTP 404 for {url}"))),
                301 | 302 | 303 | 307 | 308 if blob && hops < MAX_REDIRECTS => {
                    url = redirect(&origin, &header("location").unwrap_or_default())?;
                    hops += 1;
                }
                _ => return Err(Failure::Malformed(format!("HTTP {status} for {url}"))),
            }
        }
    }

    /// Answers the registry's 401 `challenge`: the authorization to send next.
    fn answer(&mut self, challenge: &str) -> Result<(), Failure> {
        let login = self.client.credentials.for_host(&self.reference.host);
        let authorization = token::authorize(
            &self.client.agent,
            login,
            self.reference,
            challenge,
            self.deadline,
        )?;
        self.authorization = Some(authorization);
        Ok(())
    }

    /// The failure for a 401 or 403 after the challenge was answered.
    fn denied(&self, status: u16) -> Failure {
        let host = &self.reference.host;
        Failure::Denied(match self.client.credentials.for_host(host) {
            Some(login) => format!(
                "HTTP {status} with the login {:?} for {host}",
                login.username
            ),
            None => format!("HTTP {status} and --registry-auth has none for {host}"),
        })
    }
}

/// Where a redirect goes: HTTPS only, a path resolved against `origin`.
fn redirect(origin: &str, location: &str) -> Result<String, Failure> {
    if location.starts_with("https://") {
        Ok(location.to_string())
    } else if location.starts_with('/') && !location.starts_with("//") {
        Ok(format!("{origin}{location}"))
    } else {
        Err(Failure::Malformed(format!(
            "a redirect to {location:?} (only HTTPS is followed)"
        )))
    }
}

/// Checks that `body` is what `digest` names.
fn verify(digest: &str, body: &[u8]) -> Result<(), Failure> {
    let sum = ring::digest::digest(&ring::digest::SHA256, body);
    let hex: String = sum.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    if digest.strip_prefix("sha256:") == Some(hex.as_str()) {
        Ok(())
    } else {
        Err(Failure::Malformed(format!(
            "the content served for {digest} has digest sha256:{hex}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_stay_on_https() {
        let o = "https://r.example";
        assert_eq!(
            redirect(o, "https://s3.example/b?x=1").unwrap(),
            "https://s3.example/b?x=1"
        );
        assert_eq!(
            redirect(o, "/v2/x/blobs/y").unwrap(),
            "https://r.example/v2/x/blobs/y"
        );
        for bad in [
            "http://s3.example/b",
            "//evil.example/x",
            "",
            "blobs/y",
            "file:///etc/passwd",
        ] {
            assert!(redirect(o, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn content_is_checked_against_its_digest() {
        let empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(verify(empty, b""), Ok(()));
        let err = verify(empty, b"x").unwrap_err();
        assert!(
            err.to_string().contains("has digest sha256:2d711642"),
            "{err}"
        );
    }
}
