//! Audit before enabling (SPEC §10.8), with the binary: the label value `audit`
//! over real HTTPS on loopback, on a Pod and through a namespace, answered
//! with nothing but the annotation and counted in `/metrics`; and
//! `tandem-injector audit` over a List of Pods, from a file and from stdin,
//! with its exit statuses.

mod support;

use std::fs;
use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use support::pods::{self, istio_proxy, job_container, job_pod, review};
use support::{INJECTOR, Injector, Pki, answered, scratch};

const LABEL: &str = "tandem.dev/inject";
const ANNOTATION: &str = "tandem.dev/injection";

fn labelled(pod: &Value, label: Option<&str>) -> Value {
    let mut pod = pod.clone();
    let labels = pod["metadata"]["labels"].as_object_mut().unwrap();
    match label {
        Some(value) => labels.insert(LABEL.into(), json!(value)),
        None => labels.remove(LABEL),
    };
    pod
}

/// `pod` with its annotation taken out, and the annotation.
fn without_annotation(pod: &Value) -> (Value, String) {
    let mut pod = pod.clone();
    let annotations = pod["metadata"]["annotations"].as_object_mut().unwrap();
    let line = annotations
        .remove(ANNOTATION)
        .map(|v| v.as_str().unwrap().to_string());
    (pod, line.unwrap_or_default())
}

#[test]
fn a_pod_labelled_audit_is_stored_unchanged_but_for_the_annotation_saying_what_would_be_done() {
    let pki = Pki::new();
    let injector = Injector::start(&pki, &scratch("audit-label"));
    let client = pki.client();
    for (name, pod) in pods::cases() {
        let enabled = client.review(injector.addr, &review(name, &pod)).json();
        let (changed, _) = answered(&pod, &enabled);
        let (_, line) = without_annotation(&changed);
        let audited = labelled(&pod, Some("audit"));
        let answer = client.review(injector.addr, &review(name, &audited));
        assert_eq!(answer.status, 200, "{name}");
        let (out, response) = answered(&audited, &answer.json());
        assert_eq!(response["allowed"], true);
        assert!(response["warnings"].is_null(), "{name}: {response}");
        let (rest, said) = without_annotation(&out);
        assert_eq!(rest, audited, "{name}: nothing else changed");
        assert_eq!(said, format!("audit: {line}"), "{name}");
        if name == "no-command" {
            // Looked up as for enabled: its registry is not reachable from here.
            assert!(
                said.contains("uploader: it has no command and its image"),
                "{said}"
            );
            assert!(said.contains("was not read: "), "{said}");
        }
        // Called again after another webhook: nothing more.
        let again = client.review(injector.addr, &review(name, &out)).json();
        assert!(again["response"]["patch"].is_null(), "{name}: {again}");
    }
    let line = injector
        .wait_log("tandem-injector: pod default/istio-classic-* (Job istio-classic): audit: ");
    assert!(
        line.ends_with("audit: wrapped job (command from the spec; added TANDEM_MESH=istio)"),
        "{line}"
    );
}

/// `tandem_injector_reviews_total{outcome=OUTCOME}` once it reaches `at_least`
/// (a review is counted after its answer is written; hang guard 10 s).
fn reviews(client: &support::Client, injector: &Injector, outcome: &str, at_least: u32) -> u32 {
    let sample = format!("tandem_injector_reviews_total{{outcome=\"{outcome}\"}} ");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = client
            .connect(injector.addr)
            .send("GET", "/metrics", b"")
            .unwrap()
            .text();
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix(&sample))
            .unwrap_or_else(|| panic!("no {sample}in {text}"));
        let value: u32 = value.parse().unwrap();
        if value >= at_least || Instant::now() > deadline {
            return value;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_namespace_labelled_audit_audits_its_pods_unless_their_own_label_says_otherwise() {
    let pki = Pki::new();
    let injector = Injector::start(&pki, &scratch("audit-namespace"));
    let client = pki.client();
    let pod = job_pod(
        "nightly",
        vec![job_container("job"), istio_proxy(false)],
        vec![],
    );
    let post = |path: &str, pod: &Value| {
        let answer = client.post(injector.addr, path, review("n", pod).to_string().as_bytes());
        assert_eq!(answer.status, 200, "{}", answer.text());
        answered(pod, &answer.json()).0
    };
    let expected = "audit: wrapped job (command from the spec; added TANDEM_MESH=istio)";
    for (path, label) in [
        ("/mutate/namespace/audit", None),
        ("/mutate/namespace/audit", Some("audit")),
        ("/mutate/namespace", Some("audit")),
        ("/mutate", Some("audit")),
    ] {
        let pod = labelled(&pod, label);
        let (rest, said) = without_annotation(&post(path, &pod));
        assert_eq!((rest, said.as_str()), (pod, expected), "{path} {label:?}");
    }
    // The Pod's own label wins over its namespace's.
    let enabled = post("/mutate/namespace/audit", &labelled(&pod, Some("enabled")));
    assert_eq!(
        enabled["spec"]["containers"][0]["command"][0],
        "/tandem/tandem"
    );
    let disabled = labelled(&pod, Some("disabled"));
    assert_eq!(post("/mutate/namespace/audit", &disabled), disabled);
    assert_eq!(reviews(&client, &injector, "audited", 4), 4);
    assert_eq!(reviews(&client, &injector, "changed", 1), 1);
    assert_eq!(reviews(&client, &injector, "unchanged", 1), 1);
    let text = client
        .connect(injector.addr)
        .send("GET", "/metrics", b"")
        .unwrap()
        .text();
    let wrapped = "tandem_injector_containers_wrapped_total{found=\"spec\"} 1\n";
    assert!(text.contains(wrapped), "an audit wraps nothing: {text}");
}

/// `tandem-injector ARGS` with `stdin`: its status, stdout and stderr.
fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(INJECTOR)
        .args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// A Pod as `kubectl get pods -o json` lists it, in `namespace`, with the
/// states of its job container and its istio-proxy.
fn stored(job: &str, namespace: &str, job_state: &str, proxy_state: &str) -> Value {
    let mut pod = job_pod(job, vec![job_container("job"), istio_proxy(false)], vec![]);
    pod["metadata"]["name"] = json!(format!("{job}-x7k2p"));
    pod["metadata"]["namespace"] = json!(namespace);
    let state = |s: &str| match s {
        "running" => json!({"running": {"startedAt": "2026-11-28T09:00:00Z"}}),
        _ => json!({"terminated": {"exitCode": 0, "reason": "Completed"}}),
    };
    pod["status"] = json!({"phase": "Running", "containerStatuses": [
        {"name": "job", "state": state(job_state), "ready": false, "restartCount": 0, "image": "", "imageID": ""},
        {"name": "istio-proxy", "state": state(proxy_state), "ready": true, "restartCount": 0, "image": "", "imageID": ""},
    ]});
    pod
}

#[test]
fn the_audit_command_reads_a_list_of_pods_and_exits_65_on_anything_else_64_on_bad_usage() {
    let stuck = stored("nightly", "shop", "completed", "running");
    let running = stored("hourly", "shop", "running", "running");
    // A bare Pod (no owner) stuck the same way, and one restarted for ever.
    let mut bare = stored("web", "shop", "completed", "running");
    bare["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    let mut always = stored("api", "shop", "completed", "running");
    always["spec"]["restartPolicy"] = json!("Always");
    let list = json!({"apiVersion": "v1", "kind": "List",
        "items": [running, stuck.clone(), bare, always],
        "metadata": {"resourceVersion": ""}});
    let dir = scratch("audit-command");
    let file = dir.join("pods.json");
    fs::write(&file, list.to_string()).unwrap();
    let file = file.to_str().unwrap();

    let out = run(&["audit", file], b"");
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains("\nshop       Job/nightly  nightly-x7k2p  istio-proxy\n"),
        "{table}"
    );
    assert!(
        table.contains(
            "\nshop       Job/hourly   hourly-x7k2p   wrapped job (command from the spec; added\n"
        ),
        "{table}"
    );

    let out = run(
        &["audit", "-", "--output", "json"],
        list.to_string().as_bytes(),
    );
    assert!(out.status.success(), "{out:?}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["stuck"],
        json!([
            {"namespace": "shop", "pod": "web-x7k2p", "job": null, "owner": null,
             "sidecars": ["istio-proxy"]},
            {"namespace": "shop", "pod": "nightly-x7k2p", "job": "nightly",
             "owner": "Job/nightly", "sidecars": ["istio-proxy"]},
        ])
    );
    let would = "wrapped job (command from the spec; added TANDEM_MESH=istio)";
    assert_eq!(
        json["injection"],
        json!([
            {"namespace": "shop", "pod": "web-x7k2p", "job": null, "owner": null, "would": would},
            {"namespace": "shop", "pod": "hourly-x7k2p", "job": "hourly",
             "owner": "Job/hourly", "would": would},
            {"namespace": "shop", "pod": "nightly-x7k2p", "job": "nightly",
             "owner": "Job/nightly", "would": would},
        ])
    );

    let missing = dir.join("missing.json");
    let single = stuck.to_string();
    let cases: [(&[&str], &[u8], i32, &str); 5] = [
        (
            &["audit", "-"],
            single.as_bytes(),
            65,
            "audit: standard input: a single Pod, not a List: expected a List of Pods",
        ),
        (
            &["audit"],
            b"not json",
            65,
            "audit: standard input: not JSON (",
        ),
        (
            &["audit", "--all-namespaces"],
            b"",
            64,
            "unknown option --all-namespaces (see --help)",
        ),
        (
            &["audit", "--output", "yaml"],
            b"",
            64,
            "--output \"yaml\": expected table or json",
        ),
        (&["audit", missing.to_str().unwrap()], b"", 66, "audit: "),
    ];
    for (args, stdin, code, expected) in cases {
        let out = run(args, stdin);
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("tandem-injector: {expected}")),
            "{args:?}: {stderr}"
        );
    }
}
