//! The native route (SPEC §12) as one planner step: which sidecars move from
//! `containers` to native sidecars at the end of `initContainers`, in what
//! order, which already-native ones get tandem's wait, and where tandem's
//! install container goes; then the JSONPatch of it, written with `patch`'s
//! list operations. The job containers are never touched.

use serde_json::{Map, Value, json};

use super::delivery::{self, Install};
use super::ops::append;
use super::pod::Container;
use crate::layout::{BIN_VOLUME, INSTALL_CONTAINER, TANDEM};
use crate::sidecars::{self, Sidecar};

/// How a sidecar on the native route learns it may let the job start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// tandem's `postStart` hook waits for its readiness endpoint.
    Tandem,
    /// Its own `postStart` hook, kept (Istio's `holdApplicationUntilProxyStarts`).
    Own,
    /// Its row has no readiness endpoint (Vault Agent): started, not waited for.
    Nothing,
}

/// What the native route does to one Pod, in the order it is said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Moves {
    /// The classic sidecars moved to native sidecars, in their new order, each
    /// with how it is waited for.
    pub moved: Vec<(String, Wait)>,
    /// The sidecars already native, without a startup probe or a `postStart`
    /// hook, that get tandem's wait.
    pub waited: Vec<String>,
}

impl Moves {
    /// Whether the Pod changes.
    pub fn any(&self) -> bool {
        !self.moved.is_empty() || !self.waited.is_empty()
    }
}

/// One classic sidecar to move: its index in `containers`, its name, its row
/// and how it will be waited for.
struct Move<'a> {
    from: usize,
    name: &'a str,
    sidecar: &'static Sidecar,
    wait: Wait,
}

/// The native route's plan for the Pod whose `spec` this is, with its
/// containers `main` and `init` read: the moves, and the operations that make
/// them. An error when the binary's volume would clash with one of the Pod's.
pub(super) fn plan(
    spec: &Map<String, Value>,
    main: &[Container],
    init: &[Container],
    install: &Install,
) -> Result<(Moves, Vec<Value>), String> {
    let moved = moving(spec, main);
    let waited = waited(spec, init);
    let needs_tandem = !waited.is_empty() || moved.iter().any(|m| m.wait == Wait::Tandem);
    let installing = needs_tandem && !super::pod::changed_earlier(spec, init);
    let volumes = super::pod::volumes(spec)?;
    let clash = volumes
        .into_iter()
        .flatten()
        .find(|v| v["name"] == BIN_VOLUME);
    if let Some(v) = clash.filter(|_| installing) {
        return Err(format!("it already has a volume named {}", v["name"]));
    }

    let patch = operations(
        spec,
        &moved,
        &waited,
        installing.then_some(install),
        volumes,
    );
    let moves = Moves {
        moved: moved.iter().map(|m| (m.name.to_string(), m.wait)).collect(),
        waited: waited
            .iter()
            .map(|(i, _)| {
                spec["initContainers"][*i]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect(),
    };
    Ok((moves, patch))
}

/// The JSONPatch of a plan: the already-native sidecars' wait (at the indices
/// they have before anything is inserted ahead of them), the binary's volume
/// and install container when `install` is given, the moved sidecars appended,
/// then removed from `containers` (`volumes`: the Pod's list, when it has one).
fn operations(
    spec: &Map<String, Value>,
    moved: &[Move],
    waited: &[(usize, &Sidecar)],
    install: Option<&Install>,
    volumes: Option<&Vec<Value>>,
) -> Vec<Value> {
    let mut patch = Vec::new();
    for (i, s) in waited {
        let at = format!("/spec/initContainers/{i}");
        give_wait(&mut patch, &at, &spec["initContainers"][*i], s);
    }
    let mut added = Vec::new();
    if let Some(install) = install {
        let volume = vec![install.volume()];
        append(&mut patch, "/spec/volumes", volumes.is_some(), volume);
        if let Some(container) = install.init_container() {
            // Before the first init container that runs tandem's hook.
            match waited.first() {
                Some((i, _)) => patch.push(json!({"op": "add",
                    "path": format!("/spec/initContainers/{i}"), "value": container})),
                None => added.push(container),
            }
        }
    }
    let sidecars = moved
        .iter()
        .map(|m| native(&spec["containers"][m.from], m.wait, m.sidecar));
    added.extend(sidecars);
    if !added.is_empty() {
        let has_init = spec.get("initContainers").is_some_and(Value::is_array);
        append(&mut patch, "/spec/initContainers", has_init, added);
    }
    // The last first, so no index shifts under the next removal.
    let mut from: Vec<usize> = moved.iter().map(|m| m.from).collect();
    from.sort_unstable_by(|a, b| b.cmp(a));
    for i in from {
        patch.push(json!({"op": "remove", "path": format!("/spec/containers/{i}")}));
    }
    patch
}

/// The classic sidecars of `main` the table knows, in the order they will
/// run: a mesh proxy first (the others' traffic goes through it), then the
/// Pod's order.
fn moving<'a>(spec: &Map<String, Value>, main: &[Container<'a>]) -> Vec<Move<'a>> {
    let mut moving: Vec<Move> = main
        .iter()
        .filter_map(|c| {
            let sidecar = sidecars::by_container(c.name)?;
            let wait = wait(sidecar, &spec["containers"][c.index]);
            Some(Move {
                from: c.index,
                name: c.name,
                sidecar,
                wait,
            })
        })
        .collect();
    moving.sort_by_key(|m| !m.sidecar.redirects);
    moving
}

/// The already-native sidecars of `init` that get tandem's wait, by index:
/// those with a readiness endpoint and neither a startup probe nor a
/// `postStart`, and not before an install container already there (its
/// hook would run before the binary is copied).
fn waited(spec: &Map<String, Value>, init: &[Container]) -> Vec<(usize, &'static Sidecar)> {
    let install_at = init.iter().position(|c| c.name == INSTALL_CONTAINER);
    init.iter()
        .filter(|c| c.always && install_at.is_none_or(|at| at < c.index))
        .filter_map(|c| Some((c.index, sidecars::by_container(c.name)?)))
        .filter(|(i, s)| {
            let raw = &spec["initContainers"][*i];
            s.ready.endpoint().is_some() && raw["startupProbe"].is_null() && !has_post_start(raw)
        })
        .collect()
}

/// Appends to `patch` what gives the native sidecar `c`, at `at`, tandem's
/// wait for `s`: the hook, beside its other lifecycle hooks, and the mount.
fn give_wait(patch: &mut Vec<Value>, at: &str, c: &Value, s: &Sidecar) {
    patch.push(match &c["lifecycle"] {
        Value::Object(_) => json!({"op": "add", "path": format!("{at}/lifecycle/postStart"),
            "value": post_start(s)}),
        _ => json!({"op": "add", "path": format!("{at}/lifecycle"),
            "value": {"postStart": post_start(s)}}),
    });
    let has_mounts = c["volumeMounts"].is_array();
    append(
        patch,
        &format!("{at}/volumeMounts"),
        has_mounts,
        vec![delivery::bin_mount()],
    );
}

/// How the moved sidecar `s`, as `container` reads, will be waited for.
fn wait(s: &Sidecar, container: &Value) -> Wait {
    if s.ready.endpoint().is_none() {
        Wait::Nothing
    } else if has_post_start(container) {
        Wait::Own
    } else {
        Wait::Tandem
    }
}

/// Whether `container` has a `postStart` hook of its own.
fn has_post_start(container: &Value) -> bool {
    !container["lifecycle"]["postStart"].is_null()
}

/// tandem's `postStart` hook for sidecar `s`: the wait for its readiness, with
/// no bound but the Pod's own (SPEC §12).
fn post_start(s: &Sidecar) -> Value {
    json!({"exec": {"command": [TANDEM, "--mesh", s.preset, "--wait-only"]}})
}

/// The classic sidecar `container` as a native one, waited for as `wait` says.
fn native(container: &Value, wait: Wait, s: &Sidecar) -> Value {
    let mut c = container.clone();
    let Some(fields) = c.as_object_mut() else {
        return c;
    };
    fields.insert("restartPolicy".into(), json!("Always"));
    if wait == Wait::Tandem {
        let lifecycle = fields.entry("lifecycle").or_insert_with(|| json!({}));
        if let Some(l) = lifecycle.as_object_mut() {
            l.insert("postStart".into(), post_start(s));
        }
        let mounts = fields.entry("volumeMounts").or_insert_with(|| json!([]));
        if let Some(m) = mounts.as_array_mut() {
            m.push(delivery::bin_mount());
        }
    }
    c
}

impl Moves {
    /// What the native route did, after `native: ` (SPEC §12): what moved and how
    /// each is waited for, what already native got tandem's wait, and that the
    /// job containers are as they were.
    pub fn words(&self) -> String {
        let names = |pick: &dyn Fn(Wait) -> bool| -> Vec<&str> {
            let each = self.moved.iter().filter(|(_, w)| pick(*w));
            each.map(|(n, _)| n.as_str()).collect()
        };
        let moved = names(&|_| true);
        let tandem = names(&|w| w == Wait::Tandem);
        let mut first = Vec::new();
        if !moved.is_empty() {
            first.push(format!("moved {} to native sidecars", moved.join(", ")));
        }
        let every = tandem.len() == moved.len() && self.waited.is_empty();
        match (tandem.is_empty(), every && tandem.len() > 1) {
            (true, _) => {}
            (false, true) => first.push("tandem waits for each in postStart".into()),
            (false, false) => first.push(format!(
                "tandem waits for {} in postStart",
                tandem.join(", ")
            )),
        }
        if !self.waited.is_empty() {
            first.push(format!(
                "tandem waits for {} (already native) in postStart",
                self.waited.join(", ")
            ));
        }
        let mut parts = vec![if first.is_empty() {
            "no classic sidecar to move".to_string()
        } else {
            first.join(", ")
        }];
        let own = names(&|w| w == Wait::Own);
        if !own.is_empty() {
            parts.push(format!("{} keeps its own postStart", own.join(", ")));
        }
        let nothing = names(&|w| w == Wait::Nothing);
        if !nothing.is_empty() {
            parts.push(format!(
                "{} has no readiness to wait for",
                nothing.join(", ")
            ));
        }
        parts.push("job containers unchanged".into());
        parts.join("; ")
    }
}
