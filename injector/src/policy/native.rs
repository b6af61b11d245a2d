//! The native route (SPEC §12) in the mutating policy's CEL: the webhook's
//! planner step (`inject::native`) restated for the API server, from the same
//! sidecar table and install parts. A Pod's route is its `tandem.dev/route`
//! annotation when that names one, else the policy's (`--route`).
//!
//! The moved sidecars are copied (`copy`, not an `add` of their value) to the
//! end of `initContainers` in their new order, then given what the route adds
//! at their new index, then removed from `containers` from the last index
//! down, so no index shifts under an operation that follows.

use super::cel::{list, quote};
use super::patch::{add, init_ops, object, volume_ops};
use crate::inject::delivery::{self, Install};
use crate::inject::route::Route;
use crate::layout::{BIN_VOLUME, INSTALL_CONTAINER, ROUTE_ANNOTATION, TANDEM};
use crate::sidecars;

/// The route of the Pod (or template) whose metadata is `meta`, `default`
/// unless its annotation names one.
pub fn route(meta: &str, default: Route) -> String {
    let key = quote(ROUTE_ANNOTATION);
    format!(
        "has({meta}.annotations) &&\n    {key} in {meta}.annotations &&\n    \
         {meta}.annotations[{key}] in {} ?\n    {meta}.annotations[{key}] : {}",
        list(Route::NAMES),
        quote(default.name())
    )
}

/// The sidecars whose rows have a readiness endpoint: tandem waits for them.
fn waited_names() -> String {
    list(
        sidecars::containers()
            .filter(|(_, s)| s.ready.endpoint().is_some())
            .map(|(c, _)| c),
    )
}

/// Whether the already-native init container `c` gets tandem's wait: a
/// sidecar with a readiness endpoint, with neither startup probe nor
/// `postStart` hook, and not before an install container already there.
fn gets_wait(c: &str, names: &str) -> String {
    format!(
        "has({c}.restartPolicy) && {c}.restartPolicy == 'Always' &&\n    \
         {c}.name in {waited} &&\n    !has({c}.startupProbe) &&\n    \
         !(has({c}.lifecycle) && has({c}.lifecycle.postStart)) &&\n    \
         (!({install} in {names}) ||\n      \
         {names}.indexOf({c}.name) > {names}.indexOf({install}))",
        waited = waited_names(),
        install = quote(INSTALL_CONTAINER),
    )
}

/// The match condition's native half: a classic sidecar the table knows, or
/// an already-native one that gets the wait.
pub fn something_to_do() -> String {
    let names = "object.spec.initContainers\n        .map(x, x.name)";
    format!(
        "object.spec.containers.exists(c, c.name in\n    {}) ||\n  \
         has(object.spec.initContainers) &&\n  \
         object.spec.initContainers.exists(c,\n    {})",
        super::cel::sidecar_names(),
        gets_wait("c", names)
    )
}

/// The variables the native patch reads, each after those it reads (and
/// after `injected`, the wrap route's): what moves and what gets the wait,
/// then where the operations go.
pub fn variables(install: &Install) -> Vec<(&'static str, String)> {
    let mut all = records(install);
    all.extend(places(install));
    all
}

/// The Pod's route, its init containers' names, the sidecars to move in their
/// order (a record each: the container, its index, whether tandem waits for
/// it) and the already-native ones that get the wait (with their path).
fn records(install: &Install) -> Vec<(&'static str, String)> {
    let (proxies, others): (Vec<_>, Vec<_>) =
        sidecars::containers().partition(|(_, s)| s.redirects);
    let names = |each: &[(&str, &sidecars::Sidecar)]| list(each.iter().map(|(c, _)| *c));
    let moving = format!(
        "(object.spec.containers.filter(c, c.name in {}) +\n  \
         object.spec.containers.filter(c, c.name in {}))\n  \
         .map(c, {{'c': dyn(c),\n    'from': dyn(variables.mains.indexOf(c.name)),\n    \
         'tandem': dyn(c.name in {} &&\n      \
         !(has(c.lifecycle) && has(c.lifecycle.postStart)))}})",
        names(&proxies),
        names(&others),
        waited_names()
    );
    let waited = format!(
        "has(object.spec.initContainers) ?\n  \
         object.spec.initContainers.filter(c,\n    {})\n  \
         .map(c, {{'c': dyn(c), 'at': dyn('/spec/initContainers/' +\n    \
         string(variables.initNames.indexOf(c.name)) + '/')}}) : []",
        gets_wait("c", "variables.initNames")
    );
    vec![
        ("route", route("object.metadata", install.route)),
        (
            "initNames",
            "has(object.spec.initContainers) ?\n  \
             object.spec.initContainers.map(c, c.name) : []"
                .into(),
        ),
        ("moving", moving),
        ("nativeWaited", waited),
    ]
}

/// Whether the binary comes in (and clashes with a volume of the Pod's), the
/// index the install container goes to, where the moved sidecars start, and
/// each moved one's record with its path there.
fn places(install: &Install) -> Vec<(&'static str, String)> {
    let install_adds = match install.mode {
        delivery::Mode::EmptyDir => "1",
        delivery::Mode::ImageVolume => "0",
    };
    vec![
        (
            "nativeInstall",
            "!variables.injected && (size(variables.nativeWaited) > 0 ||\n  \
             variables.moving.exists(m, m.tandem))"
                .into(),
        ),
        (
            "nativeClash",
            format!(
                "variables.nativeInstall && has(object.spec.volumes) &&\n  \
                 object.spec.volumes.exists(v, v.name == {})",
                quote(BIN_VOLUME)
            ),
        ),
        (
            "installAt",
            "size(variables.nativeWaited) > 0 ?\n  \
             variables.initNames.indexOf(variables.nativeWaited[0].c.name) :\n  \
             size(variables.initNames)"
                .into(),
        ),
        (
            "nativeBase",
            format!(
                "int(size(variables.initNames)) +\n  (variables.nativeInstall ? {install_adds} : 0)"
            ),
        ),
        (
            "moved",
            "lists.range(size(variables.moving)).map(k,\n  \
             {'m': dyn(variables.moving[k]), 'at': dyn('/spec/initContainers/' +\n    \
             string(variables.nativeBase + k) + '/')})"
                .into(),
        ),
    ]
}

/// tandem's `postStart` hook for the container named `name` (a CEL string),
/// its preset looked up in the table.
fn hook(name: &str) -> String {
    let presets: Vec<String> = sidecars::containers()
        .map(|(c, s)| format!("{}: {}", quote(c), quote(s.preset)))
        .collect();
    let ty = "Object.spec.initContainers.lifecycle.postStart";
    format!(
        "{ty}{{\n        exec: {ty}.exec{{\n        command: [{}, '--mesh',\n        \
         {{{}}}[{name}],\n        '--wait-only']}}}}",
        quote(TANDEM),
        presets.join(",\n        ")
    )
}

/// The operations that give container `c`, at path `at` (with a trailing
/// slash), tandem's wait: the hook beside its other lifecycle hooks, the mount.
fn give_wait(at: &str, c: &str) -> String {
    let name = format!("{c}.name");
    let whole = format!(
        "Object.spec.initContainers.lifecycle{{\n        postStart: {}}}",
        hook(&name)
    );
    let mount = object(
        "Object.spec.initContainers.volumeMounts",
        &delivery::bin_mount(),
    );
    format!(
        "(has({c}.lifecycle) ?\n    [{}] :\n    [{}]) +\n    \
         (has({c}.volumeMounts) ? [] : [{}]) +\n    [{}]",
        add(&format!("{at} + 'lifecycle/postStart'"), &hook(&name)),
        add(&format!("{at} + 'lifecycle'"), &whole),
        add(&format!("{at} + 'volumeMounts'"), "[]"),
        add(&format!("{at} + 'volumeMounts/-'"), &mount)
    )
}

/// The binary's volume and, with `--install emptydir`, the install container
/// at `variables.installAt`.
fn install_ops(install: &Install) -> Vec<String> {
    let mut ops = volume_ops(install);
    if let Some(init) = install.init_container() {
        let at = "'/spec/initContainers/' + string(variables.installAt)";
        ops.push(init_ops(&init, at, &format!("{at} + '/volumeMounts'")));
    }
    ops
}

/// The moved sidecars: copied in their order to the end of `initContainers`
/// (made first when neither the Pod nor the install container made it), given
/// `restartPolicy: Always` and the wait at their new index, then removed from
/// `containers`, the last index first.
fn moved_ops(install: &Install) -> Vec<String> {
    // With an install container, its operations made the list.
    let made = match install.init_container() {
        Some(_) => "variables.nativeInstall || ",
        None => "",
    };
    vec![
        format!(
            "({made}has(object.spec.initContainers) ||\n    \
             size(variables.moving) == 0 ? [] :\n    [{}])",
            add("'/spec/initContainers'", "[]")
        ),
        "variables.moving.map(m, JSONPatch{op: 'copy',\n      \
         from: '/spec/containers/' + string(m.from),\n      \
         path: '/spec/initContainers/-'})"
            .to_string(),
        format!(
            "variables.moved.map(r,\n    [{}] +\n    (r.m.tandem ? {} : [])).flatten()",
            add("r.at + 'restartPolicy'", "'Always'"),
            give_wait("r.at", "r.m.c")
        ),
        "lists.range(size(object.spec.containers))\n    \
         .map(i, int(size(object.spec.containers)) - 1 - i)\n    \
         .filter(i, variables.moving.exists(m, m.from == i))\n    \
         .map(i, JSONPatch{op: 'remove', path: '/spec/containers/' + string(i)})"
            .to_string(),
    ]
}

/// The native route's JSONPatch: nothing when the binary's volume would clash;
/// else the already-native sidecars' wait, the install, the moved sidecars
/// copied, changed and removed from `containers`.
pub fn expression(install: &Install) -> String {
    format!(
        "variables.nativeClash ? [] :\n  \
         variables.nativeWaited.map(w,\n    {}).flatten() +\n  \
         (variables.nativeInstall ?\n  {} : []) +\n  {}",
        give_wait("w.at", "w.c"),
        install_ops(install).join(" +\n  "),
        moved_ops(install).join(" +\n  ")
    )
}
