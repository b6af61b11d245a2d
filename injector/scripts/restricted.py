"""Checks Pod specs against Pod Security "restricted" (and a read-only root).

  restricted.py [--container NAME] FILE...

Every Pod spec in FILE... (a Pod's, or a workload's template), YAML or JSON,
must meet the "restricted" profile of the Pod Security Standards for each of
its containers and init containers (or only the container NAME): not
privileged, no host namespaces or ports, allowPrivilegeEscalation false, all
capabilities dropped (NET_BIND_SERVICE alone may be added), runAsNonRoot and
a non-zero runAsUser where set, seccomp RuntimeDefault or Localhost, only the
volume types the profile allows; and readOnlyRootFilesystem true, which the
injector's own containers keep. With --container, the Pod-level rules are
skipped (the Pod is the user's). Exits 1 with each failure on stderr.
"""

import sys

import yaml

VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
           "persistentVolumeClaim", "projected", "secret"}


def pod_specs(doc):
    """The Pod specs in one document."""
    if doc.get("kind") == "Pod":
        yield doc["spec"]
    elif isinstance(doc.get("spec", {}).get("template"), dict):
        yield doc["spec"]["template"]["spec"]


def check(spec, only, where):
    """The failures of one Pod spec."""
    failures = []
    pod_sc = spec.get("securityContext") or {}
    if only is None:
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            if spec.get(key):
                failures.append(f"{where}: {key} is set")
        for v in spec.get("volumes") or []:
            kinds = set(v) - {"name"}
            if not kinds <= VOLUMES:
                failures.append(f"{where}: volume {v['name']} is {', '.join(kinds)}")
    containers = (spec.get("initContainers") or []) + spec["containers"]
    matched = [c for c in containers if only is None or c["name"] == only]
    if not matched:
        failures.append(f"{where}: no container {only}")
    for c in matched:
        at = f"{where}: container {c['name']}"
        sc = c.get("securityContext") or {}
        def setting(key):
            return sc.get(key, pod_sc.get(key))
        if sc.get("privileged"):
            failures.append(f"{at}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            failures.append(f"{at}: allowPrivilegeEscalation is not false")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            failures.append(f"{at}: capabilities.drop lacks ALL")
        if set(caps.get("add") or []) - {"NET_BIND_SERVICE"}:
            failures.append(f"{at}: capabilities.add {caps['add']}")
        if setting("runAsNonRoot") is not True:
            failures.append(f"{at}: runAsNonRoot is not true")
        if setting("runAsUser") == 0:
            failures.append(f"{at}: runAsUser is 0")
        seccomp = (setting("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            failures.append(f"{at}: seccompProfile is {seccomp}")
        if sc.get("readOnlyRootFilesystem") is not True:
            failures.append(f"{at}: readOnlyRootFilesystem is not true")
        if any(p.get("hostPort") for p in c.get("ports") or []):
            failures.append(f"{at}: a hostPort")
    return failures


def main(argv):
    """Checks every Pod spec of the files; returns the exit code."""
    only = None
    if argv[:1] == ["--container"]:
        only, argv = argv[1], argv[2:]
    failures, checked = [], 0
    for path in argv:
        with open(path, encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for doc in docs:
            for spec in pod_specs(doc):
                checked += 1
                failures += check(spec, only, f"{path}: {doc['kind']}")
    for failure in failures:
        print(f"restricted: FAILED: {failure}", file=sys.stderr)
    if checked == 0:
        print("restricted: FAILED: no Pod spec found", file=sys.stderr)
        return 1
    if not failures:
        what = f"container {only}" if only else "Pod specs"
        print(f"restricted: {checked} Pod specs ({what}) meet Pod Security \"restricted\"")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
