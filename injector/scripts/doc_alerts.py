#!/usr/bin/env python3
"""docs/injector.md's claims about the injector's metrics, against a running
injector (`make injector-manifests`): the alert rules (the first ```yaml block
after the line that starts "**Alert rules**") parse as a Prometheus rule file
(groups of rules, each with alert, expr, labels.severity and a summary); every
metric a rule reads is either one the injector's /metrics shows or one the
paragraph before the block names with its source; and every
`tandem_injector_…` name anywhere in the guide is one the injector shows.

Usage: doc_alerts.py DOC HOST:PORT CA_FILE SERVER_NAME (exit 1 with one line per problem)
"""

import re
import socket
import ssl
import sys

import yaml

# PromQL words that are not metrics.
PROMQL = {"min", "max", "sum", "avg", "count", "by", "without", "increase", "rate",
          "absent", "and", "or", "unless", "on", "ignoring", "group_left", "group_right",
          "bool", "offset", "humanizeDuration"}


def exported(address, ca, name):
    """The metric families GET /metrics shows, with a histogram's series names."""
    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context(cafile=ca)
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=name) as tls:
            tls.sendall(f"GET /metrics HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := tls.recv(65536):
                data += chunk
    names = set()
    for line in data.decode().split("\r\n\r\n", 1)[1].splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split()
            names.add(family)
            if kind == "histogram":
                names |= {family + s for s in ("_bucket", "_sum", "_count")}
    return names


def rules_block(doc):
    """The paragraph before the alert rules, and the rules' YAML."""
    at = doc.index("\n**Alert rules**")
    fence = doc.index("```yaml\n", at)
    end = doc.index("\n```", fence + 8)
    return doc[at:fence], doc[fence + 8:end]


def read_metrics(expr):
    """The metric names an expression reads (labels, ranges, strings and
    grouping labels removed)."""
    bare = re.sub(r'"[^"]*"|\{[^}]*\}|\[[^\]]*\]|\b(by|without|on|ignoring)\s*\([^)]*\)', " ", expr)
    words = re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", bare)
    return {w for w in words if w not in PROMQL}


def problems(doc, names):
    found = []
    prose, text = rules_block(doc)
    config = yaml.safe_load(text)
    rules = [r for g in config["groups"] for r in g["rules"]]
    if len(rules) < 4 or len({r["alert"] for r in rules}) != len(rules):
        found.append(f"{len(rules)} rules, or two with one name")
    for rule in rules:
        what = rule.get("alert", "a rule without alert")
        if not rule.get("expr") or "severity" not in rule.get("labels", {}) \
                or "summary" not in rule.get("annotations", {}):
            found.append(f"{what}: no expr, labels.severity or annotations.summary")
            continue
        for metric in read_metrics(rule["expr"]):
            if metric.startswith("tandem_injector_"):
                if metric not in names:
                    found.append(f"{what}: {metric} is not in the injector's /metrics")
            elif f"`{metric}`" not in prose:
                found.append(f"{what}: {metric} is neither the injector's nor named with its source")
    for metric in set(re.findall(r"tandem_injector_[a-z_]+", doc)) - names:
        found.append(f"the guide names {metric}, which the injector's /metrics does not show")
    return found


def main():
    doc = open(sys.argv[1]).read()
    found = problems(doc, exported(sys.argv[2], sys.argv[3], sys.argv[4]))
    for line in found:
        print(f"{sys.argv[1]}: {line}", file=sys.stderr)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
