//! Registry credentials from a Docker `config.json` (`--registry-auth FILE`, a
//! Secret of type `kubernetes.io/dockerconfigjson` mounted read-only): its
//! `auths` map, each entry `auth` (base64 of `user:password`) or `username` and
//! `password`, keyed by registry host as `docker login` writes it (a URL such as
//! `https://index.docker.io/v1/` for Docker Hub, or a bare `host[:port]`).

use std::fmt;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::reference::{DOCKER_HUB, is_docker_hub};

/// One account.
#[derive(Clone, PartialEq, Eq)]
pub struct Login {
    /// The user name.
    pub username: String,
    /// Its password or token.
    pub password: String,
}

impl fmt::Debug for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The password never reaches a log line.
        write!(f, "Login({:?}, ***)", self.username)
    }
}

/// The accounts of a config file, by registry host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    by_host: Vec<(String, Login)>,
}

impl Credentials {
    /// Reads `path`; `Err` names the file and what is wrong.
    pub fn load(path: &Path) -> Result<Credentials, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Credentials::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Reads a config file's text.
    pub fn parse(text: &[u8]) -> Result<Credentials, String> {
        let json: Value = serde_json::from_slice(text)
            .map_err(|e| format!("not a Docker config.json (not JSON: {e})"))?;
        let auths = match &json["auths"] {
            Value::Object(auths) => auths,
            Value::Null => return Ok(Credentials::default()),
            _ => return Err("not a Docker config.json (its \"auths\" is not an object)".into()),
        };
        let mut by_host = Vec::with_capacity(auths.len());
        for (key, entry) in auths {
            let bad = |why: &str| format!("auths[{key:?}]: {why}");
            let login = match (
                &entry["auth"],
                entry["username"].as_str(),
                entry["password"].as_str(),
            ) {
                (Value::String(auth), _, _) if !auth.is_empty() => {
                    let decoded = STANDARD
                        .decode(auth.trim())
                        .map_err(|e| bad(&format!("\"auth\" is not base64: {e}")))?;
                    let pair =
                        String::from_utf8(decoded).map_err(|_| bad("\"auth\" is not UTF-8"))?;
                    let (user, password) = pair
                        .split_once(':')
                        .ok_or_else(|| bad("\"auth\" is not base64 of user:password"))?;
                    Login {
                        username: user.to_string(),
                        password: password.to_string(),
                    }
                }
                (_, Some(user), Some(password)) => Login {
                    username: user.to_string(),
                    password: password.to_string(),
                },
                _ => return Err(bad("neither \"auth\" nor \"username\" and \"password\"")),
            };
            by_host.push((host_of(key), login));
        }
        Ok(Credentials { by_host })
    }

    /// The account for registry `host` (as [`super::Reference::host`] names it).
    pub fn for_host(&self, host: &str) -> Option<&Login> {
        self.by_host
            .iter()
            .find(|(h, _)| h.eq_ignore_ascii_case(host))
            .map(|(_, login)| login)
    }

    /// Whether the file gave no account.
    pub fn is_empty(&self) -> bool {
        self.by_host.is_empty()
    }
}

/// The host a config key names: scheme and path dropped, lowercase, Docker
/// Hub's several names as one.
fn host_of(key: &str) -> String {
    let rest = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = rest.split('/').next().unwrap_or(rest).to_lowercase();
    if is_docker_hub(&host) {
        DOCKER_HUB.to_string()
    } else {
        host
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_or_username_and_password_keyed_by_host_as_docker_login_writes_them() {
        let text = br#"{"auths":{
            "https://index.docker.io/v1/":{"auth":"aHViOnNlY3JldDp3aXRoOmNvbG9ucw=="},
            "registry.example.com:5000":{"username":"robot$ci","password":"p"},
            "https://GHCR.io":{"auth":"Z2g6dG9r","email":"x"}},
            "credHelpers":{"x":"y"}}"#;
        let creds = Credentials::parse(text).unwrap();
        let hub = creds.for_host("docker.io").unwrap();
        assert_eq!(
            (hub.username.as_str(), hub.password.as_str()),
            ("hub", "secret:with:colons")
        );
        assert_eq!(
            creds
                .for_host("registry.example.com:5000")
                .unwrap()
                .username,
            "robot$ci"
        );
        assert_eq!(creds.for_host("ghcr.io").unwrap().password, "tok");
        assert_eq!(creds.for_host("registry.example.com"), None);
        assert!(!format!("{hub:?}").contains("secret"));
    }

    #[test]
    fn what_is_not_a_config_file_says_which_entry_and_why() {
        assert!(Credentials::parse(b"{}").unwrap().is_empty());
        for (text, why) in [
            (&b"auths:"[..], "not JSON"),
            (br#"{"auths":[]}"#, "not an object"),
            (
                br#"{"auths":{"h":{"auth":"%%%"}}}"#,
                "auths[\"h\"]: \"auth\" is not base64",
            ),
            (br#"{"auths":{"h":{"auth":"dXNlcg=="}}}"#, "user:password"),
            (br#"{"auths":{"h":{"username":"u"}}}"#, "neither"),
        ] {
            let err = Credentials::parse(text).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }
}
