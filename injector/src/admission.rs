//! An `AdmissionReview` (`admission.k8s.io/v1`) body in, the response body out.
//! A body the API server could not have sent (not JSON, another kind or version,
//! no `request.uid`) is an error the server answers with HTTP 400; everything
//! else is allowed, with the Pod's JSONPatch when it changes (SPEC §10).

use std::time::Instant;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::inject::delivery::Install;
use crate::inject::report::Report;
use crate::inject::{self, Images, Plan, Scope};
use crate::registry::Registry;

/// The one API version the injector speaks (the webhook asks for it alone).
pub const API_VERSION: &str = "admission.k8s.io/v1";

/// The response to one review.
#[derive(Debug)]
pub struct Answer {
    /// The `AdmissionReview` response, as JSON.
    pub body: Vec<u8>,
    /// What happened, for the log (a dry run says so first).
    pub summary: String,
    /// The admission warnings it carries: for a Job's Pods the API server hands
    /// them to the Job controller, which discards them.
    pub warnings: Vec<String>,
    /// Whether it carries a patch.
    pub changed: bool,
    /// What it did to a Pod, for the metrics.
    pub report: Option<Report>,
}

/// Answers the review in `body` (SPEC §10); `install` is the tandem image and
/// its route into the Pod. `Err` says, in one line, why the body is not a review.
pub fn answer(body: &[u8], install: &Install, scope: Scope) -> Result<Answer, String> {
    answer_with(body, install, scope, |_| Images::new())
}

/// [`answer`], reading from `registry` by `deadline` the images of the job
/// containers without `command`: a failed lookup leaves its container
/// unwrapped, with the reason and the fix, and never fails the review.
pub fn answer_looking(
    body: &[u8],
    install: &Install,
    scope: Scope,
    registry: &Registry,
    deadline: Instant,
) -> Result<Answer, String> {
    answer_with(body, install, scope, |request| {
        let mut images = Images::new();
        for (container, image) in inject::wanted(request, scope, install.route) {
            images.insert(container, registry.lookup(&image, deadline).0);
        }
        images
    })
}

/// [`answer`], with `look` telling what the images of the review's `request` say.
fn answer_with(
    body: &[u8],
    install: &Install,
    scope: Scope,
    look: impl FnOnce(&Value) -> Images,
) -> Result<Answer, String> {
    let review: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    if review["apiVersion"] != API_VERSION || review["kind"] != "AdmissionReview" {
        return Err(format!(
            "expected an AdmissionReview of {API_VERSION}, got kind {} of apiVersion {}",
            review["kind"], review["apiVersion"]
        ));
    }
    let request = &review["request"];
    let uid = match request["uid"].as_str() {
        Some(uid) if !uid.is_empty() => uid,
        _ => return Err("the AdmissionReview has no request.uid".into()),
    };
    let Plan {
        patch,
        warnings,
        summary,
        report,
    } = inject::plan_with(request, install, scope, &look(request));
    let summary = if request["dryRun"] == true {
        format!("dry run: {summary}")
    } else {
        summary
    };
    let changed = !patch.is_empty();
    let mut response = json!({"uid": uid, "allowed": true});
    if changed {
        let ops = Value::Array(patch).to_string();
        response["patchType"] = json!("JSONPatch");
        response["patch"] = json!(STANDARD.encode(ops));
    }
    if !warnings.is_empty() {
        response["warnings"] = json!(&warnings);
    }
    let out = json!({"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response});
    Ok(Answer {
        body: out.to_string().into_bytes(),
        summary,
        warnings,
        changed,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inject::delivery::Mode;
    use crate::tests::install;

    fn decode(answer: &Answer) -> Value {
        serde_json::from_slice(&answer.body).unwrap()
    }

    #[test]
    fn a_body_that_is_not_a_v1_review_is_an_error_naming_what_it_is() {
        let cases: &[(&[u8], &str)] = &[
            (b"", "not JSON"),
            (b"{\"apiVersion\":", "not JSON"),
            (b"[1,2]", "got kind null"),
            (
                br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}"#,
                "admission.k8s.io/v1beta1",
            ),
            (br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#, "no request.uid"),
            (
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}}"#,
                "no request.uid",
            ),
        ];
        for (body, expected) in cases {
            let err = answer(body, &install(Mode::EmptyDir), Scope::Label).unwrap_err();
            assert!(
                err.contains(expected),
                "{:?}: {err}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn a_review_that_changes_nothing_is_allowed_with_its_uid_and_no_patch() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
            "request":{"uid":"abc","kind":{"group":"","version":"v1","kind":"Secret"},"operation":"CREATE"}}"#;
        let out = decode(&answer(body, &install(Mode::EmptyDir), Scope::Label).unwrap());
        assert_eq!(out["apiVersion"], API_VERSION);
        assert_eq!(out["kind"], "AdmissionReview");
        assert_eq!(out["response"], json!({"uid": "abc", "allowed": true}));
    }
}
