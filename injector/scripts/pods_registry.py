"""The no-command case of `make injector-pods` (SPEC §10.4): a job container with
no `command` whose image has an ENTRYPOINT, wrapped by the injector from what it
read in that image's registry.

The harness's distroless job image gets `ENTRYPOINT ["/app/myjob"]` and `CMD
["--since=yesterday"]` (podman build), is pushed with `podman push` to Debian's
`docker-registry` on a loopback port (TLS from a self-signed certificate made
here with openssl), and the injector binary, given that certificate as
`--registry-ca`, reviews the `plain` Pod with the job container's command and
args removed and its image pointing there. The Pod patched with the injector's
answer is what plays, with that same local image.
"""

import base64
import http.client
import json
import shutil
import socket
import ssl
import subprocess
import time

KEY = "no-command"
REPOSITORY = "job-entrypoint:1"
ENTRYPOINT = ["/app/myjob"]
CMD = ["--since=yesterday"]


def free_port():
    """A loopback port free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(h, port, process, what):
    """Waits until PORT accepts connections (PROCESS still running)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise h.Failed(f"{what} exited {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise h.Failed(f"{what} did not listen on 127.0.0.1:{port}")


def certificate(work):
    """A test CA (ca.pem, and certs/ca.crt for podman's --cert-dir) and a certificate
    for 127.0.0.1 it signs (cert.pem, key.pem), in WORK/tls."""
    tls = work / "tls"
    tls.mkdir()
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tls)

    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
            "-subj", "/CN=injector-pods test CA")
    openssl("req", *ec, "-keyout", "key.pem", "-out", "leaf.csr", "-subj", "/CN=127.0.0.1")
    (tls / "leaf.ext").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "cert.pem", "-days", "1", "-extfile", "leaf.ext")
    # podman's --cert-dir takes every *.key there for a client key: the CA alone.
    (tls / "certs").mkdir()
    shutil.copy(tls / "ca.pem", tls / "certs" / "ca.crt")
    return tls


def start_registry(h, work, tls, stop):
    """docker-registry on a loopback port with TLS; returns its host:port."""
    port = free_port()
    config = work / "registry.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {work / 'registry'}\nhttp:\n  addr: 127.0.0.1:{port}\n"
        f"  secret: pods\n  tls:\n    certificate: {tls / 'cert.pem'}\n    key: {tls / 'key.pem'}\n")
    log = open(work / "registry.log", "wb")  # pylint: disable=consider-using-with
    registry = subprocess.Popen(["docker-registry", "serve", config], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log)
    stop.append(registry)
    wait_port(h, port, registry, "docker-registry")
    return f"127.0.0.1:{port}"


def start_injector(h, injector, tls, tandem_image, host, stop):
    """The injector on a loopback port trusting the registry's certificate."""
    process = subprocess.Popen(
        [injector, "--listen", "127.0.0.1:0", "--tls-cert", tls / "cert.pem",
         "--tls-key", tls / "key.pem", "--image", tandem_image, "--registry-ca", tls / "ca.pem",
         # The registry is on loopback: the injector reaches it only when it is listed.
         "--registry-allow", host],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stop.append(process)
    line = process.stderr.readline()
    if "listening on " not in line:
        raise h.Failed(f"the injector did not start: {line.strip()}")
    return process, line.split("listening on ")[1].split(";")[0]


def review(h, addr, tls, pod):
    """The injector's response to an AdmissionReview of POD."""
    body = json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "pods-no-command", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                    "resource": {"group": "", "version": "v1", "resource": "pods"},
                    "operation": "CREATE", "namespace": "default", "object": pod},
    })
    host, port = addr.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(tls / "ca.pem"))
    conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=10)
    conn.request("POST", "/mutate", body, {"Content-Type": "application/json"})
    answer = conn.getresponse()
    if answer.status != 200:
        raise h.Failed(f"the review: HTTP {answer.status}")
    return json.loads(answer.read())["response"]


def apply_patch(h, doc, ops):
    """Applies the JSONPatch operations the injector emits (add, replace)."""
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        if op["op"] not in ("add", "replace"):
            raise h.Failed(f"unexpected patch operation {op}")
        if isinstance(parent, list):
            if last == "-":
                parent.append(op["value"])
            elif op["op"] == "add":
                parent.insert(int(last), op["value"])
            else:
                parent[int(last)] = op["value"]
        else:
            if op["op"] == "replace" and last not in parent:
                raise h.Failed(f"replace of a missing {op['path']}")
            parent[last] = op["value"]
    return doc


def patched_pod(h, podman, work, injector, original, tandem_image, images, stop):
    """Builds and pushes the image, has the injector review the Pod; returns the
    patched Pod and adds the registry's image name to IMAGES (its local image)."""
    context = work / "job-entrypoint"
    context.mkdir()
    podman.build("job-entrypoint", context,
                 f"FROM {podman.image('job-distroless')}\n"
                 f"ENTRYPOINT {json.dumps(ENTRYPOINT)}\nCMD {json.dumps(CMD)}\n")
    tls = certificate(work)
    host = start_registry(h, work, tls, stop)
    image = f"{host}/{REPOSITORY}"
    podman("push", "--quiet", "--cert-dir", str(tls / "certs"), podman.image("job-entrypoint"),
           f"docker://{image}")
    _, addr = start_injector(h, injector, tls, tandem_image, host, stop)
    pod = json.loads(json.dumps(original))
    job = pod["spec"]["containers"][0]
    job.pop("command", None)
    job.pop("args", None)
    job["image"] = image
    response = review(h, addr, tls, pod)
    if "patch" not in response or response.get("warnings"):
        raise h.Failed(f"{KEY}: not wrapped: {response.get('warnings')}")
    patched = apply_patch(h, pod, json.loads(base64.b64decode(response["patch"])))
    wrapped = patched["spec"]["containers"][0]
    if wrapped.get("command") != ["/tandem/tandem", "--", *ENTRYPOINT] or wrapped.get("args") != CMD:
        raise h.Failed(f"{KEY}: wrapped as {wrapped['command']} {wrapped.get('args')}")
    h.say(f"{KEY}: the injector read {image} from the registry: "
          f"command {wrapped['command']}, args {wrapped['args']}")
    images[image] = "job-entrypoint"
    return patched
