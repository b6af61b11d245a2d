#!/usr/bin/env python3
"""charts/tandem-injector installed for real into a kube-apiserver on loopback
(`make e2e-apiserver`, or `E2E_ONLY=chart` for this alone), with Helm v4's
library (helm-python-sdk: its Install, Upgrade and Uninstall, as `helm` runs
them):

  1. install (webhook mode, the self-signed certificate) into the namespace
     platform-tandem: the release is deployed, the Secret holds a pair that
     verifies for tandem-injector.platform-tandem.svc, the webhook's caBundle is
     its CA;
  2. the replicas' work is done by the injector binary on this machine, as the
     kubelet would run the Deployment's container: its environment read from the
     Deployment the chart installed, the certificate from the chart's Secret. No
     kube-proxy runs here, so the Service the chart made is pointed at it
     (ExternalName localhost: the API server calls https://localhost:443, still
     verifying the certificate for the Service's name);
  3. Pods created (dry run) in a labelled namespace come back injected through
     the chart's webhook configuration, by the route wrap;
  4. upgrade to route native: the certificate Secret is the same bytes, the
     caBundle too; the injector restarted with the upgraded Deployment's
     environment injects by the route native (sidecars moved to native ones,
     the job container untouched);
  5. upgrade to mode policy, route wrap, then native: the webhook and its
     server's objects are gone, the policies the chart installed inject the
     same Pods, each by its route;
  6. uninstall: nothing of the release is left (its objects, the cluster-wide
     configurations and policies, Helm's own release Secrets).

One line per step, `e2e-chart: STEP: PASS ...` or `FAIL (...)`; exit 1 if any
failed, 2 on a setup failure, 64 on bad usage. It binds 127.0.0.1:443 (root).

Usage: e2e_chart.py KUBE_APISERVER ETCD INJECTOR WORKDIR [EMULATED_VERSION]
"""

import base64
import copy
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import cluster as k8s  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
CHART = ROOT / "charts" / "tandem-injector"
RELEASE = "tandem-injector"
CHART_NS = "platform-tandem"
NS = "tandem-e2e-chart"
TLS = "tandem-injector-tls"
LABEL = "tandem.dev/inject"
# What the chart's objects are called, by their REST collection (namespaced ones
# in CHART_NS); what must be gone after the uninstall.
NAMESPACED = ["secrets", "services", "serviceaccounts", "configmaps"]
GROUPED = {"deployments": "/apis/apps/v1", "poddisruptionbudgets": "/apis/policy/v1"}
CLUSTER_WIDE = ["mutatingwebhookconfigurations", "mutatingadmissionpolicies",
                "mutatingadmissionpolicybindings", "validatingadmissionpolicies",
                "validatingadmissionpolicybindings"]
ADMISSION = "/apis/admissionregistration.k8s.io/v1"


def say(line):
    print(f"e2e-chart: {line}", flush=True)


def job_pod():
    """A Job's Pod as its controller sends it: a job container with a command
    and a classic istio-proxy."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "chart-job-", "labels": {"job-name": "chart-job"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "job", "image": "registry.example.com/job:1", "command": ["/app/job"],
                 "args": ["--once"]},
                {"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.28.0",
                 "args": ["proxy", "sidecar"]},
            ],
        },
    }


def route_of(pod):
    """How tandem reached the Pod: wrap (the job container runs /tandem/tandem),
    native (istio-proxy moved to a native sidecar, the job untouched) or None."""
    spec = pod["spec"]
    job = next(c for c in spec["containers"] if c["name"] == "job")
    inits = {c["name"]: c for c in spec.get("initContainers", [])}
    if job["command"][0] == "/tandem/tandem" and "istio-proxy" not in inits:
        return "wrap"
    proxy = inits.get("istio-proxy")
    if proxy and proxy.get("restartPolicy") == "Always" and job["command"] == ["/app/job"]:
        return "native"
    return None


class Scenario:
    def __init__(self, helm, api, injector, work):
        self.helm, self.api, self.injector, self.work = helm, api, injector, Path(work)
        self.cfg = helm.Config(kubeconfig_path=str(api.kubeconfig()), namespace=CHART_NS)
        self.proc = None
        self.failed = []
        self.secret = None

    # -- steps -----------------------------------------------------------------

    def step(self, name, fn):
        t = time.monotonic()
        try:
            evidence = fn()
            say(f"{name}: PASS ({time.monotonic() - t:.1f}s): {evidence}")
        except (k8s.Failed, self.helm.HelmError, subprocess.SubprocessError, OSError,
                KeyError, StopIteration, ValueError) as e:
            self.failed.append(name)
            say(f"{name}: FAIL ({time.monotonic() - t:.1f}s): {e}")

    def values(self, **given):
        return {"replicas": 2, **given}

    def install(self):
        release = self.cfg.install(str(CHART), RELEASE, self.values())
        if release.get("status") not in ("deployed", None) and release.get("info", {}).get("status") != "deployed":
            raise k8s.Failed(f"release status {release.get('status')}")
        self.secret = self.tls_secret()
        self.check_bundle()
        host = f"tandem-injector.{CHART_NS}.svc"
        self.verify(host)
        return (f"revision {self.revision()}, Secret {TLS} verifies for {host}, "
                f"the webhook's caBundle is its ca.crt")

    def upgrade(self, **given):
        before = self.secret
        self.cfg.upgrade(str(CHART), RELEASE, self.values(**given))
        if given.get("mode", "webhook") == "webhook":
            after = self.tls_secret()
            if after != before:
                raise k8s.Failed(f"the upgrade changed the Secret {TLS}: "
                                 f"{sorted(k for k in after if after.get(k) != before.get(k))}")
            self.check_bundle()
            return f"revision {self.revision()}; Secret {TLS} byte-identical, caBundle unchanged"
        return f"revision {self.revision()}"

    def serve(self):
        """The injector as the kubelet would run the chart's Deployment's
        container, behind the chart's Service."""
        self.stop()
        deploy, _ = self.api.must("GET", f"/apis/apps/v1/namespaces/{CHART_NS}/deployments/tandem-injector")
        (c,) = deploy["spec"]["template"]["spec"]["containers"]
        tls = self.work / "tls"
        tls.mkdir(exist_ok=True)
        for key, value in self.secret.items():
            (tls / key).write_bytes(base64.b64decode(value))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for e in c["env"]:
            env[e["name"]] = e["value"].replace("/tls/", f"{tls}/")
        env["TANDEM_INJECTOR_LISTEN"] = "127.0.0.1:443"
        env["TANDEM_INJECTOR_DRAIN"] = "0s"
        log = self.work / "injector.log"
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([self.injector], env=env, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        end = time.monotonic() + 10
        while "listening on" not in log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > end:
                raise k8s.Failed(f"the injector did not listen: {log.read_text()[-600:]}")
            time.sleep(0.1)
        self.point_service()
        return {k: v for k, v in env.items() if k.startswith("TANDEM_INJECTOR_ROUTE")}

    def point_service(self):
        path = f"/api/v1/namespaces/{CHART_NS}/services/tandem-injector"
        svc, _ = self.api.must("GET", path)
        if svc["spec"].get("type") == "ExternalName":
            return
        spec = svc["spec"]
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy",
                    "internalTrafficPolicy", "sessionAffinity"):
            spec.pop(key, None)
        spec.update(type="ExternalName", externalName="localhost")
        self.api.must("PUT", path, svc)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.proc = None

    def injected(self, route, bound=30.0):
        """Until a Pod created in the labelled namespace comes back by ROUTE."""
        end = time.monotonic() + bound
        last = None
        while time.monotonic() < end:
            pod = copy.deepcopy(job_pod())
            status, _, body = self.api.call("POST", f"/api/v1/namespaces/{NS}/pods?dryRun=All", pod)
            if status == 201:
                spec = body["spec"]
                last = (f"route {route_of(body)}: init containers "
                        f"{[c['name'] for c in spec.get('initContainers', [])]}, containers "
                        f"{[(c['name'], c.get('command')) for c in spec['containers']]}")
                if route_of(body) == route:
                    note = body["metadata"].get("annotations", {}).get("tandem.dev/injection")
                    return f"a Job's Pod injected by the route {route}" + (f" ({note!r})" if note else "")
            else:
                last = f"{status}: {json.dumps(body)[:300]}"
            time.sleep(0.5)
        raise k8s.Failed(f"no Pod injected by the route {route} within {bound:.0f} s; the last: {last}")

    def webhook_pass(self, route):
        env = self.serve()
        return f"{self.injected(route)}; the injector's environment from the Deployment: {env or 'no route (wrap)'}"

    def policy_pass(self, route):
        self.stop()
        gone = [p for p in ("mutatingwebhookconfigurations/tandem-injector",)
                if self.api.call("GET", f"{ADMISSION}/{p}")[0] != 404]
        gone += [f"{kind}/tandem-injector" for kind, base in GROUPED.items()
                 if self.api.call("GET", f"{base}/namespaces/{CHART_NS}/{kind}/tandem-injector")[0] != 404]
        if gone:
            raise k8s.Failed(f"webhook objects left in policy mode: {gone}")
        policies, _ = self.api.must("GET", f"{ADMISSION}/mutatingadmissionpolicies")
        names = [p["metadata"]["name"] for p in policies["items"]]
        return f"{self.injected(route)} through the policies {names}, no webhook, no Deployment"

    def uninstall(self):
        self.stop()
        self.cfg.uninstall(RELEASE, wait="watcher", timeout=60)
        end = time.monotonic() + 30
        while True:
            left = self.leftovers()
            if not left or time.monotonic() > end:
                break
            time.sleep(1)
        if left:
            raise k8s.Failed(f"left after helm uninstall: {', '.join(left)}")
        return "nothing of the release is left (objects, configurations, policies, Helm's release Secrets)"

    # -- what is there ---------------------------------------------------------

    def tls_secret(self):
        secret, _ = self.api.must("GET", f"/api/v1/namespaces/{CHART_NS}/secrets/{TLS}")
        return secret["data"]

    def check_bundle(self):
        config, _ = self.api.must("GET", f"{ADMISSION}/mutatingwebhookconfigurations/tandem-injector")
        bundles = {h["clientConfig"].get("caBundle") for h in config["webhooks"]}
        if bundles != {self.secret["ca.crt"]}:
            raise k8s.Failed("the webhook's caBundle is not the Secret's ca.crt")

    def verify(self, host):
        d = self.work / "verify"
        d.mkdir(exist_ok=True)
        for key in ("ca.crt", "tls.crt"):
            (d / key).write_bytes(base64.b64decode(self.secret[key]))
        done = subprocess.run(["openssl", "verify", "-CAfile", str(d / "ca.crt"), "-verify_hostname",
                               host, str(d / "tls.crt")], capture_output=True, text=True)
        if done.returncode != 0:
            raise k8s.Failed(f"the chart's certificate does not verify for {host}: {done.stderr.strip()}")

    def revision(self):
        return self.cfg.status(RELEASE).get("version") or self.cfg.status(RELEASE).get("revision")

    def leftovers(self):
        left = []
        for kind in NAMESPACED:
            found, _ = self.api.must("GET", f"/api/v1/namespaces/{CHART_NS}/{kind}")
            for item in found["items"]:
                name = item["metadata"]["name"]
                if (kind, name) in {("serviceaccounts", "default"), ("configmaps", "kube-root-ca.crt")}:
                    continue
                left.append(f"{kind}/{name}")
        for kind, base in GROUPED.items():
            found, _ = self.api.must("GET", f"{base}/namespaces/{CHART_NS}/{kind}")
            left += [f"{kind}/{i['metadata']['name']}" for i in found["items"]]
        for kind in CLUSTER_WIDE:
            found, _ = self.api.must("GET", f"{ADMISSION}/{kind}")
            left += [f"{kind}/{i['metadata']['name']}" for i in found["items"]]
        return left


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def main(argv):
    if len(argv) not in (4, 5):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    kube_apiserver, etcd, injector, work = argv[:4]
    emulated = argv[4] if len(argv) == 5 else None
    if os.geteuid() != 0 or not port_free(443):
        say("FAILED: the injector behind the chart's Service listens on 127.0.0.1:443: needs root "
            "and the port free")
        return 2
    import helm_python as helm
    work = Path(work).resolve()
    subprocess.run(["rm", "-rf", str(work)], check=True)
    work.mkdir(parents=True)
    api = None
    scenario = None
    try:
        api = k8s.Cluster(kube_apiserver, etcd, work / "cluster", emulated=emulated)
        version, _ = api.must("GET", "/version")
        say(f"kube-apiserver {version.get('gitVersion')} emulating "
            f"{version.get('emulationMajor', '?')}.{version.get('emulationMinor', '?')}; "
            f"Helm SDK {helm.helm_sdk_version()}")
        k8s.create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": CHART_NS, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}})
        k8s.create(api, {"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": NS, "labels": {LABEL: "enabled"}}})
        k8s.create(api, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}, NS)
        scenario = Scenario(helm, api, injector, work)
        s = scenario
        s.step("install", s.install)
        s.step("webhook-wrap", lambda: s.webhook_pass("wrap"))
        s.step("upgrade-native", lambda: s.upgrade(route="native"))
        s.step("webhook-native", lambda: s.webhook_pass("native"))
        s.step("upgrade-policy-wrap", lambda: s.upgrade(mode="policy"))
        s.step("policy-wrap", lambda: s.policy_pass("wrap"))
        s.step("upgrade-policy-native", lambda: s.upgrade(mode="policy", route="native"))
        s.step("policy-native", lambda: s.policy_pass("native"))
        s.step("uninstall", s.uninstall)
    except (k8s.Failed, OSError) as e:
        say(f"FAILED: setup: {e}")
        return 2
    finally:
        if scenario:
            scenario.stop()
        if api:
            api.stop()
    say(f"{9 - len(scenario.failed)} of 9 steps passed"
        + (f"; failed: {', '.join(scenario.failed)}; logs in {work}" if scenario.failed else ""))
    return 1 if scenario.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
