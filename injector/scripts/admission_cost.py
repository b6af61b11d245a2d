"""What each admission route adds to a Pod create, for `make e2e-apiserver`.

Routes, each measured against none (nothing of ours called) and each of the
last four against its floor:

  webhook-unchanged  the webhook called on a Pod it already changed: it
                     answers "no change" (the floor of a webhook call)
  webhook            the webhook changing an opted-in Job's Pod
  policy-one-op      a MutatingAdmissionPolicy of one JSONPatch adding a
                     label, matched as the printed one is (the floor of a policy)
  policy             the printed policy changing the same Pod

How. Every route is in place at once: each has its own copy of its objects
(the shipped webhook configuration, the printed policy, the floor policy)
that admits only Pods labelled cost.e2e.tandem.dev/route=ROUTE, and each
route's Pod carries its label (none's matches nothing). So the routes are
interleaved create by create with nothing reconfigured: a cycle is one
dry-run create of each route, one at a time over one kept-alive connection,
the order rotated from cycle to cycle. Whatever the shared machine does in a
given second, it does to every route of the cycles around it.

What. For each create, two times: the client's wall time, and the API
server's own, from its audit log (the event's requestReceivedTimestamp to its
stageTimestamp at ResponseComplete, matched to the create by its Audit-Id).
A route's added time is the median over the cycles of its create's time minus
none's in the same cycle. Beside them, the API server's histograms read
before and after: each route's own webhook call or policy evaluation (its
copy's name tells it apart: runs a create and mean), the admission steps and
plugins of all routes together, and the injector's own time a review (its
/metrics, and its CPU time from /proc/PID/task/*/schedstat).

The gate, each route against its floor (GOAL), is on the API server's added
time: the create as the API server handles it (every admission step the route
causes: the webhook call or the policy evaluation, the chain invoked again
after a change, the larger Pod validated and encoded) and nothing of the
client's. The client's time holds the test's own Python (its TLS, its JSON,
when the scheduler runs it on a shared machine): no part of what a route
costs a create, and what moved the client's medians by tenths of a
millisecond between runs. The client's figures are printed beside. The
webhook call alone would leave out what the injector's answer costs the rest
of the create (the chain invoked again after its change) and, measured by the
histogram's mean, takes in every stall of the injector's process; the
injector's own time a review is printed too (its /metrics, a mean a loaded
machine moves several times over, and its CPU time from /proc, which it does
not: the same for a changing and a no-change review). A route
misses its goal only when the low end of its ratio's scatter over resampled
cycles (5th percentile) is over it: a run that lands near the goal by chance
passes, saying so, and a route that adds more than the goal fails every run.

`variants` measures policies made from the printed one, each forcing the
evaluation of one variable (and those it reads) before the same one-operation
patch: where the printed policy's time goes, one variable at a time.
"""

import copy
import datetime
import http.client
import json
import random
import re
import statistics
import time
from pathlib import Path

ROUTES = ["none", "webhook-unchanged", "webhook", "policy-one-op", "policy"]
# The floor each route is compared with.
FLOOR = {"webhook": "webhook-unchanged", "policy": "policy-one-op"}
# The most a route may add, as a multiple of its floor's (the goal).
GOAL = 1.5
# The label that picks a route's objects; each route's Pod carries it.
ROUTE_LABEL = "cost.e2e.tandem.dev/route"
FLOOR_NAME = "tandem-floor"
LABEL_OP = ("JSONPatch{op: 'add', path: '/metadata/labels/tandem.dev~1floor', "
            "value: 'one-op'}")
# Histograms of the API server that say where a create's time goes.
HISTOGRAMS = re.compile(
    r"^apiserver_(request|admission_step_admission|admission_controller_admission"
    r"|admission_webhook_admission|mutating_admission_policy_check)_duration_seconds"
    r"_(sum|count)\{(.*)\} (\S+)$")
KEPT_LABELS = ("name", "type", "policy", "policy_binding", "error_type")
# The injector's own histogram of a review, from its request read to its answer written.
REVIEW = "tandem_injector_review_duration_seconds"


def audit_policy(namespace):
    """An audit policy (YAML) that logs the Pod creates in `namespace`, once
    each (ResponseComplete), with their metadata only, and nothing else."""
    return (
        "apiVersion: audit.k8s.io/v1\n"
        "kind: Policy\n"
        "omitStages: [RequestReceived, ResponseStarted]\n"
        "rules:\n"
        "  - level: Metadata\n"
        "    verbs: [create]\n"
        "    resources: [{group: \"\", resources: [pods]}]\n"
        f"    namespaces: [{namespace}]\n"
        "  - level: None\n")


def served(log):
    """{auditID: ms} of the Pod creates in the audit log `log` (JSON lines):
    the API server's own time of each, from the request's arrival to its
    answer."""
    out = {}
    for line in Path(log).read_text().splitlines():
        event = json.loads(line)
        if event.get("stage") != "ResponseComplete" or event.get("verb") != "create":
            continue
        start = _micro(event["requestReceivedTimestamp"])
        end = _micro(event["stageTimestamp"])
        out[event["auditID"]] = (end - start).total_seconds() * 1e3
    return out


def _micro(stamp):
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class Connection:
    """One kept-alive HTTPS connection to the API server."""

    def __init__(self, api):
        self.api = api
        host, port = api.url.removeprefix("https://").rsplit(":", 1)
        self.conn = http.client.HTTPSConnection(host, int(port), context=api.ssl, timeout=30)

    def post(self, path, body):
        """(status, parsed body, Audit-Id) of a POST of `body` (bytes of JSON)."""
        headers = {"Authorization": f"Bearer {self.api.token}",
                   "Content-Type": "application/json", "Accept": "application/json"}
        self.conn.request("POST", path, body=body, headers=headers)
        resp = self.conn.getresponse()
        return resp.status, json.loads(resp.read()), resp.getheader("Audit-Id")

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


def breakdown(before, after):
    """{series: (runs, seconds)} between two scrapes; a series is the
    histogram and its kept labels (the request's: none kept, all summed)."""
    rows = {}
    for (name, labels, kind), value in after.items():
        count = after.get((name, labels, "count"), 0) - before.get((name, labels, "count"), 0)
        if kind != "sum" or count <= 0:
            continue
        total = value - before.get((name, labels, "sum"), 0.0)
        keep = [kv for kv in labels.split(",") if kv.split("=")[0] in KEPT_LABELS]
        series = f"{name}{{{','.join(keep)}}}"
        runs, seconds = rows.get(series, (0, 0.0))
        rows[series] = (runs + count, seconds + total)
    return rows


def review_time(hook):
    """(reviews, seconds) the injector behind `hook` has answered so far, from
    its own /metrics; None when it cannot be read."""
    host, port = "127.0.0.1", hook.port
    conn = http.client.HTTPSConnection(host, port, context=hook.api.ssl, timeout=10)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    except OSError:
        return None
    finally:
        conn.close()
    got = {}
    for line in text.splitlines():
        for kind in ("sum", "count"):
            if line.startswith(f"{REVIEW}_{kind} "):
                got[kind] = float(line.split()[1])
    return (got["count"], got["sum"]) if len(got) == 2 else None


def cpu_ns(pid):
    """Nanoseconds process `pid` has run on a CPU, summed over its threads
    now (/proc/PID/task/*/schedstat); a thread that ended is not counted."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def only_route(objects, route, prefix=None):
    """Copies of `objects` that admit only Pods labelled ROUTE_LABEL=`route`:
    each webhook of a MutatingWebhookConfiguration and each
    MutatingAdmissionPolicyBinding gets one more object selector requirement
    (a label check, the same for every route). With `prefix`, the
    configuration and its webhooks are renamed (`PREFIX-NAME`, `PREFIX.NAME`),
    so that the API server's histograms, labelled by webhook name, tell this
    copy apart from another of the same configuration."""
    requirement = {"key": ROUTE_LABEL, "operator": "In", "values": [label_value(route)]}
    out = []
    for obj in copy.deepcopy(objects):
        if obj["kind"] == "MutatingWebhookConfiguration":
            if prefix:
                obj["metadata"]["name"] = f"{prefix}-{obj['metadata']['name']}"
            for hook in obj["webhooks"]:
                if prefix:
                    hook["name"] = f"{prefix}.{hook['name']}"
                selector = hook.setdefault("objectSelector", {})
                selector.setdefault("matchExpressions", []).append(requirement)
        elif obj["kind"] == "MutatingAdmissionPolicyBinding":
            resources = obj["spec"].setdefault("matchResources", {})
            selector = resources.setdefault("objectSelector", {})
            selector.setdefault("matchExpressions", []).append(requirement)
        out.append(obj)
    return out


def on_route(pod, route):
    """`pod` labelled for `route`."""
    pod = copy.deepcopy(pod)
    pod["metadata"].setdefault("labels", {})[ROUTE_LABEL] = label_value(route)
    return pod


def label_value(route):
    """`route` as a label value (a variant's `+NAME` is `plus.NAME`)."""
    return re.sub(r"[^A-Za-z0-9_.-]", ".", route.replace("+", "plus.")).strip("-_.")


class Measure:
    """Each route's creates, interleaved: the client's wall time and the API
    server's own (ms) a cycle, and the server's histograms over the run."""

    def __init__(self, api, ns, pods, check, audit_log, hooks=None):
        """`hooks`: {route: the injector behind that route's webhook}, each
        its own process, whose /metrics give its own time a review."""
        self.api, self.check, self.audit_log = api, check, audit_log
        self.hooks = hooks or {}
        self.bodies = {}
        for name, pod in pods.items():
            pod = dict(pod, metadata=dict(pod["metadata"], namespace=ns))
            self.bodies[name] = json.dumps(pod).encode()
        self.path = f"/api/v1/namespaces/{ns}/pods?dryRun=All"
        self.client = {name: [] for name in pods}
        self.server = {name: [] for name in pods}
        self.ids = {name: [] for name in pods}
        self.rows = {}
        self.reviews = {}
        self.cycles = 0
        self.names = []
        self.load = []
        self.unmatched = 0

    def run(self, names, cycles, warm=30):
        """`cycles` cycles over `names`, the order rotated by one each cycle,
        after `warm` untimed ones."""
        self.names = list(names)
        self.load.append(_load())
        conn = Connection(self.api)
        try:
            for _ in range(warm):
                for name in names:
                    self.check(name, *conn.post(self.path, self.bodies[name])[:2])
            before = scrape(self.api)
            reviews = {name: review_time(hook) for name, hook in self.hooks.items()}
            cpu = {name: cpu_ns(hook.proc.pid) for name, hook in self.hooks.items()}
            for c in range(cycles):
                for name in names[c % len(names):] + names[:c % len(names)]:
                    start = time.perf_counter()
                    status, answer, audit_id = conn.post(self.path, self.bodies[name])
                    self.client[name].append((time.perf_counter() - start) * 1e3)
                    self.ids[name].append(audit_id)
                    self.check(name, status, answer)
                self.cycles += 1
            self.rows = breakdown(before, scrape(self.api))
            for name, hook in self.hooks.items():
                after = review_time(hook)
                used = (cpu_ns(hook.proc.pid) - cpu[name]) / 1e9
                if reviews[name] and after:
                    self.reviews[name] = (after[0] - reviews[name][0],
                                          after[1] - reviews[name][1], used)
        finally:
            conn.close()
        self.load.append(_load())
        # The audit log's writes are done once each create has been answered.
        times = served(self.audit_log)
        for name, ids in self.ids.items():
            self.server[name] = [times.get(i) for i in ids]
            self.unmatched += sum(1 for t in self.server[name] if t is None)

    def _added(self, name, per_create, cycles=None):
        pairs = [(r, n) for r, n in zip(per_create[name], per_create["none"])
                 if r is not None and n is not None]
        if cycles is not None:
            pairs = [pairs[c] for c in cycles]
        return statistics.median(r - n for r, n in pairs)

    def spread(self, name, floor, resamples=1000):
        """The 5th and 95th percentiles of the server's ratio of `name`'s added
        time to `floor`'s over `resamples` resamplings of the cycles (drawn
        with replacement, seeded: the same data give the same bounds): how far
        this run's own scatter could move it."""
        rng = random.Random(1)
        pairs = min(sum(1 for r, n in zip(self.server[x], self.server["none"])
                        if r is not None and n is not None) for x in (name, floor))
        ratios = []
        for _ in range(resamples):
            cycles = [rng.randrange(pairs) for _ in range(pairs)]
            ratios.append(self._added(name, self.server, cycles)
                          / max(self._added(floor, self.server, cycles), 1e-9))
        ratios.sort()
        return ratios[resamples // 20], ratios[resamples - 1 - resamples // 20]

    def added(self, name):
        """The route's added client wall time (ms): the median over cycles of
        its create's minus none's."""
        return self._added(name, self.client)

    def served(self, name):
        """The route's added API server time (ms), the same way."""
        return self._added(name, self.server)

    def own(self, call):
        """(runs a create, mean µs a run) of the series of `call`, a
        (histogram, label) pair naming the route's own webhook call or policy
        evaluation; (0, None) when it never ran."""
        histogram, label = call
        got = [v for series, v in self.rows.items()
               if series.startswith(histogram + "{") and label in series]
        runs = sum(r for r, _ in got)
        mean = sum(s for _, s in got) / runs * 1e6 if runs else None
        return runs / max(self.cycles, 1), mean

    def report(self, calls, out=print):
        """Prints the routes' figures; a line for each route over its goal,
        whose own call did not run at least once a create, or whose creates
        the audit log lacks. `calls` maps a route to its own call (see `own`)."""
        problems = []
        out(f"  admission cost: {self.cycles} cycles of one dry-run create a route, one at a "
            f"time, the routes in turn (load average {' -> '.join(self.load)})")
        out("    (median ms of the client's wall time and of the API server's own (its audit "
            "log); added: the route's minus none's in the same cycle, median over cycles; "
            f"its call: runs a create x mean of the API server's histogram of the route's "
            f"webhook call or policy evaluation; the injector's own: mean of its {REVIEW}, "
            "and its CPU time a review from /proc/PID/task/*/schedstat)")
        for r in ROUTES:
            client = statistics.median(self.client[r])
            server = statistics.median(t for t in self.server[r] if t is not None)
            line = f"    {r:18} client {client:5.2f}  server {server:5.2f}"
            if r != "none":
                line += f"  added {self.added(r):+.2f} (server {self.served(r):+.2f})"
            if r in calls:
                runs, mean = self.own(calls[r])
                line += f"; its call {runs:.2f} x {mean or 0:.0f} µs"
                if runs < 1:
                    problems.append(f"admission cost: {r}'s own call ({calls[r][1]}) ran "
                                    f"{runs:.2f} times a create, not at least once")
            if self.reviews.get(r):
                count, seconds, cpu = self.reviews[r]
                line += (f", the injector's own {seconds / max(count, 1) * 1e6:.0f} µs "
                         f"({cpu / max(count, 1) * 1e6:.0f} µs on a CPU)")
            out(line)
        if self.unmatched:
            problems.append(f"admission cost: {self.unmatched} creates not in the API server's "
                            f"audit log {self.audit_log}")
        for r, floor in FLOOR.items():
            ratio = self.served(r) / max(self.served(floor), 1e-9)
            low, high = self.spread(r, floor)
            client = self.added(r) / max(self.added(floor), 1e-9)
            # Missed only when even the low end of this run's own scatter is
            # over the goal: a run that lands near the goal by chance passes,
            # a route that adds more than the goal fails every time.
            verdict = ("met" if high <= GOAL else "NOT met" if low > GOAL
                       else "met, within this run's scatter of it")
            out(f"    {r} adds {ratio:.2f}x what {floor} adds to the API server's time "
                f"({low:.2f}-{high:.2f}x over resampled cycles; goal <= {GOAL}x: {verdict}; "
                f"by the client's wall time {client:.2f}x)")
            if low > GOAL:
                problems.append(f"admission cost: {r} adds {ratio:.2f}x {floor}'s to the API "
                                f"server's time ({low:.2f}-{high:.2f}x), goal {GOAL}x")
        self.where(ROUTES, calls, out)
        return problems

    def where(self, names, calls, out=print):
        """The API server's histograms over the run: each route's own call,
        then what all routes share (admission steps and plugins: runs a create
        of any route, mean)."""
        out("  where it goes (the API server's histograms: runs a create x mean µs a run):")
        for r in names:
            if r in calls:
                runs, mean = self.own(calls[r])
                out(f"    {r:22} its own call ({calls[r][0]}): {runs:5.2f} x {mean or 0:8.1f}")
        out(f"    every route together ({len(self.names)} creates a cycle):")
        creates = self.cycles * len(self.names)
        owned = list(calls.values())
        for series in sorted(self.rows):
            if any(series.startswith(h + "{") and label in series for h, label in owned):
                continue
            runs, seconds = self.rows[series]
            out(f"      {series:96} {runs / creates:5.2f} x {seconds / runs * 1e6:8.1f}")


def _load():
    return Path("/proc/loadavg").read_text().split()[0]


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


def renamed_policy(objects, name):
    """The MutatingAdmissionPolicy of `objects` and its bindings under another
    name (so that it can stand beside the printed one), as they are."""
    out = []
    for obj in copy.deepcopy(objects):
        if obj["kind"] == "MutatingAdmissionPolicy":
            obj["metadata"]["name"] = name
            out.append(obj)
        elif obj["kind"] == "MutatingAdmissionPolicyBinding":
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
