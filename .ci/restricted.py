"""Checks that every Job and CronJob in examples/k8s/ (and in the documents' yaml
blocks `make restricted` passes), and every Deployment of the manifests given
(the Helm chart's, as `make chart` renders it), meets the "restricted" Pod
Security Standard, with checkov (run by `make restricted`).

  restricted.py CHECKOV [MANIFEST...]
      MANIFEST... defaults to examples/k8s/*.yaml. First a self-test: a Job, a
      CronJob and a Job with a bad init container, each breaking every rule,
      must fail every check that applies to it, so a check that silently stops
      applying (a renamed id, a kind checkov no longer reads) fails the run.
      Then every Job and CronJob of the manifests must pass every check, with no
      file left unparsed (other kinds are left alone).

checkov runs offline: --skip-download (no guidelines or policies from Prisma
Cloud) and CKV_SKIP_PACKAGE_UPDATE_CHECK (no version check against PyPI).
"""

import glob
import json
import os
import subprocess
import sys
import tempfile

import yaml

# The checks, by checkov id. An explicit --check list, not every check with a skip
# list: checkov's other Kubernetes checks (resource limits, probes, image digests,
# the default namespace, pull policy) are not the profile, and a new release that
# adds checks would fail the build for reasons that are not the profile either.
# The Pod Security Standards name each control; checkov's ids for them:
CHECKS = {
    # baseline
    "CKV_K8S_16": "privileged containers",
    "CKV_K8S_17": "hostPID",
    "CKV_K8S_18": "hostIPC",
    "CKV_K8S_19": "hostNetwork",
    "CKV_K8S_25": "capabilities added (restricted allows only NET_BIND_SERVICE; none here)",
    "CKV_K8S_39": "CAP_SYS_ADMIN",
    "CKV_K8S_26": "hostPort",
    # restricted
    "CKV_K8S_20": "allowPrivilegeEscalation: false",
    "CKV_K8S_23": "runAsNonRoot, or a runAsUser other than 0",
    "CKV_K8S_31": "seccompProfile RuntimeDefault",
    "CKV_K8S_37": "capabilities drop ALL",
    "CKV_K8S_28": "NET_RAW dropped (ALL includes it)",
    # not in the standard; the examples hold themselves to it
    "CKV_K8S_22": "readOnlyRootFilesystem",
}
# What checkov does not check, so these do not either: hostPath volumes (only the
# Docker socket, CKV_K8S_27) and the other volume types restricted forbids,
# AppArmor, SELinux, /proc mount, sysctls. CKV_K8S_23 and CKV_K8S_31 read the
# Pod's securityContext and its `containers`, not its init containers: the
# examples set both at Pod level, where they cover every container.
POD_LEVEL_ONLY = {"CKV_K8S_17", "CKV_K8S_18", "CKV_K8S_19", "CKV_K8S_23", "CKV_K8S_31"}

BAD_CONTAINER = """\
          image: example/job:1
          ports:
            - containerPort: 80
              hostPort: 80
          securityContext:
            runAsUser: 0
            privileged: true
            allowPrivilegeEscalation: true
            readOnlyRootFilesystem: false
            capabilities:
              add: ["SYS_ADMIN", "NET_RAW"]
"""
BAD_POD = """\
      restartPolicy: Never
      hostPID: true
      hostIPC: true
      hostNetwork: true
      securityContext:
        runAsUser: 0
        seccompProfile:
          type: Unconfined
      containers:
        - name: job
""" + BAD_CONTAINER
GOOD_CONTAINER = """\
          image: example/job:1
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: ["ALL"]
"""


def indent(text, spaces):
    """TEXT with SPACES more blanks before each line."""
    return "".join(" " * spaces + line for line in text.splitlines(keepends=True))


SELFTEST = {
    "bad-job.yaml": (
        "Job.default.bad-job",
        set(CHECKS),
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: bad-job\nspec:\n"
        "  template:\n    spec:\n" + BAD_POD,
    ),
    "bad-cronjob.yaml": (
        "CronJob.default.bad-cronjob",
        set(CHECKS),
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: bad-cronjob\nspec:\n"
        '  schedule: "0 * * * *"\n  jobTemplate:\n    spec:\n      template:\n'
        "        spec:\n" + indent(BAD_POD, 4),
    ),
    # A restricted Pod whose init container breaks every container rule.
    "bad-init.yaml": (
        "Job.default.bad-init",
        set(CHECKS) - POD_LEVEL_ONLY,
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: bad-init\nspec:\n"
        "  template:\n    spec:\n      restartPolicy: Never\n      securityContext:\n"
        "        runAsNonRoot: true\n        runAsUser: 65532\n        seccompProfile:\n"
        "          type: RuntimeDefault\n      initContainers:\n        - name: init\n"
        + BAD_CONTAINER
        + "      containers:\n        - name: job\n"
        + GOOD_CONTAINER,
    ),
}


def checkov(binary, files):
    """Runs the checks on FILES; returns checkov's JSON report."""
    env = dict(os.environ, CKV_SKIP_PACKAGE_UPDATE_CHECK="true")
    proc = subprocess.run(
        [binary, "--skip-download", "--framework", "kubernetes", "--output", "json",
         "--check", ",".join(sorted(CHECKS)), *[a for f in files for a in ("--file", f)]],
        capture_output=True, text=True, env=env,
    )
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"restricted: FAILED: checkov gave no report (exit {proc.returncode}): "
                         f"{proc.stderr.strip() or proc.stdout.strip()}")
    # No resource at all gives the empty summary, not a report per framework.
    return report if isinstance(report, dict) and "results" in report else {
        "results": {"passed_checks": [], "failed_checks": [], "parsing_errors": []}}


def by_resource(results, kind):
    """{(file name, resource): {check ids}} of the results of KIND."""
    found = {}
    for result in results.get(kind, []):
        key = (os.path.basename(result["file_path"]), result["resource"])
        found.setdefault(key, set()).add(result["check_id"])
    return found


def selftest(binary):
    """Every check must fail where its rule is broken. Returns the failures."""
    failures = []
    with tempfile.TemporaryDirectory(prefix="restricted-") as tmp:
        for name, (_, _, text) in SELFTEST.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(text)
        report = checkov(binary, [os.path.join(tmp, n) for n in SELFTEST])
    failed = by_resource(report["results"], "failed_checks")
    for name, (resource, expected, _) in SELFTEST.items():
        missed = expected - failed.get((name, resource), set())
        for check in sorted(missed):
            failures.append(f"self-test: {check} ({CHECKS[check]}) passed {resource}, "
                            "which breaks it")
    return failures


def jobs(path):
    """checkov's names (Kind.namespace.name) of the Jobs, CronJobs and Deployments in PATH."""
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]
    return [f"{d['kind']}.{d['metadata'].get('namespace', 'default')}.{d['metadata']['name']}"
            for d in docs if d.get("kind") in ("Job", "CronJob", "Deployment")]


def check_manifests(binary, files):
    """Every Job, CronJob and Deployment of FILES passes every check. Returns the failures."""
    results = checkov(binary, files)["results"]
    failures = [f"{e}: checkov could not parse it" for e in results.get("parsing_errors", [])]
    passed = by_resource(results, "passed_checks")
    failed = by_resource(results, "failed_checks")
    for path in files:
        name = os.path.basename(path)
        for resource in jobs(path):
            bad = failed.get((name, resource), set())
            unseen = set(CHECKS) - bad - passed.get((name, resource), set())
            for check in sorted(bad):
                failures.append(f"{name}: {resource}: {check} failed: {CHECKS[check]}")
            for check in sorted(unseen):
                failures.append(f"{name}: {resource}: {check} was not evaluated "
                                f"(checkov did not read it?): {CHECKS[check]}")
    return failures


def main(argv):
    """Runs the self-test, then the manifests; returns the exit code."""
    if not argv:
        print(__doc__, file=sys.stderr)
        return 64
    binary, files = argv[0], argv[1:] or sorted(glob.glob("examples/k8s/*.yaml"))
    if not files:
        print("restricted: FAILED: no manifests in examples/k8s/", file=sys.stderr)
        return 1
    failures = selftest(binary) + check_manifests(binary, files)
    for failure in failures:
        print(f"restricted: FAILED: {failure}", file=sys.stderr)
    if failures:
        return 1
    print(f"restricted: the Jobs, CronJobs and Deployments of {len(files)} manifests pass "
          f"checkov's {len(CHECKS)} restricted-profile checks ({', '.join(sorted(CHECKS))})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
