//! The bodies of the injector's fuzz targets, shared by the fuzzers
//! (`fuzz/fuzz_targets/injector_*.rs`, nightly) and their corpus replay
//! (`injector/tests/fuzz_replay.rs`, stable): here, in the library both link,
//! rather than a file each includes. It panics only when an
//! invariant of the injector fails; a panic inside the injector is a finding too.

use crate::admission;
use crate::inject::Scope;
use crate::inject::delivery::{Install, Mode};
use crate::inject::route::Route;
use base64::Engine as _;
use serde_json::Value;

/// Any bytes as a review body, through every path (each with one install
/// mode) and both routes: an error is one line; an answer is a v1 review
/// allowing the request with its uid, its patch only adds under `/spec` or the
/// one-line annotation `tandem.dev/injection`, replaces a `command`, or (the
/// native route) removes a container it moved, applies to the Pod it came
/// with, and a second review of the patched Pod changes nothing (reinvocation).
pub fn review(data: &[u8]) {
    let modes = [Mode::EmptyDir, Mode::ImageVolume, Mode::EmptyDir];
    let each = Scope::ALL.into_iter().zip(modes);
    for ((scope, mode), route) in each.flat_map(|s| [(s, Route::Wrap), (s, Route::Native)]) {
        let install = Install {
            image: "registry.example.com/tandem:1".into(),
            mode,
            route,
        };
        let answer = match admission::answer(data, &install, scope) {
            Ok(answer) => answer,
            Err(reason) => {
                assert!(!reason.is_empty() && !reason.contains('\n'), "{reason:?}");
                continue;
            }
        };
        let input: Value = serde_json::from_slice(data).expect("an answered body is JSON");
        let out: Value = serde_json::from_slice(&answer.body).expect("the answer is JSON");
        assert_eq!(out["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(out["response"]["uid"], input["request"]["uid"]);
        assert_eq!(out["response"]["allowed"], true);
        for warning in out["response"]["warnings"].as_array().into_iter().flatten() {
            let warning = warning.as_str().expect("a warning is a string");
            assert!(!warning.contains('\n'), "{warning:?}");
        }
        let Some(patch) = out["response"]["patch"].as_str() else {
            continue;
        };
        assert_eq!(out["response"]["patchType"], "JSONPatch");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .expect("the patch is base64");
        let raw: Value = serde_json::from_slice(&bytes).expect("the patch is JSON");
        raw.as_array()
            .expect("the patch is a list")
            .iter()
            .for_each(|op| check_op(op, route));
        let ops: json_patch::Patch =
            serde_json::from_slice(&bytes).expect("the patch is JSONPatch");
        let mut pod = input["request"]["object"].clone();
        json_patch::patch(&mut pod, &ops).expect("the patch applies to the Pod");

        let mut again = input.clone();
        again["request"]["object"] = pod;
        let body = serde_json::to_vec(&again).expect("a Value serialises");
        let second = admission::answer(&body, &install, scope)
            .expect("the patched review is still a review");
        let second: Value = serde_json::from_slice(&second.body).expect("the answer is JSON");
        assert!(
            second["response"]["patch"].is_null(),
            "not idempotent: {second}"
        );
    }
}

/// One operation of a patch: an add, a replace of a command, or on the native
/// `route` the removal of a container it moved, inside the Pod's spec or on
/// its `tandem.dev/injection` annotation (one line).
fn check_op(op: &Value, route: Route) {
    let path = op["path"].as_str().expect("an op has a path");
    let adds = op["op"] == "add";
    let prefixes = op["op"] == "replace" && path.ends_with("/command");
    let moves = route == Route::Native
        && op["op"] == "remove"
        && path
            .strip_prefix("/spec/containers/")
            .is_some_and(|i| i.parse::<usize>().is_ok());
    assert!(
        adds || prefixes || moves,
        "the injector only adds, prefixes commands and moves sidecars: {op}"
    );
    let annotation =
        path == "/metadata/annotations" || path == "/metadata/annotations/tandem.dev~1injection";
    assert!(
        path.starts_with("/spec/") || annotation,
        "outside the Pod's spec and its tandem.dev/injection annotation: {op}"
    );
    if annotation {
        let line = op["value"]
            .as_str()
            .or_else(|| op["value"]["tandem.dev/injection"].as_str())
            .expect("the annotation is a string");
        assert!(!line.chars().any(char::is_control), "one line: {line:?}");
    }
}

/// Any bytes as what a registry serves or the injector is given, the first
/// byte choosing which reader: a manifest or index (with and without a content
/// type), an image configuration, a Docker config.json, an image reference.
/// Each reads or says why not; an index's digests are checked ones, and a
/// reference reads back the same from how it prints.
pub fn registry(data: &[u8]) {
    use crate::registry::Credentials;
    use crate::registry::manifest::{self, Document};
    use crate::registry::reference::{self, Reference};
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 4 {
        0 => {
            for header in [None, Some("application/vnd.oci.image.index.v1+json")] {
                if let Ok(Document::Index(entries)) = manifest::document(header, rest) {
                    for e in &entries {
                        assert!(reference::check_digest(&e.digest).is_ok(), "{e:?}");
                    }
                    assert!(manifest::pick(&entries).len() <= 2);
                }
            }
        }
        1 => {
            let _ = manifest::config(rest);
        }
        2 => {
            if let Ok(creds) = Credentials::parse(rest) {
                let _ = creds.for_host("docker.io");
            }
        }
        _ => {
            if let Ok(text) = std::str::from_utf8(rest)
                && let Ok(parsed) = Reference::parse(text)
            {
                let printed = parsed.to_string();
                assert_eq!(
                    Reference::parse(&printed).as_ref(),
                    Ok(&parsed),
                    "{text:?} printed {printed:?}"
                );
                let _ = (parsed.api_host(), parsed.target());
            }
        }
    }
}

/// Any bytes as a registry's `WWW-Authenticate` header: its challenges or why
/// not; each challenge has a lowercase scheme and lowercase parameter names.
pub fn challenge(data: &[u8]) {
    use crate::registry::challenge;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(all) = challenge::parse(text) {
        assert!(!all.is_empty());
        for c in &all {
            assert!(
                !c.scheme.is_empty() && c.scheme == c.scheme.to_ascii_lowercase(),
                "{c:?}"
            );
            assert!(
                c.params
                    .iter()
                    .all(|(n, _)| !n.is_empty() && *n == n.to_ascii_lowercase()),
                "{c:?}"
            );
        }
    }
}

/// Any bytes as the input of `tandem-injector audit`: a List of Pods read, or
/// one line saying why not. A List's audit lists each stuck Pod among the
/// Pods audited, with a sidecar; the table is free of control characters; the
/// JSON reads back with the same entries (`job` and `owner` included).
pub fn audit_list(data: &[u8]) {
    use crate::audit::{self, list, render};
    let pods = match list::pods(data) {
        Ok(pods) => pods,
        Err(line) => {
            assert!(!line.is_empty() && !line.contains('\n'), "{line:?}");
            return;
        }
    };
    let found = audit::audit(&pods, Route::Wrap);
    assert!(found.injection.len() <= pods.len());
    for s in &found.stuck {
        assert!(!s.sidecars.is_empty(), "{s:?}");
        assert!(
            found.injection.iter().any(|i| i.pod == s.pod),
            "a stuck Pod is one of those audited: {s:?}"
        );
    }
    for i in &found.injection {
        assert!(
            !i.would.is_empty() && !i.would.chars().any(char::is_control),
            "{i:?}"
        );
    }
    let table = render::table(&found);
    assert!(
        !table.chars().any(|c| c.is_control() && c != '\n'),
        "{table:?}"
    );
    let json: Value = serde_json::from_str(&render::json(&found)).expect("the JSON reads back");
    let stuck = json["stuck"].as_array().expect("stuck is a list");
    let injection = json["injection"].as_array().expect("injection is a list");
    assert_eq!(stuck.len(), found.stuck.len());
    assert_eq!(injection.len(), found.injection.len());
    for (read, i) in injection.iter().zip(&found.injection) {
        assert_eq!(read["pod"], i.pod.pod.as_str());
        assert_eq!(read["job"], serde_json::json!(i.pod.job));
        assert_eq!(read["owner"], serde_json::json!(i.pod.owner));
        assert_eq!(read["would"], i.would.as_str());
    }
}

/// Any bytes as a `--registry-allow` value: a list, or one line naming the bad
/// entry. A list reads back the same from how it prints, an entry naming a
/// host permits it, and a loopback, link-local or IPv6 loopback address passes
/// the address rule only for a host an entry names (not a wildcard).
pub fn allow(data: &[u8]) {
    use crate::registry::allow::{Allow, HostPort};
    use crate::registry::reach;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let list = match Allow::parse(text) {
        Ok(list) => list,
        Err(why) => return assert!(!why.is_empty() && !why.contains('\n'), "{why:?}"),
    };
    let printed = list.to_string();
    assert_eq!(Allow::parse(&printed).as_ref(), Ok(&list), "{printed:?}");
    let special: [std::net::SocketAddr; 3] = [
        ([127, 0, 0, 1], 443).into(),
        ([169, 254, 169, 254], 443).into(),
        (std::net::Ipv6Addr::LOCALHOST, 443).into(),
    ];
    let entries = text.split(',').map(|e| e.trim().trim_start_matches("*."));
    for probe in entries.chain(["localhost", "a.example:443"]) {
        let Ok(to) = HostPort::parse(probe) else {
            continue;
        };
        assert!(
            !list.names(&to) || list.permits(&to),
            "{to} named, not permitted"
        );
        let checked = reach::check(&list, &to, &special);
        assert_eq!(checked.is_ok(), list.names(&to), "{to}: {checked:?}");
    }
}
