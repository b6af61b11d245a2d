"""The scenarios of `make e2e-node` for the native route (SPEC §12): a Job as
written with classic sidecars (the real Envoy as istio-proxy, and a Cloud SQL
Auth Proxy stand-in that answers readiness on 127.0.0.1:9090 only, 3 s after it
starts), annotated `tandem.dev/route: native`:

  9 native route   through the webhook, the job starts only once both sidecars
                   answered (it probes them itself as it starts), exit 0 makes the
                   Job Complete and exit 3 Failed with 3, the kubelet stops the
                   sidecars after the job, the job container is as written; an
                   OnFailure job that fails once runs again beside the same
                   sidecars; a job container without command needs no lookup;
                   the same through the printed policy, no webhook
  9 controls       hand-written Pods, no injector: a kubelet startupProbe on the
                   loopback-only sidecar (the Pod stays in Init), no probe nor
                   hook (the job starts before the sidecar answers), tandem's
                   --wait-only in a postStart hook (what the injector writes)
  9 timing         time from Pod creation to the job's start and to the Job's
                   completion: native route, wrap route, no tandem; a table

`Native` is mixed into scenarios.Run: it uses its API client, images, webhook
and helpers (Restarts' too).
"""

import datetime
import json
import socket
import statistics
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import cluster as k8s
from jobs import NS, create_job, delete_job, job_from, log, pods_of, statuses, wait_for
from restarts import MARK_DIR, restarts_of, stamped

LABEL = {"tandem.dev/inject": "enabled"}
ROUTE = "tandem.dev/route"
# The stand-in Cloud SQL Auth Proxy answers /startup this long after it starts.
PROXY_READY_SECONDS = 3
ISTIO_READY = "http://127.0.0.1:15021/healthz/ready"
PROXY_STARTUP = "http://127.0.0.1:9090/startup"
PROXY_DATABASE = "http://127.0.0.1:5432/"
# What the job GETs the moment it starts (tests/pods/bin/app.sh's APP_PROBE).
PROBES = [ISTIO_READY, PROXY_STARTUP, PROXY_DATABASE]
# The first answer of 200 to a readiness poll, in each sidecar's log (the fake
# sidecar logs every request it answers; the first 200 is the moment it was
# seen ready).
READY_LINE = {"istio-proxy": "GET /healthz/ready -> 200", "cloud-sql-proxy": "GET /startup -> 200"}
# What each stand-in logs on the kubelet's SIGTERM.
TERM_LINE = {"istio-proxy": "pilot-agent stand-in: SIGTERM", "cloud-sql-proxy":
             "cloud-sql-proxy stand-in: SIGTERM"}
SIDECARS = ["istio-proxy", "cloud-sql-proxy"]
JOB = "migrate"
ENDED_WITHIN = 180.0
# How long the control Pod with a kubelet startupProbe must stay in Init: the
# proxy is ready after 3 s, the probe gives up after 5 × 2 s.
STUCK_FOR = 30.0
TIMING_RUNS = 5
ROUTES = ["native", "wrap", "none"]
TIMING_FILE = "e2e-node-timing.md"


def utc(seconds):
    """time.time() as the naive UTC datetime stamped() reads from logs."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).replace(tzinfo=None)


def first(lines, text):
    """The time of the first of LINES (stamped's) that holds TEXT, or None."""
    return next((t for t, line in lines if text in line), None)


def short(seen):
    """What one of the job's GETs found, in a word or two."""
    if seen == "ok":
        return "ready"
    if "refused" in seen:
        return "refused"
    return seen.rsplit("HTTP/1.1 ", 1)[-1]


def ms(delta):
    return f"{delta.total_seconds() * 1000:.0f} ms"


class Stream:
    """A watch of the API server on a thread: each event handed to ON_EVENT with
    the time.time() it arrived, until stop()."""

    def __init__(self, api, path, on_event):
        self.api, self.path, self.on_event = api, path, on_event
        self.stopped, self.resp = False, None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        sep = "&" if "?" in self.path else "?"
        req = urllib.request.Request(f"{self.api.url}{self.path}{sep}watch=true&timeoutSeconds=600")
        req.add_header("Authorization", f"Bearer {self.api.token}")
        try:
            with urllib.request.urlopen(req, context=self.api.ssl, timeout=620) as resp:
                self.resp = resp
                for line in resp:
                    if self.stopped:
                        return
                    if line.strip():
                        self.on_event(time.time(), json.loads(line))
        except (OSError, ValueError, AttributeError):
            pass  # stopped: the socket shut down under the reader

    def stop(self):
        """Ends the watch now: its socket shut down under the reader (closing the
        response would wait for the reader's lock, held until the next event)."""
        self.stopped = True
        sock = getattr(getattr(getattr(self.resp, "fp", None), "raw", None), "_sock", None)
        if sock:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.thread.join(timeout=5)
        if self.thread.is_alive():
            raise k8s.Failed(f"the watch of {self.path} did not stop")


class Timeline:
    """When a Job's first Pod was stored and when the Job completed or failed,
    from watches of both (stamped as each event arrived)."""

    def __init__(self, api, name, ns=NS):
        self.pod_at = self.done_at = self.condition = None
        sel = urllib.parse.quote(f"job-name={name}")
        field = urllib.parse.quote(f"metadata.name={name}")
        self.streams = [
            Stream(api, f"/api/v1/namespaces/{ns}/pods?labelSelector={sel}", self._pod),
            Stream(api, f"/apis/batch/v1/namespaces/{ns}/jobs?fieldSelector={field}", self._job)]
        time.sleep(0.3)  # both watches open before the Job is created

    def _pod(self, at, event):
        if event.get("type") == "ADDED" and self.pod_at is None:
            self.pod_at = at

    def _job(self, at, event):
        conds = (event.get("object", {}).get("status") or {}).get("conditions") or []
        for c in conds:
            if c["type"] in ("Complete", "Failed") and c["status"] == "True" and not self.done_at:
                self.done_at, self.condition = at, c["type"]

    def stop(self):
        for s in self.streams:
            s.stop()


class Native:
    """The native route's scenarios, methods of scenarios.Run."""

    # -- the Job as written --------------------------------------------------------

    def classic_job(self, name, code=0, route="native", labels=LABEL, policy="Never"):
        """istio-cloudsql-job.yaml as a team writes it without tandem (the migrate
        container runs the app itself) with the sidecars a classic Istio injector
        adds: the real Envoy as istio-proxy, the Cloud SQL Auth Proxy stand-in
        (ready after 3 s, on loopback only); ROUTE as its tandem.dev/route
        annotation (None: none), opted in by LABELS. The app exits CODE and GETs
        the sidecars' endpoints as it starts."""
        job, _ = job_from("istio-cloudsql-job.yaml", name, self.image, without_tandem=True,
                          images={"registry.example.com/migrate:1.0": "job-distroless"},
                          labels=labels)
        template = job["spec"]["template"]
        if route:
            template["metadata"].setdefault("annotations", {})[ROUTE] = route
        spec = template["spec"]
        spec["restartPolicy"] = policy
        # Never: no second Pod (a failed run is the Job's failure). OnFailure: the
        # manifest's 2, since the Job fails once its Pod's restarts in place reach
        # backoffLimit.
        if policy == "Never":
            job["spec"]["backoffLimit"] = 0
        for c in spec["containers"]:
            if c["name"] == JOB:
                c.setdefault("env", []).extend([
                    {"name": "APP_CODE", "value": str(code)},
                    {"name": "APP_PROBE", "value": " ".join(PROBES)}])
            elif c["name"] == "cloud-sql-proxy":
                c.setdefault("env", []).append(
                    {"name": "STANDIN_READY_SECONDS", "value": str(PROXY_READY_SECONDS)})
        return job

    def job_ended(self, name, within=ENDED_WITHIN):
        """The Job NAME once Complete or Failed: (condition, the Job)."""
        def done():
            j, _ = self.api.must("GET", f"/apis/batch/v1/namespaces/{NS}/jobs/{name}")
            for c in j.get("status", {}).get("conditions", []):
                if c["type"] in ("Complete", "Failed") and c["status"] == "True":
                    return c, j
            return None
        try:
            return wait_for(done, within, f"job {name} Complete or Failed")
        except k8s.Failed as e:
            raise k8s.Failed(f"{e}; {self.story(pods_of(self.api, name))}") from e

    def only_pod(self, name):
        """The one Pod of Job NAME."""
        found = pods_of(self.api, name)
        if len(found) != 1:
            raise k8s.Failed(f"job {name} has {len(found)} Pods, not one; {self.story(found)}")
        return found[0]

    def logs(self, pod, container, previous=False):
        return stamped(log(self.api, pod["metadata"]["name"], container, previous=previous,
                           timestamps=True))

    def saw(self, lines):
        """{url: what the job's GET found} from its log's "at start" lines."""
        out = {}
        for _, line in lines:
            if line.startswith("app: at start GET "):
                url, _, seen = line.removeprefix("app: at start GET ").partition(": ")
                out[url] = seen
        return out

    def started_after_ready(self, pod, sent_job, previous=False):
        """Checks the Pod the native route made: the job container as sent (no
        wrapper), its sidecars native and waited for, and the job started only
        once both sidecars had answered ready: it found them ready itself, and its
        first line comes after each sidecar's first 200 to a readiness poll.
        Returns the evidence."""
        spec = pod["spec"]
        job = next(c for c in spec["containers"] if c["name"] == JOB)
        if len(spec["containers"]) != 1:
            raise k8s.Failed(f"containers {[c['name'] for c in spec['containers']]}: the "
                             "sidecars were not moved")
        for field in ("command", "args", "env", "image"):
            if job.get(field) != sent_job.get(field):
                raise k8s.Failed(f"the job container's {field} changed: {job.get(field)!r}, "
                                 f"sent {sent_job.get(field)!r}")
        if any(m["mountPath"] == "/tandem" for m in job.get("volumeMounts", [])):
            raise k8s.Failed("the job container mounts /tandem")
        inits = {c["name"]: c for c in spec.get("initContainers", [])}
        order = [c["name"] for c in spec.get("initContainers", [])]
        for name in SIDECARS:
            c = inits.get(name)
            if not c or c.get("restartPolicy") != "Always":
                raise k8s.Failed(f"{name} is not a native sidecar: init containers {order}")
            hook = (c.get("lifecycle") or {}).get("postStart", {}).get("exec", {}).get("command")
            if not hook or "--wait-only" not in hook:
                raise k8s.Failed(f"{name} has no tandem wait in postStart: {c.get('lifecycle')}")
        lines = self.logs(pod, JOB, previous)
        saw = self.saw(lines)
        if [saw.get(u) for u in PROBES] != ["ok"] * len(PROBES):
            raise k8s.Failed(f"the job found its sidecars not ready as it started: {saw}")
        start = lines[0][0]
        ready = {}
        for name in SIDECARS:
            ready[name] = first(self.logs(pod, name), READY_LINE[name])
            if ready[name] is None or ready[name] > start:
                raise k8s.Failed(f"{name} first answered ready at {ready[name]}, the job "
                                 f"started at {start}")
        return (f"init {order}; the job started {ms(start - ready['istio-proxy'])} after "
                f"istio-proxy's first ready answer, {ms(start - ready['cloud-sql-proxy'])} "
                f"after cloud-sql-proxy's, and found all ready ({', '.join(PROBES)}: ok)")

    def stopped_after_job(self, pod):
        """The kubelet stopped the native sidecars once the job had ended: each
        terminated, exit 0, restartCount 0, its SIGTERM line after the job's last."""
        st, counts = statuses(pod), restarts_of(pod)
        end = self.logs(pod, JOB)[-1][0]
        parts = []
        for name in SIDECARS:
            if st[name][:2] != ("terminated", 0) or counts[name]:
                raise k8s.Failed(f"{name}: {st[name]}, restarts {counts[name]}")
            term = first(self.logs(pod, name), TERM_LINE[name])
            if term is None or term < end:
                raise k8s.Failed(f"{name} got SIGTERM at {term}, the job ended at {end}")
            parts.append(f"{name} SIGTERM {ms(term - end)} after, exit 0")
        return "kubelet stopped the sidecars after the job: " + ", ".join(parts)

    def native_pair(self, prefix, annotate_ok=True):
        """Two Jobs of classic_job (exit 0 and exit 3) through what injects now:
        Complete, and Failed with the job container's 3. ANNOTATE_OK: the exit-0
        Job carries the route annotation (else the injector's own route)."""
        made = {"0": self.classic_job(f"{prefix}-ok", 0, route="native" if annotate_ok else None),
                "3": self.classic_job(f"{prefix}-fail", 3)}
        lines = []
        try:
            for job in made.values():
                create_job(self.api, job)
            for code, job in made.items():
                name = job["metadata"]["name"]
                cond, _ = self.job_ended(name)
                pod = self.only_pod(name)
                found = [pod]
                want = "Complete" if code == "0" else "Failed"
                st = statuses(pod)
                if (cond["type"] != want
                        or st[JOB][:2] != ("terminated", int(code))
                        or pod["status"]["phase"] != ("Succeeded" if code == "0" else "Failed")):
                    raise k8s.Failed(f"{name}: Job {cond['type']} ({cond.get('reason')}); "
                                     f"{self.story(found)}")
                sent = next(c for c in job["spec"]["template"]["spec"]["containers"]
                            if c["name"] == JOB)
                try:
                    order = self.started_after_ready(pod, sent)
                    stop = self.stopped_after_job(pod)
                except k8s.Failed as e:
                    raise k8s.Failed(f"{name}: {e}; {self.story(found)}") from e
                note = pod["metadata"].get("annotations", {}).get("tandem.dev/injection")
                lines.append(f"exit {code}: Job {cond['type']}"
                             f"{' (' + cond['reason'] + ')' if cond.get('reason') else ''}, Pod "
                             f"{pod['status']['phase']}, {JOB} {st[JOB][1]}; {order}; {stop}"
                             + (f"; {note!r}" if note else ""))
        finally:
            for job in made.values():
                delete_job(self.api, job["metadata"]["name"])
        return "; ".join(lines)

    # -- the scenarios -------------------------------------------------------------

    def native_webhook(self):
        with self.injecting():
            return self.native_pair("native")

    def native_on_failure(self):
        """OnFailure: the job fails its first run (exit 3, it marks an emptyDir) and
        the kubelet runs it again in the Pod beside the same sidecars."""
        name = "native-on-failure"
        job = self.classic_job(name, 0, policy="OnFailure")
        spec = job["spec"]["template"]["spec"]
        app = next(c for c in spec["containers"] if c["name"] == JOB)
        app["env"].append({"name": "APP_FAIL_ONCE", "value": f"{MARK_DIR}/ran"})
        app.setdefault("volumeMounts", []).append({"name": "run-state", "mountPath": MARK_DIR})
        spec.setdefault("volumes", []).append({"name": "run-state", "emptyDir": {}})
        try:
            with self.injecting():
                create_job(self.api, job)
                cond, _ = self.job_ended(name)
            if cond["type"] != "Complete":
                raise k8s.Failed(f"Job {cond['type']}: {cond.get('reason')}: {cond.get('message')}")
            pod = self.only_pod(name)
            st, counts = statuses(pod), restarts_of(pod)
            status = next(s for s in pod["status"]["containerStatuses"] if s["name"] == JOB)
            last = (status.get("lastState") or {}).get("terminated") or {}
            if (cond["type"] != "Complete"
                    or pod["status"]["phase"] != "Succeeded" or st[JOB][:2] != ("terminated", 0)
                    or counts[JOB] != 1 or last.get("exitCode") != 3
                    or any(counts[s] for s in SIDECARS)):
                raise k8s.Failed(f"Job {cond['type']}; last state {last}; "
                                 f"{self.story([pod])}")
            if "first run in this Pod" not in last.get("message", ""):
                raise k8s.Failed(f"the first run's message: {last.get('message')!r}")
            now = [line for _, line in self.logs(pod, JOB)]
            if "app: done, exiting 0" not in now or any("first run" in line for line in now):
                raise k8s.Failed(f"the job's last run: {now}")
            # The second run found both sidecars up as it started, and they were
            # stopped only after it.
            order = self.started_after_ready(pod, app)
            stop = self.stopped_after_job(pod)
            return (f"1 Pod, Job Complete; {JOB} ran twice (restartCount 1, its last state "
                    f"exit 3, 'first run in this Pod'), then 0; sidecars' restarts "
                    f"{ {s: counts[s] for s in SIDECARS} }; the second run: {order}; {stop}")
        finally:
            delete_job(self.api, name)

    def native_entrypoint(self):
        """A job container without command, its image's ENTRYPOINT the app, from
        no registry the injector may read: the native route needs no lookup."""
        name = "native-entrypoint"
        job = self.classic_job(name, 0)
        app = next(c for c in job["spec"]["template"]["spec"]["containers"] if c["name"] == JOB)
        app.pop("command", None)
        app.pop("args", None)
        app["image"] = self.image("migrate-entrypoint")
        try:
            with self.injecting() as metrics:
                create_job(self.api, job)
                cond, _ = self.job_ended(name)
                counters = metrics()
            pod = self.only_pod(name)
            st = statuses(pod)
            got = next(c for c in pod["spec"]["containers"] if c["name"] == JOB)
            lookups = {k: v for k, v in counters.items() if "registry_lookups" in k and v}
            native = counters.get('tandem_injector_reviews_by_route_total{route="native"}', 0)
            if (cond["type"] != "Complete" or st[JOB][:2] != ("terminated", 0)
                    or "command" in got or "args" in got or lookups or native < 1):
                raise k8s.Failed(f"Job {cond['type']}, {JOB} {st[JOB]}, command "
                                 f"{got.get('command')}, lookups {lookups}, native reviews "
                                 f"{native}; {self.story([pod])}")
            order = self.started_after_ready(pod, app)
            started = next(line for _, line in self.logs(pod, JOB) if "started" in line)
            note = pod["metadata"].get("annotations", {}).get("tandem.dev/injection")
            return (f"Job Complete, {JOB} 0 with no command (image {app['image'].split('/')[-1]}: "
                    f"{started!r}); injector: {native} native review(s), 0 registry lookups; "
                    f"{order}; {note!r}")
        finally:
            delete_job(self.api, name)

    def native_policy(self):
        """The same pair through `tandem-injector policy --route native`, no webhook:
        the exit-0 Job without the annotation (the policy's route), the exit-3 one
        with it."""
        text = subprocess.run([self.injector, "policy", "--image", self.image("tandem"),
                               "--install", "emptydir", "--route", "native"], check=True,
                              capture_output=True, text=True).stdout
        objects = [d for d in __import__("yaml").safe_load_all(text) if d]
        for obj in objects:
            k8s.create(self.api, obj)
        time.sleep(3)  # the policy's type check and the API server's cache
        try:
            return (f"no webhook, {len(objects)} policy objects (--route native): "
                    + self.native_pair("native-policy", annotate_ok=False))
        finally:
            for obj in objects:
                k8s.delete(self.api, obj)

    # -- controls: hand-written native sidecars, no injector --------------------------

    def control_pod(self, name, proxy_extra=None, with_install=False):
        """A Pod no injector touches: the Cloud SQL Auth Proxy stand-in as a native
        sidecar (PROXY_EXTRA merged into it), the job after it, exit 0."""
        proxy = {"name": "cloud-sql-proxy", "image": self.image("cloud-sql-proxy"),
                 "imagePullPolicy": "Never", "restartPolicy": "Always",
                 "args": ["--port=5432", "--health-check", "--exit-zero-on-sigterm"],
                 "env": [{"name": "STANDIN_READY_SECONDS", "value": str(PROXY_READY_SECONDS)}]}
        proxy.update(proxy_extra or {})
        job = {"name": "job", "image": self.image("job-distroless"), "imagePullPolicy": "Never",
               "command": ["/app/myjob"],
               "env": [{"name": "APP_CODE", "value": "0"},
                       {"name": "APP_PROBE", "value": f"{PROXY_STARTUP} {PROXY_DATABASE}"}]}
        spec = {"restartPolicy": "Never", "initContainers": [proxy], "containers": [job]}
        if with_install:
            spec["volumes"] = [{"name": "tandem-bin", "emptyDir": {}}]
            spec["initContainers"].insert(0, {
                "name": "tandem-install", "image": self.image("tandem"),
                "imagePullPolicy": "Never", "command": ["/tandem", "--install-to", "/opt/tandem"],
                "volumeMounts": [{"name": "tandem-bin", "mountPath": "/opt/tandem"}]})
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": NS}, "spec": spec}

    def control_ended(self, name):
        try:
            return wait_for(lambda: (lambda p: p if p and p.get("status", {}).get("phase") in
                                     ("Succeeded", "Failed") else None)(self.get_pod(name)),
                            ENDED_WITHIN, f"Pod {name} finished")
        except k8s.Failed as e:
            raise k8s.Failed(f"{e}; {self.story([self.get_pod(name)])}") from e

    def control_probe(self):
        """(a) A kubelet httpGet startupProbe on /startup: it reaches the Pod's IP,
        the proxy answers on loopback only, so the Pod never leaves Init."""
        name = "control-probe"
        pod = self.control_pod(name, {"startupProbe": {
            "httpGet": {"path": "/startup", "port": 9090},
            "periodSeconds": 2, "failureThreshold": 5}})
        try:
            self.api.must("POST", f"/api/v1/namespaces/{NS}/pods", pod)
            t = time.monotonic()
            while time.monotonic() - t < STUCK_FOR:
                got = self.get_pod(name)
                st = statuses(got)
                if got["status"].get("phase") != "Pending" or st.get("job", ("waiting",))[0] not in (
                        "PodInitializing", "waiting"):
                    raise k8s.Failed(f"the Pod left Init: {got['status'].get('phase')}, {st}")
                time.sleep(1)
            got = self.get_pod(name)
            proxy = next(s for s in got["status"]["initContainerStatuses"]
                         if s["name"] == "cloud-sql-proxy")
            events, _ = self.api.must("GET", f"/api/v1/namespaces/{NS}/events?fieldSelector="
                                      + urllib.parse.quote(f"involvedObject.name={name}"))
            probe = [e["message"] for e in events["items"] if "Startup probe failed" in
                     e.get("message", "")]
            proxy_log = log(self.api, name, "cloud-sql-proxy")
            if proxy.get("started") or not probe or "127.0.0.1:9090" not in proxy_log:
                raise k8s.Failed(f"the proxy started={proxy.get('started')}, probe events "
                                 f"{probe}, log {proxy_log[-300:]!r}")
            ip = got["status"].get("podIP")
            return (f"after {STUCK_FOR:.0f}s still Pending (Init), job "
                    f"{statuses(got)['job'][0]}, cloud-sql-proxy started=false restarts "
                    f"{proxy.get('restartCount', 0)}; the kubelet: {probe[-1].strip()!r} (Pod IP "
                    f"{ip}; the proxy listens on 127.0.0.1:9090 only)")
        finally:
            self.delete_pod(name)

    def control_no_wait(self):
        """(b) Native with neither probe nor hook: the kubelet starts the job once
        the sidecar's process has started, before it answers."""
        name = "control-no-wait"
        try:
            self.api.must("POST", f"/api/v1/namespaces/{NS}/pods", self.control_pod(name))
            pod = self.control_ended(name)
            st = statuses(pod)
            saw = self.saw(self.logs(pod, "job"))
            if (pod["status"]["phase"] != "Succeeded" or st["job"][:2] != ("terminated", 0)
                    or "Connection refused" not in saw.get(PROXY_DATABASE, "")
                    or saw.get(PROXY_STARTUP) == "ok"):
                raise k8s.Failed(f"{pod['status']['phase']}, {st}; the job saw {saw}")
            return (f"Pod Succeeded, the job started before the proxy was ready: GET "
                    f"{PROXY_STARTUP}: {saw[PROXY_STARTUP]!r}, GET {PROXY_DATABASE}: "
                    f"{saw[PROXY_DATABASE]!r}; cloud-sql-proxy {st['cloud-sql-proxy'][0]} "
                    f"{st['cloud-sql-proxy'][1]}")
        finally:
            self.delete_pod(name)

    def control_hook(self):
        """(c) tandem's --wait-only in the sidecar's postStart, from an emptyDir an
        init container filled: the job starts once the proxy answers."""
        name = "control-hook"
        pod = self.control_pod(name, {
            "lifecycle": {"postStart": {"exec": {"command": [
                "/tandem/tandem", "--mesh", "cloudsql", "--wait-only"]}}},
            "volumeMounts": [{"name": "tandem-bin", "mountPath": "/tandem", "readOnly": True}]},
            with_install=True)
        try:
            self.api.must("POST", f"/api/v1/namespaces/{NS}/pods", pod)
            pod = self.control_ended(name)
            st = statuses(pod)
            lines = self.logs(pod, "job")
            saw = self.saw(lines)
            ready = first(self.logs(pod, "cloud-sql-proxy"), READY_LINE["cloud-sql-proxy"])
            term = first(self.logs(pod, "cloud-sql-proxy"), TERM_LINE["cloud-sql-proxy"])
            if (pod["status"]["phase"] != "Succeeded" or st["job"][:2] != ("terminated", 0)
                    or st["cloud-sql-proxy"][:2] != ("terminated", 0)
                    or set(saw.values()) != {"ok"} or not ready or ready > lines[0][0]
                    or not term or term < lines[-1][0]):
                raise k8s.Failed(f"{pod['status']['phase']}, {st}; the job saw {saw}; ready "
                                 f"{ready}, job {lines[0][0]}..{lines[-1][0]}, SIGTERM {term}")
            return (f"Pod Succeeded; the job started {ms(lines[0][0] - ready)} after the proxy's "
                    f"first ready answer and found it ready ({', '.join(saw)}: ok); the kubelet "
                    f"stopped cloud-sql-proxy {ms(term - lines[-1][0])} after the job (exit 0)")
        finally:
            self.delete_pod(name)

    # -- timing --------------------------------------------------------------------

    def timed_run(self, name, route, shape):
        """One Job of classic_job through ROUTE (native, wrap, none: not opted in)
        with SHAPE's sidecars (both, or istio-proxy alone): seconds from its Pod's
        creation to the app's first line and to the Job's completion (None: it
        never completes; checked 10 s after the job exited)."""
        labels = LABEL if route != "none" else {}
        job = self.classic_job(name, 0, route=route if route != "none" else None, labels=labels)
        spec = job["spec"]["template"]["spec"]
        if shape == "istio-proxy":
            spec["containers"] = [c for c in spec["containers"] if c["name"] != "cloud-sql-proxy"]
            app = next(c for c in spec["containers"] if c["name"] == JOB)
            for e in app["env"]:
                if e["name"] == "APP_PROBE":
                    e["value"] = ISTIO_READY
        line = Timeline(self.api, name)
        try:
            t_post = time.time()
            create_job(self.api, job)
            if route == "none":
                pod = wait_for(lambda: (lambda p: p if p and statuses(p).get(JOB, ("",))[0]
                                        == "terminated" else None)(
                    (pods_of(self.api, name) or [None])[0]), ENDED_WITHIN, f"{name}'s job ended")
                time.sleep(10)
                if line.done_at:
                    raise k8s.Failed(f"{name}: the Job without tandem {line.condition}")
            else:
                cond, _ = self.job_ended(name)
                if cond["type"] != "Complete":
                    raise k8s.Failed(f"{name}: {cond}")
                wait_for(lambda: line.done_at, 10, f"{name}: the watch saw the Job end")
                pod = self.only_pod(name)
            lines = self.logs(pod, JOB)
            start = next(t for t, l in lines if l.startswith("app: ") and "started" in l)
            end = next(t for t, l in lines if l.startswith("app: done, exiting"))
            if not line.pod_at:
                raise k8s.Failed(f"{name}: the watch saw no Pod")
            return {"start": (start - utc(line.pod_at)).total_seconds(),
                    "done": line.done_at - line.pod_at if line.done_at else None,
                    "tail": (utc(line.done_at) - end).total_seconds() if line.done_at else None,
                    "lag": line.pod_at - t_post,
                    "saw": self.saw(lines)}
        finally:
            line.stop()
            delete_job(self.api, name)
            wait_for(lambda: not pods_of(self.api, name), 180, f"{name}'s Pod gone")

    def native_timing(self):
        """TIMING_RUNS Jobs per route and shape, one at a time, the routes taking
        turns, after one warm-up each (not counted); medians in a table."""
        shapes = ["istio-proxy", "istio-proxy + cloud-sql-proxy"]
        got = {(r, s): [] for r in ROUTES for s in shapes}
        with self.injecting():
            for route in ROUTES:
                self.timed_run(f"warm-{route}", route, shapes[0])
            for shape in shapes:
                for i in range(TIMING_RUNS):
                    for route in ROUTES:
                        key = "one" if shape == shapes[0] else "two"
                        got[(route, shape)].append(
                            self.timed_run(f"t-{route}-{key}-{i}", route, shape))
        table = self.timing_table(got, shapes)
        path = self.work.parent / TIMING_FILE
        path.write_text(table)
        (self.work / TIMING_FILE).write_text(table)
        for row in table.splitlines():
            self.say(f"timing: {row}")
        medians = {k: statistics.median(r["start"] for r in v) for k, v in got.items()}
        return (f"{TIMING_RUNS} runs each, table in {path}; median start "
                + ", ".join(f"{r}/{'1' if s == shapes[0] else '2'} sidecars "
                            f"{medians[(r, s)]:.2f}s" for s in shapes for r in ROUTES))

    def timing_table(self, got, shapes):
        def cell(values):
            values = [v for v in values if v is not None]
            return (f"{statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"
                    if values else "never completes")
        stamp = time.strftime("%Y-%m-%d", time.gmtime())
        out = [f"Produced by `make e2e-node` (9-native-timing) on {stamp}: kubelet "
               f"{self.versions['kubelet']}, {self.versions['containerd']}, "
               f"{self.versions['runc']}. The real Envoy as istio-proxy under a "
               "pilot-agent stand-in that drains 5 s on SIGTERM (Istio's default "
               "terminationDrainDuration); the Cloud SQL Auth Proxy stand-in ready 3 s after "
               f"it starts. Seconds from the Pod's creation (its ADDED event on a watch), "
               f"median (min–max) of {TIMING_RUNS} runs each, one Job at a time.", "",
               "| sidecars | route | to the job's start | to the Job's completion | "
               "the job's end to the Job's completion | the job found at start |",
               "|---|---|---|---|---|---|"]
        for shape in shapes:
            for route in ROUTES:
                runs = got[(route, shape)]
                done, tail = (cell([r[k] for r in runs]) if all(r[k] is not None for r in runs)
                              else "never completes" for k in ("done", "tail"))
                tail = tail if tail != "never completes" else "–"
                seen = sorted({", ".join(f":{u.split('/')[2].split(':')[1]} {short(v)}"
                                         for u, v in r["saw"].items()) for r in runs})
                out.append(f"| {shape} | {route if route != 'none' else 'no tandem'} | "
                           f"{cell([r['start'] for r in runs])} | {done} | {tail} | "
                           f"{'; '.join(seen)} |")
        lag = statistics.median(r["lag"] for v in got.values() for r in v)
        out += ["", f"The Job's Pod was stored a median {lag:.2f} s after the Job was."]
        return "\n".join(out) + "\n"
