#!/usr/bin/env python3
"""The injector and its admission policy in a real API server: `make e2e-apiserver`.

Starts etcd and the kube-apiserver it is given (Kubernetes 1.36+: the policy is
`admissionregistration.k8s.io/v1`) on loopback, then creates the Pods of the
injector's HTTPS tests (ORIGINAL/*.json, written by `cargo test --test https`)
and a few variants of them, through these passes:

  baseline          nothing of tandem's registered
  webhook-MODE      tandem-injector as a real webhook (the shipped
                    MutatingWebhookConfiguration, pointed at 127.0.0.1)
  policy-MODE       `tandem-injector policy` applied, no webhook
  both-emptydir     the policy and the webhook together (the webhook sees the
                    policy's Pod: it must leave it as it is)

for MODE emptydir and image-volume. Pods are created with dryRun=All: what the
API server answers is the Pod after every admission step, as it would store it.
It checks:

  - each case's Pod from the policy is the Pod from the webhook (every field,
    annotations included), and a Pod not opted in or restarted for ever
    (restartPolicy Always, or none: the default) is untouched, whoever owns it;
  - Pods of any owner that run to completion are changed (a bare Pod, one a
    SparkApplication owns, Airflow's KubernetesPodOperator's, with and without
    its XCom container, which is left as created), and each wrapped
    container has the TANDEM_KEEP_ON_EXIT its restart policy and rules give
    (container restartPolicy and restartPolicyRules from 1.35, the
    RestartAllContainers action from 1.36);
  - the webhook's Pod, created again, comes back unchanged (idempotence);
  - creating an opted-in Job or CronJob with a container that has no command
    answers with the ValidatingAdmissionPolicy's `Warning` header;
  - reviews that reach the webhook over a kept-alive connection after it sat
    idle (IDLE seconds, default around the old 10 s limit and past 90 s) are
    answered: the Pod is injected.

The API server is started once for each version of E2E_VERSIONS (default
1.33 1.34 1.35 1.36), emulating it (`--emulated-version`): the webhook passes
run on each (image-volume from 1.35, where image volumes are on by default);
the policy passes, the idle waits and the real Jobs only on the last, as the
policy needs `admissionregistration.k8s.io/v1`'s MutatingAdmissionPolicy
(1.36). On the last, admission_cost then measures what each route adds to a
Pod create against its floor, and prints the figures (that API server writes an
audit log of the Pod creates in the cost's namespace: its own time of each).

Every mismatch is printed with the case, the JSON path and both values, as is
a route whose added cost is over its goal; it exits 1 if there is any, 2 on a
setup failure.

With KUBE_CONTROLLER_MANAGER set (in the environment), real Jobs are created
too in the webhook and policy passes (emptydir): the Pods the Job controller
makes must be injected, and the same in both.

Usage: e2e_apiserver.py KUBE_APISERVER ETCD INJECTOR ORIGINAL WORKDIR [IDLE...]
"""

import copy
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).parent))
import admission_cost as cost_mod  # noqa: E402
import cluster as k8s  # noqa: E402
from mesh_webhook import MeshWebhook  # noqa: E402

IMAGE = "ghcr.io/tandem-sidecar/tandem:0.1.0"
LABEL = "tandem.dev/inject"
NS = "tandem-e2e"
NS_LABELLED = "tandem-e2e-labelled"
# The admission cost's creates, the ones the API server's audit log records.
NS_COST = "tandem-e2e-cost"
# Fields the API server sets per object, not part of what admission did.
VOLATILE = ["name", "uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"]
DEFAULT_IDLE = [9.9, 10.0, 10.1, 95.0]
# The versions a 1.36 API server emulates (--emulated-version), oldest first;
# E2E_VERSIONS overrides. The newest runs everything, the others the webhook.
EMULATED = ["1.33", "1.34", "1.35", "1.36"]
# The webhook's account of what it did (SPEC §10); a policy cannot write one.
REPORT = "tandem.dev/injection"
# The Pod's route (SPEC §12), and the names of the cases that take the native one.
ROUTE = "tandem.dev/route"
NATIVE = "native-route-"
# The cases tandem must leave untouched.
UNTOUCHED = ["not-opted-in", "opted-out", "namespace-opted-out", "always",
             "always-bare", "restart-policy-unset"]
# What each wrapped container of these cases gets as TANDEM_KEEP_ON_EXIT (None:
# nothing), through either route (SPEC §10, "Restart in place").
KEEP = {
    "plain": {"job": None},
    "bare-never": {"job": None},
    "bare-on-failure": {"job": "1-255"},
    "owner-not-a-job": {"job": None},
    "on-failure": {"job": "1-255"},
    "airflow-kpo": {"base": None},
    "airflow-kpo-xcom": {"base": None},
    "container-on-failure": {"job": "1-255"},
    "container-always": {"job": "0-255"},
    "container-never-in-on-failure-pod": {"job": None},
    "rule-in": {"job": "7,42-43"},
    "rule-not-in": {"job": "1-255"},
    "rules-several": {"job": "0,3-255"},
    "rule-restart-all": {"job": "3"},
}

# Airflow's XCom container: its creator stops it, so tandem leaves it alone.
XCOM = "airflow-xcom-sidecar"


def cases(original, minor=36):
    """(name, namespace, Pod) of every case: the HTTPS tests' Pods (ORIGINAL/),
    then the unit tests' other shapes (injector/src/inject/tests.rs,
    unchanged_tests.rs, restart_tests.rs) made from them; those with fields an
    API server emulating 1.`minor` does not take are left out."""
    pods = {p.stem: json.loads(p.read_text()) for p in sorted(Path(original).glob("*.json"))}
    if not {"plain", "istio-classic", "no-command"} <= pods.keys():
        raise k8s.Failed(f"{original}: no plain, istio-classic or no-command.json "
                         "(the HTTPS tests write them)")
    out = [(name, NS, pod) for name, pod in pods.items()]

    def variant(name, base, ns=NS):
        """A copy of case `base` named `name`, added to the cases, to change."""
        pod = copy.deepcopy(pods[base])
        pod["metadata"]["generateName"] = f"{name}-"
        out.append((name, ns, pod))
        return pod["metadata"], pod["spec"]

    def sidecar(name, always=False):
        c = {"name": name, "image": "registry.example.com/sidecar:1"}
        return dict(c, restartPolicy="Always") if always else c

    job = pods["plain"]["spec"]["containers"][0]
    uploader = pods["no-command"]["spec"]["containers"][1]
    istio = pods["istio-classic"]["spec"]["containers"][1]

    meta, _ = variant("entrypoint", "no-command")
    meta["annotations"]["tandem.dev/entrypoint.uploader"] = '["/app/upload", "--fast"]'
    # The policy reads the annotation with a regular expression, not a JSON parser.
    meta, _ = variant("entrypoint-spaced", "no-command")
    meta["annotations"]["tandem.dev/entrypoint.uploader"] = '[ "/app/up load",\n "a,b]" ]'
    meta, _ = variant("entrypoint-empty", "no-command")
    meta["annotations"]["tandem.dev/entrypoint.uploader"] = '[]'
    _, spec = variant("mixed-istio", "istio-classic")
    spec["containers"].insert(1, copy.deepcopy(uploader))
    for name, port in [("several-sidecars", "3600"), ("dapr-port-not-a-number", "http")]:
        _, spec = variant(name, "plain")
        own = dict(copy.deepcopy(job), env=[{"name": "DAPR_HTTP_PORT", "value": port}])
        spec["containers"] = [sidecar("vault-agent"), own, sidecar("cloud-sql-proxy"),
                              copy.deepcopy(istio)]
        spec["initContainers"] = [sidecar("daprd", True), sidecar("linkerd-init")]
    _, spec = variant("native-linkerd", "plain")
    spec["initContainers"] = [sidecar("linkerd-proxy", True)]
    _, spec = variant("sets-its-mesh", "istio-classic")
    spec["containers"][0]["env"] = [
        {"name": "TANDEM_MESH", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}]
    _, spec = variant("runs-tandem", "plain")
    spec["containers"][0]["command"] = ["/usr/local/bin/tandem", "--", "/app/myjob"]
    _, spec = variant("volume-name-taken", "plain")
    spec["volumes"].append({"name": "tandem-bin", "emptyDir": {}})
    _, spec = variant("no-token-no-lists", "plain")
    spec["automountServiceAccountToken"] = False
    del spec["volumes"], spec["containers"][0]["volumeMounts"]

    native_cases(variant, sidecar, job, istio)

    meta, _ = variant("not-opted-in", "plain")
    del meta["labels"][LABEL]
    meta, _ = variant("opted-out", "plain")
    meta["labels"][LABEL] = "disabled"
    restart_cases(variant, minor)
    meta, _ = variant("namespace-mode", "istio-classic", NS_LABELLED)
    del meta["labels"][LABEL]
    meta, _ = variant("namespace-opted-out", "plain", NS_LABELLED)
    meta["labels"][LABEL] = "disabled"
    return out


def native_cases(variant, sidecar, job, istio):
    """The native route's shapes (SPEC §12), chosen by the annotation
    (injector/src/inject/native_tests.rs): the webhook and the policy must make
    the same Pod of each, its job containers as they were."""
    def native(name, base):
        meta, spec = variant(f"{NATIVE}{name}", base)
        meta["annotations"][ROUTE] = "native"
        return spec

    native("istio", "istio-classic")
    native("no-command", "no-command")
    spec = native("several", "plain")
    spec["containers"] = [sidecar("vault-agent"), copy.deepcopy(job),
                          sidecar("cloud-sql-proxy"), sidecar("daprd"),
                          sidecar("linkerd-proxy"), copy.deepcopy(istio)]
    spec["initContainers"] = [sidecar("istio-init"), sidecar("linkerd-init"),
                              sidecar("vault-agent-init")]
    spec = native("own-poststart", "istio-classic")
    spec["containers"][1]["lifecycle"] = {
        "postStart": {"exec": {"command": ["pilot-agent", "wait"]}},
        "preStop": {"exec": {"command": ["sleep", "5"]}}}
    spec["containers"].append(sidecar("cloud-sql-proxy"))
    spec = native("already", "plain")
    spec["initContainers"] = [sidecar("linkerd-init"), sidecar("linkerd-proxy", True)]
    spec = native("already-probed", "plain")
    spec["initContainers"] = [dict(sidecar("linkerd-proxy", True), startupProbe={
        "httpGet": {"path": "/ready", "port": 4191}})]
    spec = native("vault", "plain")
    spec["containers"].append(sidecar("vault-agent"))
    spec["initContainers"] = [sidecar("vault-agent-init")]


def bare(meta, name):
    """A Job's Pod's metadata made a bare Pod's: named, no owner, no Job labels."""
    for key in ["generateName", "ownerReferences", "finalizers"]:
        meta.pop(key, None)
    meta["annotations"] = {}
    meta["generateName"] = f"{name}-"
    meta["labels"] = {LABEL: "enabled"}


def restart_cases(variant, minor):
    """Pods of any owner that run to completion, Pods restarted for ever, and
    containers that run again in place (injector/tests/support/pods.rs,
    restart_cases): each a variant of istio-classic."""
    def rule(action, operator, values):
        return {"action": action, "exitCodes": {"operator": operator, "values": values}}

    meta, _ = variant("bare-never", "istio-classic")
    bare(meta, "bare-never")
    meta, spec = variant("bare-on-failure", "istio-classic")
    bare(meta, "bare-on-failure")
    spec["restartPolicy"] = "OnFailure"
    meta, _ = variant("owner-not-a-job", "istio-classic")
    meta["ownerReferences"][0].update(apiVersion="sparkoperator.k8s.io/v1beta2",
                                      kind="SparkApplication", name="pi")
    _, spec = variant("on-failure", "istio-classic")
    spec["restartPolicy"] = "OnFailure"
    meta, spec = variant("airflow-kpo", "istio-classic")
    bare(meta, "etl-load")
    meta["labels"].update({"dag_id": "etl", "task_id": "load", "kubernetes_pod_operator": "True",
                           "try_number": "1", "airflow_kpo_in_cluster": "True",
                           "airflow-worker": "42", "run_id": "scheduled__2026-11-28T0000000000"})
    spec["containers"][0].update(name="base", command=["python", "-m", "etl"])
    kpo = copy.deepcopy((meta, spec))
    # With do_xcom_push: KPO's XCom container, which it stops itself after `base`.
    meta, spec = variant("airflow-kpo-xcom", "istio-classic")
    for mine, theirs in zip((meta, spec), kpo):
        mine.clear()
        mine.update(theirs)
    meta["generateName"] = "etl-load-xcom-"
    mount = {"name": "xcom", "mountPath": "/airflow/xcom"}
    spec["containers"][0].setdefault("volumeMounts", []).insert(0, mount)
    spec["containers"].insert(1, {
        "name": XCOM, "image": "alpine", "volumeMounts": [mount],
        "command": ["sh", "-c", 'trap "exit 0" INT; while true; do sleep 1; done;'],
        "resources": {"requests": {"cpu": "1m", "memory": "10Mi"}}})
    spec.setdefault("volumes", []).insert(0, {"name": "xcom", "emptyDir": {}})
    _, spec = variant("always", "istio-classic")
    spec["restartPolicy"] = "Always"
    meta, spec = variant("always-bare", "istio-classic")
    bare(meta, "always-bare")
    spec["restartPolicy"] = "Always"
    _, spec = variant("restart-policy-unset", "istio-classic")
    del spec["restartPolicy"]
    if minor < 35:
        return
    # A container's own restartPolicy and its rules: Kubernetes 1.35+ (KEP-5307),
    # which wants the policy set beside rules.
    shapes = [
        ("container-on-failure", "Never", "OnFailure", []),
        ("container-always", "Never", "Always", []),
        ("container-never-in-on-failure-pod", "OnFailure", "Never", []),
        ("rule-in", "Never", "Never", [rule("Restart", "In", [43, 7, 42])]),
        ("rule-not-in", "Never", "Never", [rule("Restart", "NotIn", [0])]),
        ("rules-several", "Never", "Never", [rule("Restart", "In", [0]),
                                             rule("Restart", "NotIn", [0, 1, 2]),
                                             rule("Restart", "NotIn", [9, 2, 1])]),
    ]
    if minor >= 36:
        # RestartAllContainers: 1.36 (KEP-5532).
        shapes.append(("rule-restart-all", "Never", "Never",
                       [rule("RestartAllContainers", "In", [3])]))
    for name, pod_policy, own, rules in shapes:
        _, spec = variant(name, "istio-classic")
        spec["restartPolicy"] = pod_policy
        spec["containers"][0]["restartPolicy"] = own
        if rules:
            spec["containers"][0]["restartPolicyRules"] = rules


def clean(pod):
    """The Pod without what the API server sets per object."""
    pod = copy.deepcopy(pod)
    for key in VOLATILE:
        pod.get("metadata", {}).pop(key, None)
    pod.pop("status", None)
    return pod


def unreported(pod):
    """The Pod without the webhook's annotation (and without an annotations map
    that held only it: a bare Pod has none until the webhook writes its own)."""
    pod = copy.deepcopy(pod)
    annotations = pod["metadata"].get("annotations", {})
    annotations.pop(REPORT, None)
    if not annotations:
        pod["metadata"].pop("annotations", None)
    return pod


def diff(a, b, path=""):
    """Paths where `a` and `b` differ, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in list(a) + [k for k in b if k not in a]:
            out += diff(a.get(key, "<absent>"), b.get(key, "<absent>"), f"{path}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path or ".", a, b)]


def create_pod(api, ns, pod):
    pod = copy.deepcopy(pod)
    pod["metadata"]["namespace"] = ns
    stored, warnings = api.must("POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", pod)
    return clean(stored), warnings


def injected(pod):
    spec = pod["spec"]
    return any(c["name"] == "tandem-install" for c in spec.get("initContainers", [])) or any(
        v["name"] == "tandem-bin" and "image" in v for v in spec.get("volumes", []))


def wait_injecting(api, plain, what, bound=30.0):
    """Until `plain` comes back injected (informers take a moment)."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if injected(create_pod(api, NS, plain)[0]):
            return True
        time.sleep(0.5)
    print(f"  {what}: a plain Job Pod was still not injected after {bound:.0f} s")
    return False


def webhook(api, injector, mode, dir, register=True):
    """tandem-injector serving on loopback for the route `mode`, registered
    (unless not `register`)."""
    return k8s.Injector(api, injector, Path(dir) / f"injector-{mode}.log",
                        ["--image", IMAGE, "--install", mode], register)


def policy(api, injector, mode):
    """Applies `tandem-injector policy --install MODE`; its objects."""
    text = subprocess.run([injector, "policy", "--image", IMAGE, "--install", mode],
                          check=True, capture_output=True, text=True).stdout
    objects = [d for d in yaml.safe_load_all(text) if d]
    for obj in objects:
        k8s.create(api, obj)
    return objects


class Run:
    """The passes' stored Pods, and every mismatch found."""

    def __init__(self, api, injector, original, workdir, minor=36):
        self.api, self.injector, self.workdir = api, injector, Path(workdir)
        self.cases = cases(original, minor)
        self.plain = next(p for n, _, p in self.cases if n == "plain")
        self.stored = {}
        self.problems = []
        self.job_pods = {}

    def problem(self, line):
        self.problems.append(line)
        print(f"  MISMATCH {line}")

    def pass_(self, name):
        pods = {}
        for case, ns, pod in self.cases:
            pods[case], _ = create_pod(self.api, ns, pod)
        self.stored[name] = pods
        if name != "baseline":
            changed = [c for c in pods if diff(self.stored["baseline"][c], pods[c])]
            print(f"  changed by {name}: {', '.join(changed) or 'none'}")
        (self.workdir / f"{name}.json").write_text(json.dumps(pods, indent=1))
        return pods

    def untouched(self, name):
        base = self.stored["baseline"]
        for case in UNTOUCHED:
            for path, a, b in diff(base[case], self.stored[name][case]):
                self.problem(f"{name}: {case} was changed at {path}: {a!r} -> {b!r}")

    def reported(self, name):
        """The webhook's annotation on every opted-in Job's Pod it reviewed."""
        for case, _, _ in self.cases:
            line = self.stored[name][case]["metadata"].get("annotations", {}).get(REPORT)
            if case not in UNTOUCHED and line is None:
                self.problem(f"{name}: {case}: no {REPORT} annotation")
            if name == "webhook-emptydir" and line is not None:
                print(f"  {case}: {REPORT}: {line}")

    def kept(self, name):
        """Each wrapped container of KEEP's cases has the statuses it should."""
        names = {n for n, _, _ in self.cases}
        checked = 0
        for case, want in KEEP.items():
            if case not in names:
                continue
            for c in self.stored[name][case]["spec"]["containers"]:
                if c["name"] not in want:
                    continue
                env = {e["name"]: e.get("value") for e in c.get("env", [])}
                got = env.get("TANDEM_KEEP_ON_EXIT")
                wrapped = (c.get("command") or [""])[0] == "/tandem/tandem"
                if got != want[c["name"]] or not wrapped:
                    self.problem(f"{name}: {case}: {c['name']}: TANDEM_KEEP_ON_EXIT {got!r}, "
                                 f"expected {want[c['name']]!r}{'' if wrapped else ', not wrapped'}")
                checked += 1
        print(f"  {name}: TANDEM_KEEP_ON_EXIT of {checked} containers checked")

    def native(self, name):
        """Each Pod on the native route: its job containers as created, no
        classic sidecar left, each moved one native and, when waited for,
        with tandem's wait in its postStart."""
        known = {"istio-proxy": "istio", "linkerd-proxy": "linkerd",
                 "cloud-sql-proxy": "cloudsql", "daprd": "dapr", "vault-agent": None}
        checked = 0
        for case, _, _ in self.cases:
            if not case.startswith(NATIVE):
                continue
            pod, base = self.stored[name][case], self.stored["baseline"][case]
            jobs = [c for c in base["spec"]["containers"] if c["name"] not in known]
            if pod["spec"]["containers"] != jobs:
                self.problem(f"{name}: {case}: containers {pod['spec']['containers']!r}, "
                             f"expected the job containers as created")
            for c in pod["spec"].get("initContainers", []):
                if c["name"] not in known:
                    continue
                hook = c.get("lifecycle", {}).get("postStart", {}).get("exec", {})
                ours = hook.get("command", [""])[0] == "/tandem/tandem"
                if c.get("restartPolicy") != "Always" or (
                        known[c["name"]] and not hook and "startupProbe" not in c):
                    self.problem(f"{name}: {case}: {c['name']} is not a native sidecar "
                                 f"waited for: {c!r}")
                if ours and hook["command"] != ["/tandem/tandem", "--mesh",
                                                known[c["name"]], "--wait-only"]:
                    self.problem(f"{name}: {case}: {c['name']}: postStart {hook!r}")
            line = pod["metadata"].get("annotations", {}).get(REPORT)
            if name.startswith("webhook") and not (line or "").startswith("native: "):
                self.problem(f"{name}: {case}: {REPORT} {line!r}, expected native: …")
            checked += 1
        print(f"  {name}: {checked} Pods on the native route checked")

    def left_alone(self, name):
        """The XCom container is as created, and base's tandem waits for no
        other job container (no TANDEM_JOB_CONTAINERS)."""
        case = "airflow-kpo-xcom"
        pod, base = self.stored[name][case], self.stored["baseline"][case]
        mine = {c["name"]: c for c in pod["spec"]["containers"]}
        for path, a, b in diff(next(c for c in base["spec"]["containers"] if c["name"] == XCOM),
                               mine[XCOM]):
            self.problem(f"{name}: {case}: {XCOM} was changed at {path}: {a!r} -> {b!r}")
        if any(e["name"] == "TANDEM_JOB_CONTAINERS" for e in mine["base"].get("env", [])):
            self.problem(f"{name}: {case}: base was given TANDEM_JOB_CONTAINERS")
        print(f"  {name}: {XCOM} left alone checked")

    def same(self, left, right):
        """Every case's Pod from `left` equals the one from `right`, but for
        the webhook's annotation."""
        n = 0
        for case, _, _ in self.cases:
            found = diff(unreported(self.stored[left][case]),
                         unreported(self.stored[right][case]))
            for path, a, b in found:
                self.problem(f"{right} vs {left}: {case}: {path}: {left} {json.dumps(a)}"
                             f" / {right} {json.dumps(b)}")
            n += not found
        print(f"  {right} vs {left}: {n} of {len(self.cases)} Pods identical")

    def again(self, name):
        """Each injected Pod created again comes back as it was."""
        for case, ns, _ in self.cases:
            pod = copy.deepcopy(self.stored[name][case])
            if not injected(pod):
                continue
            second, _ = create_pod(self.api, ns, pod)
            for path, a, b in diff(pod, second):
                self.problem(f"{name}: {case} changed when created again: {path}: {a!r} -> {b!r}")

    def warnings(self):
        """The ValidatingAdmissionPolicy's warning on an opted-in Job and CronJob."""
        uploader = self.stored["baseline"]["no-command"]["spec"]["containers"][1]
        spec = {"template": {"metadata": {"labels": {LABEL: "enabled"}}, "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "uploader", "image": uploader["image"], "args": ["--to=s3"]}]}}}
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "warned"}, "spec": spec}
        cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "warned"},
                "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": spec}}}
        quiet = copy.deepcopy(job)
        quiet["spec"]["template"]["spec"]["containers"][0]["command"] = ["/app/upload"]
        annotated = copy.deepcopy(job)
        annotated["spec"]["template"]["metadata"]["annotations"] = {
            "tandem.dev/entrypoint.uploader": '["/app/upload"]'}
        unlabelled = copy.deepcopy(job)
        del unlabelled["spec"]["template"]["metadata"]["labels"]
        for what, obj, ns, expect in [
            ("Job", job, NS, True), ("CronJob", cron, NS, True),
            ("Job in a labelled namespace", unlabelled, NS_LABELLED, True),
            ("Job with a command", quiet, NS, False),
            ("Job with the entrypoint annotation", annotated, NS, False),
            ("Job not opted in", unlabelled, NS, False),
        ]:
            kind = "jobs" if obj["kind"] == "Job" else "cronjobs"
            _, warnings = self.api.must(
                "POST", f"/apis/batch/v1/namespaces/{ns}/{kind}?dryRun=All", obj)
            ours = [w for w in warnings if "tandem: uploader has no command" in w]
            if ours and what == "Job":
                print(f"  the warning: {ours[0]}")
            print(f"  {what}: {'warned: ' + ours[0][:90] + '...' if ours else 'no warning'}")
            if bool(ours) != expect:
                self.problem(f"policy warning: {what}: expected {'a' if expect else 'no'} "
                             f"warning, got {warnings}")
        self.kubectl(job)

    def kubectl(self, job):
        """What a person sees: `kubectl create` prints the warning (if there is a kubectl)."""
        kubectl = shutil.which("kubectl")
        if not kubectl:
            print("  kubectl: not on PATH, not tried")
            return
        path = self.workdir / "warned-job.json"
        path.write_text(json.dumps(job))
        done = subprocess.run(
            [kubectl, "--kubeconfig", str(self.api.kubeconfig()), "create", "--dry-run=server",
             "-n", NS, "-f", str(path)], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            print(f"  kubectl: exit {done.returncode}, not usable here: {done.stderr.strip()[:300]}")
            return
        shown = [l for l in done.stderr.splitlines() if l.startswith("Warning:")]
        print(f"  kubectl create: {shown[0][:100] + '...' if shown else 'NO warning shown'}")
        if not any("tandem: uploader has no command" in l for l in shown):
            self.problem(f"kubectl create of the Job showed no warning: {done.stderr.strip()}")

    def jobs(self, name):
        """Real Jobs (the controller manager creates their Pods): each Pod injected,
        the same through every pass (the token volume's random name aside)."""
        for case in ["istio-classic", "two-jobs", "no-command"]:
            template = copy.deepcopy(next(p for n, _, p in self.cases if n == case))
            spec = template["spec"]
            for c in spec["containers"] + spec.get("initContainers", []):
                c.pop("volumeMounts", None)  # the token's: the ServiceAccount plugin adds it
            job_name = f"{name}-{case}"
            job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": job_name},
                   "spec": {"backoffLimit": 0, "template": {
                       "metadata": {"labels": {LABEL: "enabled"}},
                       "spec": {k: spec[k] for k in ["containers", "initContainers", "restartPolicy"]
                                if k in spec}}}}
            self.api.must("POST", f"/apis/batch/v1/namespaces/{NS}/jobs", job)
            pod = self.job_pod(job_name)
            if pod is None:
                self.problem(f"{name}: Job {job_name} made no Pod within 60 s")
                continue
            token = next(v["name"] for v in pod["spec"]["volumes"] if "projected" in v)
            pod = json.loads(json.dumps(pod["spec"]).replace(token, "kube-api-access-TOKEN"))
            state = "injected" if injected({"spec": pod}) else "NOT injected"
            print(f"  Job {job_name}: its Pod {state}")
            if not injected({"spec": pod}):
                self.problem(f"{name}: the Pod of Job {job_name} was not injected")
            first = self.job_pods.setdefault(case, (name, pod))
            for path, a, b in diff(first[1], pod):
                self.problem(f"Job {case}: {first[0]} vs {name}: {path}: {json.dumps(a)} / {json.dumps(b)}")

    def job_pod(self, job_name, bound=60.0):
        end = time.monotonic() + bound
        while time.monotonic() < end:
            found, _ = self.api.must(
                "GET", f"/api/v1/namespaces/{NS}/pods?labelSelector=job-name%3D{job_name}")
            if found["items"]:
                return found["items"][0]
            time.sleep(0.5)
        return None

    def reinvoked(self, name):
        """A mesh's injector adds istio-proxy after tandem's change: tandem runs
        again and the plain Pod ends as the istio-classic one did (its spec)."""
        classic = self.stored["webhook-emptydir"]["istio-classic"]
        sidecar = classic["spec"]["containers"][1]
        mesh = MeshWebhook(self.api, sidecar)
        try:
            # The first create the mesh's webhook changed (its configuration
            # reaches the API server's informer a moment after it is created).
            pod = until(self.api, self.plain, lambda p: sidecar["name"] in
                        [c["name"] for c in p["spec"]["containers"]], "the mesh's webhook")
        finally:
            mesh.stop()
        found = diff(classic["spec"], pod["spec"])
        report = pod["metadata"].get("annotations", {}).get(REPORT)
        if name.startswith("webhook"):
            print(f"  its {REPORT}: {report}")
        for path, a, b in found:
            self.problem(f"{name} then a mesh's webhook: plain: .spec{path}: "
                         f"istio-classic through the webhook {json.dumps(a)} / {json.dumps(b)}")
        print(f"  plain, then istio-proxy added by another webhook: "
              f"{'as istio-classic through the webhook' if not found else 'DIFFERENT'}")
        # The native route: the re-invocation moves the proxy another webhook
        # added after tandem's first review.
        native = self.stored["webhook-emptydir"][f"{NATIVE}istio"]
        plain = copy.deepcopy(self.plain)
        plain["metadata"].setdefault("annotations", {})[ROUTE] = "native"
        mesh = MeshWebhook(self.api, sidecar)
        try:
            # Moved or not, the proxy is in the Pod once the mesh's webhook is in effect.
            pod = until(self.api, plain, lambda p: sidecar["name"] in [
                c["name"] for c in p["spec"]["containers"] + p["spec"].get("initContainers", [])],
                "the mesh's webhook")
        finally:
            mesh.stop()
        found = diff(native["spec"], pod["spec"])
        for path, a, b in found:
            self.problem(f"{name} native, then a mesh's webhook: plain: .spec{path}: "
                         f"{NATIVE}istio through the webhook {json.dumps(a)} / {json.dumps(b)}")
        print(f"  plain on the native route, then istio-proxy added by another webhook: "
              f"{'as ' + NATIVE + 'istio through the webhook' if not found else 'DIFFERENT'}")

    def idle(self, seconds):
        """Reviews after the webhook's connection sat idle are answered."""
        for wait in seconds:
            time.sleep(wait)
            pod, _ = create_pod(self.api, NS, self.plain)
            ok = injected(pod)
            print(f"  after {wait:g} s idle: {'injected' if ok else 'NOT injected'}")
            if not ok:
                self.problem(f"webhook: a review after {wait:g} s idle was not answered in time")

    def type_checking(self, objects):
        """What the API server's type check of each policy found (status)."""
        for obj in objects:
            if not obj["kind"].endswith("Policy"):
                continue
            stored, _ = self.api.must(
                "GET", f"{k8s.collection(obj['kind'])}/{obj['metadata']['name']}")
            status = stored.get("status", {})
            warnings = status.get("typeChecking", {}).get("expressionWarnings", [])
            print(f"  {obj['kind']} type check: {len(warnings)} warnings"
                  f"{'' if status else ' (no status)'}")
            for w in warnings:
                print(f"    {w.get('fieldRef')}: {w.get('warning')}")

    def metrics(self):
        """The API server's counters of policy errors (a CEL error is silent)."""
        _, _, text = self.api.call("GET", "/metrics")
        # error_type: no_error, invalid_error (a validation that failed: the
        # warning) or an evaluation's error (compile_error, ...).
        lines = [l for l in str(text).splitlines()
                 if "admission_policy_check_total{" in l and "tandem-injector" in l]
        errors = [l for l in lines if not any(
            f'error_type="{ok}"' in l for ok in ["no_error", "invalid_error"])]
        for line in errors:
            self.problem(f"policy metrics: {line}")
        for line in lines:
            print(f"  {line}")


def main(argv):
    if len(argv) < 6:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    kube_apiserver, etcd, injector, original, workdir = argv[1:6]
    idle = [float(s) for s in argv[6:]] or DEFAULT_IDLE
    workdir = Path(workdir).resolve()
    subprocess.run(["rm", "-rf", str(workdir)], check=True)
    kcm = os.environ.get("KUBE_CONTROLLER_MANAGER") or None
    versions = os.environ.get("E2E_VERSIONS", "").split() or EMULATED
    problems = 0
    for version in versions:
        newest = version == versions[-1]
        print(f"== kube-apiserver emulating {version}"
              f"{': webhook, policy, idle, cost' if newest else ': webhook'}")
        api = None
        try:
            api = k8s.Cluster(kube_apiserver, etcd, workdir / f"cluster-{version}",
                              kcm if newest else None, emulated=version,
                              audit_policy=cost_mod.audit_policy(NS_COST) if newest else None)
            problems += run(api, injector, original, workdir / version, idle, kcm, version, newest)
        except (k8s.Failed, subprocess.CalledProcessError, OSError) as e:
            print(f"e2e-apiserver: FAILED on {version}: {e}", file=sys.stderr)
            return 2
        finally:
            if api:
                api.stop()
    print(f"e2e-apiserver: {problems} mismatches in all")
    return 1 if problems else 0


def run(api, injector, original, workdir, idle, kcm, emulated, newest):
    """The passes on one API server; the number of mismatches. The policy
    passes, the idle waits and the cost figures only on the newest version."""
    workdir.mkdir(parents=True, exist_ok=True)
    version, _ = api.must("GET", "/version")
    print(f"kube-apiserver {version.get('gitVersion')} at {api.url}; logs in {workdir}")
    group, _ = api.must("GET", "/apis/admissionregistration.k8s.io/v1")
    served = {r["name"] for r in group["resources"]}
    if newest and "mutatingadmissionpolicies" not in served:
        raise k8s.Failed(f"admissionregistration.k8s.io/v1 serves no mutatingadmissionpolicies: {served}")
    for ns, labels in [(NS, {}), (NS_LABELLED, {LABEL: "enabled"}), (NS_COST, {})]:
        k8s.create(api, {"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": ns, "labels": labels}})
        # No controller manager: the ServiceAccount plugin needs the account.
        k8s.create(api, {"apiVersion": "v1", "kind": "ServiceAccount",
                         "metadata": {"name": "default"}}, ns)
    r = Run(api, injector, original, workdir, int(emulated.split(".")[1]))
    print(f"{len(r.cases)} cases: {', '.join(n for n, _, _ in r.cases)}")
    r.pass_("baseline")
    print(f"  emulating {version.get('emulationMajor', '?')}.{version.get('emulationMinor', '?')}")
    # Image volumes are on by default from 1.35 (an older API server drops the field).
    modes = ["emptydir"] + (["image-volume"] if int(emulated.split(".")[1]) >= 35 else [])
    for mode in modes:
        print(f"webhook-{mode}:")
        hook = webhook(api, injector, mode, workdir)
        wait_injecting(api, r.plain, f"webhook-{mode}")
        r.pass_(f"webhook-{mode}")
        if kcm and newest and mode == "emptydir":
            r.jobs(f"webhook-{mode}")
        r.untouched(f"webhook-{mode}")
        r.kept(f"webhook-{mode}")
        r.native(f"webhook-{mode}")
        r.left_alone(f"webhook-{mode}")
        r.reported(f"webhook-{mode}")
        if mode == "emptydir":
            r.reinvoked(f"webhook-{mode}")
        r.again(f"webhook-{mode}")
        if mode == "emptydir" and newest:
            r.idle(idle)
        hook.stop()
        if newest:
            policy_passes(r, api, injector, mode, kcm)
    if newest:
        cost(r, api, injector)
    print(f"e2e-apiserver: {len(r.problems)} mismatches")
    return len(r.problems)


def policy_passes(r, api, injector, mode, kcm):
    """The printed policy's Pods, compared with the webhook's."""
    print(f"policy-{mode}:")
    objects = policy(api, injector, mode)
    wait_injecting(api, r.plain, f"policy-{mode}")
    r.pass_(f"policy-{mode}")
    if kcm and mode == "emptydir":
        r.jobs(f"policy-{mode}")
    r.untouched(f"policy-{mode}")
    r.kept(f"policy-{mode}")
    r.native(f"policy-{mode}")
    r.left_alone(f"policy-{mode}")
    if mode == "emptydir":
        r.reinvoked(f"policy-{mode}")
    r.again(f"policy-{mode}")
    r.same(f"webhook-{mode}", f"policy-{mode}")
    if mode == "emptydir":
        r.warnings()
        print("both-emptydir:")
        hook = webhook(api, injector, mode, r.workdir)
        reviewed(api, r.plain, hook)
        r.pass_("both-emptydir")
        r.same("policy-emptydir", "both-emptydir")
        hook.stop()
    r.metrics()
    r.type_checking(objects)
    for obj in reversed(objects):
        k8s.delete(api, obj)
    until(api, r.plain, lambda p: not injected(p), f"policy-{mode} gone")


def until(api, pod, done, what, bound=60.0):
    """The first Pod that creating `pod` answers for which `done` holds
    (informers take a moment to see a change of configuration); only a hang
    reaches `bound`."""
    end = time.monotonic() + bound
    while True:
        stored = create_pod(api, NS, pod)[0]
        if done(stored):
            return stored
        if time.monotonic() >= end:
            raise k8s.Failed(f"{what}: not in effect after {bound:.0f} s")
        time.sleep(0.2)


def reviewed(api, pod, hook, bound=60.0):
    """Until a create of `pod` has reached the webhook of `hook` (its log has
    a line for it), whatever it answered: the webhook is in effect."""
    end = time.monotonic() + bound
    while True:
        create_pod(api, NS, pod)
        if "dry run:" in hook.log.read_text(errors="replace"):
            return
        if time.monotonic() >= end:
            raise k8s.Failed(f"{hook.log}: no review within {bound:.0f} s")
        time.sleep(0.2)


def cost(r, api, injector):
    """What each route adds to a Pod create (admission_cost), every answer
    checked: injected where the route injects. Every route's objects are in
    place at once, each admitting only its own route's Pods, and the routes
    are interleaved create by create. E2E_COST_CREATES (creates a route, 600),
    E2E_COST_POLICY (a printed policy to measure instead of this build's),
    E2E_COST_BEFORE (another printed policy, measured in the same cycles as
    `policy-before`: an earlier version beside this one), E2E_COST_VARIANTS=1
    (where the policy's time goes, one variable at a time)."""
    n = int(os.environ.get("E2E_COST_CREATES", "600"))
    if n <= 0:
        print("admission cost: E2E_COST_CREATES=0, not measured")
        return
    if not api.audit_log:
        raise k8s.Failed("admission cost: the API server writes no audit log")
    given = os.environ.get("E2E_COST_POLICY")
    text = Path(given).read_text() if given else subprocess.run(
        [injector, "policy", "--image", IMAGE], check=True, capture_output=True,
        text=True).stdout
    printed = [d for d in yaml.safe_load_all(text) if d]
    print(f"admission cost: the policy of {given or injector}")
    only = cost_mod.only_route
    # One injector for each webhook route, so that each one's /metrics give
    # its own time a review.
    hooks = {}
    for name in ("webhook-unchanged", "webhook"):
        (r.workdir / name).mkdir(parents=True, exist_ok=True)
        hooks[name] = webhook(api, injector, "emptydir", r.workdir / name, register=False)
    labelled = cost_mod.labelled_by_floor
    routes = {"none": [],
              "webhook-unchanged": only([hooks["webhook-unchanged"].config],
                                        "webhook-unchanged", "unchanged"),
              "webhook": only([hooks["webhook"].config], "webhook"),
              "policy-one-op": only(cost_mod.floor_policy(printed), "policy-one-op"),
              "policy": only(printed, "policy")}
    expect = {"none": lambda p: not injected(p), "webhook-unchanged": injected,
              "webhook": injected, "policy": injected, "policy-one-op": labelled}
    # Each route's own call in the API server's histograms, by its copy's name.
    calls = {"webhook-unchanged": ("admission_webhook_admission", 'name="unchanged.pods.'),
             "webhook": ("admission_webhook_admission", 'name="pods.'),
             "policy-one-op": ("mutating_admission_policy_check",
                               f'policy="{cost_mod.FLOOR_NAME}"'),
             "policy": ("mutating_admission_policy_check", 'policy="tandem-injector"')}
    variants = cost_mod.variants(printed) if os.environ.get("E2E_COST_VARIANTS") == "1" else {}
    before = os.environ.get("E2E_COST_BEFORE")
    if before:
        objs = [d for d in yaml.safe_load_all(Path(before).read_text()) if d]
        variants["policy-before"] = cost_mod.renamed_policy(objs, "tandem-before")
        print(f"  policy-before: the policy of {before}")
    for name, objs in variants.items():
        routes[name] = only(objs, name)
        expect[name] = injected if name == "policy-before" else labelled
        policy = next(o for o in objs if o["kind"] == "MutatingAdmissionPolicy")
        calls[name] = ("mutating_admission_policy_check",
                       f'policy="{policy["metadata"]["name"]}"')
    pods = {name: cost_mod.on_route(r.plain, name) for name in routes}
    pods["webhook-unchanged"] = cost_mod.on_route(r.stored["webhook-emptydir"]["plain"],
                                                  "webhook-unchanged")
    wrong = []

    def check(route, status, pod):
        if status != 201 or not expect[route](pod):
            wrong.append(route)
    created = [obj for objs in routes.values() for obj in objs]
    m = cost_mod.Measure(api, NS_COST, pods, check, api.audit_log, hooks)
    try:
        for obj in created:
            k8s.create(api, obj)
        for name in routes:
            until(api, pods[name], expect[name], name)
        m.run(cost_mod.ROUTES + list(variants), n)
    finally:
        for obj in reversed(created):
            k8s.delete(api, obj)
        for hook in hooks.values():
            hook.stop()
    for p in m.report(calls):
        r.problem(p)
    if before:
        variants.pop("policy-before")
        ratio = m.served("policy-before") / max(m.served("policy-one-op"), 1e-9)
        runs, mean = m.own(calls["policy-before"])
        print(f"    policy-before      added {m.added('policy-before'):+.2f} ms "
              f"(server {m.served('policy-before'):+.2f} ms, {ratio:.2f}x policy-one-op's); "
              f"its call {runs:.2f} x {mean or 0:.0f} µs")
    if variants:
        print("  the printed policy's match and one operation, after evaluating:")
        for name in ["policy-one-op", *variants, "policy"]:
            runs, mean = m.own(calls[name])
            print(f"    {name:22} added {m.added(name):+.2f} ms (server {m.served(name):+.2f} ms); "
                  f"its call {runs:.2f} x {mean or 0:.0f} µs")
    for route in sorted(set(wrong)):
        r.problem(f"admission cost: {wrong.count(route)} answers of {route} "
                  "were not what the route makes")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
