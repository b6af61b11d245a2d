//! Reading one setting: the option if given, else the first non-empty variable of
//! its row, parsed, with the one shape of every bad-value message (SPEC §2).

use std::ffi::OsString;

use crate::cli::Cli;
use crate::exit::Error;
use crate::options::Spec;
use crate::values::{self, HttpUrl, Scheme};

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
                any |= parse_with(&found, values::parse_bool)?;
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
            for item in values::split_list(&found.value) {
                urls.push(parse_url(found, item)?);
            }
        }
        Ok(urls)
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

/// The one shape of every bad-value message (SPEC §2).
pub(super) fn invalid(name: &str, value: &str, expected: &str) -> Error {
    Error::Usage(format!("invalid {name} {value:?}: expected {expected}"))
}

pub(super) fn parse_with<T>(
    found: &Found,
    parse: fn(&str) -> Result<T, &'static str>,
) -> Result<T, Error> {
    parse(&found.value).map_err(|expected| invalid_fixable(found.name, &found.value, expected))
}

/// [`invalid`], naming the corrected value where the fix is obvious.
pub(super) fn invalid_fixable(name: &str, value: &str, expected: &str) -> Error {
    match values::likely_fix(value, expected) {
        Some(fix) => invalid(name, value, &format!("{expected} (did you mean {fix}?)")),
        None => invalid(name, value, expected),
    }
}

pub(super) fn parse_url(found: &Found, item: &str) -> Result<HttpUrl, Error> {
    // Even a bad URL may carry a password: the error line shows it redacted (SPEC §8).
    let shown = values::redact(item);
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
