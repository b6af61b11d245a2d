"""The scenarios of `make e2e-node`, each a method of `Run` that returns its
evidence line or raises `k8s.Failed` with what went wrong:

  1 examples     every Job of examples/k8s/ ends with its app's status (3), its
                 sidecars terminated (classic ones exit 0)
  2 control      the Istio Job without tandem: the Pod stays Running after the app
  3 injector     opted-in Jobs that never mention tandem, through the webhook
                 (emptydir; image-volume on containerd 2.x), through the printed
                 policy alone, and a job container without command whose image
                 the injector reads from a loopback registry the kubelet pulls from
  4 grace        a running wrapped Pod deleted with a grace period: SIGTERM to the
                 app, --on-exit, the sidecar's quit, gone within the grace period
  5 more         a CronJob's Job and a labelled namespace's Job through the
                 injector; activeDeadlineSeconds while the app runs
  6 user view    termination messages, the tandem.dev/injection annotation,
                 `kubectl logs` through the API server
  7, 8           restarts in place and Pods of any owner (restarts.py)
  3 chart        charts/tandem-injector installed with Helm's library, the
                 injector as its Deployment; Jobs through it, both routes; an
                 upgrade keeping the certificate; an uninstall leaving nothing
                 (chart.py)
  9 native       the native route (SPEC §12): classic sidecars moved to native
                 ones that tandem waits for in postStart, the hand-written
                 controls, and the timing of both routes and of none (native.py)

E2E_NODE_ONLY=NAME,NAME runs only those (and what they build on, DEPENDS).
"""

import base64
import copy
import json
import shutil
import ssl
import subprocess
import time
import urllib.parse
import urllib.request

import yaml

import cluster as k8s
import pods
import pods_registry
from jobs import (NS, Follow, Watch, create_job, delete_job, first_pod, finished, job_from,
                  log, statuses, wait_for)
from chart import ChartScenario
from native import Native
from restarts import Restarts

LABEL = {"tandem.dev/inject": "enabled"}
NS_LABELLED = "tandem-e2e-labelled"
FINISH_WITHIN = 240.0
# The examples that are Jobs of the app with tandem in front, and the status each
# job container ends with (the job images exit 3).
EXAMPLES = sorted(p.name for p in pods.K8S.glob("*.yaml"))
# Every scenario, in the order it runs: its name and its method of Run.
ORDER = [("1-examples", "examples"), ("2-control", "control"),
         ("6-termination-message", "messages"), ("4-grace-delete", "grace"),
         ("4-grace-delete-envoy", "grace_envoy"), ("5-deadline", "deadline"),
         ("3-webhook", "webhook"), ("5-namespace-and-cronjob", "namespace_and_cronjob"),
         ("7-on-failure", "on_failure"), ("7-restart-rules", "restart_rules"),
         ("7-restart-all-containers", "restart_all"), ("8-bare-pods", "bare_pods"),
         ("8-always-untouched", "always_untouched"),
         ("3-policy", "policy"), ("3-registry", "registry"), ("3-image-volume", "image_volume"),
         ("3-chart", "chart"),
         ("9-native-webhook", "native_webhook"), ("9-native-on-failure", "native_on_failure"),
         ("9-native-entrypoint", "native_entrypoint"), ("9-native-policy", "native_policy"),
         ("9-native-control-probe", "control_probe"),
         ("9-native-control-no-wait", "control_no_wait"),
         ("9-native-control-hook", "control_hook"), ("9-native-timing", "native_timing")]
# What a scenario reads from one before it: the examples' Pods, the webhook it keeps.
DEPENDS = {"6-termination-message": ["1-examples"], "5-namespace-and-cronjob": ["3-webhook"]}
# The scenarios that wait for the Jobs start_examples creates.
OF_EXAMPLES = {"1-examples", "2-control", "6-termination-message"}


def select(only):
    """The names to run for E2E_NODE_ONLY=ONLY (comma-separated; empty: all), with
    what they build on; ValueError naming an unknown one."""
    names = [n for n, _ in ORDER]
    if not only.strip():
        return names
    wanted = {n.strip() for n in only.split(",") if n.strip()}
    unknown = sorted(wanted - set(names))
    if unknown:
        raise ValueError(f"E2E_NODE_ONLY={only!r}: no scenario {', '.join(unknown)}; "
                         f"expected names from: {', '.join(names)}")
    for name in list(wanted):
        wanted.update(DEPENDS.get(name, []))
    return [n for n in names if n in wanted]


class Run(Restarts, ChartScenario, Native):
    def __init__(self, api, node, podman, injector, work, say, transcripts, versions):
        self.api, self.node, self.podman = api, node, podman
        self.injector, self.work, self.say = str(injector), work, say
        self.transcripts, self.versions = transcripts, versions
        self.kubeconfig = str(api.kubeconfig())
        self.kubectl = shutil.which("kubectl") or "kubectl"
        self.stop = []
        self.seen = {}

    def image(self, key):
        return self.podman.image(key)

    # -- helpers ---------------------------------------------------------------

    def namespace(self, name, labels=None):
        self.api.must("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels or {}}})
        wait_for(lambda: self.api.call(
            "GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] == 200,
            60, f"the default ServiceAccount of {name}")
        # OpenShift's builds of the API server (microshift's) add this ConfigMap to
        # every service account token volume; upstream's never read it.
        self.api.call("POST", f"/api/v1/namespaces/{name}/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "openshift-service-ca.crt"},
            "data": {"service-ca.crt": (self.api.dir / "ca.crt").read_text()}})

    def finish(self, name, ns=NS, within=FINISH_WITHIN):
        """The first Pod of Job NAME once it has finished."""
        return wait_for(lambda: (lambda p: p if finished(p) else None)(first_pod(self.api, name, ns)),
                        within, f"job {name}'s Pod finished")

    def kubectl_out(self, *args):
        return subprocess.run([self.kubectl, f"--kubeconfig={self.kubeconfig}", *args],
                              capture_output=True, text=True).stdout

    def check_ended(self, pod, jobs, code=3):
        """Job containers exited CODE, classic sidecars 0, native ones terminated."""
        st = statuses(pod)
        spec = pod["spec"]
        bad, parts = [], []
        for c in spec.get("initContainers", []) + spec["containers"]:
            state, exit_code, _ = st.get(c["name"], ("missing", None, ""))
            want = code if c["name"] in jobs else 0
            native = c.get("restartPolicy") == "Always"
            if state != "terminated" or (not native and exit_code != want):
                bad.append(f"{c['name']} {state} {exit_code} (want {want})")
            parts.append(f"{c['name']} {exit_code}" + (" (native)" if native else ""))
        if bad:
            raise k8s.Failed(f"{pod['metadata']['name']} {pod['status'].get('phase')}: "
                             + ", ".join(bad))
        return f"{pod['status']['phase']}: " + ", ".join(parts)

    # -- the scenarios ---------------------------------------------------------

    def all(self, names):
        """Runs the scenarios NAMES (select's), each one PASS or FAIL line."""
        self.namespace(NS)
        results = []
        self.started = {}
        if OF_EXAMPLES & set(names):
            self.start_examples()
        for name, method in ((n, m) for n, m in ORDER if n in names):
            t = time.monotonic()
            try:
                evidence = getattr(self, method)()
                results.append((name, True, evidence))
                self.say(f"PASS {name} ({time.monotonic() - t:.0f}s): {evidence}")
            except (k8s.Failed, pods.Failed, KeyError, IndexError, TypeError, ValueError,
                    StopIteration, subprocess.SubprocessError, OSError) as e:
                results.append((name, False, str(e)))
                self.say(f"FAIL {name} ({time.monotonic() - t:.0f}s): {e}")
        return results

    def close(self):
        """Stops what the scenarios started on the host (the injector, the registry)."""
        for proc in self.stop:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def start_examples(self):
        """Creates every example's Job, the control Job and the not-found Job at once."""
        for manifest in EXAMPLES:
            name = "ex-" + manifest.removesuffix(".yaml")
            job, jobs = job_from(manifest, name, self.image)
            create_job(self.api, job)
            self.started[name] = jobs
        # The README's story: an app that succeeds, without tandem and with it.
        zero = {"job": {"APP_CODE": "0"}}
        job, _ = job_from("istio-job.yaml", "control", self.image, without_tandem=True,
                          app_env=zero)
        create_job(self.api, job)
        job, _ = job_from("istio-job.yaml", "myjob", self.image, app_env=zero)
        create_job(self.api, job)
        job, jobs = job_from("distroless-init-container.yaml", "not-found", self.image,
                             images={"registry.example.com/myjob-distroless:1.0": "tandem"})
        create_job(self.api, job)
        self.started["not-found"] = jobs

    def examples(self):
        lines = []
        for name in (n for n in self.started if n.startswith("ex-")):
            pod = self.finish(name)
            self.seen[name] = pod
            lines.append(f"{name.removeprefix('ex-')} {self.check_ended(pod, self.started[name])}")
        return f"{len(lines)} Jobs: " + "; ".join(lines)

    def control(self):
        def job_done():
            pod = first_pod(self.api, "control")
            return pod if pod and statuses(pod).get("job", ("",))[0] == "terminated" else None
        pod = wait_for(job_done, FINISH_WITHIN, "the control Pod's job container ended")
        code = statuses(pod)["job"][1]
        time.sleep(10)
        pod = first_pod(self.api, "control")
        st = statuses(pod)
        if pod["status"]["phase"] != "Running" or st["istio-proxy"][0] != "running":
            raise k8s.Failed(f"without tandem the Pod is {pod['status']['phase']}, istio-proxy "
                             f"{st['istio-proxy'][0]}: the bug is not shown")
        self.seen["control"] = pod
        self.seen["myjob"] = self.finish("myjob")
        after = self.check_ended(self.seen["myjob"], ["job"], code=0)
        self.write_transcripts()
        delete_job(self.api, "control")
        delete_job(self.api, "myjob")
        return (f"job exited {code}, 10 s later the Pod is still Running with istio-proxy "
                f"running (it never completes); the same Job with tandem: {after}")

    def messages(self):
        pod = self.finish("not-found")
        self.check_ended(pod, self.started["not-found"], code=127)
        message = statuses(pod)["job"][2]
        if "/app/myjob: command not found" not in message:
            raise k8s.Failed(f"not-found's termination message is {message!r}")
        istio = self.seen["ex-istio-job"]
        tail = statuses(istio)["job"][2]
        if "app: " not in tail or "error:" in tail:
            raise k8s.Failed(f"istio-job's termination message (FallbackToLogsOnError) is {tail!r}")
        logs = self.kubectl_out("-n", NS, "logs", istio["metadata"]["name"], "-c", "job")
        for want in ("tandem: sidecars ready", "app: myjob --since=yesterday started",
                     "quit POST http://127.0.0.1:15020/quitquitquit: 200"):
            if want not in logs:
                raise k8s.Failed(f"kubectl logs has no {want!r}: {logs[-500:]!r}")
        delete_job(self.api, "not-found")
        return (f"127 with message {message.strip()!r}; exit 3 with the app's log tail as the "
                f"message ({len(tail.splitlines())} lines, last {tail.strip().splitlines()[-1]!r}); "
                "kubectl logs through the API server shows tandem's and the app's lines")

    def grace(self):
        job, jobs = job_from("on-exit-job.yaml", "grace", self.image,
                             app_env={"report": {"APP_MODE": "wait-term"}})
        create_job(self.api, job)
        pod = wait_for(lambda: (lambda p: p if p and statuses(p).get("report", ("",))[0] == "running"
                                else None)(first_pod(self.api, "grace")), 120, "grace's app running")
        name = pod["metadata"]["name"]
        follow = Follow(self.kubectl, self.kubeconfig, name, "report", self.work / "grace.log")
        wait_for(lambda: "running until SIGTERM" in follow.text(), 60, "grace: the app waits")
        watch = Watch(self.api, name)
        t = time.monotonic()
        self.api.must("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}",
                      {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 30})
        wait_for(lambda: watch.gone_at, 60, "grace: the Pod is gone")
        took = watch.gone_at - t
        follow.stop()
        text = follow.text()
        delete_job(self.api, "grace")
        st = statuses(watch.last)
        for want in ("app: got SIGTERM, exiting 42", "the --on-exit program exited",
                     "quit POST http://127.0.0.1:9000/quitquitquit"):
            if want not in text:
                raise k8s.Failed(f"grace: the job's log has no {want!r}: {text[-800:]!r}")
        if "error:" in text or took >= 30:
            raise k8s.Failed(f"grace: gone after {took:.1f}s; log {text[-800:]!r}")
        quit_line = next(l for l in text.splitlines() if "quit POST" in l)
        codes = {c: v[1] for c, v in st.items()}
        return (f"deleted with grace 30s, gone after {took:.1f}s; exit codes {codes}; "
                f"log: 'app: got SIGTERM, exiting 42', on-exit ran, {quit_line.split('tandem: ')[-1]!r}")

    def grace_envoy(self):
        """The real Envoy gets the kubelet's SIGTERM with tandem's app: tandem's quit
        is answered, or finds Envoy already stopping (SPEC §5.3); never a failed quit."""
        job, _ = job_from("envoy-job.yaml", "grace-envoy", self.image,
                          app_env={"job": {"APP_MODE": "wait-term"}})
        create_job(self.api, job)
        pod = wait_for(lambda: (lambda p: p if p and statuses(p).get("job", ("",))[0] == "running"
                                else None)(first_pod(self.api, "grace-envoy")), 120, "the app runs")
        name = pod["metadata"]["name"]
        follow = Follow(self.kubectl, self.kubeconfig, name, "job", self.work / "grace-envoy.log")
        wait_for(lambda: "running until SIGTERM" in follow.text(), 60, "the app waits")
        watch = Watch(self.api, name)
        t = time.monotonic()
        self.api.must("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}",
                      {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 30})
        wait_for(lambda: watch.gone_at, 60, "the Pod is gone")
        took = watch.gone_at - t
        follow.stop()
        text = follow.text()
        delete_job(self.api, "grace-envoy")
        st = statuses(watch.last)
        quit_line = next((l for l in text.splitlines() if "quit POST" in l), "no quit line")
        if "app: got SIGTERM" not in text or "error:" in text or took >= 30:
            raise k8s.Failed(f"gone after {took:.1f}s; the job's log: {text[-800:]!r}")
        if "error:" in st["job"][2] or "failed" in st["job"][2]:
            raise k8s.Failed(f"termination message {st['job'][2]!r}")
        codes = {c: v[1] for c, v in st.items()}
        return (f"gone after {took:.1f}s; exit codes {codes}; "
                f"{quit_line.split('tandem: ')[-1]!r}; no error line")

    def deadline(self):
        job, jobs = job_from("istio-job.yaml", "deadline", self.image,
                             app_env={"job": {"APP_MODE": "wait-term"}})
        job["spec"]["activeDeadlineSeconds"] = 20
        create_job(self.api, job)
        pod = wait_for(lambda: (lambda p: p if p and statuses(p).get("job", ("",))[0] == "running"
                                else None)(first_pod(self.api, "deadline")), 120, "deadline's app")
        name = pod["metadata"]["name"]
        follow = Follow(self.kubectl, self.kubeconfig, name, "job", self.work / "deadline.log")
        watch = Watch(self.api, name)

        def failed():
            j, _ = self.api.must("GET", f"/apis/batch/v1/namespaces/{NS}/jobs/deadline")
            conds = [c for c in j.get("status", {}).get("conditions", [])
                     if c["type"] == "Failed" and c["status"] == "True"]
            return conds[0] if conds else None
        cond = wait_for(failed, 90, "the Job failed")
        wait_for(lambda: watch.gone_at, 90, "deadline: the Pod is gone")
        follow.stop()
        text = follow.text()
        st = statuses(watch.last)
        delete_job(self.api, "deadline")
        if cond.get("reason") != "DeadlineExceeded":
            raise k8s.Failed(f"the Job failed for {cond}")
        if "app: got SIGTERM" not in text or "error:" in text or "error:" in st["job"][2]:
            raise k8s.Failed(f"deadline: the job's log: {text[-800:]!r}")
        if any(s[0] == "running" for s in st.values()):
            raise k8s.Failed(f"deadline: still running at the end: {st}")
        line = next((l for l in text.splitlines() if "quit POST" in l), "no quit line")
        return (f"Job Failed {cond['reason']}; app got SIGTERM (exit {st['job'][1]}), "
                f"istio-proxy {st['istio-proxy'][0]} {st['istio-proxy'][1]}, Pod gone; "
                f"{line.split('tandem: ')[-1]!r}; no error line; the message is the log's "
                f"tail (FallbackToLogsOnError), no quit failure in it")

    # -- injection -------------------------------------------------------------

    def start_webhook(self, mode, extra=()):
        """tandem-injector on loopback, registered by URL from `tandem-injector webhook`."""
        d = self.api.dir
        logfile = self.work / f"injector-{mode}.log"
        out = open(logfile, "wb")
        proc = subprocess.Popen(
            [self.injector, "--listen", "127.0.0.1:0", "--tls-cert", str(d / "tls.crt"),
             "--tls-key", str(d / "tls.key"), "--image", self.image("tandem"),
             "--install", mode, "--drain", "0s", *extra],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        out.close()
        self.stop.append(proc)

        def port():
            for line in logfile.read_text(errors="replace").splitlines():
                if "listening on " in line:
                    return int(line.split("listening on ", 1)[1].split(";")[0].rsplit(":", 1)[1])
            if proc.poll() is not None:
                raise k8s.Failed(f"injector exited: {logfile.read_text()[-600:]}")
            return None
        p = wait_for(port, 20, "the injector listens")
        text = subprocess.run([self.injector, "webhook", "--install", mode], check=True,
                              capture_output=True, text=True).stdout
        config = next(x for x in yaml.safe_load_all(text) if x and
                      x["kind"] == "MutatingWebhookConfiguration")
        config["metadata"].pop("annotations", None)
        ca = base64.b64encode((d / "ca.crt").read_bytes()).decode()
        for hook in config["webhooks"]:
            path = hook["clientConfig"]["service"].get("path", "/")
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{p}{path}", "caBundle": ca}
        k8s.create(self.api, config)
        return proc, config

    def injector_metrics(self, started):
        """{sample: value} of the running injector's /metrics (Prometheus text)."""
        _, config = started
        url = urllib.parse.urlsplit(config["webhooks"][0]["clientConfig"]["url"])
        ctx = ssl.create_default_context(cafile=str(self.api.dir / "ca.crt"))
        with urllib.request.urlopen(f"https://{url.netloc}/metrics", context=ctx,
                                    timeout=10) as resp:
            text = resp.read().decode()
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                samples[name] = float(value)
        return samples

    def stop_webhook(self, started):
        proc, config = started
        k8s.delete(self.api, config)
        proc.terminate()
        proc.wait(timeout=30)

    def opted_in(self, name, labels=LABEL, ns=NS):
        """The Istio Job with tandem taken out (no mention of it) and a job image
        without tandem, opted in by LABELS."""
        job, _ = job_from("istio-job.yaml", name, self.image, without_tandem=True,
                          images={"registry.example.com/myjob:1.0": "job-distroless"},
                          labels=labels)
        job["metadata"]["namespace"] = ns
        return job

    def injected_run(self, name, ns=NS, job=None):
        create_job(self.api, job or self.opted_in(name, ns=ns), ns)
        pod = self.finish(name, ns)
        note = pod["metadata"].get("annotations", {}).get("tandem.dev/injection")
        evidence = self.check_ended(pod, ["job"])
        if not note and name != "policy":
            raise k8s.Failed(f"{name}: no tandem.dev/injection annotation")
        delete_job(self.api, name, ns)
        return pod, evidence, note

    def webhook(self):
        self.hook = self.start_webhook("emptydir")
        pod, evidence, note = self.injected_run("webhook")
        self.seen["webhook"] = pod
        return f"{evidence}; tandem.dev/injection: {note!r}"

    def namespace_and_cronjob(self):
        try:
            self.namespace(NS_LABELLED, LABEL)
            job = self.opted_in("labelled", labels={}, ns=NS_LABELLED)
            _, evidence, note = self.injected_run("labelled", NS_LABELLED, job)
            line = f"labelled namespace: {evidence} ({note!r})"
            doc = yaml.safe_load((pods.K8S / "istio-cronjob.yaml").read_text())
            job = self.opted_in("cron-template")
            doc["metadata"] = {"name": "cron", "namespace": NS}
            doc["spec"]["schedule"] = "* * * * *"
            doc["spec"]["jobTemplate"]["spec"] = job["spec"]
            self.api.must("POST", f"/apis/batch/v1/namespaces/{NS}/cronjobs", doc)

            def cron_pod():
                found, _ = self.api.must("GET", f"/api/v1/namespaces/{NS}/pods")
                mine = [p for p in found["items"] if p["metadata"]["name"].startswith("cron-")]
                return mine[0] if mine and finished(mine[0]) else None
            pod = wait_for(cron_pod, 150, "the CronJob's Job's Pod finished")
            self.api.call("DELETE", f"/apis/batch/v1/namespaces/{NS}/cronjobs/cron",
                          {"kind": "DeleteOptions", "apiVersion": "v1",
                           "propagationPolicy": "Background"})
            note = pod["metadata"].get("annotations", {}).get("tandem.dev/injection")
            if not note:
                raise k8s.Failed("the CronJob's Pod has no tandem.dev/injection annotation")
            return f"{line}; CronJob's Job: {self.check_ended(pod, ['job'])} ({note!r})"
        finally:
            self.stop_webhook(self.hook)

    def policy(self):
        text = subprocess.run([self.injector, "policy", "--image", self.image("tandem"),
                               "--install", "emptydir"], check=True, capture_output=True,
                              text=True).stdout
        objects = [d for d in yaml.safe_load_all(text) if d]
        for obj in objects:
            k8s.create(self.api, obj)
        time.sleep(3)  # the policy's type check and the API server's cache
        try:
            pod, evidence, _ = self.injected_run("policy")
            names = [c["name"] for c in pod["spec"].get("initContainers", [])]
            if not pod["spec"]["containers"][0]["command"][0].endswith("tandem"):
                raise k8s.Failed(f"the policy did not wrap the job: {pod['spec']['containers'][0]}")
            again = self.policy_on_failure()
            return (f"no webhook, {len(objects)} policy objects: {evidence}; init {names}; "
                    f"OnFailure, failing once: {again}")
        finally:
            for obj in objects:
                k8s.delete(self.api, obj)

    def registry(self):
        tls = pods_registry.certificate(self.work)
        stop = []
        host = pods_registry.start_registry(pods, self.work, tls, stop)
        self.stop += stop
        ref = f"{host}/tandem-test/job-entrypoint:1"
        env = dict(self.podman.env)
        subprocess.run(["podman", "tag", self.image("job-entrypoint"), ref], env=env, check=True)
        subprocess.run(["podman", "push", "--cert-dir", str(tls / "certs"), ref], env=env,
                       check=True, capture_output=True)
        subprocess.run(["podman", "rmi", ref], env=env, capture_output=True)
        certs = self.node.work / "containerd" / "certs.d" / host
        certs.mkdir(parents=True, exist_ok=True)
        (certs / "hosts.toml").write_text(
            f'server = "https://{host}"\n[host."https://{host}"]\n'
            f'  capabilities = ["pull", "resolve"]\n  ca = "{tls / "ca.pem"}"\n')
        # A loopback registry is looked up only when named (SPEC §10 "Where lookups may go").
        hook = self.start_webhook("emptydir", ["--registry-ca", str(tls / "ca.pem"),
                                               "--registry-allow", host])
        try:
            job = self.opted_in("registry")
            c = job["spec"]["template"]["spec"]["containers"][0]
            c.pop("command", None)
            c.pop("args", None)
            c["image"], c["imagePullPolicy"] = ref, "IfNotPresent"
            pod, evidence, note = self.injected_run("registry", job=job)
            command = pod["spec"]["containers"][0].get("command")
            pulled = self.node.ctr("images", "ls", "-q").stdout
            if ref not in pulled:
                raise k8s.Failed(f"the kubelet did not pull {ref}")
            return f"{evidence}; command {command}; the kubelet pulled {ref}"
        finally:
            self.stop_webhook(hook)

    def image_volume(self):
        if "containerd/v2" not in self.versions["containerd"]:
            return "n/a on containerd 1.x (image volumes need containerd 2.1+): run with CONTAINERD_DIR"
        hook = self.start_webhook("image-volume")
        try:
            pod, evidence, note = self.injected_run("image-volume")
            vols = [v for v in pod["spec"].get("volumes", []) if "image" in v]
            if not vols:
                raise k8s.Failed("no image volume in the Pod")
            return f"{evidence}; image volume {vols[0]['image']['reference']}; {note!r}"
        finally:
            self.stop_webhook(hook)

    # -- transcripts -----------------------------------------------------------

    def write_transcripts(self):
        """kubectl's view of the control Pod (stuck) and the Istio Job with tandem."""
        if not self.transcripts:
            return
        self.transcripts.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%d", time.gmtime())
        head = (f"# Produced by `make e2e-node` on {stamp}: kubelet {self.versions['kubelet']}, "
                f"{self.versions['containerd']}, {self.versions['runc']}.\n")
        control = self.seen["control"]["metadata"]["name"]
        done = self.seen["myjob"]["metadata"]["name"]
        parts = {
            "before.txt": [["get", "pod", control], ["describe", "pod", control]],
            "after.txt": [["get", "pod", done], ["logs", done, "-c", "job"],
                          ["describe", "pod", done]],
        }
        for file, cmds in parts.items():
            text = head
            for cmd in cmds:
                out = self.kubectl_out("-n", NS, *cmd)
                text += f"\n$ kubectl {' '.join(cmd)}\n" + out
            (self.transcripts / file).write_text(text)
