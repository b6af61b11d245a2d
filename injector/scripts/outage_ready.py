#!/usr/bin/env python3
"""Checks that a deployment manifest of the injector is ready to fail closed
(SPEC §10): every webhook has failurePolicy Fail, and the Deployment keeps a
replica answering through a node drain, a rollout and one lost node: at least
two replicas, a required spread over hostnames, a rollout that never takes one
away first, and a PodDisruptionBudget that keeps one.

Usage: outage_ready.py MANIFEST.yaml (exit 1 with one line per problem)
"""

import sys

import yaml


def problems(docs):
    """Each way the manifest falls short, as a line."""
    found = []
    hooks = [w for d in docs if d["kind"] == "MutatingWebhookConfiguration" for w in d["webhooks"]]
    if not hooks:
        found.append("no MutatingWebhookConfiguration")
    found += [f"{w['name']}: failurePolicy {w.get('failurePolicy')}, not Fail"
              for w in hooks if w.get("failurePolicy") != "Fail"]
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    if len(deployments) != 1:
        return found + [f"{len(deployments)} Deployments, expected one"]
    spec = deployments[0]["spec"]
    labels = spec["selector"]["matchLabels"]
    if spec.get("replicas", 1) < 2:
        found.append(f"replicas {spec.get('replicas', 1)}: fewer than two")
    rolling = spec.get("strategy", {}).get("rollingUpdate", {})
    if rolling.get("maxUnavailable") != 0:
        found.append("a rollout may take a replica away before its successor is ready")
    spread = [c for c in spec["template"]["spec"].get("topologySpreadConstraints", [])
              if c["topologyKey"] == "kubernetes.io/hostname"
              and c["whenUnsatisfiable"] == "DoNotSchedule"
              and c.get("maxSkew") == 1
              and c["labelSelector"].get("matchLabels") == labels]
    if not spread:
        found.append("no required spread (DoNotSchedule, maxSkew 1) over kubernetes.io/hostname")
    budgets = [d for d in docs if d["kind"] == "PodDisruptionBudget"
               and d["spec"]["selector"].get("matchLabels") == labels
               and d["spec"].get("minAvailable", 0) >= 1]
    if not budgets:
        found.append("no PodDisruptionBudget keeping one replica of the Deployment")
    return found


def main():
    docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
    found = problems(docs)
    for line in found:
        print(f"{sys.argv[1]}: {line}", file=sys.stderr)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
