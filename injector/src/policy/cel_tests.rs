//! The policies' CEL run by a CEL evaluator (the `cel` crate) on the
//! Pods of the webhook's tests, and compared with what `inject` decides.
//!
//! Kubernetes adds to CEL what the crate lacks; the tests stand in for three parts:
//! - `findAll` (Kubernetes' regex library): every non-overlapping match, left to
//!   right, as Go's `FindAllString(s, -1)`; Rust's `regex` has the same RE2
//!   syntax and leftmost-first semantics for the one pattern used (`"[^"]*"`).
//! - `<list>.indexOf(<value>)` (Kubernetes' list library): the index of the
//!   first element equal to the value, -1 when there is none.
//! - typed object literals (`JSONPatch{…}`, `Object.spec…{…}`): each becomes the
//!   map of its fields, the JSON the API server makes of it. What this does not
//!   check: field names and types against the Pod schema (the API server does).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, LIST_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::extractors::This;
use cel::{Context, Env, ExecutionError, Program, StructType};
use serde_json::{Map, Value, json};

use crate::inject::delivery::{Install, Mode};
use crate::inject::route::Route;
use crate::inject::{Images, Scope, keep};
use crate::layout::TANDEM;
use crate::policy::documents;
use crate::yaml::Node;

use crate::tests::pods::{self, container, istio_proxy, job_container, job_pod, review};
use crate::tests::{apply, install, planned};

/// A typed object literal, evaluated to the map of its fields.
struct Literal(Type);

impl StructType for Literal {
    fn get_type(&self) -> &Type {
        &self.0
    }

    fn new_value<'b, 'v>(
        &self,
        fields: BTreeMap<String, CowVal<'b, 'v>>,
    ) -> Result<Box<dyn Val + 'v>, ExecutionError> {
        let mut map = HashMap::new();
        for (name, value) in fields {
            map.insert(name, cel::Value::try_from(&*value)?);
        }
        Box::<dyn Val>::try_from(cel::Value::from(map))
    }
}

/// Runs `test` on a thread with a large stack: the `cel` crate parses and
/// evaluates by recursion, and a debug build of the policy's JSONPatch
/// expression goes deeper than a test thread's 2 MiB.
pub(super) fn on_a_large_stack(test: impl FnOnce() + Send) {
    std::thread::scope(|s| {
        let run = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn_scoped(s, test)
            .expect("a test thread");
        if let Err(panic) = run.join() {
            std::panic::resume_unwind(panic);
        }
    });
}

/// The mutating policy's parts: match conditions, variables in order, patch.
struct Policy {
    conditions: Vec<String>,
    variables: Vec<(String, String)>,
    patch: String,
}

fn field<'a>(node: &'a Node, key: &str) -> &'a Node {
    match node {
        Node::Map(entries) => entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no {key}")),
        _ => panic!("not a map at {key}"),
    }
}

fn text(node: &Node) -> String {
    match node {
        Node::Str(s) => s.clone(),
        _ => panic!("not a string"),
    }
}

fn list(node: &Node) -> &[Node] {
    match node {
        Node::List(items) => items,
        _ => panic!("not a list"),
    }
}

fn policy(mode: Mode) -> Policy {
    policy_on(&install(mode))
}

/// [`policy`] for `install` (its mode and route).
fn policy_on(install: &Install) -> Policy {
    let docs = documents(install);
    let spec = field(&docs[0], "spec");
    let named = |key| {
        list(field(spec, key))
            .iter()
            .map(|v| (text(field(v, "name")), text(field(v, "expression"))))
            .collect::<Vec<_>>()
    };
    let mutation = &list(field(spec, "mutations"))[0];
    Policy {
        conditions: named("matchConditions")
            .into_iter()
            .map(|(_, e)| e)
            .collect(),
        variables: named("variables"),
        patch: text(field(field(mutation, "jsonPatch"), "expression")),
    }
}

/// The CEL environment: the standard library, the strings and lists
/// extensions (which Kubernetes has too), `indexOf` on lists and every typed
/// object literal of `patch`.
fn environment(patch: &str) -> Arc<Env> {
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings).unwrap();
    // Kubernetes 1.34+ has cel-go's lists library too (sort, flatten, range).
    env.add_extension(cel::extensions::lists).unwrap();
    env.add_member_overload(
        "indexOf",
        "list.indexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )
    .unwrap();
    let literal = regex::Regex::new(r"(JSONPatch|Object(\.[A-Za-z]+)+)\{").unwrap();
    let names: std::collections::BTreeSet<String> = literal
        .captures_iter(patch)
        .map(|m| m[1].to_string())
        .collect();
    for name in names {
        env.add_type(Literal(Type::new_struct(name))).unwrap();
    }
    Arc::new(env)
}

/// Kubernetes' `<string>.findAll(<regex>)`: every non-overlapping match.
fn find_all(
    This(text): This<Arc<String>>,
    pattern: Arc<String>,
) -> Result<cel::Value, ExecutionError> {
    let re =
        regex::Regex::new(&pattern).map_err(|e| ExecutionError::function_error("findAll", e))?;
    let all: Vec<cel::Value> = re.find_iter(&text).map(|m| m.as_str().into()).collect();
    Ok(all.into())
}

/// Kubernetes' `<list>.indexOf(<value>)`.
fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list, wanted] = [&args[0], &args[1]].map(|a| cel::Value::try_from(&**a));
    let (cel::Value::List(list), wanted) = (list?, wanted?) else {
        return Err(ExecutionError::function_error("indexOf", "not a list"));
    };
    let found = list
        .iter()
        .position(|v| *v == wanted)
        .map_or(-1, |i| i as i64);
    Ok(CowVal::Owned(Box::<dyn Val>::try_from(cel::Value::Int(
        found,
    ))?))
}

/// `source`'s value for `object` and `variables` (`namespaceObject` is null).
fn run(env: &Arc<Env>, source: &str, object: &Value, variables: &Map<String, Value>) -> Value {
    thread_local! {
        // Parsing dominates a debug build's run time: each source once a thread.
        static PROGRAMS: RefCell<HashMap<String, Rc<Program>>> = RefCell::default();
    }
    let program = PROGRAMS.with_borrow_mut(|programs| {
        let program = programs.entry(source.to_string()).or_insert_with(|| {
            let compiled = env.compile(source);
            Rc::new(compiled.unwrap_or_else(|e| panic!("{e}\nin {source}")))
        });
        Rc::clone(program)
    });
    let mut context = Context::with_env(env.clone());
    let bind = [
        ("object", object.clone()),
        ("variables", Value::Object(variables.clone())),
        ("namespaceObject", Value::Null),
    ];
    for (name, value) in bind {
        context.add_variable(name, to_cel(&value)).unwrap();
    }
    context.add_function("findAll", find_all).unwrap();
    let value = program
        .execute(&context)
        .unwrap_or_else(|e| panic!("{e:?}\nin {source}"));
    value
        .json()
        .unwrap_or_else(|e| panic!("{e:?}\nin {source}"))
}

/// `value` as the API server gives it to CEL: a whole number is an `int`
/// (`cel::to_value` would make a positive one a `uint`, which CEL does not add
/// to an `int`).
fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Number(n) => match n.as_i64() {
            Some(i) => cel::Value::Int(i),
            None => cel::to_value(value).unwrap(),
        },
        Value::Array(items) => items.iter().map(to_cel).collect::<Vec<_>>().into(),
        Value::Object(fields) => {
            let map: HashMap<String, cel::Value> =
                fields.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            cel::Value::from(map)
        }
        other => cel::to_value(other).unwrap(),
    }
}

/// What the policy makes of `pod`: whether it matches, its variables (computed
/// either way), and the Pod after its patch (the Pod itself when it does not
/// match).
struct Outcome {
    matches: bool,
    variables: Map<String, Value>,
    pod: Value,
}

fn evaluate(mode: Mode, pod: &Value) -> Outcome {
    evaluate_on(&install(mode), pod)
}

/// [`evaluate`] by the policy printed for `install`.
fn evaluate_on(install: &Install, pod: &Value) -> Outcome {
    let policy = policy_on(install);
    let env = environment(&policy.patch);
    let run = |source: &str, variables: &Map<String, Value>| run(&env, source, pod, variables);
    let mut variables = Map::new();
    let matches = policy
        .conditions
        .iter()
        .all(|c| run(c, &variables) == json!(true));
    for (name, expression) in &policy.variables {
        let value = run(expression, &variables);
        variables.insert(name.clone(), value);
    }
    let out = if matches {
        let ops = run(&policy.patch, &variables);
        apply(pod, ops.as_array().unwrap())
    } else {
        pod.clone()
    };
    Outcome {
        matches,
        variables,
        pod: out,
    }
}

/// The webhook's Pod for `pod`.
fn webhook(mode: Mode, pod: &Value) -> Value {
    webhook_on(&install(mode), pod)
}

/// The webhook's Pod for `pod`, given `install` (its mode and route).
fn webhook_on(install: &Install, pod: &Value) -> Value {
    planned(pod, install, Scope::Label, &Images::new()).1
}

fn names(pod: &Value, pick: impl Fn(&Value) -> bool) -> Vec<String> {
    pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| pick(c))
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

fn env_value(c: &Value, name: &str) -> Option<String> {
    c["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .map(|e| e["value"].as_str().unwrap_or("").to_string())
}

/// The Pods of the webhook's tests that it changes without a registry lookup,
/// and each as `mode`'s route left it (a reinvocation).
fn cases(mode: Mode) -> Vec<(String, Value)> {
    let sidecar = |name| container(name, "sidecar:1", None, &[]);
    let mut out: Vec<(String, Value)> = pods::cases()
        .into_iter()
        .map(|(n, p)| (n.to_string(), p))
        .collect();
    for port in ["$(PORT)", "0", "3601"] {
        let mut job = job_container("job");
        job["env"] = json!([{"name": "DAPR_HTTP_PORT", "value": port}]);
        let mut daprd = sidecar("daprd");
        daprd["restartPolicy"] = json!("Always");
        out.push((format!("dapr {port}"), job_pod("j", vec![job], vec![daprd])));
    }
    let mut job = job_container("job");
    job["env"] = json!([{"name": "DAPR_HTTP_PORT", "value": "3600"}]);
    let mut daprd = sidecar("daprd");
    daprd["restartPolicy"] = json!("Always");
    let mixed = vec![
        sidecar("vault-agent"),
        job,
        sidecar("cloud-sql-proxy"),
        istio_proxy(false),
    ];
    out.push((
        "several sidecars".into(),
        job_pod("j", mixed, vec![daprd, sidecar("linkerd-init")]),
    ));
    let mut daprd = sidecar("daprd");
    daprd["restartPolicy"] = json!("Always");
    out.push((
        "unwrapped, native and classic".into(),
        job_pod(
            "j",
            vec![
                job_container("job"),
                container("uploader", pods::JOB_IMAGE, None, &["--to=s3"]),
                istio_proxy(false),
            ],
            vec![daprd],
        ),
    ));
    for var in ["TANDEM_MESH", "TANDEM_READY_URLS"] {
        let mut job = job_container("job");
        job["env"] = json!([{"name": var, "value": "none"}]);
        out.push((
            format!("sets {var}"),
            job_pod("j", vec![job, istio_proxy(false)], vec![]),
        ));
    }
    let mut two = job_pod(
        "j",
        vec![job_container("a"), job_container("b")],
        vec![istio_proxy(true)],
    );
    two["spec"]["containers"][1]["env"] = json!([{"name": "TANDEM_SHARED_DIR", "value": "/s"}]);
    out.push(("two, one sets §9".into(), two));
    let mut annotated = job_pod(
        "j",
        vec![container("job", pods::JOB_IMAGE, None, &["--x"])],
        vec![],
    );
    annotated["metadata"]["annotations"]["tandem.dev/entrypoint.job"] =
        json!(r#"["/app/entry", "serve"]"#);
    out.push(("entrypoint annotation".into(), annotated));
    for (name, pod, _) in pods::restart_cases() {
        out.push((format!("restart: {name}"), pod));
    }
    let runs = container("job", "x", Some(&["/tandem", "--", "/job"]), &[]);
    out.push(("runs tandem".into(), job_pod("j", vec![runs], vec![])));
    let mut clash = job_pod("j", vec![job_container("job")], vec![]);
    clash["spec"]["volumes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": crate::layout::SHARED_VOLUME, "emptyDir": {}}));
    out.push(("volume clash".into(), clash));
    // Reinvocations: each Pod as the webhook left it, and once more after
    // Istio's injector added its proxy (or, once, without the restart
    // statuses, as an injector before them would have left it).
    let first: Vec<(String, Value)> = out.clone();
    for (name, pod) in first {
        let once = webhook(mode, &pod);
        if name == "restart: on-failure" {
            let mut without = once.clone();
            let env = without["spec"]["containers"][0]["env"]
                .as_array_mut()
                .unwrap();
            env.retain(|e| e["name"] != "TANDEM_KEEP_ON_EXIT");
            out.push((format!("{name}, reinvoked without the statuses"), without));
        }
        let mut with_istio = once.clone();
        out.push((format!("{name}, reinvoked"), once));
        if names(&with_istio, |c| c["name"] == "istio-proxy").is_empty() {
            with_istio["spec"]["containers"]
                .as_array_mut()
                .unwrap()
                .push(istio_proxy(false));
            out.push((format!("{name}, reinvoked after istio"), with_istio));
        }
    }
    out
}

#[test]
fn every_expression_of_the_policy_compiles() {
    on_a_large_stack(|| {
        for mode in [Mode::EmptyDir, Mode::ImageVolume] {
            let policy = policy(mode);
            let env = environment(&policy.patch);
            let all = policy
                .conditions
                .iter()
                .chain(policy.variables.iter().map(|(_, e)| e))
                .chain([&policy.patch]);
            for source in all {
                if let Err(e) = env.compile(source) {
                    panic!("{e}\nin {source}");
                }
            }
        }
    })
}

#[test]
fn the_policys_variables_name_the_containers_the_webhook_wraps_and_its_variables() {
    on_a_large_stack(|| {
        for mode in [Mode::EmptyDir, Mode::ImageVolume] {
            for (name, pod) in cases(mode) {
                let webhook = webhook(mode, &pod);
                let v = evaluate(mode, &pod).variables;
                let before = pod["spec"]["containers"].as_array().unwrap();
                let was_injected = webhook["spec"]["volumes"] == pod["spec"]["volumes"]
                    && webhook["spec"]["initContainers"] == pod["spec"]["initContainers"]
                    && before.iter().any(|c| c["command"][0] == TANDEM);
                assert_eq!(v["injected"], json!(was_injected), "{mode:?} {name}");
                // Wrapped: the command changed now, or it runs the tandem we installed.
                let wrapped = names(&webhook, |c| {
                    let old = before.iter().find(|o| o["name"] == c["name"]).unwrap();
                    c["command"] != old["command"] || (was_injected && c["command"][0] == TANDEM)
                });
                let records = v["wrap"].as_array().unwrap();
                let named: Vec<&Value> = records.iter().map(|j| &j["c"]["name"]).collect();
                assert_eq!(json!(named), json!(wrapped), "{mode:?} {name}");
                assert_eq!(v["several"], json!(wrapped.len() > 1), "{mode:?} {name}");
                for j in records {
                    wrapped_as_the_webhook_did(&format!("{mode:?} {name}"), j, &v, &pod, &webhook);
                }
            }
        }
    })
}

/// The webhook's change to the container of record `j` (of `variables.wrap`) is
/// what the record and the variables say.
fn wrapped_as_the_webhook_did(
    name: &str,
    j: &Value,
    v: &Map<String, Value>,
    pod: &Value,
    webhook: &Value,
) {
    let i = pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["name"] == j["c"]["name"])
        .unwrap();
    assert_eq!(j["at"], json!(format!("/spec/containers/{i}/")), "{name}");
    let (old, c) = (
        &pod["spec"]["containers"][i],
        &webhook["spec"]["containers"][i],
    );
    if v["injected"] == json!(false) {
        let mut command = vec![json!(TANDEM), json!("--")];
        command.extend(j["cmd"].as_array().unwrap().iter().cloned());
        assert_eq!(c["command"], json!(command), "{name}");
    }
    let added = |var| env_value(c, var).filter(|_| env_value(old, var).is_none());
    let free = j["meshFree"] == json!(true);
    let mesh = v["mesh"].as_str().unwrap();
    let want_mesh = (free && !mesh.is_empty()).then(|| mesh.to_string());
    assert_eq!(added("TANDEM_MESH"), want_mesh, "{name}: {}", c["name"]);
    let waits = !v["waited"].as_array().unwrap().is_empty();
    let ready = added("TANDEM_READY_URLS");
    assert_eq!(ready.is_some(), free && waits, "{name}: {}", c["name"]);
    let several = v["several"] == json!(true) && j["severalFree"] == json!(true);
    let job_containers = added("TANDEM_JOB_CONTAINERS");
    assert_eq!(job_containers.is_some(), several, "{name}: {}", c["name"]);
    if let Some(list) = job_containers {
        assert_eq!(json!(list), v["names"], "{name}");
    }
    // The statuses, written as the webhook writes them, whatever it adds.
    let statuses = keep::statuses(&pod["spec"]["restartPolicy"], old).to_string();
    assert_eq!(j["keep"], json!(statuses), "{name}: {}", c["name"]);
    let keep_free = j["keepFree"] == json!(true);
    let want_keep = (keep_free && !statuses.is_empty()).then_some(statuses);
    assert_eq!(
        added("TANDEM_KEEP_ON_EXIT"),
        want_keep,
        "{name}: {}",
        c["name"]
    );
}

#[test]
fn the_match_conditions_turn_away_every_pod_the_patch_leaves_as_it_is() {
    on_a_large_stack(|| {
        let mut turned_away = 0;
        for mode in [Mode::EmptyDir, Mode::ImageVolume] {
            for (name, pod) in cases(mode) {
                let policy = evaluate(mode, &pod);
                if !policy.matches {
                    turned_away += 1;
                    continue;
                }
                // Matched: the patch changes the Pod, but for a changed Pod whose
                // wrapped container waits on nothing while a known sidecar is there
                // (the condition's one approximation).
                let unchanged = policy.pod == pod;
                let waits_on_nothing = policy.variables["injected"] == json!(true)
                    && policy.variables["waited"] == json!([])
                    && policy.variables["mesh"] == json!("");
                assert!(
                    !unchanged || waits_on_nothing,
                    "{mode:?} {name}: matched, no change"
                );
                // The policy's own second call: turned away as well.
                let again = evaluate(mode, &policy.pod);
                assert!(
                    !again.matches || waits_on_nothing,
                    "{mode:?} {name}: called again"
                );
            }
        }
        assert!(turned_away > 10, "only {turned_away} turned away");
    })
}

#[test]
fn the_policys_patch_gives_the_webhooks_pod_spec_for_every_case() {
    on_a_large_stack(|| {
        for mode in [Mode::EmptyDir, Mode::ImageVolume] {
            for (name, pod) in cases(mode) {
                let webhook = webhook(mode, &pod);
                let policy = evaluate(mode, &pod);
                assert_eq!(
                    policy.pod["spec"],
                    webhook["spec"],
                    "{mode:?} {name}:\npolicy's:\n{}\nwebhook's:\n{}",
                    serde_json::to_string_pretty(&policy.pod["spec"]).unwrap(),
                    serde_json::to_string_pretty(&webhook["spec"]).unwrap()
                );
            }
        }
    })
}

#[test]
fn the_match_conditions_leave_out_a_pod_that_restarts_for_ever_or_with_too_many_containers() {
    on_a_large_stack(|| {
        let job = job_pod("j", vec![job_container("job")], vec![]);
        let bare = pods::bare_pod("p", vec![job_container("job")], vec![]);
        let replica = pods::owned(bare.clone(), "apps/v1", "ReplicaSet", "web-5d8f");
        for pod in [&job, &bare, &replica] {
            for policy in [json!("Never"), json!("OnFailure")] {
                let mut pod = pod.clone();
                pod["spec"]["restartPolicy"] = policy;
                assert!(
                    evaluate(Mode::EmptyDir, &pod).matches,
                    "{}",
                    pod["metadata"]
                );
            }
            for policy in [json!("Always"), Value::Null] {
                let mut pod = pod.clone();
                pod["spec"]["restartPolicy"] = policy;
                assert!(
                    !evaluate(Mode::EmptyDir, &pod).matches,
                    "{}",
                    pod["metadata"]
                );
                assert_eq!(webhook(Mode::EmptyDir, &pod), pod);
            }
        }
        let many: Vec<Value> = (0..=super::MAX_CONTAINERS)
            .map(|i| job_container(&format!("c{i}")))
            .collect();
        assert!(!evaluate(Mode::EmptyDir, &job_pod("j", many, vec![])).matches);
    })
}

/// The warning policy on a Job whose template is `pod`'s: its `missing`
/// variable and whether it lets the Job through without a warning.
fn warning(pod: &Value) -> (Value, bool) {
    let template = json!({"metadata": pod["metadata"], "spec": pod["spec"]});
    let (variables, passes) = warning_on(&template);
    assert_eq!(variables["optedIn"], json!(true));
    (variables["missing"].clone(), passes)
}

/// The warning policy's variables on a Job with this Pod `template`, and
/// whether its validation lets the Job through.
fn warning_on(template: &Value) -> (Map<String, Value>, bool) {
    let docs = documents(&install(Mode::EmptyDir));
    let spec = field(&docs[3], "spec");
    let env = environment("");
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"template": template},
    });
    let mut variables = Map::new();
    for v in list(field(spec, "variables")) {
        let value = run(&env, &text(field(v, "expression")), &job, &variables);
        variables.insert(text(field(v, "name")), value);
    }
    let validation = &list(field(spec, "validations"))[0];
    let passes = run(
        &env,
        &text(field(validation, "expression")),
        &job,
        &variables,
    );
    (variables, passes == json!(true))
}

#[test]
fn the_warning_policy_names_the_containers_the_webhook_would_look_up() {
    on_a_large_stack(|| {
        for (name, pod) in cases(Mode::EmptyDir) {
            if name.contains("reinvoked") {
                continue; // a Job's template is never an injected Pod
            }
            let request = review("uid-1", &pod)["request"].clone();
            let wanted: Vec<String> = crate::inject::wanted(&request, Scope::Label, Route::Wrap)
                .into_iter()
                .map(|(container, _)| container)
                .collect();
            let (missing, passes) = warning(&pod);
            assert_eq!(missing, json!(wanted), "{name}");
            assert_eq!(passes, wanted.is_empty(), "{name}");
        }
    })
}

#[path = "native_tests.rs"]
mod native;

#[path = "audit_tests.rs"]
mod audit;
