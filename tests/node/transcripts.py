#!/usr/bin/env python3
"""Puts the kubectl transcripts of a `make e2e-node` run into the README and
docs/e2e-node/: `make e2e-node E2E_TRANSCRIPTS=DIR` writes DIR/before.txt (the
Istio Job without tandem, stuck) and DIR/after.txt (the same Job with tandem),
then

    python3 tests/node/transcripts.py DIR

copies both to docs/e2e-node/ and replaces the README's "Before and after" blocks
(between the `<!-- e2e-node:NAME -->` and `<!-- /e2e-node -->` markers) with
their `kubectl get pod` and `kubectl logs` parts, under the line naming the run.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs" / "e2e-node"


def sections(text):
    """(header line, [(command, output)]) of a transcript file."""
    lines = text.splitlines()
    header = lines[0].lstrip("# ").strip()
    found, command, out = [], None, []
    for line in lines[1:]:
        if line.startswith("$ kubectl "):
            if command:
                found.append((command, out))
            command, out = line, []
        elif command is not None:
            out.append(line)
    if command:
        found.append((command, out))
    return header, found


def block(parts, wanted):
    """A console block of the parts whose command starts with one of WANTED,
    with `-n NAMESPACE` and the file's own options left out."""
    body = []
    for command, out in parts:
        verb = command.split()[2]
        if verb not in wanted:
            continue
        body.append(command)
        body += [line for line in out if line.strip()]
    return "```console\n" + "\n".join(body) + "\n```"


def replace(text, name, new):
    pattern = re.compile(rf"(<!-- e2e-node:{name} -->\n).*?(<!-- /e2e-node -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"README.md: no <!-- e2e-node:{name} --> ... <!-- /e2e-node --> markers")
    return pattern.sub(lambda m: m.group(1) + new + "\n" + m.group(2), text)


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 64
    source = Path(argv[0])
    DOCS.mkdir(parents=True, exist_ok=True)
    text = README.read_text()
    header = ""
    for name in ("before", "after"):
        path = source / f"{name}.txt"
        # kubectl pads some columns with spaces at the end of a line.
        stripped = "\n".join(line.rstrip() for line in path.read_text().splitlines())
        (DOCS / f"{name}.txt").write_text(stripped + "\n")
        header, parts = sections(path.read_text())
        wanted = ("get",) if name == "before" else ("get", "logs")
        text = replace(text, name, block(parts, wanted))
    text = replace(text, "run", f"<sub>{header} [docs/e2e-node/](docs/e2e-node/) holds "
                                "them whole, with `kubectl describe`.</sub>")
    README.write_text(text)
    print(f"README.md and {DOCS.relative_to(ROOT)}/ from {source}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
