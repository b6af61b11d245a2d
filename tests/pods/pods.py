#!/usr/bin/env python3
"""Real Pods: the Jobs of examples/k8s/ run as Pods under `podman kube play`.

Each case takes a Job's pod template as the docs show it, swaps its image names for
local scratch images (IMAGES below), adds the sidecar the mesh's injector would add
(a real Envoy for Istio; the fake sidecar standing in where no real binary can be
had), runs the Pod, and checks that it completes: the job container exits with the
app's status (3), every sidecar container has exited 0 (told to quit, not killed),
within a bound. The job containers run as the manifests' securityContext asks (not
root, read-only root filesystem, no capabilities, no privilege escalation): the app
says how it runs and that its orphan came back to tandem and was reaped, and the
test checks both; each container gets a /dev/termination-log as the kubelet makes
it, which must hold tandem's reason when tandem ended the run, and nothing else.
A control Pod runs the same Istio Job without tandem: its sidecar must still be
running when the others are done, so this test can fail. A signal case stops the
job container while the app runs: the app must see SIGTERM through tandem, and the
sidecars must quit.
A Pod with two job containers of different lengths around the real Envoy
(SPEC §9) shows the mesh outliving the first and stopping after the second, quit
once.

Usage: pods.py [--demo] TANDEM FAKE_SIDECAR ENVOY
  TANDEM and FAKE_SIDECAR: static musl builds; ENVOY: the pinned Envoy (glibc,
  dynamically linked: its libraries and loader are copied into its image).
  --demo: the before/after story for a person (`make demo-pod`) instead of the test.

Needs root and podman (with runc). Without them the test is skipped (recorded in
$SKIPS when set), except under CI=true, where it fails. Everything it creates is
named with this run's id and removed at the end, on failure too.
"""

import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import yaml
except ImportError:  # main() skips (or fails under CI=true) and says what to install
    yaml = None

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
K8S = ROOT / "examples" / "k8s"

# Hang guards, generous for 2 shared cores starting several Envoys at once.
COMPLETE_WITHIN = 120.0
APP_STARTS_WITHIN = 60.0
# How long the control Pod's sidecar must outlive its job, at the least.
CONTROL_STUCK_FOR = 10.0
# podman stop's grace before SIGKILL: the signal case fails if it is reached.
STOP_GRACE = 30
# How much longer than migrate's (1s) report's app runs in the two-jobs Pod.
TWO_JOBS_LONGER = 8

# The manifests' images and what runs in their place (keys of the local images).
IMAGES = {
    "registry.example.com/myjob:1.0": "job",
    "registry.example.com/migrate:1.0": "job",
    "registry.example.com/report:1.0": "job",
    "registry.example.com/myjob-distroless:1.0": "job-distroless",
    "registry.example.com/report-distroless:1.0": "job-upload",
    "registry.example.com/storage-gateway:1.0": "storage-gateway",
    "ghcr.io/tandem-sidecar/tandem:0.1.0": "tandem",
    "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.3": "cloud-sql-proxy",
    "envoyproxy/envoy:v1.40.0": "envoy",
}

# The app's names in the manifests, each an alias of bin/app.sh in the job images.
APP_NAMES = ["myjob", "migrate", "report", "run-report.sh", "run-all.sh"]
# busybox applets the scripts use (symlinks to the static busybox).
APPLETS = ["sh", "awk", "kill", "mv", "netstat", "sleep", "sort", "tr", "wget"]

ENVOY_CONFIG = """\
# istio-proxy's Envoy: the admin API on Istio's port, its access log in the
# container's log (what tandem and the pilot-agent stand-in asked).
admin:
  access_log:
  - name: envoy.access_loggers.file
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
      path: /dev/stdout
  address:
    socket_address: { address: 127.0.0.1, port_value: 15000 }
"""


class Failed(Exception):
    """A check failed: the message says which and why."""


def say(message):
    """One line of progress on stderr (stdout stays free)."""
    print(f"pods: {message}", file=sys.stderr, flush=True)


class Podman:
    """podman with this run's containers.conf, and what this run created."""

    def __init__(self, conf, run_id):
        self.env = dict(os.environ, CONTAINERS_CONF=str(conf))
        self.run_id = run_id
        self.pods = []
        self.images = []

    def __call__(self, *args, check=True, quiet=False):
        """Runs `podman ARGS`; returns its stdout. podman's stderr noise (syslog)
        is shown only when the command fails."""
        proc = subprocess.run(
            ["podman", *args], env=self.env, capture_output=True, text=True
        )
        if check and proc.returncode != 0:
            raise Failed(
                f"podman {' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()}"
            )
        if not quiet and proc.returncode != 0:
            say(f"podman {' '.join(args)}: exit {proc.returncode}")
        return proc.stdout

    def image(self, key):
        """The local name of image KEY for this run."""
        return f"localhost/tandem-test/{key}:run-{self.run_id}"

    def build(self, key, context, containerfile):
        """Builds image KEY from CONTEXT with the given Containerfile text."""
        (context / "Containerfile").write_text(containerfile)
        self.images.append(self.image(key))
        self("build", "--pull=never", "--quiet", "-t", self.image(key), str(context))

    def containers(self, pod):
        """{container name: (state, exit code)} of POD's containers, infra excluded."""
        out = self("ps", "-a", "--filter", f"pod={pod}", "--format", "json")
        found = {}
        for c in json.loads(out or "[]"):
            if c.get("IsInfra"):
                continue
            name = c["Names"][0] if isinstance(c["Names"], list) else c["Names"]
            found[name.removeprefix(pod + "-")] = (c["State"], c.get("ExitCode"))
        return found

    def logs(self, pod, container):
        """The container's log, stdout and stderr together."""
        proc = subprocess.run(
            ["podman", "logs", f"{pod}-{container}"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        return proc.stdout

    def cleanup(self):
        """Removes the Pods and images this run created (at once: no grace)."""
        for pod in self.pods:
            self("pod", "rm", "-f", "-t", "0", pod, check=False, quiet=True)
        if self.images:
            self("rmi", "-f", *self.images, check=False, quiet=True)


def skip(reason):
    """A missing prerequisite: fails under CI=true, else skips (recorded in $SKIPS)."""
    if os.environ.get("CI") == "true":
        say(f"FAILED, cannot run in CI: {reason}")
        sys.exit(1)
    say(f"skipped: {reason}")
    records = os.environ.get("SKIPS")
    if records:
        try:
            Path(records).parent.mkdir(parents=True, exist_ok=True)
            with open(records, "a") as f:
                f.write(f"pods\t{reason}\tthe Pod tests did not run\n")
        except OSError:
            say(f"(this skip is not recorded in {records})")
    sys.exit(0)


def libraries(binary):
    """The shared libraries and loader a dynamic binary needs (from ldd)."""
    out = subprocess.run(
        ["ldd", str(binary)], capture_output=True, text=True, check=True
    ).stdout
    paths = []
    for line in out.splitlines():
        m = re.search(r"(/\S+) \(0x", line)
        if m:
            paths.append(Path(m.group(1)))
    return paths


def put(root, path, source=None, text=None, mode=0o755):
    """Writes a file into an image's root at PATH (absolute inside the image)."""
    dest = root / str(path).lstrip("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source is not None:
        shutil.copy2(source, dest)
    else:
        dest.write_text(text)
    dest.chmod(mode)


def busybox_root(root, busybox):
    """A static busybox at /bin with the applets the scripts use."""
    put(root, "/bin/busybox", busybox)
    for applet in APPLETS:
        (root / "bin" / applet).symlink_to("busybox")


def build_images(podman, work, tandem, fake, envoy, busybox):
    """Builds every local image FROM scratch from local files."""
    scratch = "FROM scratch\nCOPY . /\n"

    def context(name):
        path = work / name
        path.mkdir()
        return path

    root = context("tandem")
    put(root, "/tandem", tandem)
    podman.build("tandem", root, scratch + 'ENTRYPOINT ["/tandem"]\n')

    # The job images: the app under each name; `job` has tandem at /tandem, the
    # distroless one does not (it gets tandem from the init container).
    for key, with_tandem in (("job", True), ("job-distroless", False)):
        root = context(key)
        busybox_root(root, busybox)
        for name in APP_NAMES:
            put(root, f"/app/{name}", HERE / "bin" / "app.sh")
        if with_tandem:
            put(root, "/tandem", tandem)
        podman.build(key, root, scratch + "ENV APP_MODE=exit3\n")
    # The upload Pod's job image: the app, tandem, and the --on-exit program
    # (tests/fake-sidecar's second binary, built beside it).
    root = context("job-upload")
    busybox_root(root, busybox)
    put(root, "/app/report", HERE / "bin" / "app.sh")
    put(root, "/tandem", tandem)
    put(root, "/upload", Path(fake).with_name("upload"))
    podman.build("job-upload", root, scratch + "ENV APP_MODE=exit3\n")
    root = context("job-term")
    podman.build(
        "job-term", root, f"FROM {podman.image('job')}\nENV APP_MODE=wait-term\n"
    )

    # Fakes: one image, a script per sidecar; cloud-sql-proxy's runs as the
    # entrypoint since the manifest gives only args, as a non-root user.
    root = context("fake")
    busybox_root(root, busybox)
    put(root, "/fake-sidecar", fake)
    for script in ("cloud-sql-proxy", "linkerd-proxy", "generic-sidecar", "vault-agent"):
        put(root, f"/{script}", HERE / "bin" / f"{script}.sh")
    podman.build("fake", root, scratch)
    root = context("cloud-sql-proxy")
    root = context("storage-gateway")
    podman.build(
        "storage-gateway",
        root,
        f"FROM {podman.image('fake')}\nUSER 65532\nENV QUIT_ENABLED=true\n"
        'ENTRYPOINT ["/generic-sidecar", "9000"]\n',
    )
    podman.build(
        "cloud-sql-proxy",
        root,
        f"FROM {podman.image('fake')}\nUSER 65532\nENTRYPOINT [\"/cloud-sql-proxy\"]\n",
    )

    # envoy: the real Envoy with its glibc libraries and loader, nothing else.
    root = context("envoy")
    put(root, "/usr/local/bin/envoy", envoy)
    for lib in libraries(envoy):
        put(root, lib, lib.resolve())
    podman.build("envoy", root, scratch + 'ENTRYPOINT ["/usr/local/bin/envoy"]\n')

    # istio-proxy: that Envoy, its bootstrap, busybox and the fake for the
    # pilot-agent stand-in.
    root = context("istio-proxy")
    busybox_root(root, busybox)
    put(root, "/etc/envoy/envoy.yaml", text=ENVOY_CONFIG, mode=0o644)
    put(root, "/fake-sidecar", fake)
    put(root, "/istio-proxy", HERE / "bin" / "istio-proxy.sh")
    podman.build(
        "istio-proxy",
        root,
        f"FROM {podman.image('envoy')}\nCOPY . /\nENTRYPOINT [\"/istio-proxy\"]\n",
    )


def pod_template(manifest):
    """The pod template of the Job or CronJob in MANIFEST, as written."""
    doc = yaml.safe_load((K8S / manifest).read_text())
    if doc["kind"] == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]
    if doc["kind"] == "Job":
        return doc["spec"]["template"]
    raise Failed(f"{manifest}: a {doc['kind']}, not a Job or CronJob")


def injected(meta, image):
    """The sidecar containers the mesh's injector would add for this template."""
    labels = meta.get("labels") or {}
    notes = meta.get("annotations") or {}
    sidecars = []
    if labels.get("sidecar.istio.io/inject") == "true":
        sidecars.append({"name": "istio-proxy", "image": image("istio-proxy")})
    if notes.get("linkerd.io/inject") == "enabled":
        enabled = notes.get("config.linkerd.io/proxy-admin-shutdown") == "enabled"
        sidecars.append(
            {
                "name": "linkerd-proxy",
                "image": image("fake"),
                "command": ["/linkerd-proxy"],
                "env": [
                    {
                        "name": "LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED",
                        "value": str(enabled).lower(),
                    }
                ],
            }
        )
    if notes.get("dapr.io/enabled") == "true":
        sidecars.append(
            {
                "name": "daprd",
                "image": image("fake"),
                "command": ["/generic-sidecar", "3500"],
                "env": [{"name": "QUIT_ENABLED", "value": "true"}],
            }
        )
    if notes.get("vault.hashicorp.com/agent-inject") == "true":
        enabled = notes.get("vault.hashicorp.com/agent-enable-quit") == "true"
        secret = "vault.hashicorp.com/agent-inject-secret-"
        names = [k[len(secret):] for k in notes if k.startswith(secret)]
        sidecars.append(
            {
                "name": "vault-agent",
                "image": image("fake"),
                "command": ["/vault-agent", *names],
                "env": [{"name": "QUIT_ENABLED", "value": str(enabled).lower()}],
            }
        )
    return sidecars


def runs_tandem(container):
    """Whether a manifest's container runs tandem (a job container)."""
    command = container.get("command") or []
    return bool(command) and os.path.basename(command[0]) == "tandem"


def inject_volumes(meta, spec):
    """The volumes the injectors share between their sidecar and the job: Vault's
    injector mounts an emptyDir at /vault/secrets in every container, where its
    agent renders the secrets."""
    notes = meta.get("annotations") or {}
    if notes.get("vault.hashicorp.com/agent-inject") == "true":
        spec.setdefault("volumes", []).append({"name": "vault-secrets", "emptyDir": {}})
        for c in spec["containers"]:
            c.setdefault("volumeMounts", []).append(
                {"name": "vault-secrets", "mountPath": "/vault/secrets"}
            )


def make_pod(podman, name, manifest, images=None, without_tandem=False, app_env=None):
    """The Pod for MANIFEST's template: local images, the injected sidecars,
    `imagePullPolicy: Never` (nothing is pulled). IMAGES overrides the mapping;
    WITHOUT_TANDEM runs the job container's command after `--` directly;
    APP_ENV adds variables to the app of each job container named in it."""
    template = copy.deepcopy(pod_template(manifest))
    meta = template.get("metadata") or {}
    spec = template["spec"]
    mapping = dict(IMAGES, **(images or {}))
    jobs = [c["name"] for c in spec["containers"] if runs_tandem(c)]
    for c in spec["containers"]:
        extra = (app_env or {}).get(c["name"], {})
        c.setdefault("env", []).extend({"name": k, "value": v} for k, v in extra.items())
    for c in spec.get("initContainers", []) + spec["containers"]:
        if c["image"] not in mapping:
            raise Failed(f"{manifest}: no local image for {c['image']} (pods.py IMAGES)")
        c["image"] = podman.image(mapping[c["image"]])
        if without_tandem and "--" in c.get("command", []):
            c["command"] = c["command"][c["command"].index("--") + 1 :]
    spec["containers"] += injected(meta, podman.image)
    inject_volumes(meta, spec)
    for c in spec.get("initContainers", []) + spec["containers"]:
        c["imagePullPolicy"] = "Never"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": meta.get("labels") or {},
            "annotations": meta.get("annotations") or {},
        },
        "spec": spec,
    }
    # The containers that run tandem are the jobs; the rest are sidecars (the Cloud
    # SQL proxy is one, though written in the manifest).
    return pod, jobs


def mount_termination_logs(spec, directory):
    """What the kubelet does for every container: an empty file on the node, mode
    0666 so that any user can write it, mounted at /dev/termination-log (podman
    mounts none). Returns {container name: the file}."""
    directory.mkdir(parents=True)
    files = {}
    for c in spec.get("initContainers", []) + spec["containers"]:
        path = directory / c["name"]
        path.touch()
        path.chmod(0o666)
        volume = f"termination-log-{c['name']}"
        spec.setdefault("volumes", []).append(
            {"name": volume, "hostPath": {"path": str(path), "type": "File"}})
        c.setdefault("volumeMounts", []).append(
            {"name": volume, "mountPath": "/dev/termination-log"})
        files[c["name"]] = path
    return files


# The app's line on how it runs (bin/app.sh).
RUNS_AS = re.compile(
    r"^app: as uid (\d+), root filesystem (\w+), CapBnd ([0-9a-f]+), NoNewPrivs (\d)$", re.M)


def check_restricted(case, log):
    """The job ran as the examples' securityContext asks: not root, on a read-only
    root filesystem, with no capabilities and no_new_privs (podman applies
    runAsUser/runAsGroup, readOnlyRootFilesystem, capabilities and
    allowPrivilegeEscalation; not runAsNonRoot, hence the uid check); and its
    orphan came back to tandem, which reaped it."""
    found = RUNS_AS.search(log)
    if not found:
        raise Failed(f"{case.key}: the app did not say how it runs")
    uid, root, bounding, no_new_privs = found.groups()
    wrong = [what for what, bad in (
        ("as root", uid == "0"),
        (f"on a root filesystem mounted {root}", root != "ro"),
        ("with capabilities", int(bounding, 16) != 0),
        ("without no_new_privs", no_new_privs != "1"),
    ) if bad]
    if wrong:
        raise Failed(f"{case.key}: the job ran {', '.join(wrong)}: {found.group(0)}")
    for pattern in (r"^app: orphan \d+ re-parented to tandem", r"^app: orphan \d+ reaped$"):
        if not re.search(pattern, log, re.M):
            raise Failed(f"{case.key}: the job's log has no line like {pattern!r}")


def check_termination_log(case):
    """/dev/termination-log holds tandem's reason when it ended the run itself, and
    nothing when the app's status tells all (SPEC §7)."""
    text = case.termination_logs[case.job].read_text()
    if case.message is None and text:
        raise Failed(f"{case.key}: termination message {text!r}, though the app ran")
    if case.message is not None and case.message not in text:
        raise Failed(f"{case.key}: termination message {text!r}, not {case.message!r}")


class Case:
    """One Pod of the run and what it must do."""

    def __init__(self, podman, work, key, manifest, what, waits=True, code=3, message=None,
                 share_pids=False, expect=(), **pod_args):
        self.key = key
        # Whether tandem has something to wait for (the vault preset has not).
        self.waits = waits
        # Lines the job's log must hold besides tandem's ready line and the app's.
        self.expect = expect
        self.manifest = manifest
        self.what = what
        self.name = f"tandem-{key}-{podman.run_id}"
        self.pod, self.jobs = make_pod(podman, self.name, manifest, **pod_args)
        # The first job container, the only one but in the several-jobs case.
        self.job = self.jobs[0]
        # How the job container must end: its status and, when tandem ended the
        # run itself (the app never ran), what its termination message says.
        self.code, self.message = code, message
        if share_pids:
            self.pod["spec"]["shareProcessNamespace"] = True
        self.termination_logs = mount_termination_logs(self.pod["spec"], work / "logs" / key)
        self.sidecars = [
            c["name"] for c in self.pod["spec"]["containers"] if c["name"] not in self.jobs
        ]
        self.file = work / f"{key}.yaml"
        self.file.write_text(yaml.safe_dump(self.pod, sort_keys=False))
        self.podman = podman

    def play(self):
        """Starts the Pod."""
        self.podman.pods.append(self.name)
        self.podman("kube", "play", str(self.file))

    def state(self):
        """{container: (state, exit code)}."""
        return self.podman.containers(self.name)

    def done(self):
        """True when every container of the Pod has exited."""
        states = self.state()
        return bool(states) and all(s == "exited" for s, _ in states.values())

    def log(self, container=None):
        """A container's log (the job's by default)."""
        return self.podman.logs(self.name, container or self.job)

    def dump(self):
        """Every container's state and log, for a failure report."""
        for container, (state, code) in self.state().items():
            say(f"  {self.name}-{container}: {state}, exit {code}; its log:")
            for line in self.log(container).splitlines()[-40:]:
                say(f"    {line}")


def wait_for(predicate, within, what):
    """Polls PREDICATE until true, or fails after WITHIN seconds (a hang guard)."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise Failed(f"not within {within:.0f}s: {what}")
        time.sleep(0.25)


def check_completed(case, app_code, expect_in_log=()):
    """The job container exited with the app's status (or tandem's, for an app that
    never ran) after tandem saw the sidecars ready, as a non-root user with the
    termination message SPEC §7 asks; every sidecar exited 0."""
    states = case.state()
    state, code = states.get(case.job, ("missing", None))
    log = case.log()
    if code != app_code:
        raise Failed(f"{case.key}: the job container exited {code}, not the app's {app_code}")
    ready = ("tandem: sidecars ready",) if case.waits else ()
    ran = ("app: ",) if case.message is None else ()
    for line in ready + ran + tuple(expect_in_log):
        if line not in log:
            raise Failed(f"{case.key}: the job's log has no {line!r}")
    if ran:
        check_restricted(case, log)
    check_termination_log(case)
    for sidecar in case.sidecars:
        state, code = states.get(sidecar, ("missing", None))
        if state != "exited" or code != 0:
            raise Failed(f"{case.key}: sidecar {sidecar} is {state}, exit {code}, not exited 0")
    started = next((line for line in log.splitlines() if line.startswith("app: ")),
                   f"termination message: {case.message}")
    say(f"ok: {case.key} ({case.what}): job exited {app_code}, "
        f"{', '.join(case.sidecars)} exited 0; {started}")


def cases(podman, work):
    """Every Pod of the test: (completing cases, control, signal case)."""
    done = [
        Case(podman, work, "envoy", "envoy-job.yaml",
             "--mesh envoy: the real Envoy alone, quit through its own admin"),
        Case(podman, work, "istio-cronjob", "istio-cronjob.yaml",
             "ENVOY_ADMIN_API: waits on the real Envoy's :15000/ready, quits via :15020"),
        Case(podman, work, "istio", "istio-job.yaml",
             "--mesh istio: pilot-agent stand-in on :15021/:15020 around the real Envoy"),
        Case(podman, work, "istio-cloudsql", "istio-cloudsql-job.yaml",
             "--mesh istio,cloudsql: two sidecars"),
        Case(podman, work, "linkerd", "linkerd-job.yaml", "--mesh linkerd (fake proxy)"),
        Case(podman, work, "distroless", "distroless-init-container.yaml",
             "--install-to in an init container, emptyDir, job image without tandem"),
        Case(podman, work, "dapr", "dapr-job.yaml", "the dapr preset (fake daprd)"),
        # With nothing to wait for, tandem runs the short job at once and its quit
        # may reach :8200 before the agent listens: the refused quit is retried
        # until the quit deadline (this Pod found that race).
        Case(podman, work, "vault", "vault-agent-job.yaml",
             "the vault preset (fake agent; no readiness, quit retried until it listens)",
             waits=False),
        # tandem not PID 1 (the Pod shares its process namespace, catatonit is):
        # the app's orphan comes back to it as child subreaper, a non-root prctl.
        Case(podman, work, "subreaper", "linkerd-job.yaml",
             "shareProcessNamespace: tandem is a subreaper, not PID 1", share_pids=True),
        # A job image without the command: tandem (installed by the init container)
        # exits 127, writes why to the kubelet's termination log, quits the sidecar.
        Case(podman, work, "not-found", "distroless-init-container.yaml",
             "the job image lacks the command: 127, the reason in the termination log",
             images={"registry.example.com/myjob-distroless:1.0": "tandem"},
             code=127, message="/app/myjob: command not found"),
        Case(podman, work, "cloudsql-tcp", "cloudsql-tcp-job.yaml",
             "--ready tcp://127.0.0.1:5432: the proxy stand-in without --health-check",
             expect=("waiting for tcp://127.0.0.1:5432", "listening in the Pod: 5432")),
        Case(podman, work, "on-exit", "on-exit-job.yaml",
             "--on-exit: /upload PUTs the job's output through the sidecar before the quit",
             expect=("app: wrote /out/report.csv",
                     'upload: read /out/report.csv: 35 bytes, first line '
                     '"report: rows=42, written by report"; the job\'s status 3',
                     "upload: PUT http://127.0.0.1:9000/reports/nightly.csv: 201",
                     "the --on-exit program exited with 0")),
        Case(podman, work, "vault-render", "vault-agent-render-job.yaml",
             "--ready file:///vault/secrets/db: the agent stand-in renders into an emptyDir",
             expect=("waiting for file:///vault/secrets/db",
                     "app: read /vault/secrets/db: username=v-job-db")),
    ]
    control = Case(podman, work, "control", "istio-job.yaml",
                   "the Istio Job without tandem", without_tandem=True)
    term = Case(podman, work, "signal", "istio-job.yaml",
                "podman stop on the job container while the app runs",
                images={"registry.example.com/myjob:1.0": "job-term"})
    two = Case(podman, work, "two-jobs", "istio-two-job-containers.yaml",
               "two job containers: migrate (1s, exits 0) and report (8s, exits 3)",
               app_env={
                   "migrate": {"APP_SECONDS": "1", "APP_CODE": "0"},
                   "report": {"APP_SECONDS": str(TWO_JOBS_LONGER), "APP_CODE": "3"},
               })
    return done, control, term, two


def show_ps(podman, case):
    """`podman pod ps` and `podman ps` of one Pod, as a person would run them."""
    print(f"\n  $ podman pod ps --filter name={case.name}", file=sys.stderr)
    out = podman("pod", "ps", "--filter", f"name={case.name}",
                 "--format", "table {{.Name}}\t{{.Status}}")
    for line in out.splitlines():
        print(f"  {line}", file=sys.stderr)
    cmd = ["ps", "-a", "--filter", f"pod={case.name}",
           "--format", "table {{.Names}}\t{{.Status}}"]
    print(f"\n  $ podman ps -a --filter pod={case.name}", file=sys.stderr)
    for line in podman(*cmd).splitlines():
        if "-infra" not in line:
            print(f"  {line}", file=sys.stderr)


def check_two_jobs_running(case):
    """While report runs: migrate's app is done, and tandem left the sidecar to
    report (it waits), with istio-proxy and report still running."""
    wait_for(lambda: "app: done, exiting 0" in case.log("migrate"), COMPLETE_WITHIN,
             "two-jobs: migrate's app finished")
    wait_for(lambda: "still running: report" in case.log("migrate"), APP_STARTS_WITHIN,
             "two-jobs: migrate's tandem left the sidecars to report")
    states = case.state()
    for container in ("istio-proxy", "report"):
        if states.get(container, ("missing",))[0] != "running":
            raise Failed(f"two-jobs: {container} is {states.get(container)} after migrate "
                         "finished: the first to finish stopped the mesh")
    say("ok: two-jobs: migrate's app finished, istio-proxy and report still running")


def check_two_jobs_completed(case):
    """Each job container exited with its app's status, the sidecar exited 0
    after report finished, report still saw the mesh at its end, and only
    report's tandem sent the quit, once."""
    states = case.state()
    codes = {c: states.get(c, ("missing", None))[1] for c in case.jobs + case.sidecars}
    if codes != {"migrate": 0, "report": 3, "istio-proxy": 0}:
        raise Failed(f"two-jobs: exit codes {codes}, not migrate 0, report 3, istio-proxy 0")
    migrate, report = case.log("migrate"), case.log("report")
    # Envoy's admin (15000) still listened when report's app ended, seconds after
    # migrate's: the mesh outlived the first job container.
    end = [line for line in report.splitlines() if "listening in the Pod now:" in line]
    if not end or "15000" not in end[0].split():
        raise Failed(f"two-jobs: report's app did not see the mesh at its end: {end}")
    quits = [line for line in (migrate + report).splitlines() if "quit POST" in line]
    if len(quits) != 1 or quits[0] not in report or ": 200" not in quits[0]:
        raise Failed(f"two-jobs: expected one quit, from report, answered 200: {quits}")
    say(f"ok: two-jobs ({case.what}): migrate exited 0 and waited, report exited 3 after "
        f"{end[0].split('ran ')[1].split(';')[0]} with Envoy still up and sent the one quit; "
        "istio-proxy exited 0")


def check_on_exit_order(case):
    """The upload came before the quit: in the job's log, the upload's answer
    and its outcome precede tandem's quit line; in the gateway's, the PUT
    precedes the POST that stopped it."""
    log = case.log().splitlines()
    gateway = case.log("storage-gateway").splitlines()

    def first(lines, text):
        found = [i for i, line in enumerate(lines) if text in line]
        if not found:
            raise Failed(f"{case.key}: no {text!r} in {lines}")
        return found[0]

    put_line = first(log, "upload: PUT ")
    outcome = first(log, "the --on-exit program exited with 0")
    quit = first(log, "quit POST http://127.0.0.1:9000/quitquitquit")
    if not put_line < outcome < quit:
        raise Failed(f"{case.key}: the job's log is out of order: {log}")
    if not first(gateway, "PUT /reports/nightly.csv -> 201") < first(
            gateway, "POST /quitquitquit -> 200"):
        raise Failed(f"{case.key}: the gateway was quit before the upload: {gateway}")
    say(f"ok: {case.key}: the upload reached the gateway before its quit")


def test(podman, work):
    """The test: every case, the control and the signal case, all Pods at once."""
    done, control, term, two = cases(podman, work)
    started = time.monotonic()
    for case in done + [control, term, two]:
        case.play()
    say(f"{len(done) + 3} Pods playing; each must complete within {COMPLETE_WITHIN:.0f}s")
    try:
        check_two_jobs_running(two)
        wait_for(lambda: "running until SIGTERM" in term.log(), APP_STARTS_WITHIN,
                 "the signal case's app started")
        say(f"signal: podman stop {term.name}-{term.job} (SIGTERM, SIGKILL after {STOP_GRACE}s)")
        podman("stop", "-t", str(STOP_GRACE), f"{term.name}-{term.job}")
        for case in done + [term, two]:
            wait_for(case.done, COMPLETE_WITHIN - (time.monotonic() - started),
                     f"{case.key}: every container of the Pod exited")
        check_two_jobs_completed(two)
        check_on_exit_order(next(c for c in done if c.key == "on-exit"))
        check_completed(term, 42, ["app: got SIGTERM"])
        for case in done:
            check_completed(case, case.code, case.expect)
        wait_for(lambda: control.state()[control.job][0] == "exited", COMPLETE_WITHIN,
                 "control: the job container (no tandem) exited")
        stuck_from = time.monotonic()
        code = control.state()[control.job][1]
        time.sleep(CONTROL_STUCK_FOR)
        states = control.state()
        if states["istio-proxy"][0] != "running":
            raise Failed(f"control: istio-proxy is {states['istio-proxy'][0]} without tandem; "
                         "it should be stuck running (the test could not fail)")
        say(f"ok: control (the Istio Job without tandem): job exited {code}, istio-proxy "
            f"still running {time.monotonic() - stuck_from:.0f}s later: the Pod never completes")
    except Failed:
        for case in done + [control, term, two]:
            say(f"{case.key}:")
            case.dump()
        raise
    say(f"all {len(done) + 3} Pods as expected in {time.monotonic() - started:.1f}s")


def demo(podman, work):
    """The story for a person: the Pod stuck without tandem, then completing with it."""
    _, control, _, _ = cases(podman, work)
    with_tandem = Case(podman, work, "with-tandem", "istio-job.yaml", "the Istio Job")
    job = control.pod["spec"]["containers"][0]
    print("\n1. examples/k8s/istio-job.yaml WITHOUT tandem: the job container runs\n"
          f"   `{' '.join(job['command'])}` directly, next to istio-proxy (the real Envoy\n"
          "   under a pilot-agent stand-in).", file=sys.stderr)
    control.play()
    wait_for(lambda: control.state()[control.job][0] == "exited", COMPLETE_WITHIN,
             "the job container exited")
    time.sleep(5)
    show_ps(podman, control)
    print("\n   The job is done, but istio-proxy runs on: the Pod never completes\n"
          "   (a Job would stay Active until activeDeadlineSeconds).", file=sys.stderr)
    print("\n2. The same Pod WITH tandem, as the manifest is written:\n"
          f"   `{' '.join(with_tandem.pod['spec']['containers'][0]['command'])}`", file=sys.stderr)
    with_tandem.play()
    wait_for(with_tandem.done, COMPLETE_WITHIN, "every container exited")
    show_ps(podman, with_tandem)
    print("\n   The job container's log (tandem's lines and the app's):", file=sys.stderr)
    for line in with_tandem.log().splitlines():
        print(f"   | {line}", file=sys.stderr)
    print("\n   Every container exited; the job container's status is the app's (3):\n"
          "   the Pod completes, and a Job would count it as failed for the app's reason.",
          file=sys.stderr)
    check_completed(with_tandem, 3)


def run(tandem, fake, envoy, name, body, make_target="make pods"):
    """What every Pod run shares: the built binaries, the prerequisites (a skip, or a
    failure under CI=true, when one is missing), podman set up for this machine, the
    images, then `body(podman, work)`, and the cleanup, on failure and on SIGTERM
    too. `name` names the run's directory under target/. Returns the exit status."""
    for path in (tandem, fake, envoy):
        if not os.access(path, os.X_OK):
            say(f"{path}: not an executable (build it first: {make_target} does)")
            return 64
    if yaml is None:
        skip("no PyYAML for python3 (apt-get install python3-yaml)")
    if os.geteuid() != 0:
        skip("podman's Pods here need root (run as root, or in CI)")
    if shutil.which("podman") is None or shutil.which("runc") is None:
        skip("podman or runc is missing (apt-get install podman runc catatonit)")
    busybox = next((p for p in ("/bin/busybox", "/usr/bin/busybox") if Path(p).exists()), None)
    static = busybox and "INTERP" not in subprocess.run(
        ["readelf", "-lW", busybox], capture_output=True, text=True).stdout
    if not static:
        skip("no static busybox for the images' shell (apt-get install busybox-static)")

    target = ROOT / "target" / name
    target.mkdir(parents=True, exist_ok=True)
    # crun fails setrlimit and refuses this machine's hybrid cgroups: runc, cgroupfs,
    # no default ulimits.
    conf = target / "containers.conf"
    conf.write_text('[containers]\ndefault_ulimits = []\n\n'
                    '[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n')
    podman = Podman(conf, os.getpid())
    # SIGTERM/SIGHUP (make interrupted, a CI time-out) still run the cleanup below.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda n, _: sys.exit(128 + n))
    work = Path(tempfile.mkdtemp(prefix="run-", dir=target))
    try:
        t0 = time.monotonic()
        build_images(podman, work, tandem, fake, envoy, busybox)
        say(f"images built in {time.monotonic() - t0:.1f}s")
        body(podman, work)
        return 0
    except Failed as err:
        say(f"FAILED: {err}")
        return 1
    finally:
        podman.cleanup()
        shutil.rmtree(work, ignore_errors=True)


def main(argv):
    """Parses the command line, then the demo or the test (`run`)."""
    demo_mode = "--demo" in argv
    args = [a for a in argv if a != "--demo"]
    if len(args) != 3:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 64
    tandem, fake, envoy = (Path(a).resolve() for a in args)
    return run(tandem, fake, envoy, "pods", demo if demo_mode else test)

if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
