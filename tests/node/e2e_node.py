#!/usr/bin/env python3
"""`make e2e-node`: tandem and tandem-injector on a real kubelet.

Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler (on loopback),
containerd and a kubelet (on the default-route address) from the binaries given
(KUBE_APISERVER, KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER, KUBELET, ETCD; containerd
from PATH, or CONTAINERD_DIR for another install), fresh state each run. Every
image is built FROM scratch here (tests/pods/pods.py's images: tandem, the
examples' apps on a static busybox, the pinned real Envoy with its libraries, the
sidecar stand-ins) and imported into containerd. Then the scenarios below, one
line each with the evidence, and a summary; exit 0 only if all pass
(E2E_NODE_ONLY=NAME,NAME: only those). The work directory (every log) is kept on
failure, removed on success. INJECTOR_STATIC (in the environment) is the static
tandem-injector the chart's Deployment runs, in an image built FROM scratch;
the chart's scenario needs helm-python-sdk (run with `make e2e-node`'s venv).

Usage: e2e_node.py TANDEM FAKE_SIDECAR ENVOY INJECTOR WORKDIR [--transcripts DIR]
"""

import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.dont_write_bytecode = True
sys.path[:0] = [str(HERE), str(ROOT / "tests" / "pods"), str(ROOT / "injector" / "scripts")]

import cluster as k8s  # noqa: E402
import pods  # noqa: E402
from node import Node  # noqa: E402
import scenarios  # noqa: E402

BINARIES = {"etcd": "ETCD", "kube-apiserver": "KUBE_APISERVER",
            "kube-controller-manager": "KUBE_CONTROLLER_MANAGER",
            "kube-scheduler": "KUBE_SCHEDULER", "kubelet": "KUBELET"}


def say(message):
    print(f"e2e-node: {message}", file=sys.stderr, flush=True)


def static_busybox():
    """The static busybox the images are built on, or None."""
    return next((p for p in ("/bin/busybox", "/usr/bin/busybox") if Path(p).exists()), None)


def build_and_import(node, work, tandem, fake, envoy, busybox, injector_static):
    """pods.py's images (podman build, FROM scratch), a pause image for the
    sandboxes, saved to one archive and imported into this node's containerd."""
    conf = work / "containers.conf"
    conf.write_text('[containers]\ndefault_ulimits = []\n\n'
                    '[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n')
    podman = pods.Podman(conf, f"node{os.getpid()}")
    images = work / "images"
    images.mkdir()
    pods.build_images(podman, images, tandem, fake, envoy, busybox)
    root = images / "pause"
    root.mkdir()
    pods.busybox_root(root, busybox)
    pods.put(root, "/pause", text="#!/bin/sh\ntrap 'exit 0' TERM INT\n"
             "while :; do sleep 3600 & wait $!; done\n")
    podman.build("pause", root, 'FROM scratch\nCOPY . /\nENTRYPOINT ["/pause"]\n')
    # A job image whose ENTRYPOINT is the app (no command in the Pod, SPEC §10.4).
    root = images / "job-entrypoint"
    root.mkdir()
    podman.build("job-entrypoint", root, f"FROM {podman.image('job-distroless')}\n"
                 'ENTRYPOINT ["/app/myjob"]\nCMD ["--since=yesterday"]\n')
    # Another, for the native route's migrate container (9-native-entrypoint): an
    # image of its own, since 3-registry's pull of job-entrypoint under another name
    # makes kubelet 1.36 (KubeletEnsureSecretPulledImages) want to pull it again.
    root = images / "migrate-entrypoint"
    root.mkdir()
    podman.build("migrate-entrypoint", root, f"FROM {podman.image('job-distroless')}\n"
                 'ENTRYPOINT ["/app/migrate"]\nCMD ["up"]\n')
    # The chart's Deployment runs the injector alone (uid 65532, read-only root).
    root = images / "tandem-injector"
    root.mkdir()
    pods.put(root, "/tandem-injector", injector_static)
    podman.build("tandem-injector", root, 'FROM scratch\nCOPY . /\nUSER 65532:65532\n'
                 'ENTRYPOINT ["/tandem-injector"]\n')
    archive = work / "images.tar"
    podman("save", "-m", "--format", "docker-archive", "-o", str(archive), *podman.images)
    return podman, archive


def other_kubelets():
    """PIDs of kubelets running now (another node's: they would share cgroups,
    sysctls and iptables with this one)."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "kubelet":
                found.append(pid)
        except OSError:
            pass
    return found


def main(argv):
    transcripts = None
    if "--transcripts" in argv:
        i = argv.index("--transcripts")
        transcripts = Path(argv[i + 1]).resolve()
        argv = argv[:i] + argv[i + 2:]
    if len(argv) != 5:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 64
    tandem, fake, envoy, injector = (Path(a).resolve() for a in argv[:4])
    bins = {}
    for name, var in BINARIES.items():
        path = os.environ.get(var, "")
        if not path or not os.access(path, os.X_OK):
            say(f"{var}={path!r}: expected the path of a {name} binary (Kubernetes 1.36+)")
            return 64
        bins[name] = str(Path(path).resolve())
    containerd_dir = os.environ.get("CONTAINERD_DIR") or None
    try:
        names = scenarios.select(os.environ.get("E2E_NODE_ONLY", ""))
    except ValueError as e:
        say(str(e))
        return 64
    injector_static = Path(os.environ.get("INJECTOR_STATIC", "")).resolve()
    for path in (tandem, fake, envoy, injector, injector_static):
        if not os.access(path, os.X_OK) or not path.is_file():
            say(f"{path}: not an executable (make e2e-node builds it first)")
            return 64
    busybox = static_busybox()
    if not busybox:
        say("no busybox at /bin/busybox or /usr/bin/busybox: the images need a static one "
            "(Debian: apt-get install busybox-static)")
        return 64
    if os.geteuid() != 0:
        say("a kubelet needs root")
        return 64
    other = other_kubelets()
    if other and os.environ.get("E2E_NODE_BESIDE") != ",".join(other):
        # E2E_NODE_BESIDE=PIDS runs anyway beside those kubelets (an idle one): this
        # node has its own cgroup root, bridge, subnet, ports and containerd.
        say(f"a kubelet already runs on this machine (pid {', '.join(other)}): one node at a "
            "time; run again once it has stopped")
        return 2
    if other:
        say(f"running beside the kubelet of pid {', '.join(other)} (E2E_NODE_BESIDE)")
    work = Path(argv[4]).resolve()
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda n, _: sys.exit(128 + n))
    node = Node(bins, work, containerd_dir, say)
    podman = run = None
    results = []
    try:
        t0 = time.monotonic()
        podman, archive = build_and_import(node, work, tandem, fake, envoy, busybox,
                                           injector_static)
        say(f"images built in {time.monotonic() - t0:.0f}s")
        node.start_containerd(podman.image("pause"))
        node.ctr("images", "import", str(archive))
        say(f"imported into {node.version('containerd')}")
        api = node.start_control_plane()
        say("control plane up")
        node.start_kubelet()
        say(f"node {node.address} Ready ({time.monotonic() - t0:.0f}s)")
        versions = {name: node.version(name) for name in bins if name != "etcd"}
        versions["containerd"] = node.version("containerd")
        versions["runc"] = subprocess.run(["runc", "--version"], capture_output=True,
                                          text=True).stdout.splitlines()[0]
        for name, v in versions.items():
            say(f"version {name}: {v}")
        run = scenarios.Run(api, node, podman, injector, work, say, transcripts, versions)
        results = run.all(names)
    except (k8s.Failed, pods.Failed, subprocess.CalledProcessError, OSError) as e:
        say(f"SETUP FAILED: {e}")
        traceback.print_exc()
        results.append(("setup", False, str(e)))
    finally:
        if run:
            run.close()
        node.stop()
        if podman:
            podman.cleanup()
        left = node.leftovers()
        if left:
            say(f"left on the host: {', '.join(left)}")
    failed = [r for r in results if not r[1]]
    say(f"summary: {len(results) - len(failed)} of {len(results)} scenarios passed"
        + (f"; failed: {', '.join(r[0] for r in failed)}; logs kept in {work}" if failed else ""))
    if not failed and not left:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed or left else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
