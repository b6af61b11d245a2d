#!/usr/bin/env python3
"""The injector failing closed, in a real API server with its Job controller:
the outage scenarios of `make e2e-apiserver` (SPEC §10, "failurePolicy: Fail"
and "Bursts").

Starts etcd, the kube-apiserver and the kube-controller-manager it is given on
loopback (cluster.py), and tandem-injector registered with the shipped webhook
configuration (failurePolicy Fail), then:

  crash   a 120-Pod Indexed Job; the injector is SIGKILLed once the Job's first
          Pod is stored and started again once the API server has counted a
          create failed on the webhook (3 s after the kill at the earliest):
          no Pod is stored without tandem, every Pod is stored after the
          restart, and the Job's events show FailedCreate;
  hung    the injector is SIGSTOPped and, once every thread of it is stopped,
          an opted-in Job created: the API server counts the failed webhook
          call, the Job gets FailedCreate, and a read of its Pods after both
          finds none while the injector is still stopped; after SIGCONT the
          Pod is stored, with tandem;
  bursts  a 150-Pod Indexed Job through the webhook, through the printed
          admission policy and with neither, the routes alternated over a few
          rounds: from the Job's create to its last Pod stored (a watch), the
          median of each route within 1.25 times that of neither.

crash and hung wait for events (a Pod stored, a counter grown, a process
stopped), never for a time: each wait gives up after HANG s, which only a
hang reaches.

Each scenario prints its figures and one PASS or FAIL line; it exits 1 if any
failed, 2 on a setup failure. E2E_CRASH_PODS (120), E2E_BURST_PODS (150),
E2E_BURST_ROUNDS (3) change the sizes; E2E_OUTAGE lists the scenarios to run
(default: crash hung bursts).

Usage: e2e_outage.py KUBE_APISERVER ETCD KUBE_CONTROLLER_MANAGER INJECTOR WORKDIR
"""

import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

sys.dont_write_bytecode = True
sys.stdout.reconfigure(line_buffering=True)  # each figure as it comes, through make into a file
sys.path.insert(0, str(Path(__file__).parent))
import cluster as k8s  # noqa: E402

IMAGE = "ghcr.io/tandem-sidecar/tandem:0.1.0"
LABEL = "tandem.dev/inject"
NS = "tandem-outage"
# A burst through a route takes at most this times a burst through neither.
GOAL = 1.25
# Seconds after which a wait for an event gives up: only a hang takes this long.
HANG = 120


def injected(pod):
    """Whether tandem is in the Pod (the emptydir route's init container)."""
    return any(c["name"] == "tandem-install" for c in pod["spec"].get("initContainers", []))


def template():
    """An opted-in Pod template with one job container."""
    return {"metadata": {"labels": {LABEL: "enabled"}},
            "spec": {"restartPolicy": "Never", "containers": [{
                "name": "job", "image": "registry.example.com/job:1",
                "command": ["/app/run", "--once"]}]}}


def create_job(api, name, pods):
    """An Indexed Job whose controller makes `pods` Pods at once; when it was
    created (monotonic)."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
           "spec": {"completionMode": "Indexed", "completions": pods, "parallelism": pods,
                    "backoffLimit": 0, "template": template()}}
    api.must("POST", f"/apis/batch/v1/namespaces/{NS}/jobs", job)
    return time.monotonic()


class Watch:
    """Every Pod of Job `job` as the API server stores it, from a watch opened
    before the Job exists: (when seen, monotonic; name; injected). The API
    server ends the watch after `bound` s; its reader thread ends with it
    (closing the response under a blocked read would wait for that anyway)."""

    def __init__(self, api, job, bound=240):
        self.seen = []
        self.lock = threading.Lock()
        query = urllib.parse.urlencode({"watch": "1", "timeoutSeconds": str(bound),
                                        "labelSelector": f"job-name={job}"})
        req = urllib.request.Request(f"{api.url}/api/v1/namespaces/{NS}/pods?{query}")
        req.add_header("Authorization", f"Bearer {api.token}")
        # The API server sends the headers once the watch is in place.
        resp = urllib.request.urlopen(req, context=api.ssl, timeout=bound + 30)
        threading.Thread(target=self._read, args=(resp,), daemon=True).start()

    def _read(self, resp):
        try:
            with resp:
                for line in resp:
                    event = json.loads(line)
                    if event.get("type") == "ADDED":
                        pod = event["object"]
                        with self.lock:
                            self.seen.append((time.monotonic(), pod["metadata"]["name"],
                                              injected(pod)))
        except (OSError, ValueError):
            pass

    def pods(self):
        with self.lock:
            return list(self.seen)

    def wait(self, count, until):
        """Until `count` Pods are seen or `until` (monotonic) passes; the Pods."""
        while time.monotonic() < until and len(self.pods()) < count:
            time.sleep(0.05)
        return self.pods()


def failed_creates(api, job):
    """The messages of the Job's FailedCreate events."""
    selector = urllib.parse.quote(f"involvedObject.name={job},reason=FailedCreate")
    found, _ = api.must("GET", f"/api/v1/namespaces/{NS}/events?fieldSelector={selector}")
    return [e.get("message", "") for e in found["items"]]


def wait_failed_create(api, job, bound):
    """The Job's first FailedCreate message, waiting up to `bound` s; None."""
    end = time.monotonic() + bound
    while True:
        messages = failed_creates(api, job)
        if messages:
            return messages[0]
        if time.monotonic() >= end:
            return None
        time.sleep(0.25)


def rejections(api):
    """The API server's count of creates failed because tandem's webhook could
    not be called (what docs/injector.md's TandemJobPodsNotCreated reads)."""
    _, _, text = api.call("GET", "/metrics")
    total = 0.0
    for line in str(text).splitlines():
        if (line.startswith("apiserver_admission_webhook_rejection_count{")
                and 'error_type="calling_webhook_error"' in line
                and 'name="pods.injector.tandem.dev"' in line):
            total += float(line.rsplit(" ", 1)[1])
    return total


class Report:
    """The PASS and FAIL lines."""

    def __init__(self):
        self.failed = []

    def check(self, scenario, ok, what):
        print(f"  {'ok' if ok else 'NOT OK'}: {what}")
        if not ok:
            self.failed.append(f"{scenario}: {what}")

    def verdict(self, scenario, before):
        mine = self.failed[before:]
        print(f"e2e-outage: {scenario}: {'PASS' if not mine else 'FAIL (' + '; '.join(mine) + ')'}")


def crash(api, hook, report, pods):
    """SIGKILL once the burst is under way, started again once the API server
    has counted a create failed on the webhook (and 3 s have passed)."""
    print(f"crash: a {pods}-Pod Indexed Job, the injector SIGKILLed once its first Pod is "
          "stored, back once the API server has refused a create (3 s at least)")
    before = len(report.failed)
    rejected_before = rejections(api)
    watch = Watch(api, "crash")
    created = create_job(api, "crash", pods)
    # Each step waits for the event before it; the bounds only catch a hang.
    if not watch.wait(1, created + HANG):
        raise k8s.Failed(f"crash: no Pod stored within {HANG} s of the Job's create")
    hook.proc.kill()
    hook.proc.wait()
    killed = time.monotonic()
    stored_before_kill = len(watch.pods())
    # The API server's own record of a create failed on the webhook while it
    # is down (the Job controller goes on creating the Pods it lacks).
    counted = until(lambda: rejections(api) > rejected_before, killed + HANG)
    time.sleep(max(0.0, killed + 3.0 - time.monotonic()))
    stored_while_down = len(watch.pods()) - stored_before_kill
    hook.start_again()
    restarted = time.monotonic()
    seen = watch.wait(pods, restarted + HANG)
    last = max((t for t, _, _ in seen), default=restarted)
    print(f"  killed {killed - created:.2f} s after the Job's create, {stored_before_kill} Pods "
          f"stored by then, {stored_while_down} while it was down; listening again "
          f"{restarted - created:.2f} s in; last Pod stored {last - created:.2f} s in "
          f"({last - restarted:.2f} s after the restart)")
    report.check("crash", counted, "the API server counted a create failed on the webhook while "
                 "the injector was down (apiserver_admission_webhook_rejection_count, docs' alert)"
                 if counted else f"the API server counted no failed create within {HANG} s "
                 "of the kill (apiserver_admission_webhook_rejection_count, docs' alert)")
    bare = [name for _, name, ok in seen if not ok]
    report.check("crash", not bare, f"{len(bare)} of {len(seen)} Pods stored without tandem")
    report.check("crash", len(seen) == pods, f"{len(seen)} of {pods} Pods stored after the restart")
    message = wait_failed_create(api, "crash", HANG)
    report.check("crash", message is not None, "the Job's events show FailedCreate")
    if message:
        print(f"  FailedCreate: {message}")
    report.verdict("crash", before)


def hung(api, hook, report):
    """SIGSTOP; once every thread of the injector is stopped, a one-Pod Job;
    the API server's own record of the webhook call that failed (its
    rejection counter) and the Job's FailedCreate; then a read of the Job's
    Pods, still stopped: none; SIGCONT; the Pod, with tandem. Each step waits
    for the event before it, never for a time: the bounds only catch a hang."""
    print("hung: the injector SIGSTOPped, a one-Pod Job created, then SIGCONT")
    before = len(report.failed)
    rejected_before = rejections(api)
    watch = Watch(api, "hung")
    hook.proc.send_signal(signal.SIGSTOP)
    if not until(lambda: stopped(hook.proc.pid), time.monotonic() + HANG):
        raise k8s.Failed(f"the injector (pid {hook.proc.pid}) did not stop on SIGSTOP")
    created = create_job(api, "hung", 1)
    counted = until(lambda: rejections(api) > rejected_before, created + HANG)
    counted_at = time.monotonic()
    message = wait_failed_create(api, "hung", HANG)
    failed_at = time.monotonic()
    stored = job_pods(api, "hung")
    still = stopped(hook.proc.pid)
    hook.proc.send_signal(signal.SIGCONT)
    resumed = time.monotonic()
    seen = watch.wait(1, resumed + HANG)
    report.check("hung", counted,
                 f"the API server counted the failed webhook call {counted_at - created:.1f} s "
                 "after the Job's create, the injector stopped" if counted else
                 f"the API server counted no failed webhook call within {HANG} s")
    report.check("hung", message is not None,
                 f"FailedCreate {failed_at - created:.1f} s after the Job's create, while stopped"
                 if message else f"no FailedCreate within {HANG} s")
    if message:
        print(f"  FailedCreate: {message}")
    report.check("hung", still and not stored,
                 f"{len(stored)} Pods stored, read after both, the injector "
                 f"{'still' if still else 'NO LONGER'} stopped")
    if stored:
        report.check("hung", False, "the Pod was stored before SIGCONT")
    elif seen:
        when, _, ok = seen[0]
        report.check("hung", ok, f"the Pod stored after SIGCONT ({when - resumed:.2f} s), "
                                 f"{'with' if ok else 'WITHOUT'} tandem")
    else:
        report.check("hung", False, f"no Pod stored within {HANG} s of SIGCONT")
    report.verdict("hung", before)


def stopped(pid):
    """Whether every thread of process `pid` is stopped (state T in each
    /proc/PID/task/TID/stat): a group stop reaches each thread in turn, and
    one still running could answer a review."""
    states = []
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            states.append(stat.read_text().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):
            return False
    return bool(states) and all(s in ("T", "t") for s in states)


def until(done, end, every=0.05):
    """Whether `done()` held before `end` (monotonic), asking every `every` s."""
    while True:
        if done():
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(every)


def job_pods(api, job):
    """The names of Job `job`'s Pods, as the API server reads them from its store now."""
    selector = urllib.parse.quote(f"job-name={job}")
    found, _ = api.must("GET", f"/api/v1/namespaces/{NS}/pods?labelSelector={selector}")
    return [p["metadata"]["name"] for p in found["items"]]


def plain_pod():
    """An opted-in Pod a Job owns, for dry-run creates that show a route is in effect."""
    pod = {"apiVersion": "v1", "kind": "Pod", **template()}
    pod["metadata"].update(generateName="probe-", ownerReferences=[{
        "apiVersion": "batch/v1", "kind": "Job", "name": "probe", "controller": True,
        "uid": "00000000-0000-4000-8000-000000000001"}])
    return pod


def in_effect(api, expect, what, bound=30.0):
    """Until a dry-run opted-in Pod comes back injected (`expect`) or not."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        status, _, pod = api.call("POST", f"/api/v1/namespaces/{NS}/pods?dryRun=All", plain_pod())
        if status == 201 and injected(pod) == expect:
            return
        time.sleep(0.2)
    raise k8s.Failed(f"{what}: not in effect after {bound:.0f} s")


def bursts(api, injector, hook, report, pods, rounds):
    """The same burst through each route, alternated; medians against none."""
    print(f"bursts: {pods}-Pod Indexed Jobs, {rounds} rounds, routes alternated")
    before = len(report.failed)
    text = subprocess.run([injector, "policy", "--image", IMAGE], check=True,
                          capture_output=True, text=True).stdout
    printed = [d for d in yaml.safe_load_all(text) if d]
    routes = {"none": ([], False), "webhook": ([hook.config], True), "policy": (printed, True)}
    took = {name: [] for name in routes}
    for r in range(rounds):
        names = list(routes)[r % 3:] + list(routes)[:r % 3]
        for name in names:
            objects, injects = routes[name]
            for obj in objects:
                k8s.create(api, obj)
            in_effect(api, injects, name)
            job = f"burst-{name}-{r}"
            watch = Watch(api, job)
            created = create_job(api, job, pods)
            seen = watch.wait(pods, created + 120)
            last = max((t for t, _, _ in seen), default=created)
            took[name].append(last - created)
            wrong = sum(1 for _, _, ok in seen if ok != injects)
            print(f"  round {r + 1} {name:8} {len(seen)} Pods in {last - created:.2f} s")
            report.check("bursts", len(seen) == pods and not wrong,
                         f"{job}: {len(seen)} of {pods} Pods, {wrong} not as the route makes them")
            for obj in reversed(objects):
                k8s.delete(api, obj)
            in_effect(api, False, f"{name} gone")
    floor = statistics.median(took["none"])
    for name in routes:
        median = statistics.median(took[name])
        runs = " ".join(f"{t:.2f}" for t in took[name])
        print(f"  {name:8} median {median:.2f} s ({median / floor:.2f}x none; runs {runs})")
        if name != "none":
            report.check("bursts", median <= GOAL * floor,
                         f"{name} within {GOAL}x none ({median / floor:.2f}x)")
    report.verdict("bursts", before)


def main(argv):
    if len(argv) != 6:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    kube_apiserver, etcd, kcm, injector, workdir = argv[1:6]
    workdir = Path(workdir).resolve()
    subprocess.run(["rm", "-rf", str(workdir)], check=True)
    chosen = os.environ.get("E2E_OUTAGE", "crash hung bursts").split()
    report, api, hook = Report(), None, None
    try:
        api = k8s.Cluster(kube_apiserver, etcd, workdir / "cluster", kcm)
        version, _ = api.must("GET", "/version")
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        print(f"e2e-outage: kube-apiserver {version.get('gitVersion')} and its Job controller; "
              f"load average {load} on {os.cpu_count()} CPUs; logs in {workdir}")
        k8s.create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        api.must("POST", f"/api/v1/namespaces/{NS}/serviceaccounts",
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
                 ok=(201, 409))
        hook = k8s.Injector(api, injector, workdir / "injector.log", ["--image", IMAGE])
        policies = {w["failurePolicy"] for w in hook.config["webhooks"]}
        if policies != {"Fail"}:
            raise k8s.Failed(f"the shipped webhooks' failurePolicy is {policies}, not Fail")
        in_effect(api, True, "webhook")
        if "crash" in chosen:
            crash(api, hook, report, int(os.environ.get("E2E_CRASH_PODS", "120")))
        if "hung" in chosen:
            hung(api, hook, report)
        if "bursts" in chosen:
            k8s.delete(api, hook.config)
            in_effect(api, False, "webhook gone")
            bursts(api, injector, hook, report, int(os.environ.get("E2E_BURST_PODS", "150")),
                   max(1, int(os.environ.get("E2E_BURST_ROUNDS", "3"))))
            k8s.create(api, hook.config)
    except (k8s.Failed, subprocess.CalledProcessError, OSError) as e:
        print(f"e2e-outage: FAILED to set up or run: {e}", file=sys.stderr)
        return 2
    finally:
        if hook:
            hook.proc.send_signal(signal.SIGCONT)
            hook.stop()
        if api:
            api.stop()
    print(f"e2e-outage: {len(report.failed)} failed checks")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
