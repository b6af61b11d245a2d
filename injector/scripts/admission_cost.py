"""What each admission route adds to a Pod create, for `make e2e-apiserver`.

Routes, each measured against the same floor with nothing of ours registered:

  webhook-unchanged  the webhook called on a Pod it already changed: it
                     answers "no change" (the floor of a webhook call)
  webhook            the webhook changing an opted-in Job's Pod
  policy-one-op      a MutatingAdmissionPolicy of one JSONPatch adding a
                     label, matched as the printed one is (the floor of a policy)
  policy             the printed policy changing the same Pod

Each Pod is created with dryRun=All, one at a time over one kept-alive
connection; a route's figure is the median of the client's wall times minus
the median with nothing registered. The routes are measured in rounds (each
route once a round, in turn), so that a slow minute of the shared machine
touches them all. Beside the medians, the API server's own histograms say
where the time went: for each admission step, plugin, webhook and policy
evaluation, how many times it ran a create and its mean (2 admit steps a
create: the chain was invoked again, after a change).

`variants` measures policies made from the printed one, each forcing the
evaluation of one variable (and those it reads) before the same one-operation
patch: where the printed policy's time goes, one variable at a time.
"""

import copy
import http.client
import json
import re
import statistics
import time

ROUTES = ["none", "webhook-unchanged", "webhook", "policy-one-op", "policy"]
# The floor each route is compared with.
FLOOR = {"webhook": "webhook-unchanged", "policy": "policy-one-op"}
# The most a route may add, as a multiple of its floor's (the goal).
GOAL = 1.5
FLOOR_NAME = "tandem-floor"
LABEL_OP = ("JSONPatch{op: 'add', path: '/metadata/labels/tandem.dev~1floor', "
            "value: 'one-op'}")
# Histograms of the API server that say where a create's time goes.
HISTOGRAMS = re.compile(
    r"^apiserver_(request|admission_step_admission|admission_controller_admission"
    r"|admission_webhook_admission|mutating_admission_policy_check)_duration_seconds"
    r"_(sum|count)\{(.*)\} (\S+)$")
KEPT_LABELS = ("name", "type", "policy", "policy_binding", "error_type")


class Connection:
    """One kept-alive HTTPS connection to the API server."""

    def __init__(self, api):
        self.api = api
        host, port = api.url.removeprefix("https://").rsplit(":", 1)
        self.conn = http.client.HTTPSConnection(host, int(port), context=api.ssl, timeout=30)

    def post(self, path, body):
        """(status, parsed body) of a POST of `body` (bytes of JSON)."""
        headers = {"Authorization": f"Bearer {self.api.token}",
                   "Content-Type": "application/json", "Accept": "application/json"}
        self.conn.request("POST", path, body=body, headers=headers)
        resp = self.conn.getresponse()
        return resp.status, json.loads(resp.read())

    def close(self):
        self.conn.close()


def scrape(api):
    """{(histogram, labels, sum|count): value} of the histograms about Pod creates."""
    _, _, text = api.call("GET", "/metrics")
    out = {}
    for line in str(text).splitlines():
        m = HISTOGRAMS.match(line)
        if not m:
            continue
        name, kind, labels, value = m.groups()
        if name == "request":
            keep = 'resource="pods"' in labels and 'verb="POST"' in labels
        else:
            keep = name == "mutating_admission_policy_check" or 'operation="CREATE"' in labels
        if keep:
            out[(name, labels, kind)] = float(value)
    return out


def breakdown(before, after, creates):
    """{series: (runs a create, mean µs a run)} between two scrapes."""
    rows = {}
    for (name, labels, kind), value in sorted(after.items()):
        count = after.get((name, labels, "count"), 0) - before.get((name, labels, "count"), 0)
        if kind != "sum" or count <= 0:
            continue
        total = value - before.get((name, labels, "sum"), 0.0)
        keep = [kv for kv in labels.split(",") if kv.split("=")[0] in KEPT_LABELS]
        rows[f"{name}{{{','.join(keep)}}}"] = (count / creates, total / count * 1e6)
    return rows


class Measure:
    """Samples (ms) and server histograms per route, over rounds."""

    def __init__(self, api, ns, pods, check, n):
        self.api, self.ns, self.pods, self.check, self.n = api, ns, pods, check, n
        self.samples = {}
        self.rows = {}

    def route(self, name, warm=30):
        """Creates this route's Pod n times (after `warm` untimed), one at a time."""
        pod = self.pods[name]
        body = json.dumps(dict(pod, metadata=dict(pod["metadata"], namespace=self.ns))).encode()
        path = f"/api/v1/namespaces/{self.ns}/pods?dryRun=All"
        conn = Connection(self.api)
        samples = self.samples.setdefault(name, [])
        try:
            for _ in range(warm):
                self.check(name, *conn.post(path, body))
            before = scrape(self.api)
            for _ in range(self.n):
                start = time.perf_counter()
                status, answer = conn.post(path, body)
                samples.append((time.perf_counter() - start) * 1e3)
                self.check(name, status, answer)
            after = scrape(self.api)
        finally:
            conn.close()
        self.rows.setdefault(name, []).append(breakdown(before, after, self.n))

    def added(self, name):
        """The route's median minus the median with nothing registered (ms)."""
        return statistics.median(self.samples[name]) - statistics.median(self.samples["none"])

    def served(self, name):
        """The same from the API server's mean request duration (ms)."""
        def mean(route):
            got = [rows["request{}"][1] for rows in self.rows[route] if "request{}" in rows]
            return sum(got) / len(got) / 1e3
        return mean(name) - mean("none")

    def report(self, out=print):
        """Prints the routes' figures; a line for each route over its goal."""
        out(f"  admission cost: {len(self.samples['none'])} dry-run creates a route, one at a "
            "time (median of the client's wall time; added = the route's - none's)")
        for r in ROUTES:
            s = sorted(self.samples[r])
            added = "" if r == "none" else (
                f"  added {self.added(r):+.2f} ms (server's mean: {self.served(r):+.2f} ms)")
            out(f"    {r:18} median {statistics.median(s):.2f} ms  "
                f"p90 {s[int(len(s) * 0.9)]:.2f} ms{added}")
        problems = []
        for r, floor in FLOOR.items():
            ratio = self.added(r) / max(self.added(floor), 1e-9)
            server = self.served(r) / max(self.served(floor), 1e-9)
            verdict = "met" if ratio <= GOAL else "NOT met"
            out(f"    {r} adds {ratio:.2f}x what {floor} adds (goal <= {GOAL}x: {verdict}; "
                f"by the server's means {server:.2f}x)")
            if ratio > GOAL:
                problems.append(f"admission cost: {r} adds {ratio:.2f}x {floor}'s, goal {GOAL}x")
        self.where(ROUTES, out)
        return problems

    def where(self, names, out=print):
        """The API server's histograms, averaged over the rounds."""
        out("  where it goes (the API server's histograms: runs a create x mean µs a run):")
        for r in names:
            out(f"    {r}:")
            rounds = self.rows.get(r, [])
            for series in sorted({s for rows in rounds for s in rows}):
                got = [rows[series] for rows in rounds if series in rows]
                runs = sum(g[0] for g in got) / len(rounds)
                mean = sum(g[1] for g in got) / len(got)
                out(f"      {series:96} {runs:5.2f} x {mean:8.1f}")


def measure(names, routes, m, rounds):
    """Measures each route of `names` `rounds` times in turn; `routes` maps
    each to (on, off): what puts it in place and takes it away again."""
    for _ in range(rounds):
        for r in names:
            on, off = routes[r]
            on()
            try:
                m.route(r)
            finally:
                off()
    return m


def floor_policy(objects, name=FLOOR_NAME, expression=f"[{LABEL_OP}]", variables=()):
    """A policy made from the printed one (its match: constraints, conditions,
    bindings) under another name, with `variables` of the printed one and a
    JSONPatch of `expression`."""
    out = []
    for obj in objects:
        if obj["kind"] == "MutatingAdmissionPolicy":
            obj = copy.deepcopy(obj)
            obj["metadata"]["name"] = name
            kept = [v for v in obj["spec"].pop("variables", []) if v["name"] in variables]
            if kept:
                obj["spec"]["variables"] = kept
            obj["spec"]["mutations"] = [
                {"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}]
            out.append(obj)
        elif obj["kind"] == "MutatingAdmissionPolicyBinding":
            obj = copy.deepcopy(obj)
            obj["metadata"]["name"] = obj["metadata"]["name"].replace("tandem-injector", name)
            obj["spec"]["policyName"] = name
            out.append(obj)
    return out


def variants(objects):
    """{name: policy objects}: the printed policy's match with the one-operation
    patch, after forcing the evaluation of each variable in turn (and of those
    it reads), then of the printed patch itself."""
    policy = next(o for o in objects if o["kind"] == "MutatingAdmissionPolicy")
    names = [v["name"] for v in policy["spec"].get("variables", [])]
    patch = policy["spec"]["mutations"][0]["jsonPatch"]["expression"]
    out = {"conditions": floor_policy(objects, "tandem-v-conditions")}
    for i, var in enumerate(names):
        forced = f"size([variables.{var}]) > 0 ? [{LABEL_OP}] : []"
        out[f"+{var}"] = floor_policy(objects, f"tandem-v{i}", forced, names)
    forced = f"size({patch}) >= 0 ? [{LABEL_OP}] : []"
    out["+patch"] = floor_policy(objects, "tandem-v-patch", forced, names)
    return out


def labelled_by_floor(pod):
    return pod["metadata"].get("labels", {}).get("tandem.dev/floor") == "one-op"
