//! `tandem-injector audit` on the webhook tests' Pods (the same builders), given
//! statuses as the kubelet writes them: which are stuck on their sidecars, what
//! the injection would do (the webhook's own plan), the List read, the table
//! and the JSON, the command line.

use serde_json::{Value, json};

use super::command::{Args, Output};
use super::{Audit, audit, list, render, would};
use crate::cli::{Task, parse};
use crate::inject::Images;
use crate::inject::delivery::{Install, Mode};
use crate::inject::route::Route;
use crate::inject::{Scope, plan_with};
use crate::registry::ImageConfig;
use crate::tests::pods::{self, bare_pod, container, istio_proxy, job_container, job_pod, review};

/// A container state as the kubelet writes it.
fn state(word: &str) -> Value {
    match word {
        "running" => json!({"running": {"startedAt": "2026-11-28T09:00:00Z"}}),
        "completed" => json!({"terminated": {"exitCode": 0, "reason": "Completed"}}),
        "failed" => json!({"terminated": {"exitCode": 1, "reason": "Error"}}),
        "waiting" => json!({"waiting": {"reason": "CrashLoopBackOff"}}),
        other => panic!("no state {other}"),
    }
}

/// `pod` as stored: named `name` in `namespace`, its containers' and init
/// containers' states given by name.
pub(super) fn stored(
    mut pod: Value,
    namespace: &str,
    name: &str,
    states: &[(&str, &str)],
) -> Value {
    pod["metadata"]["name"] = json!(name);
    pod["metadata"]["namespace"] = json!(namespace);
    let status = |list: &str| -> Vec<Value> {
        let names = pod["spec"][list].as_array().cloned().unwrap_or_default();
        names
            .iter()
            .filter_map(|c| {
                let name = c["name"].as_str()?;
                let (_, word) = states.iter().find(|(n, _)| *n == name)?;
                Some(
                    json!({"name": name, "ready": *word == "running", "restartCount": 0,
                    "image": c["image"], "imageID": "", "state": state(word)}),
                )
            })
            .collect()
    };
    let (main, init) = (status("containers"), status("initContainers"));
    pod["status"] = json!({"phase": "Running", "containerStatuses": main});
    if !init.is_empty() {
        pod["status"]["initContainerStatuses"] = json!(init);
    }
    pod
}

fn classic(job: &str) -> Value {
    job_pod(job, vec![job_container("job"), istio_proxy(false)], vec![])
}

fn stuck(pod: &Value) -> Option<Vec<String>> {
    super::stuck::running_sidecars(pod)
}

#[test]
fn a_pod_whose_job_container_ended_while_its_sidecar_runs_is_stuck() {
    for end in ["completed", "failed"] {
        let pod = stored(
            classic("j"),
            "ns",
            "j-1",
            &[("job", end), ("istio-proxy", "running")],
        );
        assert_eq!(stuck(&pod), Some(vec!["istio-proxy".into()]), "{end}");
    }
}

#[test]
fn a_running_completed_restarting_or_pending_pod_is_not_stuck() {
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("running", &[("job", "running"), ("istio-proxy", "running")]),
        (
            "completed",
            &[("job", "completed"), ("istio-proxy", "completed")],
        ),
        (
            "restarting",
            &[("job", "waiting"), ("istio-proxy", "running")],
        ),
        (
            "no status for the job container",
            &[("istio-proxy", "running")],
        ),
        ("pending", &[]),
    ];
    for (name, states) in cases {
        let pod = stored(classic("j"), "ns", "j-1", states);
        assert_eq!(stuck(&pod), None, "{name}");
    }
    let mut pending = classic("j");
    pending.as_object_mut().unwrap().remove("status");
    assert_eq!(stuck(&pending), None, "no status at all");
}

#[test]
fn a_native_sidecar_never_makes_a_pod_stuck() {
    let pod = job_pod("j", vec![job_container("job")], vec![istio_proxy(true)]);
    let pod = stored(
        pod,
        "ns",
        "j-1",
        &[("job", "completed"), ("istio-proxy", "running")],
    );
    assert_eq!(
        pod["status"]["initContainerStatuses"][0]["name"],
        "istio-proxy"
    );
    assert_eq!(stuck(&pod), None);
}

#[test]
fn airflows_xcom_container_running_after_base_is_no_stuck_sidecar() {
    let pod = |base: &str, proxy: &str| {
        let states = [
            ("base", base),
            ("airflow-xcom-sidecar", "running"),
            ("istio-proxy", proxy),
        ];
        stored(pods::airflow_xcom_pod(), "airflow", "etl-1", &states)
    };
    // KubernetesPodOperator reads the XCom, then stops it: the Pod is on its way.
    assert_eq!(stuck(&pod("completed", "completed")), None);
    assert_eq!(stuck(&pod("running", "running")), None);
    // The proxy still running is stuck, and is the only one named.
    assert_eq!(
        stuck(&pod("completed", "running")),
        Some(vec!["istio-proxy".to_string()])
    );
}

#[test]
fn several_job_containers_are_stuck_only_when_every_one_has_ended() {
    let pod = pods::cases()
        .into_iter()
        .find(|(n, _)| *n == "two-jobs")
        .unwrap()
        .1;
    let one = [
        ("migrate", "completed"),
        ("report", "running"),
        ("istio-proxy", "running"),
    ];
    assert_eq!(stuck(&stored(pod.clone(), "ns", "p", &one)), None);
    let both = [
        ("migrate", "completed"),
        ("report", "failed"),
        ("istio-proxy", "running"),
    ];
    assert_eq!(
        stuck(&stored(pod, "ns", "p", &both)),
        Some(vec!["istio-proxy".into()])
    );
    // No known sidecar: two job containers, one still running, is a Job at work.
    let plain = job_pod("j", vec![job_container("a"), job_container("b")], vec![]);
    let states = [("a", "completed"), ("b", "running")];
    assert_eq!(stuck(&stored(plain, "ns", "p", &states)), None);
}

/// `pod` as stored with its job container ended with `code`, istio-proxy running.
fn ended_with(pod: Value, code: i64) -> Value {
    let mut pod = stored(
        pod,
        "ns",
        "p",
        &[("job", "failed"), ("istio-proxy", "running")],
    );
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = json!(code);
    pod
}

#[test]
fn a_job_container_that_will_run_again_in_place_has_not_ended_for_good() {
    let mut on_failure = classic("j");
    on_failure["spec"]["restartPolicy"] = json!("OnFailure");
    assert_eq!(stuck(&ended_with(on_failure.clone(), 1)), None);
    let sidecar = Some(vec!["istio-proxy".to_string()]);
    assert_eq!(stuck(&ended_with(on_failure, 0)), sidecar);
    let mut rules = classic("j");
    rules["spec"]["containers"][0]["restartPolicy"] = json!("Never");
    rules["spec"]["containers"][0]["restartPolicyRules"] =
        json!([{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]);
    assert_eq!(stuck(&ended_with(rules.clone(), 42)), None);
    assert_eq!(stuck(&ended_with(rules, 3)), sidecar);
}

#[test]
fn a_pod_that_restarts_for_ever_is_left_out_whoever_owns_it() {
    let states = [("job", "completed"), ("istio-proxy", "running")];
    let mut always = stored(classic("j"), "ns", "j-1", &states);
    always["spec"]["restartPolicy"] = json!("Always");
    let mut unset = always.clone();
    unset["spec"]
        .as_object_mut()
        .unwrap()
        .remove("restartPolicy");
    let bare = stored(
        bare_pod("p", vec![job_container("job"), istio_proxy(false)], vec![]),
        "ns",
        "p",
        &states,
    );
    let found = audit(&[always, unset, bare], Route::Wrap);
    assert_eq!(found.pods, 3);
    let pods: Vec<&str> = found.injection.iter().map(|i| i.pod.pod.as_str()).collect();
    assert_eq!(pods, ["p"]);
    assert_eq!(found.stuck.len(), 1);
    assert_eq!(
        (&found.stuck[0].pod.job, &found.stuck[0].pod.owner),
        (&None, &None)
    );
}

#[test]
fn every_sidecar_still_running_is_named_in_the_pods_order() {
    let sidecar = |name| container(name, "sidecar:1", None, &[]);
    let pod = job_pod(
        "j",
        vec![
            sidecar("vault-agent"),
            job_container("job"),
            sidecar("cloud-sql-proxy"),
            istio_proxy(false),
        ],
        vec![],
    );
    let states = [
        ("vault-agent", "running"),
        ("job", "completed"),
        ("cloud-sql-proxy", "completed"),
        ("istio-proxy", "running"),
    ];
    let pod = stored(pod, "ns", "p", &states);
    assert_eq!(
        stuck(&pod),
        Some(vec!["vault-agent".into(), "istio-proxy".into()])
    );
}

/// The webhook's annotation for `pod` opted in through `/mutate`, its images
/// answered by `images`.
fn webhook_line(pod: &Value, images: &Images) -> String {
    let install = crate::tests::install(Mode::EmptyDir);
    let request = review("uid-1", pod)["request"].clone();
    let plan = plan_with(&request, &install, Scope::Label, images);
    plan.report.expect("a Job's Pod has a report").line()
}

#[test]
fn what_the_injection_would_do_is_the_webhooks_own_annotation() {
    for (name, pod) in pods::cases() {
        let request = review("uid-1", &pod)["request"].clone();
        // A registry's answer for each image it would look up.
        let images: Images = crate::inject::wanted(&request, Scope::Label, Route::Wrap)
            .into_iter()
            .map(|(c, _)| {
                (
                    c,
                    Ok(ImageConfig {
                        entrypoint: vec!["/x".into()],
                        cmd: vec![],
                    }),
                )
            })
            .collect();
        let expected = webhook_line(&pod, &images).replace(
            "entrypoint from the registry",
            "needs its image's entrypoint",
        );
        let got = would::would(&stored(pod.clone(), "ns", "p", &[]), Route::Wrap);
        assert_eq!(got, expected, "{name}");
        if name == "no-command" {
            assert!(
                got.contains("uploader (needs its image's entrypoint; added"),
                "{got}"
            );
        }
        // Opted in or not, audited or not: what enabling would do.
        let mut unlabelled = pod.clone();
        unlabelled["metadata"]["labels"]
            .as_object_mut()
            .unwrap()
            .remove("tandem.dev/inject");
        assert_eq!(
            would::would(&unlabelled, Route::Wrap),
            expected,
            "{name}, unlabelled"
        );
        let mut audited = pod.clone();
        audited["metadata"]["labels"]["tandem.dev/inject"] = json!("audit");
        assert_eq!(
            would::would(&audited, Route::Wrap),
            expected,
            "{name}, audit"
        );
    }
}

#[test]
fn a_pod_that_opts_out_would_be_left_alone_and_an_injected_one_is_said_so() {
    let mut pod = classic("j");
    pod["metadata"]["labels"]["tandem.dev/inject"] = json!("disabled");
    assert_eq!(
        would::would(&pod, Route::Wrap),
        "nothing: its label tandem.dev/inject: disabled opts it out"
    );
    let install = Install {
        image: pods::TANDEM_IMAGE.into(),
        mode: Mode::EmptyDir,
        route: Route::Wrap,
    };
    let plan = crate::inject::plan(
        &review("u", &classic("j"))["request"],
        &install,
        Scope::Label,
    );
    let mut injected = classic("j");
    let ops: json_patch::Patch = serde_json::from_value(Value::Array(plan.patch)).unwrap();
    json_patch::patch(&mut injected, &ops).unwrap();
    assert_eq!(
        would::would(&injected, Route::Wrap),
        "wrapped job (by an earlier review)"
    );
}

fn list_of(items: Vec<Value>) -> Vec<u8> {
    json!({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}})
        .to_string()
        .into_bytes()
}

/// A List as `kubectl get pods -A -o json` prints it: Jobs' Pods (stuck,
/// running, completed, a native sidecar's), a Spark driver a SparkApplication
/// owns, stuck, a running bare Pod of Airflow's, and a Deployment's Pod.
fn cluster() -> Vec<Value> {
    let native = job_pod(
        "native",
        vec![job_container("job")],
        vec![istio_proxy(true)],
    );
    let mut web = stored(
        classic("web"),
        "shop",
        "web-5d8f",
        &[("job", "completed"), ("istio-proxy", "running")],
    );
    web["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f", "uid": "u"}]);
    web["spec"]["restartPolicy"] = json!("Always");
    let driver = pods::owned(
        bare_pod(
            "pi-driver",
            vec![job_container("spark-kubernetes-driver"), istio_proxy(false)],
            vec![],
        ),
        "sparkoperator.k8s.io/v1beta2",
        "SparkApplication",
        "pi",
    );
    let states = [
        ("spark-kubernetes-driver", "completed"),
        ("istio-proxy", "running"),
    ];
    let airflow = [("base", "running"), ("istio-proxy", "running")];
    vec![
        stored(driver, "spark", "pi-driver", &states),
        stored(
            pods::airflow_pod(),
            "airflow",
            "etl-load-3f9a2c1b",
            &airflow,
        ),
        stored(
            classic("nightly"),
            "shop",
            "nightly-x7k2p",
            &[("job", "completed"), ("istio-proxy", "running")],
        ),
        stored(
            classic("hourly"),
            "shop",
            "hourly-4bq9s",
            &[("job", "running"), ("istio-proxy", "running")],
        ),
        stored(
            classic("backup"),
            "batch",
            "backup-r2d2c",
            &[("job", "completed"), ("istio-proxy", "completed")],
        ),
        stored(
            native,
            "batch",
            "native-0p1q2",
            &[("job", "completed"), ("istio-proxy", "running")],
        ),
        web,
    ]
}

#[test]
fn the_audit_lists_the_stuck_pods_and_every_pod_in_scope_sorted_by_namespace_and_owner() {
    let pods = list::pods(&list_of(cluster())).unwrap();
    let Audit {
        stuck,
        injection,
        pods,
    } = audit(&pods, Route::Wrap);
    assert_eq!(pods, 7);
    let which = |p: &super::Pod| {
        let owner = p.owner.clone().unwrap_or_default();
        (p.namespace.clone(), p.job.clone(), owner, p.pod.clone())
    };
    let stuck_pods: Vec<_> = stuck.iter().map(|s| which(&s.pod)).collect();
    let job = |name: &str| Some(name.to_string());
    let spark = (
        "spark".to_string(),
        None,
        "SparkApplication/pi".to_string(),
        "pi-driver".to_string(),
    );
    let nightly = (
        "shop".to_string(),
        job("nightly"),
        "Job/nightly".to_string(),
        "nightly-x7k2p".to_string(),
    );
    assert_eq!(stuck_pods, [nightly, spark]);
    assert_eq!(stuck[0].sidecars, ["istio-proxy"]);
    assert_eq!(stuck[1].sidecars, ["istio-proxy"]);
    let order: Vec<(&str, Option<&str>, &str)> = injection
        .iter()
        .map(|i| {
            (
                i.pod.namespace.as_str(),
                i.pod.job.as_deref(),
                i.pod.pod.as_str(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("airflow", None, "etl-load-3f9a2c1b"),
            ("batch", Some("backup"), "backup-r2d2c"),
            ("batch", Some("native"), "native-0p1q2"),
            ("shop", Some("hourly"), "hourly-4bq9s"),
            ("shop", Some("nightly"), "nightly-x7k2p"),
            ("spark", None, "pi-driver"),
        ]
    );
    assert_eq!(injection[0].pod.owner, None);
    assert_eq!(
        injection[0].would,
        "wrapped base (command from the spec; added TANDEM_MESH=istio)"
    );
    assert_eq!(
        injection[4].would,
        "wrapped job (command from the spec; added TANDEM_MESH=istio)"
    );
    assert!(
        injection[2].would.contains("TANDEM_READY_URLS"),
        "{}",
        injection[2].would
    );
}

#[test]
fn the_table_keeps_to_80_columns_and_the_json_to_its_documented_shape() {
    let audit = audit(&list::pods(&list_of(cluster())).unwrap(), Route::Wrap);
    let table = render::table(&audit);
    let expected = "\
Stuck on their sidecars (every job container has ended for good, these run on):
NAMESPACE  OWNER                POD            SIDECARS
shop       Job/nightly          nightly-x7k2p  istio-proxy
spark      SparkApplication/pi  pi-driver      istio-proxy

What the injection would do to a Pod like each (once enabled):
NAMESPACE  OWNER                POD                WOULD
airflow    -                    etl-load-3f9a2c1b
    wrapped base (command from the spec; added TANDEM_MESH=istio)
batch      Job/backup           backup-r2d2c
    wrapped job (command from the spec; added TANDEM_MESH=istio)
batch      Job/native           native-0p1q2
    wrapped job (command from the spec; added
    TANDEM_READY_URLS=http://127.0.0.1:15021/healthz/ready)
";
    // A word too long to sit beside the names puts the column under every row.
    assert!(table.starts_with(expected), "{table}");
    let short = Audit {
        injection: audit.injection[3..5].to_vec(),
        ..Audit::default()
    };
    let expected = "\
NAMESPACE  OWNER        POD            WOULD
shop       Job/hourly   hourly-4bq9s   wrapped job (command from the spec; added
                                       TANDEM_MESH=istio)
shop       Job/nightly  nightly-x7k2p  wrapped job (command from the spec; added
                                       TANDEM_MESH=istio)
";
    assert!(
        render::table(&short).ends_with(expected),
        "{}",
        render::table(&short)
    );
    for line in table.lines() {
        assert!(line.chars().count() <= render::WIDTH, "{line:?}");
    }
    let json: Value = serde_json::from_str(&render::json(&audit)).unwrap();
    assert_eq!(
        json["stuck"],
        json!([
            {"namespace": "shop", "pod": "nightly-x7k2p", "job": "nightly",
             "owner": "Job/nightly", "sidecars": ["istio-proxy"]},
            {"namespace": "spark", "pod": "pi-driver", "job": null,
             "owner": "SparkApplication/pi", "sidecars": ["istio-proxy"]},
        ])
    );
    assert_eq!(json["injection"].as_array().unwrap().len(), 6);
    assert_eq!(json["injection"][0]["job"], Value::Null);
    assert_eq!(json["injection"][0]["owner"], Value::Null);
    assert_eq!(
        json["injection"][4]["would"],
        json!(audit.injection[4].would)
    );
    let text = render::json(&audit);
    assert!(
        text.find("\"stuck\"") < text.find("\"injection\""),
        "{text}"
    );
    assert!(text.contains("{\"namespace\": \"shop\", \"pod\": \"nightly-x7k2p\", \"job\": \"nightly\", \"owner\": \"Job/nightly\", \"sidecars\": [\"istio-proxy\"]}"), "{text}");
}

#[test]
fn long_names_put_the_last_column_under_its_row_and_nothing_to_audit_says_so() {
    let job = "a-cronjob-with-a-name-as-long-as-they-come-28912345";
    let pod = stored(
        classic(job),
        "team-data-platform",
        &format!("{job}-x7k2p"),
        &[],
    );
    let table = render::table(&audit(&[pod], Route::Wrap));
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[4].starts_with("team-data-platform  Job/a-cronjob"),
        "{table}"
    );
    assert_eq!(
        lines[5], "    wrapped job (command from the spec; added TANDEM_MESH=istio)",
        "{table}"
    );
    let empty = audit(&list::pods(&list_of(vec![])).unwrap(), Route::Wrap);
    assert_eq!(
        render::table(&empty),
        "No Pod that runs to completion among the 0 Pods read: nothing to audit.\n"
    );
    assert_eq!(
        render::json(&empty),
        "{\n  \"stuck\": [],\n  \"injection\": []\n}\n"
    );
    let mut forged = classic("j");
    forged["metadata"]["name"] = json!("j-1\n\x1b[31mforged");
    assert!(render::table(&audit(&[forged], Route::Wrap)).contains("j-1\\n\\u{1b}[31mforged"));
}

#[test]
fn only_a_list_of_pods_is_read_and_anything_else_is_one_line_saying_what_it_is() {
    let pod = || stored(classic("j"), "ns", "j-1", &[]);
    assert_eq!(list::pods(&list_of(vec![pod()])).unwrap().len(), 1);
    let mut bare = pod();
    bare.as_object_mut().unwrap().remove("kind");
    let api = json!({"kind": "PodList", "apiVersion": "v1", "items": [bare]}).to_string();
    assert_eq!(
        list::pods(api.as_bytes()).unwrap().len(),
        1,
        "the API server's PodList"
    );
    assert!(
        list::pods(br#"{"kind": "List", "items": null}"#)
            .unwrap()
            .is_empty()
    );
    let cases: &[(Vec<u8>, &str)] = &[
        (pod().to_string().into_bytes(), "a single Pod, not a List"),
        (b"".to_vec(), "not JSON"),
        (b"[]".to_vec(), "not a JSON object"),
        (br#"{"items": []}"#.to_vec(), "no kind"),
        (
            br#"{"kind": "JobList", "items": []}"#.to_vec(),
            "a JobList, not a List",
        ),
        (
            br#"{"kind": "List", "items": {}}"#.to_vec(),
            "its items are not a list",
        ),
        (
            br#"{"kind": "List", "items": [7]}"#.to_vec(),
            "items[0] is not an object",
        ),
        (
            br#"{"kind": "List", "items": [{"kind": "Job"}]}"#.to_vec(),
            "items[0] is a Job, not a Pod",
        ),
        (list_of(vec![pod(), nameless()]), "items[1] has no kind"),
        (
            br#"{"kind": "List\n\u001b[31m", "items": []}"#.to_vec(),
            "a List\\n\\u{1b}[31m, not a List",
        ),
    ];
    for (data, expected) in cases {
        let err = list::pods(data).unwrap_err();
        assert!(err.starts_with(expected), "{err}");
        assert!(
            err.ends_with("expected a List of Pods, as `kubectl get pods -A -o json` prints"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err:?}");
    }
}

fn nameless() -> Value {
    json!({"metadata": {"name": "p"}})
}

fn cli(args: &str) -> Result<Task, String> {
    parse(args.split_whitespace().map(Into::into), |_| None)
}

#[test]
fn the_audit_command_line_takes_a_file_or_stdin_and_an_output_and_nothing_else() {
    let file = |f: &str, output| {
        Ok(Task::Audit(Args {
            input: Some(f.into()),
            output,
            route: Route::Wrap,
        }))
    };
    assert_eq!(cli("audit"), Ok(Task::Audit(Args::default())));
    assert_eq!(cli("audit -"), Ok(Task::Audit(Args::default())));
    assert_eq!(cli("audit pods.json"), file("pods.json", Output::Table));
    assert_eq!(
        cli("audit --output json pods.json"),
        file("pods.json", Output::Json)
    );
    assert_eq!(
        cli("audit pods.json --output json"),
        file("pods.json", Output::Json)
    );
    assert_eq!(
        cli("audit --output=table -"),
        Ok(Task::Audit(Args::default()))
    );
    assert_eq!(cli("audit --help"), Ok(Task::Help));
    let cases = [
        (
            "audit --output yaml",
            "--output \"yaml\": expected table or json",
        ),
        ("audit --output", "--output: missing argument"),
        (
            "audit --all-namespaces",
            "unknown option --all-namespaces (see --help)",
        ),
        ("audit -A", "invalid option '-A' (see --help)"),
        ("audit a.json b.json", "unexpected argument \"b.json\""),
        (
            "--image i audit",
            "--image is not an option of audit, which takes --route and --output",
        ),
        (
            "audit --install emptydir",
            "--install is not an option of audit",
        ),
        ("policy --image i audit", "unexpected argument \"audit\""),
    ];
    for (args, expected) in cases {
        let err = cli(args).unwrap_err();
        assert!(err.starts_with(expected), "{args}: {err}");
    }
    assert!(
        crate::cli::help()
            .contains("tandem-injector audit [FILE|-] [--route ROUTE] [--output table|json]")
    );
}
