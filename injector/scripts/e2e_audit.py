#!/usr/bin/env python3
"""Audit before enabling (SPEC §10.8) in a real API server: `make e2e-audit`.

Starts etcd and kube-apiserver on loopback (cluster.py; with a
kube-controller-manager too when given, so real Jobs make the Pods), registers
tandem-injector with the shipped MutatingWebhookConfiguration pointed at
127.0.0.1, and checks:

  - a Job whose Pod template is labelled `tandem.dev/inject: audit`, and an
    unlabelled Job in a namespace labelled `audit`: each Pod is stored as it is
    without the webhook, but for the annotation `tandem.dev/injection`, which
    starts `audit: `;
  - with the first Pod's job container terminated while istio-proxy runs, and
    the second's job container running (statuses written through the status
    subresource), `tandem-injector audit` over `kubectl get pods -A -o json`
    lists the first with its Job and sidecar and not the second, and says what
    the injection would do to both (table and --output json);
  - it exits 65 for a single Pod (`kubectl get pod NAME -o json`) and 64 for an
    unknown option.

Each check prints PASS or FAIL; it exits 1 if any failed, 2 on a setup failure.

Usage: e2e_audit.py KUBE_APISERVER ETCD INJECTOR WORKDIR [KUBE_CONTROLLER_MANAGER]
"""

import copy
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path


sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).parent))
import cluster as k8s  # noqa: E402

LABEL = "tandem.dev/inject"
REPORT = "tandem.dev/injection"
IMAGE = "ghcr.io/tandem-sidecar/tandem:0.1.0"
NS_PODS = "audit-pods"
NS_AUDITED = "audit-namespace"
WOULD = "wrapped job (command from the spec; added TANDEM_MESH=istio)"


def template(label):
    """A Job's Pod template: a job container and a classic istio-proxy."""
    labels = {LABEL: label} if label else {}
    return {
        "metadata": {"labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "job", "image": "registry.example.com/job:1",
                 "command": ["/app/job"], "args": ["--once"]},
                {"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.28.0",
                 "args": ["proxy", "sidecar"]},
            ],
        },
    }


class Check:
    def __init__(self):
        self.failed = []

    def __call__(self, ok, what, detail=""):
        print(f"  {'PASS' if ok else 'FAIL'}: {what}" + (f": {detail}" if detail and not ok else ""))
        if not ok:
            self.failed.append(what)
        return ok


def job_pod(api, ns, name, label, kcm):
    """Creates Job `name` in `ns`; its Pod as stored: made by the Job
    controller with a controller manager, else created here as it would."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
           "spec": {"backoffLimit": 0, "template": template(label)}}
    stored, _ = api.must("POST", f"/apis/batch/v1/namespaces/{ns}/jobs", job)
    if not kcm:
        uid = stored["metadata"]["uid"]
        pod = copy.deepcopy(stored["spec"]["template"])
        pod["metadata"]["generateName"] = f"{name}-"
        pod["metadata"].setdefault("labels", {}).update(
            {"batch.kubernetes.io/job-name": name, "job-name": name,
             "batch.kubernetes.io/controller-uid": uid, "controller-uid": uid})
        pod["metadata"]["ownerReferences"] = [{
            "apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid,
            "controller": True, "blockOwnerDeletion": True}]
        created, _ = api.must("POST", f"/api/v1/namespaces/{ns}/pods", pod)
        return created
    end = time.monotonic() + 60
    while time.monotonic() < end:
        found, _ = api.must("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector=job-name%3D{name}")
        if found["items"]:
            return found["items"][0]
        time.sleep(0.5)
    raise k8s.Failed(f"Job {ns}/{name} made no Pod within 60 s")


def in_effect(api, bound=60.0):
    """Until a dry-run create of an audited Pod comes back annotated: the
    API server's informer has the webhook's configuration (only a hang
    reaches `bound`)."""
    probe = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"generateName": "probe-", **template("audit")["metadata"]},
             "spec": template("audit")["spec"]}
    end = time.monotonic() + bound
    while True:
        stored, _ = api.must("POST", f"/api/v1/namespaces/{NS_PODS}/pods?dryRun=All", probe)
        if REPORT in stored["metadata"].get("annotations", {}):
            return
        if time.monotonic() >= end:
            raise k8s.Failed(f"the webhook not in effect after {bound:.0f} s")
        time.sleep(0.2)


def comparable(pod):
    """What admission decided of a Job's `pod`: its spec (the token
    volume's random name made one), labels and annotations, the Job's name
    and uid made one."""
    pod = copy.deepcopy(pod)
    meta = pod["metadata"]
    text = json.dumps({"spec": pod["spec"], "labels": meta.get("labels", {}),
                       "annotations": meta.get("annotations", {})})
    token = next((v["name"] for v in pod["spec"].get("volumes", []) if "projected" in v), None)
    if token:
        text = text.replace(token, "kube-api-access-TOKEN")
    owner = meta["ownerReferences"][0]
    return json.loads(text.replace(owner["uid"], "JOB-UID").replace(owner["name"], "JOB"))


def set_status(api, pod, job_state):
    """The kubelet's report, through the status subresource: the job
    container in `job_state` (running or terminated), istio-proxy running."""
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    pod, _ = api.must("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    states = {"running": {"running": {"startedAt": now}},
              "terminated": {"terminated": {"exitCode": 0, "reason": "Completed",
                                            "startedAt": now, "finishedAt": now}}}

    def status(c, state):
        return {"name": c["name"], "image": c["image"], "imageID": "", "restartCount": 0,
                "ready": "running" in state, "started": "running" in state, "state": state}
    job, proxy = pod["spec"]["containers"]
    pod["status"] = {
        "phase": "Running", "startTime": now, "podIP": "10.0.0.7", "hostIP": "127.0.0.1",
        "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": now}],
        "containerStatuses": [status(job, states[job_state]), status(proxy, states["running"])],
    }
    api.must("PUT", f"/api/v1/namespaces/{ns}/pods/{name}/status", pod)


def kubectl(api, *args):
    done = subprocess.run(["kubectl", "--kubeconfig", str(api.kubeconfig()), *args],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise k8s.Failed(f"kubectl {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def audit(injector, *args, stdin=""):
    return subprocess.run([injector, "audit", *args], input=stdin, capture_output=True,
                          text=True, timeout=60)


def run(api, injector, workdir, kcm):
    check = Check()
    version, _ = api.must("GET", "/version")
    print(f"kube-apiserver {version.get('gitVersion')} at {api.url}; "
          f"{'real Jobs (kube-controller-manager)' if kcm else 'Job-owned Pods created here'}; "
          f"logs in {workdir}")
    for ns, labels in [(NS_PODS, {}), (NS_AUDITED, {LABEL: "audit"})]:
        k8s.create(api, {"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": ns, "labels": labels}})
        if not kcm:  # no serviceaccount controller: the ServiceAccount plugin needs it
            k8s.create(api, {"apiVersion": "v1", "kind": "ServiceAccount",
                             "metadata": {"name": "default"}}, ns)
    cases = [("labelled", NS_PODS, "audit"), ("in-namespace", NS_AUDITED, None)]
    print("without the webhook:")
    baseline = {}
    for name, ns, label in cases:
        pod = job_pod(api, ns, f"{name}-baseline", label, kcm)
        baseline[name] = comparable(pod)
        print(f"  {ns}/{pod['metadata']['name']}: stored")
    print("with the webhook (the shipped configuration):")
    hook = k8s.Injector(api, injector, Path(workdir) / "injector.log", ["--image", IMAGE])
    print(f"  registered {', '.join(hook.paths)}")
    in_effect(api)
    pods = {}
    try:
        for name, ns, label in cases:
            pod = job_pod(api, ns, name, label, kcm)
            pods[name] = pod
            said = pod["metadata"].get("annotations", {}).get(REPORT, "")
            print(f"  {ns}/{pod['metadata']['name']}: {REPORT}: {said!r}")
            check(said == f"audit: {WOULD}", f"{name}: the annotation says what would be done",
                  said)
            got = comparable(pod)
            got["annotations"].pop(REPORT, None)
            others = k8s_diff(baseline[name], got)
            check(not others, f"{name}: stored unchanged but for the annotation",
                  "; ".join(f"{p}: {json.dumps(a)} / {json.dumps(b)}" for p, a, b in others[:6]))
    finally:
        hook.stop()
    print(f"  injector log: {[l for l in hook.log.read_text().splitlines() if 'audit:' in l]}")

    print("tandem-injector audit over kubectl get pods -A -o json:")
    stuck, running = pods["labelled"], pods["in-namespace"]
    set_status(api, stuck, "terminated")
    set_status(api, running, "running")
    listed = kubectl(api, "get", "pods", "-A", "-o", "json")
    (Path(workdir) / "pods.json").write_text(listed)
    table = audit(injector, "-", stdin=listed)
    print("\n".join("    " + line for line in table.stdout.splitlines()))
    check(table.returncode == 0 and not table.stderr, "the table: exit 0, nothing on stderr",
          f"exit {table.returncode}: {table.stderr}")
    out = audit(injector, "--output", "json", "-", stdin=listed)
    check(out.returncode == 0, "--output json: exit 0", out.stderr)
    report = json.loads(out.stdout) if out.returncode == 0 else {"stuck": [], "injection": []}
    print("    " + json.dumps(report))

    def entry(pod):
        meta = pod["metadata"]
        owner = meta["ownerReferences"][0]
        return {"namespace": meta["namespace"], "pod": meta["name"],
                "job": owner["name"], "owner": f"{owner['kind']}/{owner['name']}"}
    check(report["stuck"] == [dict(entry(stuck), sidecars=["istio-proxy"])],
          "stuck: the Pod whose job container terminated while istio-proxy runs, with its Job "
          "and sidecar, and not the one whose job container runs", json.dumps(report["stuck"]))
    for pod in (stuck, running):
        mine = [i for i in report["injection"] if i["pod"] == pod["metadata"]["name"]]
        check(mine == [dict(entry(pod), would=WOULD)],
              f"injection: what it would do to {pod['metadata']['name']}", json.dumps(mine))
        check(pod["metadata"]["name"] in table.stdout, f"the table names {pod['metadata']['name']}")
    stuck_part = table.stdout.split("\n\n")[0]
    check(stuck["metadata"]["name"] in stuck_part and "istio-proxy" in stuck_part
          and running["metadata"]["name"] not in stuck_part,
          "the table's stuck part: the stuck Pod and its sidecar, not the running one", stuck_part)

    single = kubectl(api, "get", "pod", "-n", NS_PODS, stuck["metadata"]["name"], "-o", "json")
    one = audit(injector, "-", stdin=single)
    print(f"  a single Pod: exit {one.returncode}: {one.stderr.strip()}")
    check(one.returncode == 65 and len(one.stderr.splitlines()) == 1 and not one.stdout,
          "a single Pod: exit 65, one line")
    bad = audit(injector, "--namespace", "x")
    print(f"  an unknown option: exit {bad.returncode}: {bad.stderr.strip()}")
    check(bad.returncode == 64 and len(bad.stderr.splitlines()) == 1 and not bad.stdout,
          "an unknown option: exit 64, one line")
    print(f"e2e-audit: {len(check.failed)} failed")
    return 1 if check.failed else 0


def k8s_diff(a, b, path=""):
    """Paths where `a` and `b` differ, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in list(a) + [k for k in b if k not in a]:
            out += k8s_diff(a.get(key, "<absent>"), b.get(key, "<absent>"), f"{path}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in k8s_diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path or ".", a, b)]


def main(argv):
    if len(argv) < 5:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    kube_apiserver, etcd, injector, workdir = argv[1:5]
    kcm = argv[5] if len(argv) > 5 else None
    if not shutil.which("kubectl"):
        print("e2e-audit: no kubectl on PATH", file=sys.stderr)
        return 2
    workdir = Path(workdir).resolve()
    subprocess.run(["rm", "-rf", str(workdir)], check=True)
    injector = str(Path(injector).resolve())
    api = k8s.Cluster(kube_apiserver, etcd, workdir / "cluster", kcm)
    try:
        return run(api, injector, workdir, kcm)
    except (k8s.Failed, subprocess.CalledProcessError, OSError) as e:
        print(f"e2e-audit: FAILED: {e}", file=sys.stderr)
        return 2
    finally:
        api.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
