//! A 401 answered: the `Authorization` for the registry's challenge, a basic
//! login from `--registry-auth`, or a bearer token from the challenge's realm
//! (HTTPS only, its answer bounded, within the lookup's deadline) asked for
//! pull access to the repository, with that login when there is one.

use std::time::Instant;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ureq::Agent;

use super::auth::Login;
use super::challenge::{self, Challenge};
use super::failure::Failure;
use super::reference::Reference;
use super::transport;

/// A token endpoint's answer is read up to this size.
pub const MAX_TOKEN: u64 = 64 << 10;

/// The `Authorization` value that answers the challenge in `header`.
pub(super) fn authorize(
    agent: &Agent,
    login: Option<&Login>,
    reference: &Reference,
    header: &str,
    deadline: Instant,
) -> Result<String, Failure> {
    let challenges = challenge::parse(header).map_err(Failure::Malformed)?;
    let basic = login.map(|l| {
        format!(
            "Basic {}",
            STANDARD.encode(format!("{}:{}", l.username, l.password))
        )
    });
    if let Some(bearer) = challenges.iter().find(|c| c.scheme == "bearer") {
        return token(agent, bearer, basic.as_deref(), reference, deadline);
    }
    if challenges.iter().any(|c| c.scheme == "basic") {
        return basic.ok_or_else(|| {
            Failure::Denied(format!(
                "the registry asks for a login and --registry-auth has none for {}",
                reference.host
            ))
        });
    }
    Err(Failure::Denied(format!(
        "the registry asks for {header:?}, which the injector does not speak"
    )))
}

/// A bearer token from the challenge's realm, asked for pull access to the
/// repository, with the basic login when there is one (else anonymous).
fn token(
    agent: &Agent,
    bearer: &Challenge,
    basic: Option<&str>,
    reference: &Reference,
    deadline: Instant,
) -> Result<String, Failure> {
    let realm = bearer
        .param("realm")
        .ok_or_else(|| Failure::Malformed("the bearer challenge has no realm".into()))?;
    if !realm.starts_with("https://") {
        return Err(Failure::Malformed(format!(
            "the token realm {realm:?} is not HTTPS"
        )));
    }
    let scope = format!("repository:{}:pull", reference.repository);
    let mut query = vec![("scope", scope.as_str())];
    if let Some(service) = bearer.param("service") {
        query.push(("service", service));
    }
    let mut headers = Vec::new();
    if let Some(basic) = basic {
        headers.push(("Authorization", basic));
    }
    let mut response = transport::get(agent, realm, &query, &headers, deadline)?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(Failure::Denied(format!(
            "the token endpoint {realm} answered HTTP {status}"
        )));
    }
    let body = transport::read(realm, &mut response, MAX_TOKEN)?;
    let json: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| Failure::Malformed(format!("the token endpoint's answer is not JSON: {e}")))?;
    match json["token"].as_str().or(json["access_token"].as_str()) {
        Some(token) if !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic()) => {
            Ok(format!("Bearer {token}"))
        }
        _ => Err(Failure::Malformed(
            "the token endpoint's answer has no token".into(),
        )),
    }
}
