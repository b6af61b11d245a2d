#!/usr/bin/env python3
"""Where registry lookups may go (SPEC §10 "Where lookups may go") in a real API
server: `make e2e-reach`.

Starts etcd and kube-apiserver on loopback (cluster.py), a docker-registry on a
loopback port with TLS from a test CA holding one image (ENTRYPOINT /ep, pushed
with buildah), and a TCP listener on another loopback port that counts every
connection. Registers tandem-injector with the shipped
MutatingWebhookConfiguration pointed at 127.0.0.1 and creates (dryRun=All) a
Job's Pod whose containers have no command:

  - with --registry-allow naming the test registry: its image is read (the
    container is wrapped); an image on the unlisted loopback listener, by address
    and as `localhost`, is not allowed, and the listener sees no connection;
  - with no --registry-allow: the same images on the listener, by address and as
    `localhost`, are not allowed, and it sees no connection.

Each check prints PASS or FAIL; it exits 1 if any failed, 2 on a setup failure.

Usage: e2e_reach.py KUBE_APISERVER ETCD INJECTOR WORKDIR
"""

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path


sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).parent))
import cluster as k8s  # noqa: E402
import pods_registry  # noqa: E402

IMAGE = "ghcr.io/tandem-sidecar/tandem:0.1.0"
REPORT = "tandem.dev/injection"
NS = "reach"
NOT_ALLOWED = "was not read: registry not allowed (list the registry in the injector's --registry-allow"


class Counter:
    """A loopback TCP listener that counts connections and closes each."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.count = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            conn, _ = self.sock.accept()
            self.count += 1
            conn.close()


class Shim:
    """What pods_registry's helpers expect of a harness."""
    Failed = k8s.Failed


def push_image(work, tls, host):
    """Builds FROM scratch an image with ENTRYPOINT ["/ep"] and pushes it to HOST/app:1."""
    root = work / "buildah"

    def buildah(*args):
        out = subprocess.run(
            ["buildah", "--root", str(root / "storage"), "--runroot", str(root / "run"),
             "--storage-driver", "vfs", *args],
            check=True, capture_output=True, text=True,
            env={**os.environ, "BUILDAH_ISOLATION": "chroot"})
        return out.stdout.strip()

    c = buildah("from", "scratch")
    buildah("config", "--os", "linux", "--arch", "amd64", "--entrypoint", '["/ep"]', c)
    buildah("commit", "-q", c, "localhost/reach-app")
    buildah("rm", c)
    buildah("push", "--cert-dir", str(tls / "certs"), "localhost/reach-app", f"docker://{host}/app:1")


def injector_with(api, injector, dir, name, args):
    """tandem-injector on loopback with ARGS, registered, once the API server has
    the configuration."""
    hook = k8s.Injector(api, injector, Path(dir) / f"injector-{name}.log",
                        ["--image", IMAGE, *args])
    time.sleep(2)  # the API server's informer picks the configuration up
    return hook


def pod(images):
    """A Job's Pod (dry run: the Job need not exist), opted in, one container per image."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": "reach-", "namespace": NS,
            "labels": {"tandem.dev/inject": "enabled", "job-name": "reach"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "reach",
                                 "uid": "0b0b0b0b-0000-4000-8000-000000000001",
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {"restartPolicy": "Never", "containers": [
            {"name": name, "image": image} for name, image in images]},
    }


def created(api, images, bound=30.0):
    """The Pod as the API server would store it, once the webhook has seen it."""
    end = time.monotonic() + bound
    while True:
        stored, _ = api.must("POST", f"/api/v1/namespaces/{NS}/pods?dryRun=All", pod(images))
        line = stored["metadata"].get("annotations", {}).get(REPORT)
        if line or time.monotonic() > end:
            return stored, line or ""
        time.sleep(0.5)


def main(argv):
    if len(argv) != 5:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    kube_apiserver, etcd, injector, workdir = argv[1:5]
    workdir = Path(workdir).resolve()
    subprocess.run(["rm", "-rf", str(workdir)], check=True)
    workdir.mkdir(parents=True)
    stop, failed, api = [], [], None

    def check(ok, what, detail=""):
        print(f"  {'PASS' if ok else 'FAIL'}: {what}" + (f": {detail}" if detail and not ok else ""))
        if not ok:
            failed.append(what)

    try:
        tls = pods_registry.certificate(workdir)
        registry = pods_registry.start_registry(Shim, workdir, tls, stop)
        push_image(workdir, tls, registry)
        counter = Counter()
        api = k8s.Cluster(kube_apiserver, etcd, workdir / "cluster")
        k8s.create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        k8s.create(api, {"apiVersion": "v1", "kind": "ServiceAccount",
                         "metadata": {"name": "default"}}, NS)
        unlisted = [("by-address", f"127.0.0.1:{counter.port}/app:1"),
                    ("by-name", f"localhost:{counter.port}/app:1")]
        print(f"registry {registry}; counting listener 127.0.0.1:{counter.port}")
        for name, args, images in [
            ("listed", ["--registry-ca", str(tls / "ca.pem"), "--registry-allow", registry],
             [("read", f"{registry}/app:1")] + unlisted),
            ("no-list", ["--registry-ca", str(tls / "ca.pem")], unlisted),
        ]:
            print(f"{name}:")
            hook = injector_with(api, injector, workdir, name, args)
            try:
                stored, line = created(api, images)
            finally:
                hook.stop()
            containers = {c["name"]: c for c in stored["spec"]["containers"]}
            if "read" in containers:
                command = containers["read"].get("command", [])
                check(command == ["/tandem/tandem", "--", "/ep"],
                      "the listed test registry is read", f"{command}; {line}")
            for what, image in unlisted:
                check(f"{what}: it has no command and its image {image} {NOT_ALLOWED}" in line,
                      f"{image} not allowed", line)
            check(counter.count == 0, "the unlisted loopback listener was never contacted",
                  f"{counter.count} connections")
    except (k8s.Failed, subprocess.CalledProcessError, OSError) as e:
        print(f"e2e-reach: FAILED: {e}", file=sys.stderr)
        return 2
    finally:
        if api:
            api.stop()
        for p in stop:
            p.kill()
    print(f"e2e-reach: {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
