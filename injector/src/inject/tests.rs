//! The rules of SPEC §10 on Pods shaped as the API server sends them, what a
//! Job's Pod gets: the install, the sidecars' variables, several job
//! containers, the image-volume route; each patch is applied (json-patch,
//! RFC 6902) and the resulting Pod checked. What is left alone, and a second
//! review, are in `unchanged_tests`.

use serde_json::json;

use super::*;
use crate::inject::delivery::Mode;
use crate::layout::*;
use crate::tests::pods::{self, container, istio_proxy, job_container, job_pod};
use crate::tests::{annotation, env, install, patched, planned, request, var};

#[test]
fn a_jobs_pod_gets_the_install_init_container_the_volume_and_the_command_prefix() {
    let pod = job_pod("myjob", vec![job_container("job")], vec![]);
    let (plan, out) = patched(&pod);
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
    let (_, out) = patched(&pod);
    assert_eq!(
        env(&out["spec"]["containers"][0]),
        [var("TANDEM_MESH", "istio")]
    );
    assert_eq!(out["spec"]["containers"][1], pod["spec"]["containers"][1]);
}

#[test]
fn a_native_sidecar_is_waited_for_by_its_ready_url_and_never_quit() {
    let pod = job_pod("j", vec![job_container("job")], vec![istio_proxy(true)]);
    let (_, out) = patched(&pod);
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
    let (_, out) = patched(&pod);
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
        let (_, out) = patched(&job_pod("j", vec![job], vec![daprd]));
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
    let (plan, out) = patched(&pod);
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
        let (_, out) = patched(&pod);
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
    let (_, out) = patched(&pod);
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
    let (plan, out) = patched(&pod);
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
    let (plan, out) = patched(&alone);
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
    let (again, _) = patched(&out);
    assert!(again.patch.is_empty(), "the same line: {:?}", again.patch);
}

#[test]
fn the_image_volume_route_mounts_the_tandem_image_and_adds_no_init_container() {
    let install = install(Mode::ImageVolume);
    let pod = job_pod("j", vec![job_container("job"), istio_proxy(false)], vec![]);
    let (_, out) = planned(&pod, &install, Scope::Label, &Images::new());
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
    let install = install(Mode::ImageVolume);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/tmp/injector/patched-image-volume");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, pod) in pods::cases() {
        let (_, out) = planned(&pod, &install, Scope::Label, &Images::new());
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
