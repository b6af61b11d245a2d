//! The image's entrypoint from its registry (SPEC §10): a job
//! container without `command` runs its image's `ENTRYPOINT`/`CMD`, which only
//! the image's configuration knows. [`Registry::lookup`] reads it through the
//! OCI distribution API within a deadline, remembered in a bounded cache.
//!
//! | module | owns |
//! |---|---|
//! | `reference` | an image reference as the runtime reads it |
//! | `allow` | `--registry-allow`: the registries that may be looked up |
//! | `reach` | the address rule, applied to every address connected to |
//! | `transport` | the HTTP agent, one GET, a transport error's meaning |
//! | `client` | one lookup: manifest, index, configuration blob, authentication |
//! | `challenge` | the `WWW-Authenticate` header |
//! | `token` | a 401 answered: basic login or bearer token |
//! | `manifest` | manifests, indexes, configurations read |
//! | `auth` | credentials from a Docker `config.json` |
//! | `cache` | bounded, timed, shared lookups |
//! | `slots` | at most [`MAX_LOOKUPS`] lookups at once |
//! | `failure` | why a lookup failed, and the fix |

pub mod allow;
pub mod auth;
pub mod cache;
pub mod challenge;
pub mod client;
pub mod failure;
pub mod manifest;
pub mod reach;
pub mod reference;
pub mod slots;
pub mod token;
pub mod transport;

use std::time::{Duration, Instant};

use crate::metrics::{self, Counter};
use crate::say;

pub use allow::Allow;
pub use auth::Credentials;
pub use cache::{Cache, Source};
pub use client::Client;
pub use failure::Failure;
pub use manifest::ImageConfig;
pub use reference::Reference;

/// A lookup's deadline by default: well inside the webhook's 5 s timeout.
pub const DEADLINE: Duration = Duration::from_secs(2);
/// Answers kept at most.
pub const CAPACITY: usize = 1024;
/// A tag's answer is kept this long (a tag may move).
pub const TAG_TTL: Duration = Duration::from_secs(600);
/// A failure is kept this long, so a Job's many Pods do not each wait for it.
pub const FAILURE_TTL: Duration = Duration::from_secs(30);

/// Lookups in flight at most; the others wait within their deadline.
pub const MAX_LOOKUPS: usize = 16;

/// A lookup's answer.
pub type Answer = Result<ImageConfig, Failure>;

/// The client and its cache: what the server shares between reviews.
pub struct Registry {
    client: Client,
    cache: Cache<Answer>,
    slots: slots::Slots,
    /// How long a review waits for its lookups, at most (default [`DEADLINE`]).
    pub deadline: Duration,
}

impl Registry {
    /// A registry reader with `client` and a cache of `capacity` answers.
    pub fn new(client: Client, capacity: usize) -> Registry {
        Registry {
            client,
            cache: Cache::new(capacity),
            slots: slots::Slots::new(MAX_LOOKUPS),
            deadline: DEADLINE,
        }
    }

    /// The configuration of `image` (a container's `image` field), by `deadline`.
    pub fn lookup(&self, image: &str, deadline: Instant) -> (Answer, Source) {
        let answer = match Reference::parse(image) {
            Err(why) => (Err(Failure::Reference(why)), Source::Miss),
            Ok(reference) => {
                let key = reference.to_string();
                let found = self
                    .cache
                    .get(&key, deadline, || self.look(&reference, deadline));
                found.unwrap_or((Err(Failure::Timeout), Source::Shared))
            }
        };
        if let (Err(failure), Source::Miss) = &answer {
            say!("registry lookup of {image} failed: {failure}");
        }
        // `/metrics`: a failure (remembered or not), else a hit (a shared
        // lookup included) or a miss.
        metrics::count(match (&answer.0, answer.1) {
            (Err(Failure::NotAllowed(_)), _) => Counter::RegistryNotAllowed,
            (Err(_), _) => Counter::RegistryFailure,
            (Ok(_), Source::Miss) => Counter::RegistryCacheMiss,
            (Ok(_), _) => Counter::RegistryCacheHit,
        });
        answer
    }

    /// One lookup, once a slot is free, and how long its answer lives.
    fn look(&self, reference: &Reference, deadline: Instant) -> (Answer, Option<Duration>) {
        let answer = match self.slots.take(deadline) {
            Some(_slot) => self.client.image_config(reference, deadline),
            None => Err(Failure::Busy),
        };
        let ttl = match &answer {
            Ok(_) if reference.pinned() => None,
            Ok(_) => Some(TAG_TTL),
            // A timeout or no slot is this lookup's, not the image's: not kept.
            Err(Failure::Timeout | Failure::Busy) => Some(Duration::ZERO),
            Err(_) => Some(FAILURE_TTL),
        };
        (answer, ttl)
    }

    /// Answers kept now.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }
}

/// The CA certificates (DER) of PEM file `path` (`--registry-ca`); `Err` names
/// the file and what is wrong, for the option's error line.
pub fn load_ca(path: &std::path::Path) -> Result<Vec<Vec<u8>>, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let bad = |why: String| format!("{}: {why}", path.display());
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .map(|c| c.map(|c| c.as_ref().to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad(
            "expected PEM CA certificates (-----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(certs)
}
