"""The Jobs of `make e2e-node` and the API calls that watch them: the examples'
Jobs with local images (tests/pods/pods.py's mapping and the sidecars a mesh's
injector would add), as Jobs on a real kubelet instead of Pods under podman.
"""

import copy
import json
import subprocess
import threading
import time
import urllib.parse

import cluster as k8s
import pods

NS = "tandem-e2e"


def pod_from(manifest, name, image, images=None, without_tandem=False, app_env=None,
             labels=None):
    """The Pod of MANIFEST's template (a Job's, or a CronJob's jobTemplate's) named
    NAME: local images and the injected sidecars (pods.make_pod), native ones as
    init containers, LABELS added, nothing else changed. IMAGE maps a key to a local
    name. Returns the Pod and its job containers' names."""
    shim = type("Images", (), {"image": staticmethod(image)})
    pod, jobs = pods.make_pod(shim, name, manifest, images=images,
                              without_tandem=without_tandem, app_env=app_env)
    natives(pod)
    pod["metadata"]["labels"].update(labels or {})
    pod["metadata"]["namespace"] = NS
    return pod, jobs


def job_from(manifest, name, image, images=None, without_tandem=False, app_env=None,
             labels=None):
    """The Job of MANIFEST (a CronJob's jobTemplate as `kubectl create job --from`
    makes it) named NAME, its Pod template as pod_from makes it."""
    doc = __import__("yaml").safe_load((pods.K8S / manifest).read_text())
    spec = doc["spec"]["jobTemplate"]["spec"] if doc["kind"] == "CronJob" else doc["spec"]
    pod, jobs = pod_from(manifest, name, image, images, without_tandem, app_env, labels)
    meta = pod["metadata"]
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": name, "namespace": NS},
           "spec": dict(copy.deepcopy(spec), template={
               "metadata": {"labels": meta["labels"], "annotations": meta["annotations"]},
               "spec": pod["spec"]})}
    return job, jobs


def natives(pod):
    """A mesh set to native sidecars injects its proxy as an init container that
    keeps running (restartPolicy: Always), as Istio and Linkerd do."""
    notes = pod["metadata"].get("annotations") or {}
    spec = pod["spec"]
    native = {"istio-proxy": notes.get("sidecar.istio.io/nativeSidecar") == "true",
              "linkerd-proxy": notes.get("config.linkerd.io/proxy-enable-native-sidecar") == "true"}
    for c in list(spec["containers"]):
        if native.get(c["name"]):
            spec["containers"].remove(c)
            c["restartPolicy"] = "Always"
            spec.setdefault("initContainers", []).insert(0, c)


def service_accounts(api, job):
    """Creates the ServiceAccount a template names (the examples name their own)."""
    name = job["spec"]["template"]["spec"].get("serviceAccountName")
    if name:
        api.call("POST", f"/api/v1/namespaces/{NS}/serviceaccounts",
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})


def create_job(api, job, ns=NS):
    service_accounts(api, job)
    api.must("POST", f"/apis/batch/v1/namespaces/{ns}/jobs", job)


def pods_of(api, job_name, ns=NS):
    sel = urllib.parse.quote(f"job-name={job_name}")
    found, _ = api.must("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector={sel}")
    return sorted(found["items"], key=lambda p: p["metadata"]["creationTimestamp"])


def first_pod(api, job_name, ns=NS):
    found = pods_of(api, job_name, ns)
    return found[0] if found else None


def statuses(pod):
    """{container: (state, exit code, message)} of a Pod, init containers too."""
    out = {}
    status = pod.get("status") or {}
    for s in status.get("initContainerStatuses", []) + status.get("containerStatuses", []):
        state = s.get("state") or {}
        if "terminated" in state:
            t = state["terminated"]
            out[s["name"]] = ("terminated", t.get("exitCode"), t.get("message", ""))
        elif "running" in state:
            out[s["name"]] = ("running", None, "")
        else:
            reason = (state.get("waiting") or {}).get("reason", "waiting")
            out[s["name"]] = (reason, None, "")
    return out


def finished(pod):
    return pod and pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


def wait_for(predicate, within, what):
    end = time.monotonic() + within
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise k8s.Failed(f"not within {within:.0f}s: {what}")
        time.sleep(0.5)


def log(api, pod, container, ns=NS, previous=False, timestamps=False):
    """A container's log through the API server (PREVIOUS: its run before the last
    restart; TIMESTAMPS: each line after the kubelet's RFC 3339 time of it)."""
    query = urllib.parse.urlencode({"container": container, "previous": str(previous).lower(),
                                    "timestamps": str(timestamps).lower()})
    status, _, text = api.call("GET", f"/api/v1/namespaces/{ns}/pods/{pod}/log?{query}")
    return text if status == 200 and isinstance(text, str) else json.dumps(text)


def delete_job(api, name, ns=NS):
    api.call("DELETE", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}",
             {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})


class Follow:
    """`kubectl logs -f` of one container, kept in a file: the log of a Pod that is
    deleted goes with it."""

    def __init__(self, kubectl, kubeconfig, pod, container, path, ns=NS):
        self.path = path
        self.out = open(path, "wb")
        self.proc = subprocess.Popen(
            [kubectl, f"--kubeconfig={kubeconfig}", "-n", ns, "logs", "-f", pod, "-c", container],
            stdout=self.out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def text(self):
        return self.path.read_text(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.out.close()


class Watch:
    """The last state seen of a Pod, polled on a thread until it is gone."""

    def __init__(self, api, name, ns=NS):
        self.api, self.name, self.ns = api, name, ns
        self.last, self.gone_at = None, None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            status, _, pod = self.api.call("GET", f"/api/v1/namespaces/{self.ns}/pods/{self.name}")
            if status == 404:
                self.gone_at = time.monotonic()
                return
            if status == 200:
                self.last = pod
            time.sleep(0.2)
