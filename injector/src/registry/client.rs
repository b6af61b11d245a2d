//! One lookup over the OCI distribution API, within one deadline: the manifest
//! (an index followed to its linux/amd64 and linux/arm64 manifests, which must
//! agree), then the configuration blob. Every body is bounded, what is asked
//! by digest is checked against it, redirects are followed only for blobs
//! (their storage), at most [`MAX_REDIRECTS`], over HTTPS and without the
//! registry's credentials. A 401 is answered once, with a bearer token from the
//! challenge's realm or with basic credentials.

use std::sync::Arc;
use std::time::Instant;

use ureq::Agent;
use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};

use super::auth::Credentials;
use super::failure::Failure;
use super::manifest::{self, Document, ImageConfig};
use super::reference::Reference;
use super::token;

/// A manifest or index is read up to this size (the distribution registry's own limit).
pub const MAX_MANIFEST: u64 = 4 << 20;
/// An image configuration is read up to this size.
pub const MAX_CONFIG: u64 = 4 << 20;
/// A token endpoint's answer is read up to this size.
pub const MAX_TOKEN: u64 = 64 << 10;
/// Redirects followed for one blob.
pub const MAX_REDIRECTS: usize = 3;

/// A registry client: one connection pool, the credentials and the trusted CAs.
pub struct Client {
    agent: Agent,
    credentials: Credentials,
}

impl Client {
    /// A client trusting Mozilla's roots and `extra_roots` (DER), with
    /// `credentials` for the registries they name.
    pub fn new(credentials: Credentials, extra_roots: &[Vec<u8>]) -> Client {
        let roots: Vec<Certificate<'static>> = webpki_root_certs::TLS_SERVER_ROOT_CERTS
            .iter()
            .map(|c| Certificate::from_der(c.as_ref()).to_owned())
            .chain(
                extra_roots
                    .iter()
                    .map(|der| Certificate::from_der(der).to_owned()),
            )
            .collect();
        let tls = TlsConfig::builder()
            .provider(TlsProvider::Rustls)
            .root_certs(RootCerts::Specific(Arc::new(roots)))
            .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .build();
        let agent = Agent::config_builder()
            .tls_config(tls)
            .max_redirects(0)
            .http_status_as_error(false)
            .user_agent(concat!("tandem-injector/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Client { agent, credentials }
    }

    /// The image configuration `reference` names, read by `deadline`.
    pub fn image_config(
        &self,
        reference: &Reference,
        deadline: Instant,
    ) -> Result<ImageConfig, Failure> {
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
            let remaining = self.deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(Failure::Timeout);
            }
            let mut request = self
                .client
                .agent
                .get(&url)
                .config()
                .timeout_global(Some(remaining))
                .build()
                .header("Accept", accept);
            // Credentials go to the registry only, never to where it redirects.
            if hops == 0
                && let Some(authorization) = &self.authorization
            {
                request = request.header("Authorization", authorization);
            }
            let mut response = request.call().map_err(|e| failure(&url, e))?;
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
                    let body = response
                        .body_mut()
                        .with_config()
                        .limit(limit)
                        .read_to_vec()
                        .map_err(|e| failure(&url, e))?;
                    return Ok((content_type, body));
                }
                401 if hops == 0 && !challenged => {
                    challenged = true;
                    let header = header("www-authenticate").unwrap_or_default();
                    let login = self.client.credentials.for_host(&self.reference.host);
                    let authorization = token::authorize(
                        &self.client.agent,
                        login,
                        self.reference,
                        &header,
                        self.deadline,
                    )?;
                    self.authorization = Some(authorization);
                }
                401 | 403 => {
                    let why = match (
                        &self.authorization,
                        self.client.credentials.for_host(&self.reference.host),
                    ) {
                        (_, Some(login)) => format!(
                            "HTTP {status} with the login {:?} for {}",
                            login.username, self.reference.host
                        ),
                        (_, None) => format!(
                            "HTTP {status} and --registry-auth has no login for {}",
                            self.reference.host
                        ),
                    };
                    return Err(Failure::Denied(why));
                }
                404 => return Err(Failure::NotFound(format!("HTTP 404 for {url}"))),
                301 | 302 | 303 | 307 | 308 if blob && hops < MAX_REDIRECTS => {
                    let location = header("location").unwrap_or_default();
                    url = redirect(&origin, &location)?;
                    hops += 1;
                }
                _ => return Err(Failure::Malformed(format!("HTTP {status} for {url}"))),
            }
        }
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

/// The failure for a transport error on `url`.
pub(super) fn failure(url: &str, error: ureq::Error) -> Failure {
    match error {
        ureq::Error::Timeout(_) => Failure::Timeout,
        ureq::Error::Io(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ) =>
        {
            Failure::Timeout
        }
        ureq::Error::BodyExceedsLimit(limit) => {
            Failure::Malformed(format!("{url} answered more than {limit} bytes"))
        }
        other => Failure::Network(format!("{url}: {other}")),
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
