//! The `WWW-Authenticate` header of a registry's 401 (RFC 9110 §11.6.1): one or
//! more challenges, each a scheme and its parameters, as Docker Hub, GHCR,
//! GCR/Artifact Registry, Quay and ECR Public send them
//! (`Bearer realm="…",service="…",scope="…"`) or a basic one (`Basic realm="…"`).

/// One challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The scheme, lowercase (`bearer`, `basic`).
    pub scheme: String,
    /// Its parameters, names lowercase, values unquoted.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// The value of parameter `name` (lowercase), if given.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The challenges in `header`; `Err` says where it stops making sense.
pub fn parse(header: &str) -> Result<Vec<Challenge>, String> {
    let mut at = Cursor {
        text: header.as_bytes(),
        i: 0,
    };
    let mut found: Vec<Challenge> = Vec::new();
    loop {
        at.skip(b" \t,");
        if at.done() {
            break;
        }
        let token = at.token();
        if token.is_empty() {
            return Err(at.error("a scheme or parameter name"));
        }
        at.skip(b" \t");
        match found.last_mut() {
            Some(last) if at.peek() == Some(b'=') => {
                at.i += 1;
                at.skip(b" \t");
                let value = if at.peek() == Some(b'"') {
                    at.quoted()?
                } else {
                    at.token()
                };
                if value.is_empty() {
                    return Err(at.error("a parameter value"));
                }
                last.params.push((token.to_ascii_lowercase(), value));
            }
            _ => {
                found.push(Challenge {
                    scheme: token.to_ascii_lowercase(),
                    params: Vec::new(),
                });
                if at.token68() || !matches!(at.peek(), None | Some(b',')) {
                    // Its parameters (or its token68, skipped) follow.
                    continue;
                }
            }
        }
        at.skip(b" \t");
        if !matches!(at.peek(), None | Some(b',')) {
            return Err(at.error("',' between parameters"));
        }
    }
    if found.is_empty() {
        return Err("WWW-Authenticate: no challenge in an empty header".into());
    }
    Ok(found)
}

struct Cursor<'a> {
    text: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn done(&self) -> bool {
        self.i >= self.text.len()
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.i).copied()
    }

    fn skip(&mut self, set: &[u8]) {
        while self.peek().is_some_and(|b| set.contains(&b)) {
            self.i += 1;
        }
    }

    /// An RFC 9110 token (tchar), possibly empty.
    fn token(&mut self) -> String {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/:".contains(&b))
        {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.text[start..self.i]).into_owned()
    }

    /// Skips a token68 (`dXNlcg==`, credentials in another scheme's syntax)
    /// when one is at the cursor, followed by the end or a comma.
    fn token68(&mut self) -> bool {
        let start = self.i;
        let word = self.token();
        while self.peek() == Some(b'=') {
            self.i += 1;
        }
        self.skip(b" \t");
        if !word.is_empty() && matches!(self.peek(), None | Some(b',')) {
            return true;
        }
        self.i = start;
        false
    }

    /// A quoted string at the cursor, unescaped.
    fn quoted(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err(self.error("a closing '\"'")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(String::from_utf8_lossy(&out).into_owned());
                }
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        Some(b) => out.push(b),
                        None => return Err(self.error("a character after '\\'")),
                    }
                    self.i += 1;
                }
                Some(b) => {
                    out.push(b);
                    self.i += 1;
                }
            }
        }
    }

    fn error(&self, expected: &str) -> String {
        format!(
            "WWW-Authenticate: expected {expected} at byte {} of {:?}",
            self.i,
            String::from_utf8_lossy(&self.text[..self.text.len().min(200)])
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(header: &str) -> Challenge {
        let mut all = parse(header).unwrap();
        assert_eq!(all.len(), 1, "{header}: {all:?}");
        all.remove(0)
    }

    #[test]
    fn bearer_challenges_as_the_big_registries_send_them() {
        let hub = one(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/busybox:pull""#,
        );
        assert_eq!(hub.scheme, "bearer");
        assert_eq!(hub.param("realm"), Some("https://auth.docker.io/token"));
        assert_eq!(hub.param("service"), Some("registry.docker.io"));
        assert_eq!(hub.param("scope"), Some("repository:library/busybox:pull"));
        let spaced = one(r#"bearer  Realm = "https://ghcr.io/token" , service="ghcr.io", scope=x"#);
        assert_eq!(spaced.param("realm"), Some("https://ghcr.io/token"));
        assert_eq!(spaced.param("scope"), Some("x"));
        let escaped = one(r#"Bearer realm="a\"b\\c""#);
        assert_eq!(escaped.param("realm"), Some(r#"a"b\c"#));
    }

    #[test]
    fn several_challenges_and_token68() {
        let all =
            parse(r#"Basic realm="Registry Realm", Bearer realm="https://t/x",service=s"#).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].scheme, "basic");
        assert_eq!(all[0].param("realm"), Some("Registry Realm"));
        assert_eq!(all[1].scheme, "bearer");
        assert_eq!(all[1].param("service"), Some("s"));
        let t68 = parse("Negotiate abc==, Basic realm=r").unwrap();
        assert_eq!(t68.len(), 2);
        assert_eq!(t68[0].scheme, "negotiate");
        assert!(t68[0].params.is_empty());
        assert_eq!(t68[1].param("realm"), Some("r"));
        assert_eq!(one("Basic").scheme, "basic");
    }

    #[test]
    fn malformed_headers_are_errors_not_panics() {
        for header in [
            "",
            " , ",
            r#"Bearer realm="unterminated"#,
            r#"Bearer realm="x", service="#,
            r#"Bearer realm="x\"#,
            "Bearer realm=\"x\" junk=\"y",
        ] {
            assert!(parse(header).is_err(), "{header:?}: {:?}", parse(header));
        }
    }
}
