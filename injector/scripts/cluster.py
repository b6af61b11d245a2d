"""A Kubernetes control plane of two processes on loopback, for `make
e2e-apiserver`: etcd and a kube-apiserver the developer provides, a CA and a
serving certificate made with openssl, a static admin token, and a small REST
client (urllib) that keeps each answer's `Warning` headers.

With a kube-controller-manager too, Jobs make their Pods. With an emulated
version, the API server behaves as that older release (`--emulated-version`). Nothing here builds
or fetches the servers: their paths are given.
"""

import base64
import json
import secrets
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml


class Failed(Exception):
    """The control plane did not come up, or a request failed."""


def free_port():
    """A loopback port nothing listens on now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(*args, cwd):
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise Failed(f"openssl {args[0]}: {done.stderr.strip()}")


def make_pki(dir):
    """ca.crt/ca.key, a serving certificate for 127.0.0.1 and localhost
    (tls.crt/tls.key, for the API server and the webhook alike), and the
    service account signing key pair (sa.key/sa.pub)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-days", "2", "-subj", "/CN=tandem-e2e-ca",
            "-keyout", "ca.key", "-out", "ca.crt",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=dir)
    (dir / "tls.ext").write_text(
        "subjectAltName = IP:127.0.0.1, DNS:localhost\n"
        "extendedKeyUsage = serverAuth\n"
        "keyUsage = critical, digitalSignature\n"
    )
    openssl("req", *ec, "-subj", "/CN=localhost", "-keyout", "tls.key", "-out", "tls.csr", cwd=dir)
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "tls.ext", "-out", "tls.crt", cwd=dir)
    openssl("genrsa", "-out", "sa.key", "2048", cwd=dir)
    openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=dir)


# The shipped configuration, whose webhooks `Injector` registers by URL.
MANIFEST = Path(__file__).resolve().parent.parent / "deploy" / "tandem-injector.yaml"


class Cluster:
    """etcd and kube-apiserver under `dir`, stopped by `stop()`."""

    # What the controller manager runs by default: what turns a Job into Pods
    # (and their service accounts), and the type check of the validating policy.
    CONTROLLERS = ("job,cronjob,serviceaccount,serviceaccount-token,"
                   "validatingadmissionpolicy-status-controller")

    def __init__(self, kube_apiserver, etcd, dir, kube_controller_manager=None, emulated=None,
                 apiserver_args=(), controllers=CONTROLLERS, audit_policy=None):
        """With `audit_policy` (YAML), the API server writes an audit log of
        what it selects, as JSON lines, to `audit_log`."""
        self.dir = Path(dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.audit_log = None
        if audit_policy:
            (self.dir / "audit-policy.yaml").write_text(audit_policy)
            self.audit_log = self.dir / "audit.log"
            apiserver_args = [*apiserver_args,
                              f"--audit-policy-file={self.dir / 'audit-policy.yaml'}",
                              f"--audit-log-path={self.audit_log}"]
        self.procs = []
        make_pki(self.dir)
        self.token = secrets.token_hex(16)
        (self.dir / "tokens.csv").write_text(f'{self.token},tandem-e2e,tandem-e2e,"system:masters"\n')
        etcd_port, peer_port, self.port = free_port(), free_port(), free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self._start("etcd", [
            etcd, "--data-dir", str(self.dir / "etcd"), "--name", "e2e",
            "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-cluster", f"e2e=http://127.0.0.1:{peer_port}",
            "--listen-metrics-urls", f"http://127.0.0.1:{free_port()}",
        ])
        d = self.dir
        self._start("kube-apiserver", [
            kube_apiserver,
            f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1", f"--secure-port={self.port}",
            "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
            f"--tls-cert-file={d / 'tls.crt'}", f"--tls-private-key-file={d / 'tls.key'}",
            f"--client-ca-file={d / 'ca.crt'}", f"--token-auth-file={d / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={d / 'sa.pub'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-cluster-ip-range=10.96.0.0/16", "--profiling=false",
            *([f"--emulated-version={emulated}"] if emulated else []),
            *apiserver_args,
        ])
        self.ssl = ssl.create_default_context(cafile=str(d / "ca.crt"))
        self._wait_ready()
        if kube_controller_manager:
            config = self.kubeconfig()
            self._start("kube-controller-manager", [
                kube_controller_manager, f"--kubeconfig={config}",
                "--secure-port=0", "--leader-elect=false", f"--controllers={controllers}",
                f"--service-account-private-key-file={d / 'sa.key'}",
                f"--root-ca-file={d / 'ca.crt'}",
            ])

    def _start(self, name, argv):
        log = open(self.dir / f"{name}.log", "wb")
        try:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            raise Failed(f"{name} ({argv[0]}): {e}") from e
        finally:
            log.close()
        self.procs.append((name, proc))

    def _wait_ready(self, bound=120.0):
        end = time.monotonic() + bound
        last = "no answer"
        while time.monotonic() < end:
            for name, proc in self.procs:
                if proc.poll() is not None:
                    raise Failed(f"{name} exited {proc.returncode}: {self.tail(name)}")
            try:
                status, _, body = self.call("GET", "/readyz")
                if status == 200:
                    return
                last = f"{status} {str(body)[:300]}"
            except (OSError, Failed) as e:
                last = str(e)
            time.sleep(0.5)
        raise Failed(f"kube-apiserver not ready after {bound:.0f} s: {last}; {self.tail('kube-apiserver')}")

    def tail(self, name, lines=15):
        path = self.dir / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return f"{path}: ..." + "\n".join(text.splitlines()[-lines:])

    def stop(self):
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def kubeconfig(self):
        """A kubeconfig for the admin token, written beside the logs."""
        path = self.dir / "kubeconfig"
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
            "clusters": [{"name": "e2e", "cluster": {
                "server": self.url, "certificate-authority": str(self.dir / "ca.crt")}}],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
        }))
        return path

    def call(self, method, path, body=None, timeout=30):
        """(status, warnings, JSON body or text) of one request."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=self.ssl, timeout=timeout) as resp:
                status, headers, raw = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            status, headers, raw = e.code, e.headers, e.read()
        text = raw.decode(errors="replace")
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
        return status, headers.get_all("Warning") or [], parsed

    def must(self, method, path, body=None, ok=(200, 201)):
        status, warnings, parsed = self.call(method, path, body)
        if status not in ok:
            raise Failed(f"{method} {path}: {status}: {json.dumps(parsed)[:600]}")
        return parsed, warnings


# Where each kind the tests create lives in the REST API.
PATHS = {
    "Namespace": "/api/v1/namespaces",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "MutatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "MutatingAdmissionPolicy": "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies",
    "MutatingAdmissionPolicyBinding": "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings",
    "ValidatingAdmissionPolicy": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
}


def collection(kind, namespace=None):
    if kind not in PATHS:
        raise Failed(f"no REST path known for kind {kind}")
    return PATHS[kind].format(ns=namespace)


def create(cluster, obj, namespace=None):
    """POST `obj` to its collection; the stored object and any warnings."""
    return cluster.must("POST", collection(obj["kind"], namespace), obj)


def delete(cluster, obj, namespace=None):
    """DELETE `obj` by name; gone already is fine."""
    path = f"{collection(obj['kind'], namespace)}/{obj['metadata']['name']}"
    cluster.must("DELETE", path, ok=(200, 202, 404))


class Injector:
    """tandem-injector on loopback with `args`, serving the certificate the API
    server trusts, its output in `log`, and registered with the shipped
    configuration's webhooks by URL (unless not `register`: then `config` is
    the caller's to register); `stop()` unregisters and stops it."""

    def __init__(self, api, injector, log, args, register=True):
        self.api = api
        self.log = Path(log)
        self.argv = [injector, "--tls-cert", str(api.dir / "tls.crt"),
                     "--tls-key", str(api.dir / "tls.key"),
                     "--drain", "0s", *args]  # unregistered before it stops: nothing to drain
        self._spawn("127.0.0.1:0", "wb")
        self.port = self._port()
        ca = base64.b64encode((api.dir / "ca.crt").read_bytes()).decode()
        docs = yaml.safe_load_all(MANIFEST.read_text())
        config = next(d for d in docs if d and d["kind"] == "MutatingWebhookConfiguration")
        config["metadata"].pop("annotations", None)
        self.paths = []
        for hook in config["webhooks"]:
            path = hook["clientConfig"]["service"].get("path", "/")
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{self.port}{path}", "caBundle": ca}
            self.paths.append(path)
        self.config = config
        if register:
            create(api, config)

    def _spawn(self, listen, mode):
        with open(self.log, mode) as out:
            self.proc = subprocess.Popen(
                [*self.argv, "--listen", listen],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def start_again(self):
        """After it died: the same injector again, on the same port (the
        webhooks' URLs name it); returns once it listens."""
        start = self.log.stat().st_size
        self._spawn(f"127.0.0.1:{self.port}", "ab")
        self._port(since=start)

    def _port(self, bound=10.0, since=0):
        end = time.monotonic() + bound
        while time.monotonic() < end:
            with open(self.log, "rb") as f:
                f.seek(since)
                text = f.read().decode(errors="replace")
            for line in text.splitlines():
                if "listening on " in line:
                    return int(line.split("listening on ", 1)[1].split(";")[0].rsplit(":", 1)[1])
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise Failed(f"tandem-injector did not listen: {self.log.read_text()[-600:]}")

    def stop(self):
        delete(self.api, self.config)
        self.proc.terminate()
        self.proc.wait(timeout=30)
