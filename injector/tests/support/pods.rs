//! Admission requests as the API server sends them for a Job's Pod: the Pod as
//! the Job controller creates it (generateName, the Job as controlling owner,
//! its labels and finalizer), after defaulting and the built-in admission plugins
//! (the service account token volume, default tolerations), wrapped in an
//! `AdmissionReview` with the Job controller as the user. Shared by the unit
//! tests, the HTTPS tests, the Pod runs and the benchmark.

#![allow(dead_code)] // each user takes the builders it needs

use serde_json::{Value, json};

/// The Job's uid, in its Pods' labels and owner reference.
pub const JOB_UID: &str = "4c1e9a9e-3f1f-4d2a-9a43-7b2f4f0b1a11";
/// The image the injector is started with in the tests.
pub const TANDEM_IMAGE: &str = "ghcr.io/tandem-sidecar/tandem:0.1.0";
/// A job image without tandem in it: the injector must bring it.
pub const JOB_IMAGE: &str = "registry.example.com/myjob-distroless:1.0";
/// The image the Istio injector gives istio-proxy.
pub const ISTIO_IMAGE: &str = "docker.io/istio/proxyv2:1.28.0";
/// The service account token volume the ServiceAccount plugin adds.
pub const TOKEN_VOLUME: &str = "kube-api-access-7xk2p";

/// `pod` with the JSONPatch `patch` (RFC 6902) applied, as the API server
/// applies a webhook's or a policy's; panics naming the patch if it fails.
pub fn apply(pod: &Value, patch: &[Value]) -> Value {
    let ops: json_patch::Patch = serde_json::from_value(Value::Array(patch.to_vec())).unwrap();
    let mut out = pod.clone();
    json_patch::patch(&mut out, &ops).unwrap_or_else(|e| panic!("{e}: {patch:#?}"));
    out
}

/// `words` as owned strings: a command, args, an image's Entrypoint or Cmd.
pub fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// A container after defaulting, with the token mount, running `command` (None:
/// the image's entrypoint) and `args`.
pub fn container(name: &str, image: &str, command: Option<&[&str]>, args: &[&str]) -> Value {
    let mut c = json!({
        "name": name,
        "image": image,
        "resources": {},
        "volumeMounts": [{
            "name": TOKEN_VOLUME,
            "readOnly": true,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        }],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    });
    if let Some(command) = command {
        c["command"] = json!(command);
    }
    if !args.is_empty() {
        c["args"] = json!(args);
    }
    c
}

/// The job container of most cases: `/app/myjob --since=yesterday`.
pub fn job_container(name: &str) -> Value {
    container(
        name,
        JOB_IMAGE,
        Some(&["/app/myjob"]),
        &["--since=yesterday"],
    )
}

/// istio-proxy as Istio's injector adds it (the fields tandem's pods harness
/// and the schema care about): a classic sidecar, or with `native` an init
/// container with `restartPolicy: Always`.
pub fn istio_proxy(native: bool) -> Value {
    let mut c = container("istio-proxy", ISTIO_IMAGE, None, &["proxy", "sidecar"]);
    c["ports"] = json!([{"containerPort": 15090, "name": "http-envoy-prom", "protocol": "TCP"}]);
    c["readinessProbe"] = json!({
        "httpGet": {"path": "/healthz/ready", "port": 15021, "scheme": "HTTP"},
        "periodSeconds": 15, "timeoutSeconds": 3, "successThreshold": 1, "failureThreshold": 4,
    });
    if native {
        c["restartPolicy"] = json!("Always");
    }
    c
}

/// The Pod the Job controller creates for Job `job`, labelled for injection,
/// with these containers and init containers.
pub fn job_pod(job: &str, containers: Vec<Value>, init: Vec<Value>) -> Value {
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": format!("{job}-"),
            "namespace": "default",
            "labels": {
                "batch.kubernetes.io/controller-uid": JOB_UID,
                "batch.kubernetes.io/job-name": job,
                "controller-uid": JOB_UID,
                "job-name": job,
                "tandem.dev/inject": "enabled",
            },
            "annotations": {"batch.kubernetes.io/job-tracking": ""},
            "finalizers": ["batch.kubernetes.io/job-tracking"],
            "ownerReferences": [{
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": job,
                "uid": JOB_UID,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "volumes": [{
                "name": TOKEN_VOLUME,
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                    ],
                    "defaultMode": 420,
                },
            }],
            "containers": containers,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "priority": 0,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {},
    });
    if !init.is_empty() {
        pod["spec"]["initContainers"] = json!(init);
    }
    pod
}

/// A Pod like [`job_pod`]'s but created by itself, named `name` (no owner, no
/// Job labels): a bare Pod, an operator's or a CI runner's.
pub fn bare_pod(name: &str, containers: Vec<Value>, init: Vec<Value>) -> Value {
    let mut pod = job_pod(name, containers, init);
    let meta = pod["metadata"].as_object_mut().unwrap();
    for field in [
        "generateName",
        "ownerReferences",
        "finalizers",
        "annotations",
    ] {
        meta.remove(field);
    }
    meta.insert("name".into(), json!(name));
    meta.insert("labels".into(), json!({"tandem.dev/inject": "enabled"}));
    pod
}

/// `pod` with one controlling owner, `kind` `name` of `api_version`.
pub fn owned(mut pod: Value, api_version: &str, kind: &str, name: &str) -> Value {
    pod["metadata"]["ownerReferences"] = json!([{
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": "9d0c6b1e-52a4-4b7e-8f0e-3c2d1a6b5e4f",
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
    pod
}

/// The Pod Airflow's `KubernetesPodOperator` creates for a task: no owner, its
/// one container named `base`, Airflow's labels, `restartPolicy: Never`, and
/// here istio-proxy beside it.
pub fn airflow_pod() -> Value {
    let base = container(
        "base",
        JOB_IMAGE,
        Some(&["python", "-m", "etl"]),
        &["--day=2026-11-28"],
    );
    let mut pod = bare_pod("etl-load-3f9a2c1b", vec![base, istio_proxy(false)], vec![]);
    pod["metadata"]["namespace"] = json!("airflow");
    pod["metadata"]["labels"] = json!({
        "tandem.dev/inject": "enabled",
        "dag_id": "etl",
        "task_id": "load",
        "run_id": "scheduled__2026-11-28T0000000000-7e2b3c4d5",
        "kubernetes_pod_operator": "True",
        "try_number": "1",
        "airflow_version": "3.1.3",
        "airflow_kpo_in_cluster": "True",
        "airflow-worker": "42",
    });
    pod
}

/// [`airflow_pod`] with `do_xcom_push=True`: KubernetesPodOperator's
/// `airflow-xcom-sidecar` (a shell idling until SIGINT) after `base`, both
/// mounting the `xcom` volume, then istio-proxy.
pub fn airflow_xcom_pod() -> Value {
    let mut pod = airflow_pod();
    let mount = json!({"name": "xcom", "mountPath": "/airflow/xcom"});
    let mut xcom = container(
        "airflow-xcom-sidecar",
        "alpine",
        Some(&[
            "sh",
            "-c",
            r#"trap "exit 0" INT; while true; do sleep 1; done;"#,
        ]),
        &[],
    );
    xcom["resources"] = json!({"requests": {"cpu": "1m", "memory": "10Mi"}});
    xcom["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .insert(0, mount.clone());
    let spec = &mut pod["spec"];
    spec["containers"][0]["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .insert(0, mount);
    spec["containers"].as_array_mut().unwrap().insert(1, xcom);
    spec["volumes"]
        .as_array_mut()
        .unwrap()
        .insert(0, json!({"name": "xcom", "emptyDir": {}}));
    pod
}

/// A container `restartPolicyRules` rule: `action` on the exit codes `operator`
/// (`In`, `NotIn`) `values`.
pub fn rule(action: &str, operator: &str, values: &[i64]) -> Value {
    json!({"action": action, "exitCodes": {"operator": operator, "values": values}})
}

/// The job container with its own `restartPolicy` and, when there are any,
/// `restartPolicyRules` (Kubernetes 1.35+, which wants the policy set beside
/// rules).
pub fn restarting(name: &str, policy: &str, rules: Vec<Value>) -> Value {
    let mut c = job_container(name);
    c["restartPolicy"] = json!(policy);
    if !rules.is_empty() {
        c["restartPolicyRules"] = json!(rules);
    }
    c
}

/// The Pods that run to completion however they came to be, and the restart
/// policies and rules that run a container again in the same Pod (SPEC §10,
/// "Restart in place"): (name, Pod, the oldest Kubernetes minor that takes it).
pub fn restart_cases() -> Vec<(&'static str, Value, u32)> {
    let istio = || istio_proxy(false);
    let pod = |policy: &str, containers: Vec<Value>| {
        let mut pod = job_pod("r", containers, vec![]);
        pod["spec"]["restartPolicy"] = json!(policy);
        pod
    };
    let alone = |c: Value| pod("Never", vec![c, istio()]);
    let mut bare_on_failure = bare_pod(
        "bare-on-failure",
        vec![job_container("job"), istio()],
        vec![],
    );
    bare_on_failure["spec"]["restartPolicy"] = json!("OnFailure");
    let mut sets_keep = job_container("job");
    sets_keep["env"] = json!([{"name": "TANDEM_KEEP_ON_EXIT", "value": "5"}]);
    let mut sets_failure = job_container("job");
    sets_failure["env"] = json!([{"name": "NEVER_KILL_ISTIO_ON_FAILURE", "value": "true"}]);
    let several = vec![
        rule("Restart", "In", &[0]),
        rule("Restart", "NotIn", &[0, 1, 2]),
        rule("Restart", "NotIn", &[9, 2, 1]),
    ];
    let spark = owned(
        bare_pod(
            "pi-driver",
            vec![job_container("spark-kubernetes-driver"), istio()],
            vec![],
        ),
        "sparkoperator.k8s.io/v1beta2",
        "SparkApplication",
        "pi",
    );
    vec![
        (
            "bare-never",
            bare_pod("bare-never", vec![job_container("job"), istio()], vec![]),
            29,
        ),
        ("bare-on-failure", bare_on_failure, 29),
        ("spark-driver", spark, 29),
        ("airflow-kpo", airflow_pod(), 29),
        ("airflow-kpo-xcom", airflow_xcom_pod(), 29),
        (
            "on-failure",
            pod("OnFailure", vec![job_container("job"), istio()]),
            29,
        ),
        (
            "on-failure-sets-keep",
            pod("OnFailure", vec![sets_keep, istio()]),
            29,
        ),
        (
            "on-failure-sets-keep-on-failure",
            pod("OnFailure", vec![sets_failure, istio()]),
            29,
        ),
        (
            "container-on-failure",
            alone(restarting("job", "OnFailure", vec![])),
            35,
        ),
        (
            "container-always",
            alone(restarting("job", "Always", vec![])),
            35,
        ),
        (
            "container-never-in-on-failure-pod",
            pod(
                "OnFailure",
                vec![restarting("job", "Never", vec![]), istio()],
            ),
            35,
        ),
        (
            "rule-in",
            alone(restarting(
                "job",
                "Never",
                vec![rule("Restart", "In", &[43, 7, 42])],
            )),
            35,
        ),
        (
            "rule-not-in",
            alone(restarting(
                "job",
                "Never",
                vec![rule("Restart", "NotIn", &[0])],
            )),
            35,
        ),
        (
            "rule-restart-all",
            alone(restarting(
                "job",
                "Never",
                vec![rule("RestartAllContainers", "In", &[3])],
            )),
            36,
        ),
        (
            "rules-several",
            alone(restarting("job", "Never", several)),
            35,
        ),
        (
            "rule-over-on-failure",
            alone(restarting(
                "job",
                "OnFailure",
                vec![rule("Restart", "In", &[0])],
            )),
            35,
        ),
        (
            "two-jobs-one-restarts",
            pod(
                "Never",
                vec![
                    restarting("a", "Never", vec![rule("Restart", "In", &[3])]),
                    job_container("b"),
                    istio(),
                ],
            ),
            35,
        ),
    ]
}

/// The `AdmissionReview` the API server sends for creating `pod`.
pub fn review(uid: &str, pod: &Value) -> Value {
    let gvk = json!({"group": "", "version": "v1", "kind": "Pod"});
    let gvr = json!({"group": "", "version": "v1", "resource": "pods"});
    json!({
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": uid,
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "namespace": pod["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {
                "username": "system:serviceaccount:kube-system:job-controller",
                "uid": "0a4c3d51-1f0e-4b43-8c68-1c9e8f0d2e55",
                "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
            },
            "object": pod,
            "oldObject": null,
            "dryRun": false,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        },
    })
}

/// Every case the HTTPS tests and the Pod runs share: (name, Pod).
pub fn cases() -> Vec<(&'static str, Value)> {
    vec![
        (
            "plain",
            job_pod("plain", vec![job_container("job")], vec![]),
        ),
        (
            "istio-classic",
            job_pod(
                "istio-classic",
                vec![job_container("job"), istio_proxy(false)],
                vec![],
            ),
        ),
        (
            "istio-native",
            job_pod(
                "istio-native",
                vec![job_container("job")],
                vec![istio_proxy(true)],
            ),
        ),
        (
            "two-jobs",
            job_pod(
                "two-jobs",
                vec![
                    container("migrate", JOB_IMAGE, Some(&["/app/migrate"]), &[]),
                    container("report", JOB_IMAGE, Some(&["/app/report"]), &["--all"]),
                    istio_proxy(false),
                ],
                vec![],
            ),
        ),
        (
            "no-command",
            job_pod(
                "no-command",
                vec![
                    job_container("job"),
                    container("uploader", JOB_IMAGE, None, &["--to=s3"]),
                ],
                vec![],
            ),
        ),
    ]
}

/// A sidecar container `name` with its image's entrypoint, as a mesh's or an
/// operator's injector adds it.
pub fn sidecar(name: &str) -> Value {
    container(name, &format!("sidecar/{name}:1"), None, &["run"])
}

/// The Pods of the native route's rules (SPEC §12), each a Job's Pod as its
/// sidecars' injectors left it: several sidecars with their own init
/// containers, an own `postStart`, Vault Agent, sidecars already native,
/// a job container without `command`, several job containers.
pub fn native_cases() -> Vec<(&'static str, Value)> {
    let job = || job_container("job");
    let native = |mut c: Value| {
        c["restartPolicy"] = json!("Always");
        c
    };
    let mut held = istio_proxy(false);
    held["lifecycle"] = json!({"postStart": {"exec": {"command":
        ["pilot-agent", "wait"]}}, "preStop": {"exec": {"command": ["sleep", "5"]}}});
    let mut probed = istio_proxy(true);
    probed["startupProbe"] = json!({"httpGet": {"path": "/healthz/ready", "port": 15021}});
    let mut stopping = native(sidecar("daprd"));
    stopping["lifecycle"] = json!({"preStop": {"exec": {"command": ["sleep", "1"]}}});
    let mut bare = sidecar("cloud-sql-proxy");
    if let Some(c) = bare.as_object_mut() {
        c.remove("volumeMounts");
    }
    vec![
        (
            "istio",
            job_pod("istio", vec![job(), istio_proxy(false)], vec![]),
        ),
        (
            "several sidecars, own init containers",
            job_pod(
                "several",
                vec![
                    sidecar("vault-agent"),
                    job(),
                    sidecar("cloud-sql-proxy"),
                    sidecar("daprd"),
                    sidecar("linkerd-proxy"),
                    istio_proxy(false),
                ],
                vec![
                    sidecar("istio-init"),
                    sidecar("linkerd-init"),
                    sidecar("vault-agent-init"),
                ],
            ),
        ),
        (
            "own postStart",
            job_pod(
                "held",
                vec![job(), held, sidecar("cloud-sql-proxy")],
                vec![],
            ),
        ),
        (
            "vault agent alone",
            job_pod(
                "vault",
                vec![job(), sidecar("vault-agent")],
                vec![sidecar("vault-agent-init")],
            ),
        ),
        (
            "already native",
            job_pod(
                "native",
                vec![job()],
                vec![sidecar("istio-init"), istio_proxy(true)],
            ),
        ),
        (
            "already native with a startup probe",
            job_pod("probed", vec![job()], vec![probed]),
        ),
        (
            "already native with a preStop, and a classic one",
            job_pod("mixed", vec![job(), bare], vec![stopping]),
        ),
        (
            "no command",
            job_pod(
                "no-command",
                vec![
                    container("job", JOB_IMAGE, None, &["--to=s3"]),
                    istio_proxy(false),
                ],
                vec![],
            ),
        ),
        (
            "two job containers",
            job_pod(
                "two",
                vec![
                    container("migrate", JOB_IMAGE, Some(&["/app/migrate"]), &[]),
                    istio_proxy(false),
                    container("report", JOB_IMAGE, Some(&["/app/report"]), &[]),
                ],
                vec![],
            ),
        ),
        ("no sidecar", job_pod("plain", vec![job()], vec![])),
    ]
}
