//! The native route (SPEC §12) on Pods shaped as the API server sends them:
//! what moves and in what order, the wait in `postStart`, the install
//! container's place, the job containers as they were, a second review, the
//! route chosen by `--route` and by the annotation, and the annotation's words.

use serde_json::{Value, json};

use super::*;
use crate::inject::delivery::Mode;
use crate::layout::*;
use crate::tests::pods::{self, job_container, job_pod, sidecar};
use crate::tests::{annotation, install_on, planned, request};

/// The plan for `pod` on the native route through `mode`, and the Pod after it.
fn native(pod: &Value, mode: Mode) -> (Plan, Value) {
    let install = install_on(mode, Route::Native);
    planned(pod, &install, Scope::Label, &Images::new())
}

fn case(name: &str) -> Value {
    pods::native_cases()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("no case {name}"))
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

fn by_name<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

fn hook(preset: &str) -> Value {
    json!({"exec": {"command": ["/tandem/tandem", "--mesh", preset, "--wait-only"]}})
}

fn bin_mount() -> Value {
    json!({"name": BIN_VOLUME, "mountPath": "/tandem", "readOnly": true})
}

#[test]
fn a_classic_istio_proxy_becomes_a_native_sidecar_that_tandem_waits_for() {
    let pod = case("istio");
    let (plan, out) = native(&pod, Mode::EmptyDir);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    let spec = &out["spec"];
    assert_eq!(names(&spec["containers"]), ["job"]);
    assert_eq!(
        spec["containers"][0], pod["spec"]["containers"][0],
        "the job container is untouched"
    );
    assert_eq!(
        names(&spec["initContainers"]),
        [INSTALL_CONTAINER, "istio-proxy"]
    );
    let proxy = &spec["initContainers"][1];
    let mut expected = pod["spec"]["containers"][1].clone();
    expected["restartPolicy"] = json!("Always");
    expected["lifecycle"] = json!({"postStart": hook("istio")});
    expected["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .push(bin_mount());
    assert_eq!(
        *proxy, expected,
        "moved, unchanged but for what the route adds"
    );
    assert_eq!(
        spec["volumes"][1],
        json!({"name": BIN_VOLUME, "emptyDir": {"sizeLimit": "16Mi"}})
    );
    assert_eq!(
        annotation(&out),
        "native: moved istio-proxy to native sidecars, tandem waits for istio-proxy \
         in postStart; job containers unchanged"
    );
    assert_eq!(
        plan.summary,
        format!("pod default/istio-* (Job istio): {}", annotation(&out))
    );
}

#[test]
fn mesh_proxies_move_first_then_the_others_in_their_order_after_the_pods_own_init_containers() {
    let pod = case("several sidecars, own init containers");
    let (_, out) = native(&pod, Mode::EmptyDir);
    let spec = &out["spec"];
    assert_eq!(names(&spec["containers"]), ["job"]);
    assert_eq!(
        names(&spec["initContainers"]),
        [
            "istio-init",
            "linkerd-init",
            "vault-agent-init",
            INSTALL_CONTAINER,
            "linkerd-proxy",
            "istio-proxy",
            "vault-agent",
            "cloud-sql-proxy",
            "daprd",
        ]
    );
    let init = &spec["initContainers"];
    for (name, preset) in [
        ("linkerd-proxy", "linkerd"),
        ("istio-proxy", "istio"),
        ("cloud-sql-proxy", "cloudsql"),
        ("daprd", "dapr"),
    ] {
        let c = by_name(init, name);
        assert_eq!(c["restartPolicy"], "Always", "{name}");
        assert_eq!(c["lifecycle"]["postStart"], hook(preset), "{name}");
        assert!(c["volumeMounts"].as_array().unwrap().contains(&bin_mount()));
    }
    let vault = by_name(init, "vault-agent");
    assert_eq!(vault["restartPolicy"], "Always");
    assert!(vault["lifecycle"].is_null(), "nothing to wait for: no hook");
    assert!(
        !vault["volumeMounts"]
            .as_array()
            .unwrap()
            .contains(&bin_mount())
    );
    for own in ["istio-init", "linkerd-init", "vault-agent-init"] {
        assert!(by_name(init, own)["restartPolicy"].is_null(), "{own}");
    }
    assert_eq!(
        annotation(&out),
        "native: moved linkerd-proxy, istio-proxy, vault-agent, cloud-sql-proxy, daprd \
         to native sidecars, tandem waits for linkerd-proxy, istio-proxy, cloud-sql-proxy, \
         daprd in postStart; vault-agent has no readiness to wait for; job containers unchanged"
    );
}

#[test]
fn a_sidecar_with_its_own_post_start_keeps_it_and_gets_no_mount() {
    let pod = case("own postStart");
    let (_, out) = native(&pod, Mode::EmptyDir);
    let init = &out["spec"]["initContainers"];
    assert_eq!(
        names(init),
        [INSTALL_CONTAINER, "istio-proxy", "cloud-sql-proxy"]
    );
    let proxy = by_name(init, "istio-proxy");
    let mut expected = pod["spec"]["containers"][1].clone();
    expected["restartPolicy"] = json!("Always");
    assert_eq!(
        *proxy, expected,
        "its own postStart and preStop, as they were"
    );
    assert_eq!(
        by_name(init, "cloud-sql-proxy")["lifecycle"]["postStart"],
        hook("cloudsql")
    );
    assert_eq!(
        annotation(&out),
        "native: moved istio-proxy, cloud-sql-proxy to native sidecars, tandem waits for \
         cloud-sql-proxy in postStart; istio-proxy keeps its own postStart; job containers \
         unchanged"
    );
}

#[test]
fn vault_agent_alone_moves_without_a_wait_and_without_tandem() {
    let pod = case("vault agent alone");
    let (_, out) = native(&pod, Mode::EmptyDir);
    let spec = &out["spec"];
    assert_eq!(
        names(&spec["initContainers"]),
        ["vault-agent-init", "vault-agent"]
    );
    assert_eq!(spec["volumes"], pod["spec"]["volumes"], "no tandem volume");
    assert_eq!(
        annotation(&out),
        "native: moved vault-agent to native sidecars; vault-agent has no readiness to \
         wait for; job containers unchanged"
    );
}

#[test]
fn an_already_native_sidecar_without_probe_or_hook_gets_the_wait_after_the_install() {
    let pod = case("already native");
    let (_, out) = native(&pod, Mode::EmptyDir);
    let init = &out["spec"]["initContainers"];
    assert_eq!(
        names(init),
        ["istio-init", INSTALL_CONTAINER, "istio-proxy"]
    );
    assert_eq!(init[2]["lifecycle"], json!({"postStart": hook("istio")}));
    assert!(
        init[2]["volumeMounts"]
            .as_array()
            .unwrap()
            .contains(&bin_mount())
    );
    assert_eq!(out["spec"]["containers"], pod["spec"]["containers"]);
    assert_eq!(
        annotation(&out),
        "native: tandem waits for istio-proxy (already native) in postStart; job \
         containers unchanged"
    );

    let probed = case("already native with a startup probe");
    let (plan, out) = native(&probed, Mode::EmptyDir);
    assert_eq!(out["spec"], probed["spec"], "left as it is");
    assert_eq!(
        plan.patch.len(),
        1,
        "the annotation alone: {:?}",
        plan.patch
    );
    assert_eq!(
        annotation(&out),
        "native: no classic sidecar to move; job containers unchanged"
    );
}

#[test]
fn a_native_sidecar_with_a_pre_stop_keeps_it_beside_the_wait() {
    let pod = case("already native with a preStop, and a classic one");
    let (_, out) = native(&pod, Mode::EmptyDir);
    let init = &out["spec"]["initContainers"];
    assert_eq!(names(init), [INSTALL_CONTAINER, "daprd", "cloud-sql-proxy"]);
    assert_eq!(
        init[1]["lifecycle"],
        json!({"preStop": {"exec": {"command": ["sleep", "1"]}}, "postStart": hook("dapr")})
    );
    let moved = &init[2];
    assert_eq!(
        moved["volumeMounts"],
        json!([bin_mount()]),
        "a list made for it"
    );
    assert_eq!(
        annotation(&out),
        "native: moved cloud-sql-proxy to native sidecars, tandem waits for \
         cloud-sql-proxy in postStart, tandem waits for daprd (already native) in \
         postStart; job containers unchanged"
    );
}

#[test]
fn the_image_volume_carries_the_binary_with_no_install_container() {
    let pod = case("several sidecars, own init containers");
    let (_, out) = native(&pod, Mode::ImageVolume);
    let spec = &out["spec"];
    assert!(!names(&spec["initContainers"]).contains(&INSTALL_CONTAINER));
    assert_eq!(
        spec["volumes"][1],
        json!({"name": BIN_VOLUME, "image": {"reference": pods::TANDEM_IMAGE}})
    );
    let (_, again) = native(&case("already native"), Mode::ImageVolume);
    assert_eq!(
        names(&again["spec"]["initContainers"]),
        ["istio-init", "istio-proxy"]
    );
}

#[test]
fn job_containers_are_never_touched_and_none_is_looked_up() {
    for (name, pod) in pods::native_cases() {
        let (_, out) = native(&pod, Mode::EmptyDir);
        let before: Vec<&Value> = pod["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| is_job(c["name"].as_str().unwrap()))
            .collect();
        let after: Vec<&Value> = out["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(after, before, "{name}");
        assert!(
            wanted(&request(&pod), Scope::Label, Route::Native).is_empty(),
            "{name}"
        );
    }
    let no_command = case("no command");
    assert_eq!(
        wanted(&request(&no_command), Scope::Label, Route::Wrap).len(),
        1,
        "the wrap route would look it up"
    );
}

#[test]
fn a_second_review_changes_nothing_and_a_sidecar_added_later_is_moved_then() {
    for mode in [Mode::EmptyDir, Mode::ImageVolume] {
        for (name, pod) in pods::native_cases() {
            let (_, once) = native(&pod, mode);
            let (plan, twice) = native(&once, mode);
            assert_eq!(twice, once, "{mode:?} {name}: {:?}", plan.patch);
            assert!(plan.patch.is_empty(), "{mode:?} {name}: {:?}", plan.patch);
        }
    }
    // Vault's injector runs after tandem's: its agent and init container arrive
    // on the Pod tandem changed, and the reinvocation moves the agent.
    let (_, once) = native(&case("istio"), Mode::EmptyDir);
    let mut later = once.clone();
    later["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(sidecar("vault-agent"));
    later["spec"]["initContainers"]
        .as_array_mut()
        .unwrap()
        .push(sidecar("vault-agent-init"));
    let (_, out) = native(&later, Mode::EmptyDir);
    assert_eq!(names(&out["spec"]["containers"]), ["job"]);
    assert_eq!(
        names(&out["spec"]["initContainers"]),
        [
            INSTALL_CONTAINER,
            "istio-proxy",
            "vault-agent-init",
            "vault-agent"
        ]
    );
    assert_eq!(
        out["spec"]["volumes"], once["spec"]["volumes"],
        "installed once"
    );
    assert_eq!(
        annotation(&out),
        format!(
            "{}; on reinvocation: moved vault-agent to native sidecars; vault-agent has \
             no readiness to wait for; job containers unchanged",
            annotation(&once)
        )
    );
    let (plan, again) = native(&out, Mode::EmptyDir);
    assert!(plan.patch.is_empty(), "{:?}", plan.patch);
    assert_eq!(again, out);
}

#[test]
fn the_annotation_chooses_the_route_over_the_injectors() {
    let mut pod = case("istio");
    let wrap_default = install_on(Mode::EmptyDir, Route::Wrap);
    let (_, wrapped) = planned(&pod, &wrap_default, Scope::Label, &Images::new());
    assert_eq!(wrapped["spec"]["containers"][0]["command"][0], TANDEM);
    pod["metadata"]["annotations"][ROUTE_ANNOTATION] = json!("native");
    let (_, moved) = planned(&pod, &wrap_default, Scope::Label, &Images::new());
    assert_eq!(names(&moved["spec"]["containers"]), ["job"]);
    assert!(annotation(&moved).starts_with("native: moved istio-proxy"));
    pod["metadata"]["annotations"][ROUTE_ANNOTATION] = json!("wrap");
    let (_, kept) = native(&pod, Mode::EmptyDir);
    assert_eq!(kept["spec"]["containers"][0]["command"][0], TANDEM);
    assert_eq!(
        annotation(&kept),
        "wrapped job (command from the spec; added TANDEM_MESH=istio)"
    );
}

#[test]
fn an_annotation_naming_no_route_is_said_and_the_injectors_route_taken() {
    let mut pod = case("istio");
    pod["metadata"]["annotations"][ROUTE_ANNOTATION] = json!("Native");
    let (plan, out) = native(&pod, Mode::EmptyDir);
    assert_eq!(names(&out["spec"]["containers"]), ["job"]);
    assert!(
        annotation(&out).ends_with(
            "; tandem.dev/route \"Native\" not understood (expected wrap or native): \
             the injector's route, native, taken"
        ),
        "{}",
        annotation(&out)
    );
    let wrap = install_on(Mode::EmptyDir, Route::Wrap);
    let (_, out) = planned(&pod, &wrap, Scope::Label, &Images::new());
    assert!(
        annotation(&out).ends_with("the injector's route, wrap, taken"),
        "{}",
        annotation(&out)
    );
    assert!(plan.warnings.is_empty());
}

#[test]
fn audit_says_what_the_native_route_would_do_and_changes_nothing_but_the_annotation() {
    let mut pod = case("several sidecars, own init containers");
    pod["metadata"]["labels"][LABEL] = json!(AUDIT);
    let (plan, out) = native(&pod, Mode::EmptyDir);
    assert_eq!(out["spec"], pod["spec"]);
    assert!(
        annotation(&out).starts_with("audit: native: moved linkerd-proxy, istio-proxy,"),
        "{}",
        annotation(&out)
    );
    assert!(plan.warnings.is_empty());
}

#[test]
fn a_pod_whose_volume_clashes_with_the_binarys_is_left_as_it_is_and_said() {
    let mut pod = case("istio");
    pod["spec"]["volumes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": BIN_VOLUME, "emptyDir": {}}));
    let (plan, out) = native(&pod, Mode::EmptyDir);
    assert_eq!(out["spec"], pod["spec"]);
    assert_eq!(
        annotation(&out),
        "not injected: it already has a volume named \"tandem-bin\""
    );
    assert_eq!(plan.warnings.len(), 1);
    // Vault Agent alone needs no binary: the clash does not matter.
    let mut vault = case("vault agent alone");
    vault["spec"]["volumes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": BIN_VOLUME, "emptyDir": {}}));
    let (_, out) = native(&vault, Mode::EmptyDir);
    assert_eq!(names(&out["spec"]["containers"]), ["job"]);
}

#[test]
fn a_malformed_pod_is_left_as_it_is_with_the_reason() {
    let mut pod = case("istio");
    pod["spec"]["initContainers"] = json!("x");
    let (_, out) = native(&pod, Mode::EmptyDir);
    assert_eq!(out["spec"], pod["spec"]);
    assert_eq!(
        annotation(&out),
        "not injected: spec.initContainers is not a list"
    );
    // The route a Pod took is said even when it could not be read.
    pod["metadata"]["annotations"][ROUTE_ANNOTATION] = json!("nativ");
    let (plan, _) = native(&pod, Mode::EmptyDir);
    let report = plan.report.unwrap();
    assert_eq!(report.route, Route::Native);
    assert!(
        report
            .line()
            .ends_with("the injector's route, native, taken"),
        "{}",
        report.line()
    );
    let only_job = job_pod("j", vec![job_container("job")], vec![]);
    let (plan, out) = native(&only_job, Mode::EmptyDir);
    assert_eq!(out["spec"], only_job["spec"]);
    assert_eq!(plan.patch.len(), 1);
}

#[test]
fn the_line_says_each_when_tandem_waits_for_every_sidecar_it_moved() {
    let pod = job_pod(
        "both",
        vec![
            job_container("job"),
            sidecar("cloud-sql-proxy"),
            sidecar("istio-proxy"),
        ],
        vec![],
    );
    let (_, out) = native(&pod, Mode::EmptyDir);
    assert_eq!(
        annotation(&out),
        "native: moved istio-proxy, cloud-sql-proxy to native sidecars, tandem waits for \
         each in postStart; job containers unchanged"
    );
}
