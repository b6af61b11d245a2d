//! Reading one setting: the option if given, else the first non-empty variable of
//! its row, parsed, with the one shape of every bad-value message (SPEC §2).

use std::ffi::OsString;

use super::check::{self, EXPECTED_CHECK};
use crate::cli::Cli;
use crate::cli::options::Spec;
use crate::exit::{Error, invalid};
use crate::settings::Check;
use crate::value::duration::{self, EXPECTED_DURATION, EXPECTED_SECONDS};
use crate::value::url::{self, EXPECTED_URL, HttpUrl, Scheme};
use crate::value::{boolean, list};

/// A value found for a setting, with the name it was found under (for errors).
pub(super) struct Found {
    pub(super) name: &'static str,
    pub(super) value: String,
}

/// Reads settings from the command line first, then the environment.
pub(super) struct Sources<'a> {
    pub(super) cli: &'a Cli,
    pub(super) env: &'a dyn Fn(&str) -> Option<OsString>,
}

impl Sources<'_> {
    /// The option's value if given, else the first non-empty variable of its row.
    pub(super) fn get(&self, spec: &'static Spec) -> Result<Option<Found>, Error> {
        match self.cli.value(spec) {
            Some(v) => text(spec.name, v).map(Some),
            None => self.var(spec.vars),
        }
    }

    /// The first non-empty variable of `vars`.
    pub(super) fn var(&self, vars: &[&'static str]) -> Result<Option<Found>, Error> {
        for &name in vars {
            if let Some(v) = (self.env)(name).filter(|v| !v.is_empty()) {
                return text(name, &v).map(Some);
            }
        }
        Ok(None)
    }

    /// The setting parsed by `parse`, if given at all.
    pub(super) fn parsed<T>(
        &self,
        spec: &'static Spec,
        parse: fn(&str) -> Result<T, &'static str>,
    ) -> Result<Option<T>, Error> {
        match self.get(spec)? {
            Some(found) => parse_with(&found, parse).map(Some),
            None => Ok(None),
        }
    }

    /// A boolean setting: a given flag is true, else any of its variables, else false.
    pub(super) fn flag(&self, spec: &'static Spec) -> Result<bool, Error> {
        if self.cli.flag(spec) {
            return Ok(true);
        }
        self.flag_vars(spec.vars)
    }

    /// True when any of `vars` is set to true; every one set must be a boolean.
    pub(super) fn flag_vars(&self, vars: &[&'static str]) -> Result<bool, Error> {
        let mut any = false;
        for &name in vars {
            if let Some(found) = self.var(&[name])? {
                any |= parse_with(&found, boolean::parse)?;
            }
        }
        Ok(any)
    }

    pub(super) fn url(&self, spec: &'static Spec) -> Result<Option<HttpUrl>, Error> {
        match self.get(spec)? {
            Some(found) => parse_url(&found, &found.value).map(Some),
            None => Ok(None),
        }
    }

    /// The items of a list setting: the options replace the variable (SPEC §2, "Lists").
    pub(super) fn list(&self, spec: &'static Spec) -> Result<Vec<Found>, Error> {
        let given: Vec<&OsString> = self.cli.values(spec).collect();
        if given.is_empty() {
            return Ok(self.var(spec.vars)?.into_iter().collect());
        }
        given.into_iter().map(|v| text(spec.name, v)).collect()
    }

    /// A URL list, each value split at commas.
    pub(super) fn url_list(&self, spec: &'static Spec) -> Result<Vec<HttpUrl>, Error> {
        let mut urls = Vec::new();
        for found in &self.list(spec)? {
            for item in list::split(&found.value) {
                urls.push(parse_url(found, item)?);
            }
        }
        Ok(urls)
    }

    /// A list of readiness checks, each value split at commas (SPEC §3).
    pub(super) fn check_list(&self, spec: &'static Spec) -> Result<Vec<Check>, Error> {
        let mut checks = Vec::new();
        for found in &self.list(spec)? {
            checks.extend(parse_checks(found)?);
        }
        Ok(checks)
    }
}

/// Each comma-separated item of `found` as a readiness check (SPEC §3).
pub(super) fn parse_checks(found: &Found) -> Result<Vec<Check>, Error> {
    list::split(&found.value)
        .into_iter()
        .map(|item| parse_check(found, item))
        .collect()
}

/// One readiness check: `http://` (`https://`) as every URL, `tcp://`, `unix://`,
/// `file://` as `check` reads them, anything else refused with all four named.
fn parse_check(found: &Found, item: &str) -> Result<Check, Error> {
    if let Some(parsed) = check::parse(item) {
        return parsed
            .map_err(|expected| invalid_fixable(found.name, &url::redact(item), expected));
    }
    let http = item.split_once("://").is_some_and(|(scheme, _)| {
        scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
    });
    if http {
        parse_url(found, item).map(Check::Url)
    } else {
        Err(invalid_fixable(
            found.name,
            &url::redact(item),
            EXPECTED_CHECK,
        ))
    }
}

pub(super) fn text(name: &'static str, value: &OsString) -> Result<Found, Error> {
    match value.to_str() {
        Some(s) => Ok(Found {
            name,
            value: s.to_string(),
        }),
        None => Err(invalid(name, &value.to_string_lossy(), "UTF-8 text")),
    }
}

pub(super) fn parse_with<T>(
    found: &Found,
    parse: fn(&str) -> Result<T, &'static str>,
) -> Result<T, Error> {
    parse(&found.value).map_err(|expected| invalid_fixable(found.name, &found.value, expected))
}

/// [`invalid`](crate::exit::invalid), naming the corrected value where the fix is obvious.
pub(super) fn invalid_fixable(name: &str, value: &str, expected: &str) -> Error {
    match likely_fix(value, expected) {
        Some(fix) => invalid(name, value, &format!("{expected} (did you mean {fix}?)")),
        None => invalid(name, value, expected),
    }
}

/// The value the user most likely meant, when a rejected `value` is one obvious
/// step from a valid one: a bare number given as a duration (`30` for `30s`, as
/// scuttle's users write seconds), a duration given as whole seconds (`30s` for
/// `30`, the peers' integer variables), a URL without its scheme
/// (`127.0.0.1:15000`), or a readiness check without its scheme or third slash
/// (`check`'s: `db:5432` for `tcp://db:5432`). `expected` is what the parser
/// answered.
fn likely_fix(value: &str, expected: &str) -> Option<String> {
    if let Some(fix) = check::likely_fix(value, expected) {
        return Some(fix);
    }
    // A readiness check with a path after its host is an HTTP URL.
    let expected = match expected {
        EXPECTED_CHECK if value.contains('/') => EXPECTED_URL,
        EXPECTED_CHECK => return None,
        other => other,
    };
    let (candidate, valid): (String, fn(&str) -> bool) = if expected == EXPECTED_DURATION {
        let number = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        let candidate = number.then(|| format!("{value}s"))?;
        (candidate, |c| duration::parse(c).is_ok())
    } else if expected == EXPECTED_SECONDS {
        let whole = duration::parse(value.trim())
            .ok()
            .filter(|d| d.subsec_nanos() == 0)?;
        (whole.as_secs().to_string(), |c| {
            duration::parse_seconds(c).is_ok()
        })
    } else if expected == EXPECTED_URL && !value.contains("://") {
        (format!("http://{value}"), |c| HttpUrl::parse(c).is_ok())
    } else {
        return None;
    };
    valid(&candidate).then_some(candidate)
}

pub(super) fn parse_url(found: &Found, item: &str) -> Result<HttpUrl, Error> {
    // Even a bad URL may carry a password: the error line shows it redacted (SPEC §8).
    let shown = url::redact(item);
    let url =
        HttpUrl::parse(item).map_err(|expected| invalid_fixable(found.name, &shown, expected))?;
    if url.scheme == Scheme::Https && !cfg!(feature = "rustls") {
        return Err(invalid(
            found.name,
            &shown,
            "an http:// URL: this build has no TLS (build with `--features rustls` for https://)",
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn likely_fix_only_where_the_fix_is_valid() {
        let url = HttpUrl::parse("x").unwrap_err();
        let dur = duration::parse("x").unwrap_err();
        assert_eq!(likely_fix("30", dur).as_deref(), Some("30s"));
        assert_eq!(likely_fix("0.5", dur).as_deref(), Some("0.5s"));
        assert_eq!(likely_fix("1.2.3", dur), None);
        assert_eq!(likely_fix("", dur), None);
        assert_eq!(likely_fix("5m30", dur), None);
        assert_eq!(
            likely_fix("localhost:4191", url).as_deref(),
            Some("http://localhost:4191")
        );
        assert_eq!(likely_fix("ftp://x", url), None);
        assert_eq!(likely_fix("a b", url), None);
        assert_eq!(likely_fix("30", "something else"), None);
        let check = EXPECTED_CHECK;
        assert_eq!(
            likely_fix("postgres:5432", check).as_deref(),
            Some("tcp://postgres:5432")
        );
        assert_eq!(
            likely_fix("localhost:4191/ready", check).as_deref(),
            Some("http://localhost:4191/ready")
        );
        assert_eq!(likely_fix("ftp://x", check), None);
        let secs = EXPECTED_SECONDS;
        assert_eq!(likely_fix("30s", secs).as_deref(), Some("30"));
        assert_eq!(likely_fix("2m", secs).as_deref(), Some("120"));
        assert_eq!(likely_fix("1.5s", secs), None);
        assert_eq!(likely_fix("-1", secs), None);
        assert_eq!(likely_fix("soon", secs), None);
    }
}
