//! The native route's policy (SPEC §12) run on the native cases and their
//! reinvocations, the wrap route's cases annotated native, under either
//! default route: the same Pod spec as the webhook's, the route read from the
//! annotation, the warning policy quiet.

use serde_json::{Value, json};

use super::{cases, evaluate_on, on_a_large_stack, warning, webhook_on};
use crate::inject::delivery::Mode;
use crate::inject::route::Route;
use crate::layout::ROUTE_ANNOTATION;
use crate::tests::install_on;
use crate::tests::pods;

/// The native route's Pods (SPEC §12), each also as the webhook left it, and
/// once more after Vault's injector added its agent and init container; with
/// the wrap route's cases annotated native too.
fn native_cases() -> Vec<(String, Value)> {
    let install = install_on(Mode::EmptyDir, Route::Native);
    let mut out: Vec<(String, Value)> = pods::native_cases()
        .into_iter()
        .map(|(n, p)| (n.to_string(), p))
        .collect();
    for (name, mut pod) in pods::cases() {
        pod["metadata"]["annotations"][ROUTE_ANNOTATION] = json!("native");
        out.push((format!("{name}, annotated native"), pod));
    }
    let first = out.clone();
    for (name, pod) in first {
        let once = webhook_on(&install, &pod);
        let mut vault = once.clone();
        vault["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(pods::sidecar("vault-agent"));
        out.push((format!("{name}, reinvoked"), once));
        out.push((format!("{name}, reinvoked after vault"), vault));
    }
    out
}

#[test]
fn the_native_routes_policy_gives_the_webhooks_pod_spec_for_every_case() {
    on_a_large_stack(|| {
        let mut changed = 0;
        for mode in [Mode::EmptyDir, Mode::ImageVolume] {
            for route in [Route::Native, Route::Wrap] {
                let install = install_on(mode, route);
                let each = native_cases().into_iter().chain(if route == Route::Native {
                    cases(mode)
                } else {
                    Vec::new()
                });
                for (name, pod) in each {
                    let webhook = webhook_on(&install, &pod);
                    let policy = evaluate_on(&install, &pod);
                    assert_eq!(
                        policy.pod["spec"],
                        webhook["spec"],
                        "{mode:?} {route:?} {name}:\npolicy's:\n{}\nwebhook's:\n{}",
                        serde_json::to_string_pretty(&policy.pod["spec"]).unwrap(),
                        serde_json::to_string_pretty(&webhook["spec"]).unwrap()
                    );
                    if webhook["spec"] != pod["spec"] {
                        changed += 1;
                    }
                    // Nothing left to do: the policy's own second call, and
                    // the webhook's, are turned away or change nothing.
                    let again = evaluate_on(&install, &policy.pod);
                    assert!(
                        !again.matches || again.pod == policy.pod,
                        "{mode:?} {route:?} {name}: called again"
                    );
                    if !policy.matches {
                        assert_eq!(webhook["spec"], pod["spec"], "{mode:?} {route:?} {name}");
                    }
                }
            }
        }
        assert!(changed > 40, "only {changed} Pods changed");
    })
}

#[test]
fn the_policys_route_is_the_annotations_when_it_names_one() {
    on_a_large_stack(|| {
        let pod = |value: Option<&str>| {
            let mut p = pods::native_cases().remove(0).1;
            if let Some(v) = value {
                p["metadata"]["annotations"][ROUTE_ANNOTATION] = json!(v);
            }
            p
        };
        for default in [Route::Wrap, Route::Native] {
            let install = install_on(Mode::EmptyDir, default);
            for (value, route) in [
                (Some("native"), "native"),
                (Some("wrap"), "wrap"),
                (Some("Native"), default.name()),
                (None, default.name()),
            ] {
                let out = evaluate_on(&install, &pod(value));
                assert_eq!(
                    out.variables["route"],
                    json!(route),
                    "{default:?} {value:?}"
                );
            }
        }
    })
}

#[test]
fn the_warning_policy_is_quiet_for_a_template_on_the_native_route() {
    on_a_large_stack(|| {
        let no_command = pods::cases()
            .into_iter()
            .find(|(n, _)| *n == "no-command")
            .unwrap()
            .1;
        let (missing, passes) = warning(&no_command);
        assert_eq!(missing, json!(["uploader"]));
        assert!(!passes);
        let mut native = no_command.clone();
        native["metadata"]["annotations"][ROUTE_ANNOTATION] = json!("native");
        let (missing, passes) = warning(&native);
        assert_eq!(missing, json!([]));
        assert!(passes);
    })
}
