//! The certificate and key files, and a rustls certificate resolver that reads
//! them again when they change: cert-manager renews the certificate by rewriting
//! the mounted Secret, and the next handshake serves the new one, no restart.
//! Each handshake compares the files' inode, size and mtime (two `stat` calls)
//! with the last load; a pair that fails to load (a half-written update) keeps
//! the previous certificate until the files change again. The metrics show the
//! `notAfter` of the certificate served (`not_after`), set at each (re)load.

use std::fmt;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::metrics;
use crate::say;

mod not_after;

/// Tells the metrics until when `pair`'s leaf certificate is valid.
fn show_expiry(pair: &CertifiedKey) {
    let until = pair
        .end_entity_cert()
        .ok()
        .and_then(|leaf| not_after::not_after(leaf));
    if until.is_none() {
        say!("warning: the served certificate's notAfter is unreadable: no expiry metric");
    }
    metrics::serving_until(until);
}

/// The PEM files the injector serves from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Files {
    /// The certificate chain, leaf first (`--tls-cert`).
    pub cert: PathBuf,
    /// Its private key (`--tls-key`).
    pub key: PathBuf,
}

/// What identifies one version of a file: device, inode, size, mtime.
type Stamp = Option<(u64, u64, u64, i64, i64)>;

fn stamp(files: &Files) -> [Stamp; 2] {
    let of = |path: &PathBuf| {
        let m = fs::metadata(path).ok()?;
        Some((m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
    };
    [of(&files.cert), of(&files.key)]
}

/// Loads the pair, checking that the key belongs to the certificate. The error
/// names the file and what is wrong with it.
pub fn load(files: &Files, provider: &CryptoProvider) -> Result<Arc<CertifiedKey>, String> {
    let cert = files.cert.display();
    let key = files.key.display();
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| format!("--tls-cert {cert}: {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert {cert}: {e}"))?;
    if chain.is_empty() {
        return Err(format!(
            "--tls-cert {cert}: no CERTIFICATE block in it (expected PEM)"
        ));
    }
    let der = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| format!("--tls-key {key}: {e} (expected a PEM PRIVATE KEY, RSA or EC)"))?;
    let signer = provider
        .key_provider
        .load_private_key(der)
        .map_err(|e| format!("--tls-key {key}: {e}"))?;
    let pair = CertifiedKey::new(chain, signer);
    pair.keys_match()
        .map_err(|e| format!("--tls-key {key} does not belong to --tls-cert {cert}: {e}"))?;
    Ok(Arc::new(pair))
}

/// Serves the pair in `files`, reloaded when they change.
pub struct Reloading {
    files: Files,
    provider: Arc<CryptoProvider>,
    current: Mutex<([Stamp; 2], Arc<CertifiedKey>)>,
}

impl Reloading {
    /// Loads the pair once; an error here is the injector's bad input.
    pub fn new(files: Files, provider: Arc<CryptoProvider>) -> Result<Reloading, String> {
        let before = stamp(&files);
        let pair = load(&files, &provider)?;
        show_expiry(&pair);
        Ok(Reloading {
            files,
            provider,
            current: Mutex::new((before, pair)),
        })
    }
}

impl fmt::Debug for Reloading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reloading")
            .field("files", &self.files)
            .finish()
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let now = stamp(&self.files);
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if now != current.0 {
            current.0 = now;
            match load(&self.files, &self.provider) {
                Ok(pair) => {
                    show_expiry(&pair);
                    current.1 = pair;
                    say!("certificate reloaded from {}", self.files.cert.display());
                }
                Err(e) => say!("warning: {e}; still serving the previous certificate"),
            }
        }
        Some(current.1.clone())
    }
}

/// The rustls server configuration: ring's provider, TLS 1.2 and 1.3, HTTP/1.1
/// by ALPN, the reloading resolver.
pub fn server_config(files: Files) -> Result<Arc<rustls::ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let resolver = Reloading::new(files, provider.clone())?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
