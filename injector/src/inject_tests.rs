//! The rules of SPEC §10 on Pods shaped as the API server sends them; each
//! patch is applied (json-patch, RFC 6902) and the resulting Pod checked.

use serde_json::{Value, json};

use super::*;
use crate::layout::*;

#[path = "../tests/support/pods.rs"]
pub(crate) mod pods;

use pods::{container, istio_proxy, job_container, job_pod, review};

fn request(pod: &Value) -> Value {
    review("uid-1", pod)["request"].clone()
}

/// The plan for `pod` through `/mutate`, and the Pod with its patch applied.
fn injected(pod: &Value) -> (Plan, Value) {
    let install = Install {
        image: pods::TANDEM_IMAGE.into(),
        mode: crate::inject::delivery::Mode::EmptyDir,
    };
    let plan = plan(&request(pod), &install, Scope::Label);
    let mut out = pod.clone();
    let ops: json_patch::Patch = serde_json::from_value(Value::Array(plan.patch.clone())).unwrap();
    json_patch::patch(&mut out, &ops).unwrap_or_else(|e| panic!("{e}: {:#?}", plan.patch));
    (plan, out)
}

/// The emptyDir route with a placeholder image.
fn img() -> Install {
    Install {
        image: "img".into(),
        mode: crate::inject::delivery::Mode::EmptyDir,
    }
}

fn env(c: &Value) -> Vec<(String, String)> {
    c["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["name"].as_str().unwrap().into(),
                e["value"].as_str().unwrap_or("").into(),
            )
        })
        .collect()
}

fn var(name: &str, value: &str) -> (String, String) {
    (name.into(), value.into())
}

#[test]
fn a_jobs_pod_gets_the_install_init_container_the_volume_and_the_command_prefix() {
    let pod = job_pod("myjob", vec![job_container("job")], vec![]);
    let (plan, out) = injected(&pod);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    let spec = &out["spec"];
    let init = &spec["initContainers"][0];
    assert_eq!(init["name"], INSTALL_CONTAINER);
    assert_eq!(init["image"], pods::TANDEM_IMAGE);
    assert_eq!(
        init["command"],
        json!(["/tandem", "--install-to", INSTALL_DIR])
    );
    assert_eq!(
        init["volumeMounts"],
        json!([
            {"name": BIN_VOLUME, "mountPath": INSTALL_DIR},
            {"name": BIN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": true},
        ])
    );
    assert_eq!(
        out["metadata"]["annotations"],
        json!({"batch.kubernetes.io/job-tracking": "", "tandem.dev/injection": "wrapped job (command from the spec)"})
    );
    assert_eq!(
        plan.summary,
        "pod default/myjob-* (Job myjob): wrapped job (command from the spec)"
    );
    assert_eq!(init["securityContext"]["runAsNonRoot"], true);
    let volumes = spec["volumes"].as_array().unwrap();
    assert_eq!(volumes.len(), 2, "the token volume stays: {volumes:?}");
    assert_eq!(
        volumes[1],
        json!({"name": BIN_VOLUME, "emptyDir": {"sizeLimit": "16Mi"}})
    );
    let job = &spec["containers"][0];
    assert_eq!(
        job["command"],
        json!(["/tandem/tandem", "--", "/app/myjob"])
    );
    assert_eq!(job["args"], json!(["--since=yesterday"]), "args stay args");
    let mounts = job["volumeMounts"].as_array().unwrap();
    assert_eq!(mounts[0]["name"], pods::TOKEN_VOLUME);
    assert_eq!(
        mounts[1],
        json!({"name": BIN_VOLUME, "mountPath": "/tandem", "readOnly": true})
    );
    assert!(
        env(job).is_empty(),
        "no sidecar, nothing to set: {:?}",
        env(job)
    );
}

#[test]
fn a_classic_istio_proxy_sets_the_istio_preset_and_stays_untouched() {
    let pod = job_pod("j", vec![job_container("job"), istio_proxy(false)], vec![]);
    let (_, out) = injected(&pod);
    assert_eq!(
        env(&out["spec"]["containers"][0]),
        [var("TANDEM_MESH", "istio")]
    );
    assert_eq!(out["spec"]["containers"][1], pod["spec"]["containers"][1]);
}

#[test]
fn a_native_sidecar_is_waited_for_by_its_ready_url_and_never_quit() {
    let pod = job_pod("j", vec![job_container("job")], vec![istio_proxy(true)]);
    let (_, out) = injected(&pod);
    assert_eq!(
        env(&out["spec"]["containers"][0]),
        [var(
            "TANDEM_READY_URLS",
            "http://127.0.0.1:15021/healthz/ready"
        )]
    );
    let init = out["spec"]["initContainers"].as_array().unwrap();
    assert_eq!(
        init[0], pod["spec"]["initContainers"][0],
        "istio-proxy first, unchanged"
    );
    assert_eq!(init[1]["name"], INSTALL_CONTAINER);
}

#[test]
fn an_init_container_that_runs_to_completion_is_not_a_sidecar() {
    let mut proxy = istio_proxy(false);
    proxy["name"] = json!("linkerd-proxy");
    let pod = job_pod("j", vec![job_container("job")], vec![proxy]);
    let (_, out) = injected(&pod);
    assert!(env(&out["spec"]["containers"][0]).is_empty());
}

#[test]
fn a_native_dapr_keeps_its_default_port_unless_the_job_gives_a_literal_one() {
    let sidecar = |name| container(name, "sidecar:1", None, &[]);
    for (port, url) in [
        ("$(PORT)", "http://127.0.0.1:3500/v1.0/healthz/outbound"),
        ("0", "http://127.0.0.1:3500/v1.0/healthz/outbound"),
        ("3601", "http://127.0.0.1:3601/v1.0/healthz/outbound"),
    ] {
        let mut job = job_container("job");
        job["env"] = json!([{"name": "DAPR_HTTP_PORT", "value": port}]);
        let mut daprd = sidecar("daprd");
        daprd["restartPolicy"] = json!("Always");
        let (_, out) = injected(&job_pod("j", vec![job], vec![daprd]));
        let env = env(&out["spec"]["containers"][0]);
        assert!(
            env.contains(&var("TANDEM_READY_URLS", url)),
            "{port}: {env:?}"
        );
    }
}

#[test]
fn several_sidecars_combine_classic_in_the_mesh_and_native_in_the_ready_urls() {
    let mut job = job_container("job");
    job["env"] = json!([{"name": "DAPR_HTTP_PORT", "value": "3600"}]);
    let sidecar = |name| container(name, "sidecar:1", None, &[]);
    let mut daprd = sidecar("daprd");
    daprd["restartPolicy"] = json!("Always");
    let pod = job_pod(
        "j",
        vec![
            sidecar("vault-agent"),
            job,
            sidecar("cloud-sql-proxy"),
            istio_proxy(false),
        ],
        vec![daprd, sidecar("linkerd-init")],
    );
    let (plan, out) = injected(&pod);
    let job = &out["spec"]["containers"][1];
    assert_eq!(job["command"][0], TANDEM);
    assert_eq!(
        env(job),
        [
            var("DAPR_HTTP_PORT", "3600"),
            var("TANDEM_MESH", "istio,cloudsql,vault"),
            var(
                "TANDEM_READY_URLS",
                "http://127.0.0.1:3600/v1.0/healthz/outbound"
            ),
        ]
    );
    for i in [0, 2, 3] {
        assert_eq!(
            out["spec"]["containers"][i], pod["spec"]["containers"][i],
            "sidecar {i}"
        );
    }
    assert!(
        plan.summary.contains("TANDEM_MESH=istio,cloudsql,vault"),
        "{}",
        plan.summary
    );
}

#[test]
fn a_container_that_sets_its_mesh_keeps_it() {
    for set in ["TANDEM_MESH", "TANDEM_READY_URLS"] {
        let mut job = job_container("job");
        job["env"] =
            json!([{"name": set, "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}]);
        let pod = job_pod("j", vec![job.clone(), istio_proxy(false)], vec![]);
        let (_, out) = injected(&pod);
        assert_eq!(out["spec"]["containers"][0]["env"], job["env"], "{set}");
    }
}

#[test]
fn two_job_containers_get_the_several_containers_variables_and_a_shared_dir() {
    let pod = job_pod(
        "j",
        vec![
            container("migrate", pods::JOB_IMAGE, Some(&["/app/migrate"]), &[]),
            istio_proxy(false),
            container(
                "report",
                pods::JOB_IMAGE,
                Some(&["/app/report"]),
                &["--all"],
            ),
        ],
        vec![],
    );
    let (_, out) = injected(&pod);
    let spec = &out["spec"];
    assert_eq!(
        spec["volumes"][2],
        json!({"name": SHARED_VOLUME, "emptyDir": {"sizeLimit": "1Mi"}})
    );
    for (i, name) in [(0, "migrate"), (2, "report")] {
        let c = &spec["containers"][i];
        assert_eq!(c["command"][0], TANDEM);
        assert_eq!(
            env(c),
            [
                var("TANDEM_MESH", "istio"),
                var("TANDEM_JOB_CONTAINERS", "migrate,report"),
                var("TANDEM_CONTAINER_NAME", name),
                var("TANDEM_SHARED_DIR", SHARED_DIR),
            ]
        );
        assert_eq!(
            c["volumeMounts"][2],
            json!({"name": SHARED_VOLUME, "mountPath": SHARED_DIR})
        );
    }
    assert_eq!(spec["containers"][2]["args"], json!(["--all"]));
}

#[test]
fn a_container_without_command_is_left_alone_with_a_warning_naming_it_and_the_fix() {
    let pod = job_pod(
        "j",
        vec![
            job_container("job"),
            container("uploader", pods::JOB_IMAGE, None, &["--to=s3"]),
        ],
        vec![],
    );
    let (plan, out) = injected(&pod);
    assert_eq!(
        plan.warnings,
        [
            "tandem-injector: container \"uploader\" not wrapped: it has no command \
          (set command to its image's entrypoint)"
        ]
    );
    assert_eq!(out["spec"]["containers"][1], pod["spec"]["containers"][1]);
    let job = &out["spec"]["containers"][0];
    assert_eq!(job["command"][0], TANDEM);
    assert!(
        env(job).is_empty(),
        "one job container under tandem: no §9 variables"
    );

    assert_eq!(
        annotation(&out),
        "wrapped job (command from the spec); not wrapped: uploader: it has no command \
         (set command to its image's entrypoint)"
    );

    let alone = job_pod("j", vec![container("job", "x", Some(&[]), &["a"])], vec![]);
    let (plan, out) = injected(&alone);
    assert_eq!(plan.patch.len(), 1, "the annotation alone");
    assert_eq!(out["spec"], alone["spec"]);
    assert_eq!(plan.warnings.len(), 1);
    assert!(
        plan.summary.ends_with(
            "not wrapped: job: it has no command (set command to its image's entrypoint)"
        ),
        "{}",
        plan.summary
    );
    let (again, _) = injected(&out);
    assert!(again.patch.is_empty(), "the same line: {:?}", again.patch);
}

fn annotation(pod: &Value) -> &str {
    pod["metadata"]["annotations"][crate::layout::INJECTION_ANNOTATION]
        .as_str()
        .unwrap_or_else(|| panic!("no annotation: {}", pod["metadata"]))
}

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
    let (plan, out) = injected(&pod);
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
        annotation(&injected(&doc).1),
        "wrapped report (command from the spec; added \
         TANDEM_READY_URLS=http://127.0.0.1:15021/healthz/ready); not wrapped: uploader: \
         it has no command (set command to its image's entrypoint); the sidecars \
         (istio-proxy) are not told to quit, as a job container runs without tandem: \
         the Pod may not complete until they stop"
    );

    // Reinvoked after another webhook: nothing more, the annotation stays.
    let (again, twice) = injected(&out);
    assert!(again.patch.is_empty(), "{:#?}", again.patch);
    assert_eq!(twice, out);

    // A classic istio-proxy added after tandem, beside the unwrapped one: the
    // wrapped ones are still told only to wait for it.
    let mut before_istio = pod.clone();
    before_istio["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .pop();
    let (_, once) = injected(&before_istio);
    let mut with_istio = once.clone();
    with_istio["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(istio_proxy(false));
    let (_, out) = injected(&with_istio);
    let vars = env(&out["spec"]["containers"][0]);
    assert!(
        vars.contains(&ready) && !vars.iter().any(|(n, _)| n == "TANDEM_MESH"),
        "{vars:?}"
    );

    // A job container a later webhook added beside wrapped ones that quit istio:
    // the line says it is not wrapped, and claims no sidecar is left running.
    let (_, once) = injected(&job_pod(
        "j",
        vec![job_container("job"), istio_proxy(false)],
        vec![],
    ));
    let mut added = once.clone();
    added["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(job_container("late"));
    let (again, _) = injected(&added);
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
    let (plan, out) = injected(&bare);
    let op = plan.patch.last().unwrap();
    assert_eq!(op["path"], "/metadata/annotations");
    assert_eq!(
        out["metadata"]["annotations"],
        json!({"tandem.dev/injection": "wrapped job (command from the spec)"})
    );

    // A template copied from an injected Pod carries a stale line: replaced.
    let mut copied = job_pod("j", vec![job_container("job")], vec![]);
    copied["metadata"]["annotations"]["tandem.dev/injection"] = json!("not injected: old");
    let (plan, out) = injected(&copied);
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
    let (plan, out) = injected(&pod);
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
fn only_an_opted_in_pod_of_a_job_is_changed() {
    let base = job_pod("j", vec![job_container("job")], vec![]);
    let through = |pod: &Value, scope| plan(&request(pod), &img(), scope);

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

    let mut replica = base.clone();
    replica["metadata"]["ownerReferences"][0]["kind"] = json!("ReplicaSet");
    replica["metadata"]["ownerReferences"][0]["apiVersion"] = json!("apps/v1");
    let p = through(&replica, Scope::Label);
    assert!(p.patch.is_empty() && p.warnings.is_empty());
    assert!(p.summary.contains("not owned by a Job"), "{}", p.summary);

    let mut bare = base.clone();
    bare["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    assert!(through(&bare, Scope::Label).patch.is_empty());

    // A CronJob's Pod: its owner is the Job the CronJob created.
    let mut cron = base.clone();
    cron["metadata"]["ownerReferences"][0]["name"] = json!("nightly-29123456");
    assert!(!through(&cron, Scope::Label).patch.is_empty());
}

#[test]
fn only_a_pod_create_is_considered() {
    let pod = job_pod("j", vec![job_container("job")], vec![]);
    let mut update = request(&pod);
    update["operation"] = json!("UPDATE");
    assert!(plan(&update, &img(), Scope::Label).patch.is_empty());
    let mut status = request(&pod);
    status["subResource"] = json!("status");
    assert!(plan(&status, &img(), Scope::Label).patch.is_empty());
    let mut secret = request(&pod);
    secret["kind"]["kind"] = json!("Secret");
    assert!(plan(&secret, &img(), Scope::Label).patch.is_empty());
}

#[test]
fn reinvocation_leaves_a_changed_pod_as_it_is() {
    for (name, pod) in pods::cases() {
        let (_, once) = injected(&pod);
        let (again, twice) = injected(&once);
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
    let (_, once) = injected(&pod);
    let mut with_istio = once.clone();
    with_istio["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(istio_proxy(false));
    let (again, out) = injected(&with_istio);
    assert_eq!(again.patch.len(), 1, "{:#?}", again.patch);
    assert_eq!(
        env(&out["spec"]["containers"][0]),
        [var("TANDEM_MESH", "istio")]
    );
    assert_eq!(
        out["spec"]["initContainers"],
        once["spec"]["initContainers"]
    );
    assert!(injected(&out).0.patch.is_empty(), "and then it is stable");
}

#[test]
fn a_pod_shaped_wrongly_is_allowed_unchanged_with_a_warning_saying_what() {
    let cases = [
        ("/spec", json!(null), "no spec"),
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
        let p = plan(&request(&pod), &img(), Scope::Label);
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

#[test]
fn the_image_volume_route_mounts_the_tandem_image_and_adds_no_init_container() {
    let install = Install {
        image: pods::TANDEM_IMAGE.into(),
        mode: crate::inject::delivery::Mode::ImageVolume,
    };
    let pod = job_pod("j", vec![job_container("job"), istio_proxy(false)], vec![]);
    let p = plan(&request(&pod), &install, Scope::Label);
    let mut out = pod.clone();
    let ops: json_patch::Patch = serde_json::from_value(Value::Array(p.patch.clone())).unwrap();
    json_patch::patch(&mut out, &ops).unwrap();
    let spec = &out["spec"];
    assert!(
        spec["initContainers"].is_null(),
        "{:#?}",
        spec["initContainers"]
    );
    assert_eq!(
        spec["volumes"][1],
        json!({"name": BIN_VOLUME, "image": {"reference": pods::TANDEM_IMAGE}})
    );
    let job = &spec["containers"][0];
    assert_eq!(
        job["command"],
        json!(["/tandem/tandem", "--", "/app/myjob"])
    );
    assert_eq!(
        job["volumeMounts"][1],
        json!({"name": BIN_VOLUME, "mountPath": "/tandem", "readOnly": true})
    );
    assert_eq!(env(job), [var("TANDEM_MESH", "istio")]);
    // The image volume marks the Pod changed: a second review adds nothing.
    let again = plan(&request(&out), &install, Scope::Label);
    assert!(again.patch.is_empty(), "{:#?}", again.patch);
    assert_eq!(
        again.summary,
        "pod default/j-* (Job j): wrapped job (by an earlier review)"
    );
}

/// Each shared case through the image-volume route, written to
/// `target/tmp/injector/patched-image-volume/` for `make injector-manifests`,
/// which validates them for Kubernetes 1.35 and 1.36.
#[test]
fn every_case_through_the_image_volume_route_has_the_volume_and_no_install_container() {
    let install = Install {
        image: pods::TANDEM_IMAGE.into(),
        mode: crate::inject::delivery::Mode::ImageVolume,
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/tmp/injector/patched-image-volume");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, pod) in pods::cases() {
        let p = plan(&request(&pod), &install, Scope::Label);
        let mut out = pod.clone();
        let ops: json_patch::Patch = serde_json::from_value(Value::Array(p.patch)).unwrap();
        json_patch::patch(&mut out, &ops).unwrap();
        let init = out["spec"]["initContainers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            init.iter().all(|c| c["name"] != INSTALL_CONTAINER),
            "{name}"
        );
        let volumes = out["spec"]["volumes"].as_array().unwrap();
        assert!(
            volumes
                .iter()
                .any(crate::inject::delivery::is_bin_image_volume),
            "{name}"
        );
        let text = serde_json::to_string_pretty(&out).unwrap();
        std::fs::write(dir.join(format!("{name}.json")), text).unwrap();
    }
}
