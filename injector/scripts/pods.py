#!/usr/bin/env python3
"""The injector's Pods run for real: `make injector-pods`.

The HTTPS tests (`make injector-test`) send each Job's Pod to the injector as
the API server does and apply the JSONPatch it answers; they write the Pods as
sent to ORIGINAL/ and as patched to PATCHED/. This runs the patched Pods under
`podman kube play` with the images of the Pod harness (tests/pods/pods.py, whose
helpers it imports: scratch images from local files, the real Envoy as
istio-proxy under a pilot-agent stand-in), as kubelet would:

  - plain: no sidecar; tandem, installed by the init container into the
    emptyDir, runs the job; the job container exits with the app's status (3);
  - istio-classic: tandem waits for the real Envoy, runs the job, quits the
    proxy: every container exits, the job with 3 and istio-proxy with 0;
  - istio-native: istio-proxy is a native sidecar (an init container with
    restartPolicy: Always, which podman 4 cannot run as one: it runs as a
    container beside the job, as kubelet runs it). tandem waits for it and
    never quits it: the job exits 3, istio-proxy is still running after it and
    was never asked to quit; the script then stops it, as kubelet does;
  - two-jobs: two job containers and istio-proxy: both jobs exit 3 and the
    proxy exits 0. It needs a tandem that implements SPEC §9 (the sidecars stop
    after the last job container, not the first): without it the first job to
    finish quits istio-proxy under the other, which may not have started yet.
    It runs when TANDEM_JOB_CONTAINERS is in `tandem --help`, and says so when
    it does not;
  - no-command: the plain Pod's job container without command or args, its
    image (with ENTRYPOINT and CMD) pushed to a loopback docker-registry, which
    the injector reads to wrap it (pods_registry.py): the job exits 3.

Each Pod as sent never mentioned tandem (only the opt-in label): checked first.

Usage: pods.py HARNESS TANDEM FAKE_SIDECAR ENVOY ORIGINAL PATCHED INJECTOR
  HARNESS: tests/pods/pods.py; TANDEM, FAKE_SIDECAR: static musl builds; ENVOY:
  the pinned Envoy; INJECTOR: the tandem-injector binary.

Needs root, podman (with runc), catatonit, a static busybox, docker-registry and
openssl: without them it
skips (recorded in $SKIPS), except under CI=true, where it fails. Everything it
creates is named with this run's id and removed at the end.
"""

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
import pods_registry  # noqa: E402 (after the line above)

# The images the injector tests' Pods name (injector/tests/support/pods.rs),
# beside those the harness already maps.
IMAGES = {
    "docker.io/istio/proxyv2:1.28.0": "istio-proxy",
}
# The tandem image the injector tests' Pods name (injector/tests/support/pods.rs).
TANDEM_IMAGE = "ghcr.io/tandem-sidecar/tandem:0.1.0"
# The token volume kubelet would fill: podman has no projected volumes.
TOKEN_VOLUME = "kube-api-access-7xk2p"
# The cases that run, and the Pod harness' bounds.
CASES = ["plain", "istio-classic", "istio-native", "two-jobs"]
NATIVE_STAYS_FOR = 5.0


def load_harness(path):
    """tests/pods/pods.py as a module."""
    sys.dont_write_bytecode = True  # no __pycache__ beside the harness
    spec = importlib.util.spec_from_file_location("pods_harness", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def to_podman(h, podman, name, pod):
    """The patched Pod as podman can play it: local images, nothing pulled, the
    token volume and the ports left out, native sidecars run as containers, its
    own name."""
    pod = json.loads(json.dumps(pod))
    spec = pod["spec"]
    mapping = dict(h.IMAGES, **IMAGES)
    native = [c for c in spec.get("initContainers", []) if c.get("restartPolicy") == "Always"]
    spec["initContainers"] = [c for c in spec.get("initContainers", []) if c not in native]
    for c in native:
        del c["restartPolicy"]
    spec["containers"] = native + spec["containers"]
    for c in spec["initContainers"] + spec["containers"]:
        if c["image"] not in mapping:
            raise h.Failed(f"{name}: no local image for {c['image']}")
        c["image"] = podman.image(mapping[c["image"]])
        c["imagePullPolicy"] = "Never"
        c["volumeMounts"] = [m for m in c.get("volumeMounts", []) if m["name"] != TOKEN_VOLUME]
        # podman 4 binds a containerPort on the host, where Pods running side by
        # side collide; in Kubernetes it is informational.
        c.pop("ports", None)
    spec["volumes"] = [v for v in spec["volumes"] if v["name"] != TOKEN_VOLUME]
    # podman 4 refuses annotation values over 63 characters (a label's limit;
    # Kubernetes allows 256 KiB): the injector's one-line report stays out.
    annotations = {k: v for k, v in pod["metadata"].get("annotations", {}).items()
                   if len(v) <= 63}
    pod["metadata"] = {
        "name": name,
        "labels": pod["metadata"]["labels"],
        "annotations": annotations,
    }
    pod.pop("status", None)
    return pod, [c["name"] for c in native]


def run_class(h):
    """The harness' Case (play, state, log, dump) for a patched Pod: several job
    containers, native sidecars, no manifest of examples/k8s behind it."""

    class Run(h.Case):
        """One patched Pod playing."""

        # pylint: disable=super-init-not-called (Case reads a manifest; this has a Pod)
        def __init__(self, podman, work, key, pod):
            self.h = h
            self.key = key
            self.name = f"tandem-injected-{key}-{podman.run_id}"
            self.jobs = [c["name"] for c in pod["spec"]["containers"]
                         if c.get("command", [""])[0] == "/tandem/tandem"]
            self.job = self.jobs[0]
            self.pod, self.native = to_podman(h, podman, self.name, pod)
            self.sidecars = [c["name"] for c in self.pod["spec"]["containers"]
                             if c["name"] not in self.jobs]
            self.file = work / f"{key}.json"
            self.file.write_text(json.dumps(self.pod, indent=2))
            self.podman = podman

        def jobs_done(self):
            """True when every job container has exited."""
            states = self.state()
            return all(states.get(j, ("missing", None))[0] == "exited" for j in self.jobs)

    return Run


def check(run):
    """The job containers exited with the app's status after tandem waited for
    the sidecars; classic sidecars quit (exit 0), native ones still running and
    never asked to quit."""
    h = run.h
    states = run.state()
    for job in run.jobs:
        state, code = states.get(job, ("missing", None))
        log = run.log(job)
        if code != 3:
            raise h.Failed(f"{run.key}: job container {job} exited {code}, not the app's 3")
        expected = ["app: "] + (["tandem: sidecars ready"] if run.sidecars else [])
        for line in expected:
            if line not in log:
                raise h.Failed(f"{run.key}: {job}'s log has no {line!r}")
    for sidecar in run.sidecars:
        state, code = states.get(sidecar, ("missing", None))
        if sidecar in run.native:
            if state != "running":
                raise h.Failed(f"{run.key}: native sidecar {sidecar} is {state} (exit {code}): "
                               "tandem must not quit it, kubelet stops it")
            if "asked to quit" in run.log(sidecar):
                raise h.Failed(f"{run.key}: native sidecar {sidecar} was asked to quit")
        elif state != "exited" or code != 0:
            raise h.Failed(f"{run.key}: sidecar {sidecar} is {state}, exit {code}, not exited 0")
    sidecars = ", ".join(f"{s} {'still running (native)' if s in run.native else 'exited 0'}"
                         for s in run.sidecars)
    h.say(f"ok: {run.key}: {', '.join(run.jobs)} exited 3 under the injected tandem; "
          f"{sidecars or 'no sidecar'}")


def never_mentioned_tandem(h, original):
    """The Pod as sent names tandem only in its opt-in label."""
    for path in original:
        pod = json.loads(path.read_text())
        pod["metadata"]["labels"].pop("tandem.dev/inject")
        if "tandem" in json.dumps(pod):
            raise h.Failed(f"{path}: the Pod as sent already mentions tandem")


def cases(h, tandem):
    """The cases this tandem can run: two-jobs only with SPEC §9."""
    usage = subprocess.run([tandem, "--help"], capture_output=True, text=True, check=True).stdout
    if "TANDEM_JOB_CONTAINERS" in usage:
        return CASES
    h.say("two-jobs: not run: this tandem does not implement SPEC §9 yet "
          "(no TANDEM_JOB_CONTAINERS in its --help)")
    return [key for key in CASES if key != "two-jobs"]


def test(h, podman, work, keys, original_dir, patched_dir, injector):
    """Every case, all Pods at once."""
    originals = [original_dir / f"{key}.json" for key in CASES]
    never_mentioned_tandem(h, originals)
    make_run = run_class(h)
    runs = [make_run(podman, work, key, json.loads((patched_dir / f"{key}.json").read_text()))
            for key in keys]
    started = []
    try:
        plain = json.loads((original_dir / "plain.json").read_text())
        pod = pods_registry.patched_pod(h, podman, work, injector, plain, TANDEM_IMAGE, IMAGES,
                                        started)
    finally:
        for process in started:
            process.terminate()
            process.wait()
    runs.append(make_run(podman, work, pods_registry.KEY, pod))
    started = time.monotonic()
    for run in runs:
        run.play()
    h.say(f"{len(runs)} injected Pods playing")
    try:
        for run in runs:
            left = h.COMPLETE_WITHIN - (time.monotonic() - started)
            h.wait_for(run.jobs_done, left, f"{run.key}: the job containers exited")
            classic = [s for s in run.sidecars if s not in run.native]
            h.wait_for(lambda: all(run.state()[s][0] == "exited" for s in classic),
                       h.COMPLETE_WITHIN - (time.monotonic() - started),
                       f"{run.key}: the classic sidecars exited")
        time.sleep(NATIVE_STAYS_FOR)
        for run in runs:
            check(run)
    except h.Failed:
        for run in runs:
            h.say(f"{run.key}:")
            run.dump()
        raise
    h.say(f"all {len(runs)} injected Pods as expected in {time.monotonic() - started:.1f}s")


def main(argv):
    """Checks the reviews are written, then runs the Pods through the harness's `run`
    (prerequisites, images, cleanup)."""
    if len(argv) != 7:
        print(__doc__.split("\n\n")[-3], file=sys.stderr)
        return 64
    harness, tandem, fake, envoy, original_dir, patched_dir, injector = (
        Path(a).resolve() for a in argv)
    h = load_harness(harness)
    if shutil.which("docker-registry") is None or shutil.which("openssl") is None:
        h.skip("docker-registry or openssl is missing (apt-get install docker-registry openssl)")
    for key in CASES:
        for d in (original_dir, patched_dir):
            if not (d / f"{key}.json").exists():
                h.say(f"{d / key}.json is missing: make injector-test writes it")
                return 64

    def body(podman, work):
        test(h, podman, work, cases(h, tandem), original_dir, patched_dir, injector)

    return h.run(tandem, fake, envoy, "injector-pods", body, "make injector-pods")

if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
