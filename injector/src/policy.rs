//! `tandem-injector policy` (SPEC §10): the webhook's change as admission
//! policies the API server runs itself (Kubernetes 1.36+), printed as YAML: a
//! `MutatingAdmissionPolicy` with a binding for each of the webhook's two
//! routes (Pods labelled; namespaces labelled, Pods unlabelled), and a
//! `ValidatingAdmissionPolicy` that warns on an opted-in Job or CronJob with a
//! job container the policy cannot wrap (a policy cannot warn while mutating).

pub mod cel;
pub mod keep;
pub mod native;
pub mod patch;

use crate::inject::Scope;
use crate::inject::delivery::Install;
use crate::inject::route::Route;
use crate::inject::selectors::{self, Reader};
use crate::layout::{ENABLED, LABEL};
use crate::yaml::{self, Node, map, s, strs};

/// The name of every object printed.
pub const NAME: &str = "tandem-injector";
/// The API group and version of every object printed (here and by `webhook`).
pub const API: &str = "admissionregistration.k8s.io/v1";

/// The policies and their bindings for `install`, as YAML documents.
pub fn render(install: &Install) -> String {
    let mut out = format!(
        "# tandem-injector policy --image {}\n#   --install {} --route {}\n\
         # Kubernetes 1.36+ (admissionregistration.k8s.io/v1); docs/injector.md.\n",
        install.image,
        install.mode.name(),
        install.route.name()
    );
    out.push_str(&yaml::documents(&documents(install)));
    out
}

/// The four objects: the mutating policy, its two bindings, the warning policy
/// and its binding.
pub fn documents(install: &Install) -> Vec<Node> {
    vec![
        mutating(install),
        route(Scope::Label),
        route(Scope::Namespace),
        validating(install.route),
        binding(
            "ValidatingAdmissionPolicyBinding",
            &format!("{NAME}-warn"),
            Some(strs(&["Warn"])),
            map([]),
            selectors::not_system(),
        ),
    ]
}

/// The binding of the mutating policy for one of the webhook's routes.
fn route(scope: Scope) -> Node {
    binding(
        "MutatingAdmissionPolicyBinding",
        &format!("{NAME}-{}", scope.noun()),
        None,
        selectors::objects(scope, Reader::Policy),
        selectors::namespaces(scope),
    )
}

fn mutating(install: &Install) -> Node {
    let mut conditions = vec![selectors::runs_to_completion()];
    conditions.extend(named(&[
        (
            "few-containers",
            format!("size(object.spec.containers) <= {}", cel::MAX_CONTAINERS),
        ),
        // Every Pod on the native route matches, with something to move or
        // not: the API server calls a policy again after a later webhook
        // (Istio's injector) only when its conditions matched the first time.
        (
            "something-to-do",
            format!(
                "({}) == 'native' ||\n  ({})",
                native::route("object.metadata", install.route),
                cel::something_to_do()
            ),
        ),
    ]));
    let spec = map([
        ("failurePolicy", s("Ignore")),
        ("reinvocationPolicy", s("IfNeeded")),
        ("matchConstraints", rules(&[""], &["CREATE"], &["pods"])),
        ("matchConditions", Node::List(conditions)),
        ("variables", Node::List(named(&variables(install)))),
        (
            "mutations",
            Node::List(vec![map([
                ("patchType", s("JSONPatch")),
                (
                    "jsonPatch",
                    map([(
                        "expression",
                        s(format!(
                            "variables.route == 'native' ?\n({}) :\n({})",
                            native::expression(install),
                            patch::expression(install)
                        )),
                    )]),
                ),
            ])]),
        ),
    ]);
    map([
        ("apiVersion", s(API)),
        ("kind", s("MutatingAdmissionPolicy")),
        ("metadata", map([("name", s(NAME))])),
        ("spec", spec),
    ])
}

/// The mutating policy's variables, each after those it reads: the wrap
/// route's, then the native route's (SPEC §12).
fn variables(install: &Install) -> Vec<(&'static str, String)> {
    let init_count = "has(object.spec.initContainers) ?\n    size(object.spec.initContainers) : 0";
    vec![
        ("mains", "object.spec.containers.map(c, c.name)".into()),
        (
            "natives",
            "has(object.spec.initContainers) ?\n  object.spec.initContainers\n    \
             .filter(c, has(c.restartPolicy) && c.restartPolicy == 'Always')\n    \
             .map(c, c.name) : []"
                .into(),
        ),
        ("injected", cel::injected()),
        (
            "initMounts",
            format!("'/spec/initContainers/' +\n  string({init_count}) +\n  '/volumeMounts'"),
        ),
        ("quit", cel::quit()),
        ("restart", keep::RESTART.into()),
        ("jobs", cel::jobs()),
        ("wrap", cel::wrap()),
        ("several", "size(variables.wrap) > 1".into()),
        ("names", "variables.wrap.map(j, j.c.name).join(',')".into()),
        (
            "sharing",
            "variables.several ? variables.wrap.filter(j, j.severalFree) : []".into(),
        ),
        ("mesh", cel::mesh()),
        ("waited", cel::waited()),
    ]
    .into_iter()
    .chain(native::variables(install))
    .collect()
}

/// A list of named expressions: match conditions or variables.
fn named<N: AsRef<str>>(each: &[(N, String)]) -> Vec<Node> {
    each.iter()
        .map(|(name, expression)| {
            map([
                ("name", s(name.as_ref())),
                ("expression", s(expression.as_str())),
            ])
        })
        .collect()
}

fn validating(route: Route) -> Node {
    let message = format!(
        "'tandem: ' + variables.missing.join(', ') + ' has no command and no ' +\n  \
         '{}NAME annotation (a JSON list of strings without ' +\n  \
         'escapes), so the ' +\n  \
         'admission policy cannot wrap it, and no tandem of this Pod will stop the ' +\n  \
         'sidecars: set command to the image entrypoint, or the annotation'",
        cel::ENTRYPOINT_ANNOTATION
    );
    let validation = map([
        (
            "expression",
            s("!variables.optedIn || size(variables.missing) == 0"),
        ),
        ("messageExpression", s(message)),
    ]);
    let spec = map([
        ("failurePolicy", s("Ignore")),
        (
            "matchConstraints",
            rules(&["batch"], &["CREATE", "UPDATE"], &["jobs", "cronjobs"]),
        ),
        ("variables", Node::List(named(&warning_variables(route)))),
        ("validations", Node::List(vec![validation])),
    ]);
    map([
        ("apiVersion", s(API)),
        ("kind", s("ValidatingAdmissionPolicy")),
        ("metadata", map([("name", s(format!("{NAME}-warn")))])),
        ("spec", spec),
    ])
}

/// The warning policy's variables: the Pod template, whether it is opted in,
/// and its job containers without a command or the annotation (none on the
/// native route, which never wraps them).
fn warning_variables(route: Route) -> Vec<(&'static str, String)> {
    let template = "object.kind == 'CronJob' ? object.spec.jobTemplate.spec.template :\n  \
                    object.spec.template";
    let opted_in = format!(
        "has(variables.template.metadata) && has(variables.template.metadata.labels) &&\n  \
         '{LABEL}' in variables.template.metadata.labels ?\n  \
         variables.template.metadata.labels['{LABEL}'] == '{ENABLED}' :\n  \
         namespaceObject != null && has(namespaceObject.metadata.labels) &&\n  \
         '{LABEL}' in namespaceObject.metadata.labels &&\n  \
         namespaceObject.metadata.labels['{LABEL}'] == '{ENABLED}'"
    );
    let template_route = format!(
        "has(variables.template.metadata) ?\n  ({}) : {}",
        native::route("variables.template.metadata", route),
        cel::quote(route.name())
    );
    let missing = format!(
        "({template_route}) ==\n  'native' ? [] :\n  \
         variables.template.spec.containers.filter(c,\n  !(c.name in variables.notJobs) &&\n  \
         !(has(c.command) && size(c.command) > 0) &&\n  \
         !(has(variables.template.metadata) &&\n  {}))\n  .map(c, c.name)",
        cel::has_entrypoint("variables.template.metadata", "c.name"),
    );
    vec![
        ("notJobs", cel::not_job_names()),
        ("template", template.to_string()),
        ("optedIn", opted_in),
        ("missing", missing),
    ]
}

fn rules(groups: &[&str], operations: &[&str], resources: &[&str]) -> Node {
    map([(
        "resourceRules",
        Node::List(vec![map([
            ("apiGroups", strs(groups)),
            ("apiVersions", strs(&["v1"])),
            ("operations", strs(operations)),
            ("resources", strs(resources)),
        ])]),
    )])
}

fn binding(kind: &str, name: &str, actions: Option<Node>, objects: Node, namespaces: Node) -> Node {
    let policy = if kind.starts_with("Validating") {
        format!("{NAME}-warn")
    } else {
        NAME.to_string()
    };
    let mut resources = vec![("namespaceSelector".to_string(), namespaces)];
    if objects != map([]) {
        resources.push(("objectSelector".to_string(), objects));
    }
    let mut spec = vec![
        ("policyName".to_string(), s(policy)),
        ("matchResources".to_string(), Node::Map(resources)),
    ];
    if let Some(actions) = actions {
        spec.push(("validationActions".to_string(), actions));
    }
    map([
        ("apiVersion", s(API)),
        ("kind", s(kind)),
        ("metadata", map([("name", s(name))])),
        ("spec", Node::Map(spec)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inject::delivery::Mode;
    use crate::tests::install;

    #[test]
    fn the_checked_in_policy_is_what_the_command_prints_for_the_published_image() {
        let checked_in = include_str!("../deploy/policy/tandem-injector.yaml");
        assert!(
            checked_in == render(&install(Mode::EmptyDir)),
            "deploy/policy/tandem-injector.yaml is stale: run \
             tandem-injector policy --image ghcr.io/tandem-sidecar/tandem:0.1.0 > it"
        );
        let kustomization = include_str!("../deploy/policy/kustomization.yaml");
        assert!(kustomization.contains("\n  - tandem-injector.yaml\n"));
    }

    #[test]
    fn the_patch_avoids_what_1_36_cannot_take() {
        for mode in [Mode::EmptyDir, Mode::ImageVolume] {
            let patch = patch::expression(&install(mode));
            // A list `value` is only ever empty or of strings: objects go one by one to `/-`.
            assert!(!patch.contains("value: [Object"), "{patch}");
            assert!(!patch.contains("ApplyConfiguration"));
            let each_object = patch.matches("value: Object.").count();
            let at_end = patch.matches("/-',\n      value: Object.").count()
                + patch.matches("/-',\n    value: Object.").count();
            assert_eq!(each_object, at_end, "every object is added at /-: {patch}");
            let installs = patch.contains("tandem-install");
            assert_eq!(installs, mode == Mode::EmptyDir, "{patch}");
        }
        for mode in [Mode::EmptyDir, Mode::ImageVolume] {
            let moves = native::expression(&install(mode));
            assert!(!moves.contains("value: [Object"), "{moves}");
            assert!(!moves.contains("ApplyConfiguration"));
            // A moved sidecar is copied, never rebuilt from a literal.
            assert!(!moves.contains("value: m.c") && moves.contains("op: 'copy'"));
        }
        let volume = patch::expression(&install(Mode::ImageVolume));
        assert!(
            volume.contains("reference: 'ghcr.io/tandem-sidecar/tandem:0.1.0'"),
            "{volume}"
        );
    }

    #[test]
    fn every_known_sidecar_is_in_the_policy_with_its_preset_and_ready_url() {
        let text = render(&install(Mode::EmptyDir));
        for (container, s) in crate::sidecars::containers() {
            let pair = format!("['{container}', '{}']", s.preset);
            assert!(text.contains(&pair), "{pair}");
            if let Some(url) = s.ready_on(None).filter(|_| s.port_var.is_none()) {
                assert!(
                    text.contains(&format!("s == '{container}' ? '{url}'")),
                    "{url}"
                );
            }
        }
        assert!(text.contains("'http://127.0.0.1:' +\n"));
        assert!(text.contains("((has(j.c.env) ? j.c.env.filter(e, e.name == 'DAPR_HTTP_PORT')"));
    }

    #[test]
    fn every_printed_line_fits_yamllints_100_columns() {
        let routes = [Route::Wrap, Route::Native];
        for (mode, route) in [Mode::EmptyDir, Mode::ImageVolume]
            .into_iter()
            .flat_map(|m| routes.map(|r| (m, r)))
        {
            for line in render(&crate::tests::install_on(mode, route)).lines() {
                assert!(
                    line.chars().count() <= 100,
                    "{} columns: {line}",
                    line.len()
                );
            }
        }
    }

    #[test]
    fn cel_strings_escape_quotes_and_backslashes() {
        assert_eq!(cel::quote(r"a'b\c"), r"'a\'b\\c'");
    }
}
