//! The rules of SPEC §10 on what the injector leaves alone: a container it
//! cannot wrap, a Pod not opted in or not a Job's, a Pod shaped wrongly, one
//! it already changed (a second review); and the annotation that says so.

use serde_json::{Value, json};

use super::*;
use crate::inject::delivery::Mode;
use crate::layout::*;
use crate::tests::pods::{self, container, istio_proxy, job_container, job_pod};
use crate::tests::{annotation, env, install, patched, request, var};

#[test]
fn a_container_left_unwrapped_keeps_the_others_from_quitting_the_sidecars() {
    let pod = job_pod(
        "j",
        vec![
            job_container("job"),
            job_container("report"),
            container("uploader", pods::JOB_IMAGE, None, &["--to=s3"]),
            istio_proxy(false),
        ],
        vec![],
    );
    let (plan, out) = patched(&pod);
    let ready = var("TANDEM_READY_URLS", "http://127.0.0.1:15021/healthz/ready");
    for i in [0, 1] {
        let job = &out["spec"]["containers"][i];
        assert_eq!(job["command"][0], TANDEM);
        let vars = env(job);
        assert!(vars.contains(&ready), "{vars:?}");
        assert!(!vars.iter().any(|(n, _)| n == "TANDEM_MESH"), "{vars:?}");
    }
    let line = annotation(&out);
    assert!(
        line.ends_with(
            "the sidecars (istio-proxy) are not told to quit, as a job container runs \
             without tandem: the Pod may not complete until they stop"
        ),
        "{line}"
    );
    assert!(plan.summary.ends_with(line), "the log says the same");

    // docs/injector.md quotes this line for a Pod of report, uploader and istio-proxy.
    let doc = job_pod(
        "nightly-report",
        vec![
            job_container("report"),
            container("uploader", pods::JOB_IMAGE, None, &["--to=s3"]),
            istio_proxy(false),
        ],
        vec![],
    );
    assert_eq!(
        annotation(&patched(&doc).1),
        "wrapped report (command from the spec; added \
         TANDEM_READY_URLS=http://127.0.0.1:15021/healthz/ready); not wrapped: uploader: \
         it has no command (set command to its image's entrypoint); the sidecars \
         (istio-proxy) are not told to quit, as a job container runs without tandem: \
         the Pod may not complete until they stop"
    );

    // Reinvoked after another webhook: nothing more, the annotation stays.
    let (again, twice) = patched(&out);
    assert!(again.patch.is_empty(), "{:#?}", again.patch);
    assert_eq!(twice, out);
}

#[test]
fn what_a_later_webhook_adds_beside_an_unwrapped_container_changes_nothing_of_it() {
    let pod = job_pod(
        "j",
        vec![
            job_container("job"),
            job_container("report"),
            container("uploader", pods::JOB_IMAGE, None, &["--to=s3"]),
            istio_proxy(false),
        ],
        vec![],
    );
    let ready = var("TANDEM_READY_URLS", "http://127.0.0.1:15021/healthz/ready");
    // A classic istio-proxy added after tandem, beside the unwrapped one: the
    // wrapped ones are still told only to wait for it.
    let mut before_istio = pod.clone();
    before_istio["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .pop();
    let (_, once) = patched(&before_istio);
    let mut with_istio = once.clone();
    with_istio["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(istio_proxy(false));
    let (_, out) = patched(&with_istio);
    let vars = env(&out["spec"]["containers"][0]);
    assert!(
        vars.contains(&ready) && !vars.iter().any(|(n, _)| n == "TANDEM_MESH"),
        "{vars:?}"
    );

    // A job container a later webhook added beside wrapped ones that quit istio:
    // the line says it is not wrapped, and claims no sidecar is left running.
    let (_, once) = patched(&job_pod(
        "j",
        vec![job_container("job"), istio_proxy(false)],
        vec![],
    ));
    let mut added = once.clone();
    added["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(job_container("late"));
    let (again, _) = patched(&added);
    assert!(again.patch.is_empty(), "{:#?}", again.patch);
    assert!(
        again.summary.ends_with(
            "wrapped job (by an earlier review); not wrapped: late: it was added after tandem \
             was injected (by a webhook called later: prefix its command with /tandem/tandem -- \
             in that webhook's template)"
        ),
        "{}",
        again.summary
    );
}

#[test]
fn the_annotation_is_added_to_a_pod_without_annotations_and_replaces_a_copied_one() {
    let mut bare = job_pod("j", vec![job_container("job")], vec![]);
    bare["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("annotations");
    let (plan, out) = patched(&bare);
    let op = plan.patch.last().unwrap();
    assert_eq!(op["path"], "/metadata/annotations");
    assert_eq!(
        out["metadata"]["annotations"],
        json!({"tandem.dev/injection": "wrapped job (command from the spec)"})
    );

    // A template copied from an injected Pod carries a stale line: replaced.
    let mut copied = job_pod("j", vec![job_container("job")], vec![]);
    copied["metadata"]["annotations"]["tandem.dev/injection"] = json!("not injected: old");
    let (plan, out) = patched(&copied);
    assert_eq!(
        plan.patch.last().unwrap()["path"],
        "/metadata/annotations/tandem.dev~1injection"
    );
    assert_eq!(annotation(&out), "wrapped job (command from the spec)");
}

#[test]
fn a_container_that_already_runs_tandem_is_left_as_is() {
    let pod = job_pod(
        "j",
        vec![container(
            "job",
            "x",
            Some(&["/tandem", "--mesh", "istio", "--", "/job"]),
            &[],
        )],
        vec![],
    );
    let (plan, out) = patched(&pod);
    assert_eq!(out["spec"], pod["spec"]);
    assert_eq!(
        plan.warnings,
        ["tandem-injector: container \"job\" not wrapped: it already runs tandem (left as is)"]
    );
    assert_eq!(
        annotation(&out),
        "not wrapped: job: it already runs tandem (left as is)"
    );
}

#[test]
fn only_an_opted_in_pod_that_runs_to_completion_is_changed() {
    let base = job_pod("j", vec![job_container("job")], vec![]);
    let through = |pod: &Value, scope| plan(&request(pod), &install(Mode::EmptyDir), scope);

    let mut unlabelled = base.clone();
    unlabelled["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove(LABEL);
    assert!(through(&unlabelled, Scope::Label).patch.is_empty());
    assert!(
        !through(&unlabelled, Scope::Namespace).patch.is_empty(),
        "the namespace opted it in"
    );

    let mut other = base.clone();
    other["metadata"]["labels"][LABEL] = json!("disabled");
    for scope in [Scope::Label, Scope::Namespace] {
        assert!(through(&other, scope).patch.is_empty(), "{scope:?}");
    }

    // Whoever owns it: a Job, a CronJob's Job, another controller, nobody.
    let mut cron = base.clone();
    cron["metadata"]["ownerReferences"][0]["name"] = json!("nightly-29123456");
    let spark = pods::owned(
        base.clone(),
        "sparkoperator.k8s.io/v1",
        "SparkApplication",
        "pi",
    );
    let bare = pods::bare_pod("p", vec![job_container("job")], vec![]);
    for (pod, named) in [
        (&cron, "pod default/j-* (Job nightly-29123456)"),
        (&spark, "pod default/j-* (SparkApplication pi)"),
        (&bare, "pod default/p"),
    ] {
        let p = through(pod, Scope::Label);
        assert!(!p.patch.is_empty(), "{named}");
        let line = format!("{named}: wrapped job (command from the spec)");
        assert_eq!(p.summary, line);
    }

    // Whatever its owner, a Pod restarted for ever never completes.
    for (policy, words) in [
        (json!("Always"), "Always"),
        (Value::Null, "unset, so Always"),
    ] {
        for pod in [
            &base,
            &bare,
            &pods::owned(bare.clone(), "apps/v1", "ReplicaSet", "web"),
        ] {
            let mut pod = pod.clone();
            pod["spec"]["restartPolicy"] = policy.clone();
            for scope in Scope::ALL {
                let p = through(&pod, scope);
                assert!(p.patch.is_empty() && p.warnings.is_empty(), "{words}");
                let expected = format!(
                    "restartPolicy {words}: it does not run to completion: allowed unchanged"
                );
                assert!(p.summary.ends_with(&expected), "{}", p.summary);
            }
        }
    }
    let mut on_failure = bare.clone();
    on_failure["spec"]["restartPolicy"] = json!("OnFailure");
    assert!(!through(&on_failure, Scope::Label).patch.is_empty());
    let mut no_spec = base.clone();
    no_spec["spec"] = Value::Null;
    assert!(
        through(&no_spec, Scope::Label).patch.is_empty(),
        "no restartPolicy to read"
    );
}

#[test]
fn only_a_pod_create_is_considered() {
    let pod = job_pod("j", vec![job_container("job")], vec![]);
    let mut update = request(&pod);
    update["operation"] = json!("UPDATE");
    assert!(
        plan(&update, &install(Mode::EmptyDir), Scope::Label)
            .patch
            .is_empty()
    );
    let mut status = request(&pod);
    status["subResource"] = json!("status");
    assert!(
        plan(&status, &install(Mode::EmptyDir), Scope::Label)
            .patch
            .is_empty()
    );
    let mut secret = request(&pod);
    secret["kind"]["kind"] = json!("Secret");
    assert!(
        plan(&secret, &install(Mode::EmptyDir), Scope::Label)
            .patch
            .is_empty()
    );
}

#[test]
fn reinvocation_leaves_a_changed_pod_as_it_is() {
    for (name, pod) in pods::cases() {
        let (_, once) = patched(&pod);
        let (again, twice) = patched(&once);
        assert!(again.patch.is_empty(), "{name}: {:#?}", again.patch);
        assert!(
            again.warnings.is_empty(),
            "{name}: warned twice: {:?}",
            again.warnings
        );
        assert_eq!(twice, once, "{name}");
    }
}

#[test]
fn reinvocation_after_istio_injected_adds_only_the_mesh() {
    let pod = job_pod("j", vec![job_container("job")], vec![]);
    let (_, once) = patched(&pod);
    let mut with_istio = once.clone();
    with_istio["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(istio_proxy(false));
    let (again, out) = patched(&with_istio);
    assert_eq!(again.patch.len(), 1, "{:#?}", again.patch);
    assert_eq!(
        env(&out["spec"]["containers"][0]),
        [var("TANDEM_MESH", "istio")]
    );
    assert_eq!(
        out["spec"]["initContainers"],
        once["spec"]["initContainers"]
    );
    assert!(patched(&out).0.patch.is_empty(), "and then it is stable");
}

#[test]
fn a_pod_shaped_wrongly_is_allowed_unchanged_with_a_warning_saying_what() {
    let cases = [
        (
            "/spec/containers",
            json!({}),
            "spec.containers is not a list",
        ),
        (
            "/spec/containers/0/name",
            json!(5),
            "spec.containers[0] has no name",
        ),
        (
            "/spec/containers/0/command",
            json!("/app"),
            "spec.containers[0].command is not a list",
        ),
        (
            "/spec/containers/0/command",
            json!([1]),
            "not a list of strings",
        ),
        (
            "/spec/containers/0/env",
            json!([{"value": "x"}]),
            "env is not a list of named",
        ),
        (
            "/spec/containers/0/volumeMounts",
            json!(1),
            "volumeMounts is not a list",
        ),
        (
            "/spec/initContainers",
            json!("x"),
            "spec.initContainers is not a list",
        ),
        ("/spec/volumes", json!({}), "spec.volumes is not a list"),
        (
            "/spec/volumes/0/name",
            json!(BIN_VOLUME),
            "already has a volume named \"tandem-bin\"",
        ),
    ];
    for (path, value, expected) in cases {
        let mut pod = job_pod("j", vec![job_container("job")], vec![]);
        let (parent, key) = path.rsplit_once('/').unwrap();
        let parent = if parent.is_empty() {
            &mut pod
        } else {
            pod.pointer_mut(parent).unwrap()
        };
        parent[key] = value;
        let p = plan(&request(&pod), &install(Mode::EmptyDir), Scope::Label);
        assert_eq!(p.patch.len(), 1, "{path}: the annotation alone");
        let line = p.patch[0]["value"].as_str().unwrap();
        assert!(
            line.starts_with("not injected: ") && line.contains(expected),
            "{line}"
        );
        assert_eq!(p.warnings.len(), 1, "{path}");
        assert!(p.warnings[0].contains(expected), "{path}: {:?}", p.warnings);
        assert!(p.warnings[0].starts_with("tandem-injector: Pod not injected: "));
    }
}
