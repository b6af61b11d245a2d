"""Validates cert-manager resources strictly against a JSON schema of our own.

  cert_manager.py [--group GROUP] SCHEMA FILE...

kubernetes-validate has no schema for custom resources and passes them with a
warning, so every document of FILE... whose apiVersion is cert-manager.io/*
(or GROUP/*) is checked against SCHEMA (deploy/cert-manager.schema.json,
written from cert-manager's API reference; deploy/monitoring.schema.json, from
Prometheus Operator's, with --group monitoring.coreos.com), and a kind of that
group the schema does not describe is an error. Exits 1 with each failure on
stderr.
"""

import json
import sys

import jsonschema
import yaml


def main(argv):
    """Checks every cert-manager document; returns the exit code."""
    group = "cert-manager.io"
    if argv[:1] == ["--group"] and len(argv) > 1:
        group, argv = argv[1], argv[2:]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 64
    with open(argv[0], encoding="utf-8") as f:
        schema = json.load(f)
    failures, checked = [], 0
    for path in argv[1:]:
        with open(path, encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for doc in docs:
            if not str(doc.get("apiVersion", "")).startswith(f"{group}/"):
                continue
            checked += 1
            where = f"{path}: {doc.get('kind')} {doc.get('metadata', {}).get('name')}"
            if doc.get("kind") not in schema["$defs"]:
                failures.append(f"{where}: no schema for this kind (add it from {group}'s reference)")
                continue
            # The kind's own definition, so each error names its field.
            kind = {"$ref": f"#/$defs/{doc['kind']}", "$defs": schema["$defs"]}
            for e in jsonschema.Draft202012Validator(kind).iter_errors(doc):
                failures.append(f"{where}: {'/'.join(map(str, e.absolute_path))}: {e.message}")
    for failure in failures:
        print(f"{group}: FAILED: {failure}", file=sys.stderr)
    if not failures:
        print(f"{group}: {checked} resources valid")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
