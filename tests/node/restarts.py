"""The scenarios of `make e2e-node` for Pods that run to completion whoever owns
them, and for containers the kubelet runs again in the same Pod (SPEC §10 "run
to completion" and "Restart in place"), all through the injector's
webhook (one also through the printed policy):

  7 restart in place  an opted-in OnFailure Job, a Never Job whose container
                      restarts by its own restartPolicyRules, and one whose rule
                      is RestartAllContainers: the app fails its first run (exit
                      3) and succeeds on its restart in the same Pod; the Job
                      completes with one Pod, the sidecar quit once, after the
                      success
  8 any owner         labelled Pods no Job owns end Succeeded / Failed with their
                      app's status (one shaped as Airflow's KubernetesPodOperator);
                      a labelled restartPolicy Always Pod is stored untouched

`Restarts` is mixed into scenarios.Run: it uses its API client, images, webhook
and helpers.
"""

import contextlib
import copy
import datetime
import re

import cluster as k8s
from jobs import NS, create_job, delete_job, log, pods_of, statuses, wait_for

# Where the app records its first run: a volume that outlives the container.
MARK_DIR = "/run-state"
ISTIO_QUIT = "quit POST http://127.0.0.1:15020/quitquitquit: 200"
# What the pilot-agent stand-in (tests/pods/bin/istio-proxy.sh) logs on each quit.
SIDECAR_QUIT = "pilot-agent stand-in: asked to quit"
FIRST_RUN = "app: first run in this Pod"
SUCCESS = "app: done, exiting 0"
# Airflow's KubernetesPodOperator: its container name and the labels it sets.
AIRFLOW_LABELS = {"dag_id": "nightly_export", "task_id": "export_orders", "try_number": "1",
                  "airflow_version": "2.10.5", "kubernetes_pod_operator": "True"}
TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z (.*)$")


def stamped(text):
    """[(datetime, line)] of a log read with timestamps=true."""
    out = []
    for line in text.splitlines():
        m = TIME.match(line)
        if m:
            when = datetime.datetime.fromisoformat(m[1]).replace(
                microsecond=int((m[2] or "0")[:6].ljust(6, "0")))
            out.append((when, m[3]))
    return out


def env_of(container, name):
    return next((e.get("value") for e in container.get("env", []) if e["name"] == name), None)


def restarts_of(pod):
    """{container: restartCount}, init containers too."""
    status = pod.get("status") or {}
    return {s["name"]: s.get("restartCount", 0)
            for s in status.get("initContainerStatuses", []) + status.get("containerStatuses", [])}


def last_run(pod, container):
    """(exit code, termination message) of CONTAINER's run before its last."""
    status = next(s for s in pod["status"].get("containerStatuses", []) if s["name"] == container)
    ended = (status.get("lastState") or {}).get("terminated") or {}
    return ended.get("exitCode"), ended.get("message", "")


class Restarts:
    """The restart and any-owner scenarios, methods of scenarios.Run."""

    @contextlib.contextmanager
    def injecting(self):
        """The webhook registered (emptydir install) for the length of a scenario;
        yields a function that reads its /metrics."""
        hook = self.start_webhook("emptydir")
        try:
            yield lambda: self.injector_metrics(hook)
        finally:
            self.stop_webhook(hook)

    # -- restart in place ------------------------------------------------------

    def fail_once_job(self, name, pod_policy="Never", own_policy=None, rule_action=None):
        """The opted-in Istio Job whose app fails its first run in the Pod (exit 3)
        and succeeds on the next; OWN_POLICY and RULE_ACTION give its container a
        restartPolicy and a rule on exit 3 (KEP-5307; RestartAllContainers: KEP-5532)."""
        job = self.opted_in(name)
        spec = job["spec"]["template"]["spec"]
        spec["restartPolicy"] = pod_policy
        app = next(c for c in spec["containers"] if c["name"] == "job")
        app.setdefault("env", []).extend([
            {"name": "APP_FAIL_ONCE", "value": f"{MARK_DIR}/ran"}, {"name": "APP_CODE", "value": "0"}])
        app.setdefault("volumeMounts", []).append({"name": "run-state", "mountPath": MARK_DIR})
        spec.setdefault("volumes", []).append({"name": "run-state", "emptyDir": {}})
        if own_policy:
            app["restartPolicy"] = own_policy
            app["restartPolicyRules"] = [{"action": rule_action or "Restart",
                                          "exitCodes": {"operator": "In", "values": [3]}}]
        if pod_policy == "Never":
            # A second Pod would hide a failed restart in place: none is allowed.
            job["spec"]["backoffLimit"] = 0
        return job

    def job_complete(self, name, ns=NS):
        def done():
            j, _ = self.api.must("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")
            conds = {c["type"]: c for c in j.get("status", {}).get("conditions", [])
                     if c["status"] == "True"}
            if "Failed" in conds:
                raise k8s.Failed(f"job {name} failed: {conds['Failed'].get('reason')}: "
                                 f"{conds['Failed'].get('message')}")
            return j if "Complete" in conds else None
        return wait_for(done, 180, f"job {name} complete")

    def restarted_in_place(self, name, keep, whole_pod):
        """Runs the fail-once Job NAME (created already) to completion and checks:
        one Pod, Succeeded; the job container got TANDEM_KEEP_ON_EXIT=KEEP; a later
        run in the Pod succeeded (only a run that finds the first run's mark does);
        the sidecar's current run got exactly one quit, after that success. The first
        run exited 3 and quit nothing, the sidecar ran through both runs; or, WHOLE_POD
        (RestartAllContainers), the kubelet started every container again."""
        self.job_complete(name)
        found = pods_of(self.api, name)
        if len(found) != 1:
            raise k8s.Failed(f"{name}: {len(found)} Pods, not one restarted in place")
        pod = found[0]
        pname = pod["metadata"]["name"]
        app = next(c for c in pod["spec"]["containers"] if c["name"] == "job")
        got = env_of(app, "TANDEM_KEEP_ON_EXIT")
        if got != keep:
            raise k8s.Failed(f"{name}: TANDEM_KEEP_ON_EXIT is {got!r}, want {keep!r}")
        st, counts = statuses(pod), restarts_of(pod)
        if (pod["status"]["phase"] != "Succeeded" or st["job"][:2] != ("terminated", 0)
                or st["istio-proxy"][:2] != ("terminated", 0)):
            raise k8s.Failed(f"{name}: {pod['status']['phase']}, {st}")
        now = log(self.api, pname, "job", timestamps=True)
        if SUCCESS not in now or ISTIO_QUIT not in now:
            raise k8s.Failed(f"{name}: the job's last run did not succeed and quit: {now[-800:]!r}")
        # The first run's container and log are gone once the Pod has completed (the
        # kubelet keeps one dead container each); its status stays, and the message
        # of its exit 3 is its log's tail (FallbackToLogsOnError).
        code, message = last_run(pod, "job")
        if whole_pod:
            # The kubelet writes over that status when it removes every container.
            if "RestartAllContainers" not in message or min(counts.values()) < 1:
                raise k8s.Failed(f"{name}: not every container ran again ({counts}); the "
                                 f"job's last state: {code} {message!r}")
            first = f"the job's last state {code} {message.strip()!r}"
        else:
            if code != 3 or FIRST_RUN not in message or "quit POST" in message:
                raise k8s.Failed(f"{name}: the job's first run ended {code}: {message[-800:]!r}")
            if counts["istio-proxy"]:
                raise k8s.Failed(f"{name}: istio-proxy ran again ({counts}): it was not kept")
            first = next((line.split("tandem: ", 1)[-1] for line in message.splitlines()
                          if "keep" in line), "no line on keeping")
        quits = self.sidecar_quits(pname)
        success = max(t for t, line in stamped(now) if line == SUCCESS)
        if quits[0] < success:
            raise k8s.Failed(f"{name}: istio-proxy quit at {quits[0]}, before the success "
                             f"at {success}")
        return (f"1 Pod, Succeeded; TANDEM_KEEP_ON_EXIT={got}; restarts {counts}; first run: "
                f"{first!r}; then {SUCCESS!r}; istio-proxy quit once, "
                f"{(quits[0] - success).total_seconds() * 1000:.0f} ms after the success")

    def sidecar_quits(self, pname):
        """The times of the quits istio-proxy's current run logged: exactly one, and
        none in a previous run."""
        quits = [t for t, line in stamped(log(self.api, pname, "istio-proxy", timestamps=True))
                 if SIDECAR_QUIT in line]
        if len(quits) != 1:
            raise k8s.Failed(f"istio-proxy's current run got {len(quits)} quits, not 1")
        earlier = log(self.api, pname, "istio-proxy", previous=True)
        if SIDECAR_QUIT in earlier:
            raise k8s.Failed(f"istio-proxy's previous run was quit: {earlier[-400:]!r}")
        return quits

    def fail_once(self, name, keep, **shape):
        """Creates fail_once_job(NAME, **SHAPE), checks it as restarted_in_place
        does, and deletes it, passed or not (a hung Pod would load the next ones)."""
        try:
            create_job(self.api, self.fail_once_job(name, **shape))
            return self.restarted_in_place(name, keep, shape.get("rule_action") ==
                                           "RestartAllContainers")
        except k8s.Failed as e:
            raise k8s.Failed(f"{e}; {self.story(pods_of(self.api, name))}") from e
        finally:
            delete_job(self.api, name)

    def story(self, found):
        """What a failed scenario's Pods show: phase, states, restarts, the last
        lines of each container's log (what `kubectl describe` and `logs` say)."""
        parts = []
        for pod in found:
            name = pod["metadata"]["name"]
            tails = {c: " | ".join(log(self.api, name, c).strip().splitlines()[-3:])
                     for c in statuses(pod)}
            parts.append(f"Pod {name} {pod['status'].get('phase')}: {statuses(pod)}, restarts "
                         f"{restarts_of(pod)}, logs {tails}")
        return "; ".join(parts) or "no Pod"

    def on_failure(self):
        with self.injecting():
            return self.fail_once("on-failure", "1-255", pod_policy="OnFailure")

    def restart_rules(self):
        with self.injecting():
            return self.fail_once("restart-rules", "3", own_policy="Never")

    def restart_all(self):
        """RestartAllContainers (1.36): the kubelet kills and starts again every
        container of the Pod, the kept sidecar and the init container too."""
        with self.injecting():
            return self.fail_once("restart-all", "3", own_policy="Never",
                                  rule_action="RestartAllContainers")

    # -- any owner ---------------------------------------------------------------

    def bare_pod(self, name, code, labels=None, container="job"):
        """The opted-in Istio Job's Pod template as a Pod no Job owns, its app
        exiting CODE, its job container named CONTAINER."""
        template = self.opted_in(name)["spec"]["template"]
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": NS,
                            "labels": dict(template["metadata"]["labels"], **(labels or {})),
                            "annotations": template["metadata"].get("annotations") or {}},
               "spec": copy.deepcopy(template["spec"])}
        app = next(c for c in pod["spec"]["containers"] if c["name"] == "job")
        app["name"] = container
        app.setdefault("env", []).append({"name": "APP_CODE", "value": str(code)})
        return pod

    def pod_ended(self, name, phase, code, container="job"):
        try:
            pod = wait_for(lambda: (lambda p: p if p and p.get("status", {}).get("phase") in
                                    ("Succeeded", "Failed") else None)(self.get_pod(name)),
                           150, f"Pod {name} finished")
        except k8s.Failed as e:
            raise k8s.Failed(f"{e}; {self.story([self.get_pod(name)])}") from e
        st = statuses(pod)
        note = pod["metadata"].get("annotations", {}).get("tandem.dev/injection")
        if (pod["status"]["phase"] != phase or st[container][:2] != ("terminated", code)
                or st["istio-proxy"][:2] != ("terminated", 0) or not note):
            raise k8s.Failed(f"{name}: {pod['status']['phase']} (want {phase}), {st}, "
                             f"annotation {note!r}")
        return f"{name} {phase}: {container} {code}, istio-proxy 0"

    def get_pod(self, name):
        status, _, pod = self.api.call("GET", f"/api/v1/namespaces/{NS}/pods/{name}")
        return pod if status == 200 else None

    def delete_pod(self, name):
        self.api.call("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}",
                      {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})

    def bare_pods(self):
        airflow = self.bare_pod("airflow-export-orders", 0, AIRFLOW_LABELS, container="base")
        made = [self.bare_pod("bare-ok", 0), self.bare_pod("bare-fail", 3), airflow]
        try:
            with self.injecting():
                for pod in made:
                    self.api.must("POST", f"/api/v1/namespaces/{NS}/pods", pod)
            lines = [self.pod_ended("bare-ok", "Succeeded", 0),
                     self.pod_ended("bare-fail", "Failed", 3),
                     self.pod_ended("airflow-export-orders", "Succeeded", 0, container="base")]
            return "no owner: " + "; ".join(lines) + " (the last with Airflow's labels, container base)"
        finally:
            for pod in made:
                self.delete_pod(pod["metadata"]["name"])

    def always_untouched(self):
        with self.injecting():
            pod = self.bare_pod("always", 0)
            pod["spec"]["restartPolicy"] = "Always"
            stored, _ = self.api.must("POST", f"/api/v1/namespaces/{NS}/pods", pod)
            self.delete_pod("always")
        sent, got = pod["spec"]["containers"], stored["spec"]["containers"]
        note = stored["metadata"].get("annotations", {}).get("tandem.dev/injection")
        changed = [c["name"] for c, s in zip(got, sent)
                   if c.get("command") != s.get("command") or env_of(c, "TANDEM_KEEP_ON_EXIT")]
        inits = [c["name"] for c in stored["spec"].get("initContainers", [])]
        if note or changed or len(got) != len(sent) or inits:
            raise k8s.Failed(f"the Always Pod was changed: annotation {note!r}, containers "
                             f"{changed}, init containers {inits}")
        return (f"labelled, restartPolicy Always: stored with no annotation, command "
                f"{got[0]['command']} as sent, no init container")

    def policy_on_failure(self):
        """The OnFailure Job through the printed policy (called with it installed)."""
        return self.fail_once("policy-on-failure", "1-255", pod_policy="OnFailure")
