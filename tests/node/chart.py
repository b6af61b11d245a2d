"""The `3-chart` scenario of `make e2e-node`: charts/tandem-injector installed on
the real kubelet with Helm v4's library (helm-python-sdk: its Install, Upgrade and
Uninstall, waiting as `helm --wait` does). The injector runs as the chart's
Deployment (its image built FROM scratch from the static build, two replicas on
the one node), the API server reaches it through the chart's Service (its
endpoints, --enable-aggregator-routing) with the chart's self-signed certificate;
an opted-in Job that never mentions tandem ends with its app's status through
it; an upgrade to route native keeps the certificate Secret byte for byte and
rolls the replicas, and the same Job then runs with istio-proxy moved to a native
sidecar; the uninstall leaves nothing of the release.
"""

import time
from pathlib import Path

import cluster as k8s

CHART = Path(__file__).resolve().parent.parent.parent / "charts" / "tandem-injector"
RELEASE = "tandem-injector"
CHART_NS = "tandem-chart"
# What the namespace holds that is not the release's (the namespace's own, the
# harness's ConfigMap for OpenShift's API server).
NOT_OURS = {("serviceaccounts", "default"), ("configmaps", "kube-root-ca.crt"),
            ("configmaps", "openshift-service-ca.crt")}


class ChartScenario:
    def chart(self):
        import helm_python as helm
        self.namespace(CHART_NS, {"pod-security.kubernetes.io/enforce": "restricted"})
        repo, tag = self.image("tandem-injector").rsplit(":", 1)
        trepo, ttag = self.image("tandem").rsplit(":", 1)
        values = {"image": {"repository": repo, "tag": tag, "pullPolicy": "Never"},
                  "tandemImage": {"repository": trepo, "tag": ttag}}
        cfg = helm.Config(kubeconfig_path=self.kubeconfig, namespace=CHART_NS)
        lines = []
        try:
            self.chart_steps(cfg, values, lines)
        except k8s.Failed as e:
            raise k8s.Failed("; ".join(lines + [str(e)])) from e
        finally:
            cfg.uninstall(RELEASE, wait="watcher", timeout=120)
        left = self.left()
        if left:
            raise k8s.Failed(f"left after helm uninstall: {', '.join(left)}")
        lines.append("uninstalled: nothing of the release left")
        return "; ".join(lines)

    def chart_steps(self, cfg, values, lines):
        """Install, a Job by the route wrap, upgrade, a Job by the route native."""
        t = time.monotonic()
        cfg.install(str(CHART), RELEASE, values, wait="watcher", timeout=240)
        ready = self.replicas()
        secret = self.tls()
        lines.append(f"installed, {ready} replicas ready in {time.monotonic() - t:.0f}s")
        pod, evidence, note = self.injected_run("chart")
        if pod["spec"]["containers"][0]["command"][0] != "/tandem/tandem":
            raise k8s.Failed(f"the chart's injector did not wrap the job: {note!r}")
        lines.append(f"route wrap: {evidence} ({note!r})")
        t = time.monotonic()
        cfg.upgrade(str(CHART), RELEASE, dict(values, route="native"), wait="watcher", timeout=240)
        if self.tls() != secret:
            raise k8s.Failed("the upgrade changed the certificate Secret")
        self.rolled_out()
        lines.append(f"upgraded to route native in {time.monotonic() - t:.0f}s (the old "
                     f"replicas drained and gone), {self.replicas()} replicas ready, the "
                     "certificate Secret byte-identical")
        pod, evidence, note = self.injected_run("chart-native")
        inits = {c["name"]: c for c in pod["spec"].get("initContainers", [])}
        if inits.get("istio-proxy", {}).get("restartPolicy") != "Always":
            raise k8s.Failed(f"istio-proxy is not a native sidecar: {note!r}")
        lines.append(f"route native: {evidence} ({note!r})")

    def rolled_out(self, bound=90.0):
        """Until every replica left is one of the upgraded template's: the old
        ones answer reviews through their drain (10 s) and the API server may
        still pick them until their endpoints are gone."""
        def pods():
            found, _ = self.api.must("GET", f"/api/v1/namespaces/{CHART_NS}/pods")
            return found["items"]
        end = time.monotonic() + bound
        while time.monotonic() < end:
            routes = [{e["name"]: e.get("value") for e in p["spec"]["containers"][0]["env"]}
                      .get("TANDEM_INJECTOR_ROUTE") for p in pods()]
            if routes and all(r == "native" for r in routes):
                time.sleep(2)  # the API server's view of the endpoints follows
                return
            time.sleep(1)
        raise k8s.Failed(f"the old replicas were still there {bound:.0f} s after the upgrade")

    def replicas(self):
        deploy, _ = self.api.must("GET", f"/apis/apps/v1/namespaces/{CHART_NS}/deployments/tandem-injector")
        ready = deploy.get("status", {}).get("readyReplicas", 0)
        if ready < 2:
            raise k8s.Failed(f"{ready} replicas of the chart's Deployment ready")
        return ready

    def tls(self):
        secret, _ = self.api.must("GET", f"/api/v1/namespaces/{CHART_NS}/secrets/tandem-injector-tls")
        return secret["data"]

    def left(self, bound=60.0):
        """What of the release is still there, once its Pods have gone."""
        end = time.monotonic() + bound
        while True:
            found = []
            for kind, base in [("secrets", "/api/v1"), ("services", "/api/v1"),
                               ("serviceaccounts", "/api/v1"), ("configmaps", "/api/v1"),
                               ("pods", "/api/v1"), ("deployments", "/apis/apps/v1"),
                               ("replicasets", "/apis/apps/v1"),
                               ("poddisruptionbudgets", "/apis/policy/v1")]:
                items, _ = self.api.must("GET", f"{base}/namespaces/{CHART_NS}/{kind}")
                found += [f"{kind}/{i['metadata']['name']}" for i in items["items"]
                          if (kind, i["metadata"]["name"]) not in NOT_OURS]
            hooks, _ = self.api.must(
                "GET", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations")
            found += [f"mutatingwebhookconfigurations/{i['metadata']['name']}" for i in hooks["items"]]
            if not found or time.monotonic() > end:
                return found
            time.sleep(2)
