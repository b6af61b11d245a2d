#!/usr/bin/env python3
"""charts/tandem-injector, checked offline with Helm v4's own library
(helm-python-sdk, in the venv `make chart` makes): `make chart`.

  chart.py files INJECTOR
      `make chart-files`: writes what the chart holds from another home
      (chart_files.py: the webhook configuration and the policies the binary
      prints, docs/injector.md's alert rules, the tables of values).
  chart.py check INJECTOR LINT_BIN OUT
      For each documented combination of values (CASES): helm lint --strict,
      the values against values.schema.json, an offline render; then
        - the MutatingWebhookConfiguration is what `tandem-injector webhook
          --install MODE --failure-policy POLICY` prints, and the policies are
          what `tandem-injector policy --image IMAGE --install MODE --route ROUTE`
          prints, parsed, but for what the release sets (its namespace, the
          caBundle, the labels): the one-home rule;
        - with the default values the Deployment, Service, ServiceAccount and
          PodDisruptionBudget are injector/deploy/tandem-injector.yaml's, and the
          cert-manager resources cert-manager.yaml's (labels and namespace aside);
        - the PrometheusRule holds docs/injector.md's alert rules;
        - the self-signed certificate verifies for the Service's name against
          the caBundle; the Deployment carries the route, install and registry
          values; nothing names tandem-system when the namespace is another;
        - every object validates strictly with kubernetes-validate for Kubernetes
          1.29, 1.33 and 1.36 (the policies for 1.36 and 1.37), custom resources
          against our schemas (cert-manager, Prometheus Operator), the Deployment
          meets Pod Security "restricted" and is ready to fail closed;
      and the generated files are current, the chart's version is the
      release's, and a misspelt value fails the schema. Each comparison first
      shows it can fail.

Exits 1 with one line per problem, 64 on bad usage.
"""

import base64
import copy
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import chart_files as gen  # noqa: E402

ROOT = gen.ROOT
CHART = gen.CHART
DEPLOY = ROOT / "injector" / "deploy"
SCRIPTS = ROOT / "injector" / "scripts"
# The labels the chart adds to every object it writes (templates/_helpers.tpl).
HELM_LABELS = {"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
               "app.kubernetes.io/managed-by", "helm.sh/chart"}
RELEASE = "tandem"
OTHER_NS = "platform-tandem"
DIGEST = "sha256:" + "ab" * 32
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"

# Every documented combination: (name, namespace, values).
CASES = [("default", gen.PRINTED_NAMESPACE, {})]
for _mode in gen.MODES:
    for _route in gen.ROUTES:
        for _failure in ["Fail", "Ignore"]:
            CASES.append((f"webhook-{_mode}-{_route}-{_failure}", OTHER_NS,
                          {"install": _mode, "route": _route, "failurePolicy": _failure}))
        CASES.append((f"policy-{_mode}-{_route}", OTHER_NS,
                      {"mode": "policy", "install": _mode, "route": _route}))
CASES += [
    ("cert-manager", gen.PRINTED_NAMESPACE, {"certificate": {"source": "cert-manager"}}),
    ("cert-manager-elsewhere", OTHER_NS, {"certificate": {"source": "cert-manager"}}),
    ("secret", OTHER_NS, {"certificate": {"source": "secret", "ca": CA_PEM}}),
    ("everything", OTHER_NS, {
        "replicas": 3,
        "image": {"repository": "registry.example.com/mirror/tandem-injector", "digest": DIGEST,
                  "pullPolicy": "IfNotPresent"},
        "tandemImage": {"repository": "registry.example.com/mirror/tandem", "tag": "0.1.0-rc1"},
        "imagePullSecrets": [{"name": "mirror"}],
        "registry": {"allow": ["registry.example.com", "*.dkr.ecr.eu-west-1.amazonaws.com"],
                     "authSecret": "robot", "ca": CA_PEM},
        "resources": {"requests": {"cpu": "20m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "platform",
                         "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [
                {"key": "node-role.kubernetes.io/platform", "operator": "Exists"}]}}]}},
        "priorityClassName": "system-cluster-critical",
        "metrics": {"serviceMonitor": {"enabled": True, "interval": "1m",
                                       "labels": {"release": "prometheus"}},
                    "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}}},
    }),
    ("policy-image", OTHER_NS, {"mode": "policy", "tandemImage": {
        "repository": "registry.example.com/mirror/tandem", "digest": DIGEST}}),
]

# Values a typo or a bad value makes wrong: each must fail the schema.
MISSPELT = [
    {"replica": 2}, {"image": {"tagg": "1"}}, {"route": "natve"}, {"mode": "policies"},
    {"install": "emptyDir"}, {"failurePolicy": "fail"}, {"replicas": 1},
    {"certificate": {"source": "secret"}}, {"certificate": {"ca": CA_PEM}},
    {"image": {"digest": "sha256:short"}}, {"registry": {"allow": ["a registry"]}},
    {"metrics": {"serviceMonitor": {"enable": True}}}, {"resources": {"request": {}}},
    {"tolerations": [{"key": "a", "opertor": "Exists"}]}, {"affinity": {"nodeAfinity": {}}},
]


class Problems:
    def __init__(self):
        self.lines = []

    def __call__(self, line):
        self.lines.append(line)
        print(f"chart: FAILED: {line}", file=sys.stderr)


def image(values, key, repository):
    """The image reference a case's values give (tandem-injector.image)."""
    given = values.get(key, {})
    repo = given.get("repository", repository)
    if given.get("digest"):
        return f"{repo}@{given['digest']}"
    return f"{repo}:{given.get('tag') or gen.version()}"


def objects(rendered):
    """The objects of a render ({template: text}), NOTES.txt left out."""
    found = []
    for name, text in sorted(rendered.items()):
        if name.endswith("NOTES.txt"):
            continue
        found += [d for d in yaml.safe_load_all(text) if d]
    return found


def plain(obj, namespace):
    """OBJ as the binary or the shipped manifest would have it: without the
    chart's labels, in tandem-system."""
    obj = json.loads(json.dumps(obj).replace(f'"{namespace}"', f'"{gen.PRINTED_NAMESPACE}"')
                     .replace(f'"{namespace}/', f'"{gen.PRINTED_NAMESPACE}/')
                     .replace(f".{namespace}.svc", f".{gen.PRINTED_NAMESPACE}.svc"))
    meta = obj.get("metadata", {})
    labels = {k: v for k, v in meta.get("labels", {}).items() if k not in HELM_LABELS}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    return obj


def diff(a, b, path=""):
    """Where A and B differ: (path, a's, b's)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in list(a) + [k for k in b if k not in a]
                for d in diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path or ".", a, b)]


def same(problem, what, chart_objs, home_objs):
    """The chart's objects are the home's, kind and name for kind and name."""
    key = lambda o: (o["kind"], o["metadata"]["name"])  # noqa: E731
    mine, theirs = {key(o): o for o in chart_objs}, {key(o): o for o in home_objs}
    if mine.keys() != theirs.keys():
        problem(f"{what}: the chart has {sorted(mine)}, its home {sorted(theirs)}")
        return False
    found = [(k, d) for k in mine for d in diff(theirs[k], mine[k])]
    for (kind, name), (path, a, b) in found[:20]:
        problem(f"{what}: {kind} {name}{path}: {json.dumps(a)[:200]} in its home, "
                f"{json.dumps(b)[:200]} in the chart")
    return not found


def parsed(text):
    return [d for d in yaml.safe_load_all(text) if d]


class Check:
    def __init__(self, helm, injector, lint_bin, out):
        self.helm, self.injector, self.lint_bin, self.out = helm, injector, lint_bin, Path(out)
        self.problem = Problems()
        self.manifest = parsed((DEPLOY / "tandem-injector.yaml").read_text())
        self.cert_manager = parsed((DEPLOY / "cert-manager.yaml").read_text())

    # -- the binary's own output, for a case's options ------------------------

    def webhook(self, values):
        return parsed(gen.run(self.injector, "webhook", "--install", values.get("install", "emptydir"),
                              "--failure-policy", values.get("failurePolicy", "Fail")))

    def policy(self, values):
        tandem = image(values, "tandemImage", "ghcr.io/tandem-sidecar/tandem")
        return parsed(gen.run(self.injector, *gen.policy_args(
            values.get("install", "emptydir"), values.get("route", "wrap"), tandem)))

    # -- one case -------------------------------------------------------------

    def render(self, chart, name, namespace, values):
        report = self.helm.lint(str(CHART), values, strict=True, namespace=namespace)
        for m in report.get("messages", []):
            if m.get("severity", 0) >= 2:
                self.problem(f"{name}: helm lint: {m.get('path')}: {m.get('error')}")
        for e in report.get("errors", []):
            self.problem(f"{name}: helm lint: {e}")
        try:
            chart.validate_schema(values)
        except self.helm.HelmError as e:
            self.problem(f"{name}: values.schema.json refused the documented values: {e}")
        rendered = chart.render(values, name=RELEASE, namespace=namespace, is_install=True)
        objs = objects(rendered)
        d = self.out / name
        d.mkdir(parents=True)
        (d / "chart.yaml").write_text(yaml.safe_dump_all(objs, sort_keys=False))
        if namespace != gen.PRINTED_NAMESPACE:
            for template, text in rendered.items():
                if gen.PRINTED_NAMESPACE in text:
                    self.problem(f"{name}: {template} names {gen.PRINTED_NAMESPACE}, "
                                 f"not the release's namespace {namespace}")
        return objs

    def case(self, chart, name, namespace, values):
        objs = self.render(chart, name, namespace, values)
        kinds = lambda *ks: [o for o in objs if o["kind"] in ks]  # noqa: E731
        if values.get("mode") == "policy":
            printed = [o for o in self.policy(values)]
            same(self.problem, f"{name}: the policy", [plain(o, namespace) for o in objs], printed)
            return objs
        (config,) = kinds("MutatingWebhookConfiguration")
        source = values.get("certificate", {}).get("source", "self-signed")
        self.webhook_config(name, namespace, values, config, source, objs)
        self.deployment(name, values, kinds("Deployment")[0])
        if name == "default":
            ours = [plain(o, namespace) for o in kinds("Deployment", "Service", "ServiceAccount",
                                                        "PodDisruptionBudget")]
            # The manifest's own app.kubernetes.io/name label is one of the chart's.
            theirs = [plain(o, gen.PRINTED_NAMESPACE) for o in self.manifest
                      if o["kind"] in ("Deployment", "Service", "ServiceAccount", "PodDisruptionBudget")]
            same(self.problem, "default values vs deploy/tandem-injector.yaml", ours, theirs)
        if source == "cert-manager":
            ours = [plain(o, namespace) for o in objs if o["apiVersion"].startswith("cert-manager.io/")]
            same(self.problem, f"{name} vs deploy/cert-manager.yaml", ours, self.cert_manager)
        if kinds("PrometheusRule"):
            (rule,) = kinds("PrometheusRule")
            # The block's namespace is the release's (kube-state-metrics' label,
            # the description's words).
            text = gen.alert_rules(gen.DOC.read_text()).replace(gen.PRINTED_NAMESPACE, namespace)
            if rule["spec"] != yaml.safe_load(text):
                self.problem(f"{name}: the PrometheusRule's spec is not docs/injector.md's alert rules")
        return objs

    def webhook_config(self, name, namespace, values, config, source, objs):
        bundles = {h["clientConfig"].pop("caBundle", None) for h in config["webhooks"]}
        printed = self.webhook(values)
        if source != "cert-manager":
            printed[0]["metadata"].pop("annotations")
        same(self.problem, f"{name}: the webhook configuration", [plain(config, namespace)], printed)
        if source == "cert-manager":
            if bundles != {None}:
                self.problem(f"{name}: a caBundle beside cert-manager's CA injector")
            return
        (bundle,) = bundles if len(bundles) == 1 else (None,)
        pem = base64.b64decode(bundle).decode() if bundle else ""
        if source == "secret":
            if pem != CA_PEM:
                self.problem(f"{name}: the caBundle is not certificate.ca")
            return
        (secret,) = [o for o in objs if o["kind"] == "Secret"]
        data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
        if data.get("ca.crt", b"").decode() != pem or not pem:
            self.problem(f"{name}: the caBundle is not the Secret's ca.crt")
            return
        self.verify(name, namespace, data)

    def verify(self, name, namespace, data):
        """The Secret's certificate verifies for the Service's name against its
        CA, and its key is the certificate's (as the API server and the injector
        will use them)."""
        with tempfile.TemporaryDirectory() as tmp:
            for key, value in data.items():
                Path(tmp, key).write_bytes(value)
            host = f"tandem-injector.{namespace}.svc"
            done = subprocess.run(["openssl", "verify", "-CAfile", f"{tmp}/ca.crt", "-verify_hostname",
                                   host, "-purpose", "sslserver", f"{tmp}/tls.crt"],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                self.problem(f"{name}: the certificate does not verify for {host}: {done.stderr.strip()}")
            keys = [subprocess.run(["openssl", *how, "-in", f"{tmp}/{file}"],
                                   capture_output=True, text=True).stdout
                    for how, file in ((["x509", "-pubkey", "-noout"], "tls.crt"),
                                      (["pkey", "-pubout"], "tls.key"))]
            if not keys[0] or keys[0] != keys[1]:
                self.problem(f"{name}: tls.key is not tls.crt's key")

    def deployment(self, name, values, deploy):
        spec = deploy["spec"]["template"]["spec"]
        (c,) = spec["containers"]
        env = {e["name"]: e.get("value") for e in c["env"]}
        want = {"TANDEM_INJECTOR_IMAGE": image(values, "tandemImage", "ghcr.io/tandem-sidecar/tandem"),
                "TANDEM_INJECTOR_ROUTE": None if values.get("route", "wrap") == "wrap" else values["route"],
                "TANDEM_INJECTOR_INSTALL": None if values.get("install", "emptydir") == "emptydir"
                else values["install"]}
        registry = values.get("registry", {})
        if registry:
            want["TANDEM_INJECTOR_REGISTRY_ALLOW"] = ",".join(registry["allow"])
            want["TANDEM_INJECTOR_REGISTRY_AUTH"] = "/registry/.dockerconfigjson"
            want["TANDEM_INJECTOR_REGISTRY_CA"] = "/registry-ca/ca.crt"
        for var, value in want.items():
            if env.get(var) != value:
                self.problem(f"{name}: the Deployment's {var} is {env.get(var)!r}, expected {value!r}")
        if c["image"] != image(values, "image", "ghcr.io/tandem-sidecar/tandem-injector"):
            self.problem(f"{name}: the injector's image is {c['image']}")
        if deploy["spec"]["replicas"] != values.get("replicas", 2):
            self.problem(f"{name}: {deploy['spec']['replicas']} replicas")

    # -- the whole check --------------------------------------------------------

    def run(self):
        self.self_tests()
        stale = gen.stale(self.injector)
        for path in stale:
            self.problem(f"{path} is not what `make chart-files` makes from its home now: run it")
        meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
        if meta["version"] != gen.version() or meta["appVersion"] != gen.version():
            self.problem(f"Chart.yaml: version {meta['version']}, appVersion {meta['appVersion']}; "
                         f"the release (injector/Cargo.toml) is {gen.version()}")
        with self.helm.Chart.load(str(CHART)) as chart:
            for values in MISSPELT:
                try:
                    chart.validate_schema(values)
                    self.problem(f"values.schema.json accepted {json.dumps(values)}")
                except self.helm.HelmError:
                    pass
            rendered = {}
            for name, namespace, values in CASES:
                rendered[name] = self.case(chart, name, namespace, values)
        self.validate(rendered)
        print(f"chart: {len(CASES)} combinations of values linted, rendered and compared; "
              f"{len(MISSPELT)} misspelt values refused")
        return 1 if self.problem.lines else 0

    def self_tests(self):
        """Each comparison fails on a difference."""
        quiet = []
        printed = self.webhook({})
        changed = copy.deepcopy(printed)
        changed[0]["webhooks"][0]["timeoutSeconds"] = 6
        if same(quiet.append, "self-test", changed, printed) or not quiet:
            raise SystemExit("chart: self-test: a changed webhook configuration compared equal")
        moved = plain(copy.deepcopy(printed[0]), OTHER_NS)
        if moved != printed[0]:
            raise SystemExit("chart: self-test: plain() changed a configuration in tandem-system")
        if not self.helm.lint(str(CHART), {"replica": 3}, strict=True)["errors"]:
            raise SystemExit("chart: self-test: helm lint passed a misspelt value")

    def validate(self, rendered):
        """kubernetes-validate, our custom resources' schemas, Pod Security, outage readiness."""
        kube, custom, deployments, ready = {}, [], [], []
        for name, objs in rendered.items():
            d = self.out / name
            native = [o for o in objs if "." not in o["apiVersion"].split("/")[0]
                      or o["apiVersion"].split("/")[0].endswith(".k8s.io")]
            path = d / "kubernetes.yaml"
            path.write_text(yaml.safe_dump_all(native, sort_keys=False))
            versions = ("1.36", "1.37") if name.startswith("policy") else ("1.29", "1.33", "1.36")
            for v in versions:
                kube.setdefault(v, []).append(str(path))
            if len(native) != len(objs):
                path = d / "custom.yaml"
                path.write_text(yaml.safe_dump_all([o for o in objs if o not in native]))
                custom.append(str(path))
            if any(o["kind"] == "Deployment" for o in objs):
                deployments.append(str(d / "kubernetes.yaml"))
                if "Ignore" not in name:
                    ready.append(str(d / "kubernetes.yaml"))
        broken = self.out / "selftest.yaml"
        deploy = next(o for o in rendered["default"] if o["kind"] == "Deployment")
        broken.write_text(yaml.safe_dump(dict(deploy, spec=dict(deploy["spec"], replica=2))))
        if subprocess.run([str(self.lint_bin / "kubernetes-validate"), "--strict", "-k", "1.36",
                           str(broken)], capture_output=True).returncode == 0:
            raise SystemExit("chart: self-test: kubernetes-validate passed an unknown field")
        for version, files in kube.items():
            done = subprocess.run([str(self.lint_bin / "kubernetes-validate"), "--strict", "-k", version,
                                   *files], capture_output=True, text=True)
            out = done.stdout + done.stderr
            if done.returncode != 0 or "Couldn't find schema" in out:
                self.problem(f"kubernetes-validate {version}: "
                             + "\n".join(l for l in out.splitlines() if not l.startswith("INFO")))
        done = subprocess.run([str(self.lint_bin / "yamllint"), "--strict", "--config-file",
                               str(ROOT / ".yamllint"), str(CHART / "Chart.yaml"), str(CHART / "values.yaml"),
                               *map(str, sorted((CHART / "files").glob("*.yaml")))],
                              capture_output=True, text=True)
        if done.returncode != 0:
            self.problem(f"yamllint: {done.stdout.strip()}")
        py = str(self.lint_bin / "python")
        monitor = next(o for o in rendered["everything"] if o["kind"] == "ServiceMonitor")
        broken.write_text(yaml.safe_dump(dict(monitor, spec=dict(monitor["spec"], endpoint=[]))))
        if subprocess.run([py, str(SCRIPTS / "cert_manager.py"), "--group", "monitoring.coreos.com",
                           str(DEPLOY / "monitoring.schema.json"), str(broken)],
                          capture_output=True).returncode == 0:
            raise SystemExit("chart: self-test: monitoring.schema.json passed an unknown field")
        for schema, group in (("cert-manager.schema.json", "cert-manager.io"),
                              ("monitoring.schema.json", "monitoring.coreos.com")):
            done = subprocess.run([py, str(SCRIPTS / "cert_manager.py"), "--group", group,
                                   str(DEPLOY / schema), *custom], capture_output=True, text=True)
            if done.returncode != 0:
                self.problem(f"{schema}: {done.stderr.strip()}")
        for script, files in (("restricted.py", deployments), ("outage_ready.py", ready)):
            for f in files if script == "outage_ready.py" else [None]:
                args = [f] if f else files
                done = subprocess.run([py, str(SCRIPTS / script), *args], capture_output=True, text=True)
                if done.returncode != 0:
                    self.problem(f"{script}: {done.stderr.strip()}")
        print(f"chart: yamllint; kubernetes-validate {', '.join(sorted(kube))}; cert-manager and Prometheus "
              f"Operator schemas; Pod Security restricted; ready to fail closed")


def main(argv):
    usage = "usage: chart.py files INJECTOR | chart.py check INJECTOR LINT_BIN OUT"
    if len(argv) == 2 and argv[0] == "files":
        gen.write(Path(argv[1]).resolve())
        return 0
    if len(argv) != 4 or argv[0] != "check":
        print(usage, file=sys.stderr)
        return 64
    import helm_python as helm
    injector, lint_bin, out = (Path(a).resolve() for a in argv[1:])
    subprocess.run(["rm", "-rf", str(out)], check=True)
    out.mkdir(parents=True)
    return Check(helm, injector, lint_bin, out).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
