//! SPEC §10: which Pods change and how. A pure function from the review's
//! `request` to a JSONPatch, a `Report` of what it did (the annotation
//! `tandem.dev/injection`, warnings and the log line come from it); it reads
//! the Pod as JSON and never fails: what it cannot read leaves the Pod
//! unchanged, and the report says why.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

pub use crate::entrypoint::Images;
use crate::entrypoint::{self, Wrapped};
use crate::install::{self, Install};
use crate::report::{Fate, Found, Report, Skip};
use crate::sidecars::{self, Sidecar};

/// The opt-in label, on the Pod (its Job's template) or its namespace.
pub const LABEL: &str = "tandem.dev/inject";
/// The label's value that opts in.
pub const ENABLED: &str = "enabled";
/// The init container that installs tandem; it (or the image volume) marks a changed Pod.
pub const INSTALL_CONTAINER: &str = "tandem-install";
/// The volume that carries the binary: an `emptyDir` the init container
/// fills, or the tandem image itself (`--install image-volume`).
pub const BIN_VOLUME: &str = "tandem-bin";
/// The `emptyDir` where several job containers record who has finished (§9).
pub const SHARED_VOLUME: &str = "tandem-shared";
/// Where the job containers see the binary's volume.
pub const BIN_DIR: &str = "/tandem";
/// The binary in the job containers: the head of every changed command.
pub const TANDEM: &str = "/tandem/tandem";
/// Where the job containers see the shared volume.
pub const SHARED_DIR: &str = "/tandem-shared";
/// Where the init container sees the binary's volume: not `/tandem`, which is
/// the binary itself in the tandem image.
pub const INSTALL_DIR: &str = "/opt/tandem";
/// Where the ServiceAccount admission plugin mounts the API token: a mount
/// there in the init container keeps the plugin from adding one after this
/// webhook (which would call it again) and gives it no token it never uses.
pub const TOKEN_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The user the init container runs as (distroless' `nonroot`), so it passes
/// `runAsNonRoot` and Pod Security "restricted" with the root-owned tandem image.
pub const INSTALL_UID: u32 = 65532;

/// Which route the review came through: it says who opted the Pod in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `/mutate`: the Pod must carry `tandem.dev/inject: enabled` itself.
    Label,
    /// `/mutate/namespace`: the namespace is labelled; the Pod is injected unless
    /// its own label says otherwise (`tandem.dev/inject: disabled`).
    Namespace,
}

/// What the injector answers for one Pod.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// JSONPatch operations (RFC 6902); empty leaves the Pod as it is.
    pub patch: Vec<Value>,
    /// Admission warnings (`kubectl` shows them for a Pod it creates; the Job
    /// controller discards them).
    pub warnings: Vec<String>,
    /// What happened, for the injector's log.
    pub summary: String,
    /// What it did to a Job's Pod; `None` for any other object.
    pub report: Option<Report>,
}

impl Plan {
    fn unchanged(summary: impl Into<String>) -> Plan {
        Plan {
            summary: summary.into(),
            ..Plan::default()
        }
    }
}

/// The plan for one admission `request` (SPEC §10): the Pod is changed only when
/// it is a Pod CREATE, opted in (per `scope`) and owned by a Job; `install` is
/// the tandem image and how its binary reaches the job containers.
pub fn plan(request: &Value, install: &Install, scope: Scope) -> Plan {
    plan_with(request, install, scope, &Images::new())
}

/// [`plan`], with what `images` says of the job containers without `command`.
pub fn plan_with(request: &Value, install: &Install, scope: Scope, images: &Images) -> Plan {
    let (pod, name) = match select(request, scope) {
        Ok(found) => found,
        Err(why) => return Plan::unchanged(why),
    };
    let (mut patch, report) =
        change(pod, install, images).unwrap_or_else(|p| (Vec::new(), Report::problem(p)));
    patch.extend(report.annotate(&pod["metadata"]));
    Plan {
        patch,
        warnings: report.warnings(),
        summary: format!("{name}: {}", report.line()),
        report: Some(report),
    }
}

/// The job containers without `command` (and no entrypoint annotation) of the
/// Pod `request` would change, with their images: what must be looked up in
/// a registry before [`plan_with`]. Empty for every other request.
pub fn wanted(request: &Value, scope: Scope) -> Vec<(String, String)> {
    let Ok((pod, _)) = select(request, scope) else {
        return Vec::new();
    };
    let Some(spec) = pod["spec"].as_object() else {
        return Vec::new();
    };
    let (Ok(main), Ok(init)) = (
        containers(spec, "containers"),
        containers(spec, "initContainers"),
    ) else {
        return Vec::new();
    };
    // An injected Pod (a reinvocation) wraps nothing new.
    if injected(spec, &init) {
        return Vec::new();
    }
    main.iter()
        .filter(|c| sidecars::by_container(c.name).is_none())
        .filter(|c| c.command.as_ref().is_none_or(Vec::is_empty))
        .filter(|c| entrypoint::annotated(pod, c.name).is_none())
        .filter_map(|c| Some((c.name.to_string(), c.image?.to_string())))
        .collect()
}

/// The Pod of an opted-in Job's CREATE, and a name for the log; else why not.
fn select(request: &Value, scope: Scope) -> Result<(&Value, String), String> {
    let kind = &request["kind"];
    if kind["group"] != "" || kind["version"] != "v1" || kind["kind"] != "Pod" {
        return Err(format!("not a Pod ({kind}): allowed unchanged"));
    }
    if request["operation"] != "CREATE" || !request["subResource"].is_null() {
        return Err("not a Pod CREATE: allowed unchanged".into());
    }
    let pod = &request["object"];
    let meta = &pod["metadata"];
    let namespace = request["namespace"].as_str().unwrap_or("?");
    let name = match (meta["name"].as_str(), meta["generateName"].as_str()) {
        (Some(name), _) if !name.is_empty() => format!("pod {namespace}/{name}"),
        (_, Some(prefix)) => format!("pod {namespace}/{prefix}*"),
        _ => format!("pod {namespace}/?"),
    };
    let label = meta["labels"][LABEL].as_str();
    let opted_in = match scope {
        Scope::Label => label == Some(ENABLED),
        Scope::Namespace => label.is_none_or(|v| v == ENABLED),
    };
    if !opted_in {
        return Err(format!("{name}: not opted in ({LABEL}: {label:?})"));
    }
    let job = meta["ownerReferences"].as_array().and_then(|owners| {
        owners.iter().find(|o| {
            o["kind"] == "Job"
                && o["apiVersion"]
                    .as_str()
                    .is_some_and(|v| v.starts_with("batch/"))
        })
    });
    match job {
        Some(job) => Ok((
            pod,
            format!("{name} (Job {})", job["name"].as_str().unwrap_or("?")),
        )),
        None => Err(format!("{name}: not owned by a Job: allowed unchanged")),
    }
}

/// One container of the Pod as far as the injector reads it.
struct Container<'a> {
    index: usize,
    name: &'a str,
    command: Option<Vec<&'a str>>,
    /// `args`; empty when unset (as Kubernetes reads them).
    args: Vec<String>,
    /// `image`, when it is a string.
    image: Option<&'a str>,
    /// `env`, when the field is there.
    env: Option<&'a [Value]>,
    has_mounts: bool,
    /// A native sidecar: an init container with `restartPolicy: Always`.
    always: bool,
}

impl Container<'_> {
    fn sets(&self, variable: &str) -> bool {
        self.env
            .is_some_and(|env| env.iter().any(|e| e["name"] == variable))
    }

    /// A literal `value` the container gives `variable` (not `valueFrom`).
    fn value(&self, variable: &str) -> Option<String> {
        let env = self.env?;
        let entry = env.iter().find(|e| e["name"] == variable)?;
        entry["value"].as_str().map(str::to_string)
    }

    fn runs_tandem(&self) -> bool {
        self.command
            .as_ref()
            .is_some_and(|c| c.first() == Some(&TANDEM))
    }
}

/// Reads `spec.FIELD` as a list of containers; a field that is missing or null is
/// an empty list, anything else not shaped like containers is an error.
fn containers<'a>(spec: &'a Map<String, Value>, field: &str) -> Result<Vec<Container<'a>>, String> {
    let list = match spec.get(field) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(format!("spec.{field} is not a list")),
    };
    let mut found = Vec::with_capacity(list.len());
    for (index, c) in list.iter().enumerate() {
        let at = || format!("spec.{field}[{index}]");
        let name = c["name"]
            .as_str()
            .ok_or_else(|| format!("{} has no name", at()))?;
        let command = match &c["command"] {
            Value::Null => None,
            Value::Array(words) => Some(
                words
                    .iter()
                    .map(Value::as_str)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| format!("{}.command is not a list of strings", at()))?,
            ),
            _ => return Err(format!("{}.command is not a list", at())),
        };
        let args = match &c["args"] {
            Value::Null => Vec::new(),
            Value::Array(words) => words
                .iter()
                .map(|w| w.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| format!("{}.args is not a list of strings", at()))?,
            _ => return Err(format!("{}.args is not a list", at())),
        };
        let env = match &c["env"] {
            Value::Null => None,
            Value::Array(env) if env.iter().all(|e| e["name"].is_string()) => Some(env.as_slice()),
            _ => return Err(format!("{}.env is not a list of named variables", at())),
        };
        let has_mounts = match &c["volumeMounts"] {
            Value::Null => false,
            Value::Array(_) => true,
            _ => return Err(format!("{}.volumeMounts is not a list", at())),
        };
        found.push(Container {
            index,
            name,
            command,
            args,
            image: c["image"].as_str(),
            env,
            has_mounts,
            always: c["restartPolicy"] == "Always",
        });
    }
    Ok(found)
}

/// Whether the Pod was changed by an earlier review: its install init
/// container, or the image volume.
fn injected(spec: &Map<String, Value>, init: &[Container]) -> bool {
    init.iter().any(|c| c.name == INSTALL_CONTAINER)
        || spec
            .get("volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(install::is_bin_image_volume)
}

/// The change for an opted-in Job's Pod and its report, or the problem that
/// prevents it.
fn change(pod: &Value, install: &Install, images: &Images) -> Result<(Vec<Value>, Report), String> {
    let spec = pod["spec"].as_object().ok_or("the Pod has no spec")?;
    let main = containers(spec, "containers")?;
    let init = containers(spec, "initContainers")?;
    let volumes = match spec.get("volumes") {
        None | Some(Value::Null) => None,
        Some(Value::Array(v)) => Some(v),
        Some(_) => return Err("spec.volumes is not a list".into()),
    };
    let injected = injected(spec, &init);
    if !injected {
        let taken = volumes
            .into_iter()
            .flatten()
            .find(|v| v["name"] == BIN_VOLUME || v["name"] == SHARED_VOLUME);
        if let Some(v) = taken {
            return Err(format!("it already has a volume named {}", v["name"]));
        }
    }

    // Classic sidecars are quit by tandem (their preset); native ones only waited
    // for (their readiness URL): kubelet stops them after the job containers.
    let classic: Vec<&Sidecar> = known(&main, |_| true);
    let native: Vec<&Sidecar> = known(&init, |c| c.always);

    let mut report = Report {
        earlier: injected,
        ..Report::default()
    };
    let mut wrapped = Vec::new();
    // The containers without `command` that are wrapped, by index: their new
    // command and args.
    let mut found: HashMap<usize, Wrapped> = HashMap::new();
    for c in main
        .iter()
        .filter(|c| sidecars::by_container(c.name).is_none())
    {
        let fate = match c.command.as_deref() {
            // A reinvocation: the containers it wrapped the first time.
            _ if injected && c.runs_tandem() => Fate::Wrapped(Found::Earlier, String::new()),
            None | Some([]) if !injected => {
                match entrypoint::without_command(pod, c.name, c.image, &c.args, images) {
                    Ok((how, from)) => {
                        found.insert(c.index, how);
                        Fate::Wrapped(from, String::new())
                    }
                    Err(skip) => Fate::Skipped(skip),
                }
            }
            None | Some([]) => Fate::Skipped(Skip::NoCommand),
            Some([first, ..]) if first.rsplit('/').next() == Some("tandem") => {
                Fate::Skipped(Skip::OwnTandem)
            }
            Some(_) if injected => Fate::Skipped(Skip::AddedLater),
            Some(_) => Fate::Wrapped(Found::Spec, String::new()),
        };
        if matches!(fate, Fate::Wrapped(..)) {
            wrapped.push(c);
        }
        report.containers.push((c.name.to_string(), fate));
    }
    // A job container without tandem may still run when the others end: they
    // wait for the sidecars but never quit them (kubelet's rule for native ones).
    let unwrapped = report
        .containers
        .iter()
        .any(|(_, f)| matches!(f, Fate::Skipped(s) if s.runs_without_tandem()));
    let (classic, native) = if unwrapped {
        // Unless a wrapped one quits them by its own (or an earlier) TANDEM_MESH.
        if !wrapped.iter().any(|c| c.sets("TANDEM_MESH")) {
            report.not_quit = classic
                .iter()
                .filter_map(|s| s.container.map(str::to_string))
                .collect();
        }
        (Vec::new(), [classic, native].concat())
    } else {
        (classic, native)
    };
    if wrapped.is_empty() {
        return Ok((Vec::new(), report));
    }

    let several = wrapped.len() > 1;
    let mut patch = Vec::new();
    if !injected {
        let mut new_volumes = vec![install.volume()];
        if several {
            new_volumes.push(json!({"name": SHARED_VOLUME, "emptyDir": {"sizeLimit": "1Mi"}}));
        }
        append(&mut patch, "/spec/volumes", volumes.is_some(), new_volumes);
        if let Some(container) = install.init_container() {
            let has_init = !matches!(spec.get("initContainers"), None | Some(Value::Null));
            append(
                &mut patch,
                "/spec/initContainers",
                has_init,
                vec![container],
            );
        }
        for c in &wrapped {
            let at = format!("/spec/containers/{}", c.index);
            match found.get(&c.index) {
                // `add`: the container has no `command` to replace.
                Some(how) => {
                    patch.push(
                        json!({"op": "add", "path": format!("{at}/command"), "value": how.command}),
                    );
                    if let Some(args) = &how.args {
                        patch.push(
                            json!({"op": "add", "path": format!("{at}/args"), "value": args}),
                        );
                    }
                }
                None => {
                    let command: Vec<&str> = [TANDEM, "--"]
                        .into_iter()
                        .chain(c.command.iter().flatten().copied())
                        .collect();
                    patch.push(
                        json!({"op": "replace", "path": format!("{at}/command"), "value": command}),
                    );
                }
            }
            let mut mounts =
                vec![json!({"name": BIN_VOLUME, "mountPath": BIN_DIR, "readOnly": true})];
            if several {
                mounts.push(json!({"name": SHARED_VOLUME, "mountPath": SHARED_DIR}));
            }
            append(
                &mut patch,
                &format!("{at}/volumeMounts"),
                c.has_mounts,
                mounts,
            );
        }
    }

    let names: Vec<&str> = wrapped.iter().map(|c| c.name).collect();
    for c in &wrapped {
        let vars = variables(c, &classic, &native, several.then_some(&names[..]));
        if !vars.is_empty() {
            if let Some((_, Fate::Wrapped(_, told))) =
                report.containers.iter_mut().find(|(n, _)| n == c.name)
            {
                *told = describe(&vars);
            }
            let at = format!("/spec/containers/{}/env", c.index);
            append(&mut patch, &at, c.env.is_some(), vars);
        }
    }
    Ok((patch, report))
}

/// The known sidecars among `list` that pass `keep`, in `SIDECARS` order.
fn known(list: &[Container], keep: impl Fn(&Container) -> bool) -> Vec<&'static Sidecar> {
    sidecars::injected()
        .filter(|(container, _)| list.iter().any(|c| c.name == *container && keep(c)))
        .map(|(_, s)| s)
        .collect()
}

/// The readiness URL of sidecar `s` for job container `c`: on the port `c` gives
/// the sidecar's port variable, when that is a literal port number (anything
/// else keeps the default port); `None` when there is nothing to wait for.
fn ready_url(s: &Sidecar, c: &Container) -> Option<String> {
    let port = s
        .port_var
        .and_then(|var| c.value(var))
        .and_then(|p| p.parse::<u16>().ok())
        .filter(|&p| p > 0);
    s.ready_on(port)
}

/// The variables tandem needs in job container `c` that it does not set itself:
/// the mesh (`TANDEM_MESH` for classic sidecars, `TANDEM_READY_URLS` for native
/// ones, neither when the container sets either), and §9's three when there are
/// several job containers (none when it sets any of them).
fn variables(
    c: &Container,
    classic: &[&Sidecar],
    native: &[&Sidecar],
    jobs: Option<&[&str]>,
) -> Vec<Value> {
    let mut vars = Vec::new();
    let var = |name: &str, value: String| json!({"name": name, "value": value});
    if !c.sets("TANDEM_MESH") && !c.sets("TANDEM_READY_URLS") {
        let mesh: Vec<&str> = classic.iter().map(|s| s.preset).collect();
        if !mesh.is_empty() {
            vars.push(var("TANDEM_MESH", mesh.join(",")));
        }
        let ready: Vec<String> = native.iter().filter_map(|s| ready_url(s, c)).collect();
        if !ready.is_empty() {
            vars.push(var("TANDEM_READY_URLS", ready.join(",")));
        }
    }
    const SEVERAL: [&str; 3] = [
        "TANDEM_JOB_CONTAINERS",
        "TANDEM_CONTAINER_NAME",
        "TANDEM_SHARED_DIR",
    ];
    if let Some(jobs) = jobs
        && !SEVERAL.iter().any(|v| c.sets(v))
    {
        vars.push(var(SEVERAL[0], jobs.join(",")));
        vars.push(var(SEVERAL[1], c.name.to_string()));
        vars.push(var(SEVERAL[2], SHARED_DIR.to_string()));
    }
    vars
}

/// `NAME=value, …` of the variables, for the log.
fn describe(vars: &[Value]) -> String {
    let each: Vec<String> = vars
        .iter()
        .map(|v| {
            format!(
                "{}={}",
                v["name"].as_str().unwrap_or(""),
                v["value"].as_str().unwrap_or("")
            )
        })
        .collect();
    each.join(" ")
}

/// Operations that add `items` to the list at `path`: the whole list when the
/// field is not there, else one append each.
fn append(patch: &mut Vec<Value>, path: &str, exists: bool, items: Vec<Value>) {
    if exists {
        for item in items {
            patch.push(json!({"op": "add", "path": format!("{path}/-"), "value": item}));
        }
    } else {
        patch.push(json!({"op": "add", "path": path, "value": items}));
    }
}

#[cfg(test)]
#[path = "inject_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "inject_entrypoint_tests.rs"]
mod entrypoint_tests;
