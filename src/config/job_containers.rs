//! Several job containers in one Pod (SPEC §2, §9): `--job-containers`,
//! `--container-name` and `--shared-dir` come together or not at all, every name
//! is a container name and this container's is in the list. Whether the directory
//! is there and writable is known only by using it: `siblings::join` does, at
//! start-up, and a failure there is a bad value too.

use std::path::PathBuf;

use super::sources::{Found, Sources};
use crate::cli::options::{self, Spec};
use crate::exit::{Error, invalid};
use crate::settings::JobContainers;
use crate::value::list;

/// What a container name must look like (Kubernetes validates it the same way).
const EXPECTED_NAME: &str = "container names: lowercase letters, digits and '-', starting and ending with a \
     letter or digit, at most 63 characters";

/// The three settings, checked together; `None` when none is set.
pub(super) fn read(src: &Sources) -> Result<Option<JobContainers>, Error> {
    let list = joined(src, &options::JOB_CONTAINERS)?;
    let me = src.get(&options::CONTAINER_NAME)?;
    let dir = src.get(&options::SHARED_DIR)?;
    let (list, me, dir) = match (list, me, dir) {
        (None, None, None) => return Ok(None),
        (Some(list), Some(me), Some(dir)) => (list, me, dir),
        (list, me, dir) => return Err(not_all_three([list, me, dir])),
    };
    let mut all: Vec<String> = Vec::new();
    for name in list::split(&list.value) {
        if !is_container_name(name) {
            return Err(invalid(list.name, name, EXPECTED_NAME));
        }
        if all.iter().any(|seen| seen == name) {
            return Err(invalid(
                list.name,
                &list.value,
                &format!("each job container once ({name} is listed twice)"),
            ));
        }
        all.push(name.to_owned());
    }
    let name = me.value.trim();
    if !is_container_name(name) {
        return Err(invalid(me.name, &me.value, EXPECTED_NAME));
    }
    if !all.iter().any(|listed| listed == name) {
        return Err(invalid(
            me.name,
            &me.value,
            &format!("one of the names in {} ({})", list.name, list.value),
        ));
    }
    Ok(Some(JobContainers {
        all,
        me: name.to_owned(),
        me_from: me.name,
        dir: PathBuf::from(&dir.value),
        dir_from: dir.name,
    }))
}

/// The list as one value: the options given joined with commas (they replace the
/// variable), else the variable.
fn joined(src: &Sources, spec: &'static Spec) -> Result<Option<Found>, Error> {
    let found = src.list(spec)?;
    let Some(first) = found.first() else {
        return Ok(None);
    };
    let mut value = String::new();
    for item in &found {
        if !value.is_empty() {
            value.push(',');
        }
        value.push_str(&item.value);
    }
    Ok(Some(Found {
        name: first.name,
        value,
    }))
}

/// The line for a partial set: the first one given, and what is missing.
fn not_all_three(given: [Option<Found>; 3]) -> Error {
    let specs = [
        &options::JOB_CONTAINERS,
        &options::CONTAINER_NAME,
        &options::SHARED_DIR,
    ];
    let mut missing = String::new();
    for (spec, found) in specs.iter().zip(&given) {
        if found.is_some() {
            continue;
        }
        if !missing.is_empty() {
            missing.push_str(" and ");
        }
        missing += &format!("{} ({})", spec.vars[0], spec.name);
    }
    // At least one is given: `read` handles none.
    let Some(first) = given.iter().flatten().next() else {
        return Error::Usage("several job containers need all three settings".into());
    };
    invalid(
        first.name,
        &first.value,
        &format!("{missing} too: several job containers need all three settings"),
    )
}

/// An RFC 1123 label, what Kubernetes takes as a container name.
fn is_container_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let edge_ok = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    (1..=63).contains(&bytes.len())
        && edge_ok(bytes.first())
        && edge_ok(bytes.last())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_names_are_dns_labels() {
        for ok in ["a", "migrate", "report-2", "0", &"a".repeat(63)] {
            assert!(is_container_name(ok), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "Migrate",
            "a_b",
            "a.b",
            "é",
            &"a".repeat(64),
        ] {
            assert!(!is_container_name(bad), "{bad}");
        }
    }
}
