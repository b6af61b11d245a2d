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
use super::client::{MAX_TOKEN, failure};
use super::failure::Failure;
use super::reference::Reference;

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
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return Err(Failure::Timeout);
    }
    let mut request = agent
        .get(realm)
        .config()
        .timeout_global(Some(remaining))
        .build()
        .query_pairs(query);
    if let Some(basic) = basic {
        request = request.header("Authorization", basic);
    }
    let mut response = request.call().map_err(|e| failure(realm, e))?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(Failure::Denied(format!(
            "the token endpoint {realm} answered HTTP {status}"
        )));
    }
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_TOKEN)
        .read_to_vec()
        .map_err(|e| failure(realm, e))?;
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
