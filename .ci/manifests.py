"""Checks for the Kubernetes examples and the README (run by .ci/manifests.sh).

  manifests.py extract DOC OUT_DIR
      Writes every ```yaml block of DOC (README.md, docs/**/*.md) to
      OUT_DIR/<DOC's path>-L<line>.yaml, so yamllint and kubernetes-validate
      report the document and line, and prints their paths. A block that is not
      a Kubernetes kind (an Argo Workflow, a .gitlab-ci.yml) says so, and why, on
      the line before its fence: `<!-- not a Kubernetes kind: Argo Workflow -->`.
      It goes under OUT_DIR/not-kubernetes/, where yamllint and the tandem check
      still read it and kubernetes-validate does not. A marker without a reason,
      with no yaml block after it, or on a kind Kubernetes' schemas know is an
      error (exit 1).
  manifests.py check TANDEM README FILE...
      Every tandem option and tandem/scuttle/envoy-preflight variable named in
      FILE... (manifests, and Markdown documents: a FILE ending in .md is read
      like README) and in README (code blocks, the configuration table and the
      "tandem" column of the migration tables, rows that say "planned" left
      out; a document's title or section names the table's kind, and finding
      no table of either kind is a failure) must be one the binary names in its
      --help, and every value they give must be accepted: the binary is run with
      them and --no-wait --wait-only, which checks the whole configuration (exit 64
      on a bad value) and contacts nothing.

Needs PyYAML and kubernetes-validate (`make lint-tools` installs both).
"""

import json
import os
import re
import shlex
import subprocess
import sys

import yaml
from kubernetes_validate import utils as kubernetes_schemas

# Variable names tandem or the tools it replaces read. A container variable of
# this shape must be one tandem accepts; other variables belong to the app.
FAMILY = re.compile(
    r"^(TANDEM_|ENVOY_|ISTIO_|GENERIC_|SCUTTLE_|START_WITHOUT_|QUIT_"
    r"|NEVER_KILL_|ALWAYS_KILL_|LINKERD_AWAIT|LINKERD_DISABLED|WAIT_)"
)
VAR = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# Modes choose what tandem does, not how: the check replaces them with its own.
MODES = {"--wait-only", "--quit-only", "--install-to", "--help", "--version"}
CODE_SPAN = re.compile(r"`([^`]+)`")
# The line before a yaml block that kubernetes-validate must not read, with why.
NOT_KUBERNETES = re.compile(r"^<!--\s*not a Kubernetes kind:(.*?)-->\s*$")
# A shell line in a YAML string (a CI script, `sh -c`) that runs tandem.
TANDEM_LINE = re.compile(r"^\s*(?:\S*/)?tandem(?:\s|$)")


class Binary:
    """What the tandem binary says it accepts, and a way to try a configuration."""

    def __init__(self, path):
        self.path = path
        self.help = subprocess.run(
            [path, "--help"], capture_output=True, text=True, check=True
        ).stdout
        self.options = set(OPTION.findall(self.help))
        # "--admin URL", "--mesh NAME[,NAME]": an upper-case word after an
        # option is its value.
        self.takes_value = set(
            re.findall(r"(--[a-z][a-z0-9-]*)[ =][A-Z][A-Z\[\],]*\b", self.help)
        )
        self.variables = set(VAR.findall(self.help))
        if not self.options or not self.variables:
            raise SystemExit(f"manifests: {path} --help names no options or variables")

    def try_config(self, args, env):
        """Runs tandem with ARGS and ENV in a mode that only validates; returns
        None when accepted, else the reason."""
        full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        full_env.update(env)
        proc = subprocess.run(
            [self.path, *args, "--no-wait", "--wait-only"],
            env=full_env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if proc.returncode != 0:
            return f"exit {proc.returncode}: {proc.stderr.strip()}"
        return None


class Report:
    """Collects failures so one run shows all of them."""

    def __init__(self):
        self.failures = []
        self.checked = 0
        # Rows of the configuration and migration tables read, by kind: a table
        # that moved out of the documents given is a failure, not a skipped check.
        self.table_rows = {"configuration": 0, "migration": 0}

    def fail(self, where, message):
        """Records one failure at WHERE (a file, line or container)."""
        self.failures.append(f"{where}: {message}")


def parse_tandem_args(binary, argv, where, report):
    """Splits tandem's own arguments (argv without the program) from COMMAND;
    returns the options to try, modes left out. Reports unknown options."""
    tried = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--" or not token.startswith("-") or token == "-":
            break
        name, eq, _ = token.partition("=")
        if name not in binary.options:
            report.fail(where, f"tandem option {name} is not in `tandem --help`")
            return None
        takes = name in binary.takes_value and not eq
        group = argv[i : i + 2] if takes else [token]
        if name not in MODES:
            tried.extend(group)
        i += len(group)
    return tried


def check_invocation(binary, argv, env, where, report):
    """One tandem invocation: its options, its variables, then a real try."""
    args = parse_tandem_args(binary, argv, where, report) if argv is not None else []
    if args is None:
        return
    ok = True
    for name in env:
        if FAMILY.match(name) and name not in binary.variables:
            report.fail(where, f"variable {name} is not in `tandem --help`")
            ok = False
    if ok:
        report.checked += 1
        reason = binary.try_config(args, env)
        if reason:
            setting = " ".join([f"{k}={v}" for k, v in env.items() if FAMILY.match(k)] + args)
            report.fail(where, f"tandem refused `{setting}`: {reason}")


def is_tandem(word):
    """Whether WORD runs tandem (`/tandem`, `/opt/tandem/tandem`, `tandem`)."""
    return os.path.basename(word) == "tandem"


def containers(node):
    """Every container of every Pod template in a parsed manifest, and those of
    custom resources that embed Kubernetes containers: an Argo template's
    `container` and `sidecars`, a Tekton Task's `steps` and `sidecars`."""
    if isinstance(node, dict):
        if isinstance(node.get("container"), dict):
            yield node["container"]
        for key in ("containers", "initContainers", "sidecars", "steps"):
            if isinstance(node.get(key), list):
                yield from (c for c in node[key] if isinstance(c, dict) and "image" in c)
        for value in node.values():
            yield from containers(value)
    elif isinstance(node, list):
        for value in node:
            yield from containers(value)


def check_manifest(binary, path, report):
    """Every document of one YAML file: a name kubectl accepts, and each container
    that runs tandem (or sets its variables) checked against the binary."""
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for doc in docs:
        for n, line in enumerate(shell_lines(doc)):
            check_shell_line(binary, line, f"{path}: script line {n + 1}", report)
        # A Kubernetes object needs a name; Helm values or a CI job have no kind.
        if isinstance(doc, dict) and "kind" in doc:
            meta = doc.get("metadata") or {}
            if not meta.get("name") and not meta.get("generateName"):
                report.fail(path, f"{doc.get('kind')} has no metadata.name (kubectl apply rejects it)")
        for c in containers(doc):
            where = f"{path}: container {c.get('name')}"
            argv = list(c.get("command") or []) + list(c.get("args") or [])
            env = {}
            for e in c.get("env") or []:
                if "value" in e:
                    env[e["name"]] = str(e["value"])
            runs_tandem = bool(argv) and is_tandem(argv[0])
            if runs_tandem:
                check_invocation(binary, argv[1:], env, where, report)
            elif any(FAMILY.match(n) for n in env):
                # tandem from the image's ENTRYPOINT: the variables still count.
                check_invocation(binary, None, env, where, report)


def shell_lines(node):
    """Every line of every string in a parsed document that runs tandem: a CI
    job's script, a step's `sh -c` (the containers' argv lists are read apart)."""
    if isinstance(node, dict):
        for value in node.values():
            yield from shell_lines(value)
    elif isinstance(node, list):
        for value in node:
            yield from shell_lines(value)
    elif isinstance(node, str):
        yield from (line for line in node.splitlines() if TANDEM_LINE.match(line))


def readme_blocks(lines):
    """(language, first line number, lines) of every fenced block."""
    block = None
    for number, line in enumerate(lines, 1):
        fence = re.match(r"^```(\w*)\s*$", line)
        if fence and block is None:
            block = (fence.group(1), number + 1, [])
        elif line.startswith("```") and block is not None:
            yield block
            block = None
        elif block is not None:
            block[2].append(line)


def known_kind(doc):
    """The `apiVersion kind` of DOC if some Kubernetes version's schema in
    kubernetes-validate has it, else None."""
    if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
        return None
    for version in kubernetes_schemas.all_versions():
        try:
            kubernetes_schemas.validate(doc, version, strict=True)
        except kubernetes_schemas.SchemaNotFoundError:
            continue
        except Exception:  # invalid, but its schema exists
            pass
        return f"{doc['apiVersion']} {doc['kind']}"
    return None


def extract(doc, out_dir):
    """Writes DOC's yaml blocks to OUT_DIR (the marked ones to OUT_DIR/not-kubernetes)
    and prints their paths; returns the number of misused markers."""
    with open(doc, encoding="utf-8") as f:
        lines = f.read().splitlines()
    errors = 0
    marked = {}
    for number, line in enumerate(lines, 1):
        m = NOT_KUBERNETES.match(line)
        if m:
            marked[number + 1] = m.group(1).strip()
            if not marked[number + 1]:
                print(f"manifests: FAILED: {doc}:{number}: say why the block is not a "
                      "Kubernetes kind: <!-- not a Kubernetes kind: Argo Workflow -->",
                      file=sys.stderr)
                errors += 1
    stem = doc.replace(os.sep, "_")
    for lang, start, body in readme_blocks(lines):
        reason = marked.pop(start - 1, None)
        if lang != "yaml":
            if reason is not None:
                marked[start - 1] = reason
            continue
        folder = out_dir if reason is None else os.path.join(out_dir, "not-kubernetes")
        os.makedirs(folder, exist_ok=True)
        name = os.path.join(folder, f"{stem}-L{start}.yaml")
        text = "\n".join(body) + "\n"
        with open(name, "w", encoding="utf-8") as f:
            f.write(text)
        if reason is not None:
            try:
                kinds = [known_kind(d) for d in yaml.safe_load_all(text)]
            except yaml.YAMLError:
                kinds = []  # yamllint reports it
            for kind in filter(None, kinds):
                print(f"manifests: FAILED: {doc}:{start - 2}: marked not a Kubernetes kind "
                      f"({reason}), but {kind} is one: remove the marker", file=sys.stderr)
                errors += 1
        print(name)
    for line in marked:
        print(f"manifests: FAILED: {doc}:{line - 1}: a not-a-Kubernetes-kind marker with "
              "no ```yaml block on the next line", file=sys.stderr)
        errors += 1
    return errors


def check_shell_line(binary, line, where, report):
    """`VAR=value tandem [OPTIONS] COMMAND` in a sh block."""
    line = re.sub(r"^\s*\$\s+", "", line.split(" #")[0])
    try:
        words = shlex.split(line)
    except ValueError:
        return
    env = {}
    while words and re.match(r"^[A-Z][A-Z0-9_]*=", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if words and is_tandem(words[0]):
        check_invocation(binary, words[1:], env, where, report)


def check_span(binary, span, where, report):
    """A code span in a table: option and variable names, and, when the span is
    a complete setting (`--mesh linkerd`, `QUIT_REQUEST_TIMEOUT=0`), its value."""
    for name in OPTION.findall(span):
        if name not in binary.options:
            report.fail(where, f"tandem option {name} is not in `tandem --help`")
            return
    for name in VAR.findall(span):
        if name not in binary.variables:
            report.fail(where, f"variable {name} is not in `tandem --help`")
            return
    placeholder = re.search(r"\b(URL|DUR|NAME|LEVEL|PATH|DIR|WHOM|FORMAT|PORT|CODES)\b|[|\[…]", span)
    if placeholder:
        return
    if span.startswith("--"):
        check_invocation(binary, shlex.split(span), {}, where, report)
    elif span.startswith("tandem "):
        check_shell_line(binary, span, where, report)
    else:
        setting = re.match(r"^([A-Z][A-Z0-9_]*)=(\S+)$", span)
        if setting:
            check_invocation(binary, None, {setting.group(1): setting.group(2)}, where, report)


TABLES = {
    "configuration": "a table whose first column is `Environment variable`, under a "
                     "heading starting `Configuration` (docs/configuration.md)",
    "migration": "a table with a `tandem` column, under a heading starting `Migrat` "
                 "(docs/migrating.md)",
}


def table_rows(lines, start):
    """Cells of the Markdown table starting at index START, header included."""
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def check_readme(binary, readme, report):
    """The README's code blocks (sh, console, dockerfile) and the tandem columns of
    its configuration and migration tables."""
    with open(readme, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for lang, start, body in readme_blocks(lines):
        for offset, line in enumerate(body):
            where = f"{readme}:{start + offset}"
            if lang in ("sh", "console", "bash"):
                check_shell_line(binary, line, where, report)
            elif lang == "dockerfile":
                m = re.match(r"^\s*(ENTRYPOINT|CMD)\s+(\[.*\])\s*$", line)
                if m:
                    argv = json.loads(m.group(2))
                    if argv and is_tandem(argv[0]):
                        check_invocation(binary, argv[1:], {}, where, report)
    # A table is known by the document's title (`# `) or its section (`## `):
    # the README's `## Configuration`, docs/configuration.md, docs/migrating.md.
    title = section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("# "):
            title, section = line[2:].strip(), ""
        elif line.startswith("## "):
            section = line[3:].strip()
        headings = (title, section)
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            rows = table_rows(lines, i)
            header = [c.lower() for c in rows[0]]
            body = rows[2:]
            kind = None
            if any(h.startswith("Configuration") for h in headings) \
                    and header[0].startswith("environment"):
                kind, columns = "configuration", (0, 1)
            elif any(h.startswith("Migrat") for h in headings) and "tandem" in header:
                kind, columns = "migration", (header.index("tandem"),)
            else:
                columns = ()
            if kind:
                report.table_rows[kind] += len(rows) - 2
            for n, row in enumerate(body):
                where = f"{readme}:{i + 3 + n}"
                for col in columns:
                    cell = row[col] if col < len(row) else ""
                    if "planned" in cell.lower():
                        continue
                    for span in CODE_SPAN.findall(cell):
                        check_span(binary, span, where, report)
            i += len(rows)
            continue
        i += 1


def main(argv):
    """Runs `extract` or `check` (see the module's docstring); returns the exit code."""
    if len(argv) == 3 and argv[0] == "extract":
        return 1 if extract(argv[1], argv[2]) else 0
    if len(argv) >= 3 and argv[0] == "check":
        binary = Binary(argv[1])
        report = Report()
        check_readme(binary, argv[2], report)
        for path in argv[3:]:
            if path.endswith(".md"):
                check_readme(binary, path, report)
            else:
                check_manifest(binary, path, report)
        for kind, rows in report.table_rows.items():
            if rows == 0:
                report.fail("the documents", f"no {kind} table found: {TABLES[kind]}")
        for failure in report.failures:
            print(f"manifests: FAILED: {failure}", file=sys.stderr)
        if report.failures:
            return 1
        if report.checked == 0:
            print("manifests: FAILED: no tandem invocation found to check", file=sys.stderr)
            return 1
        print(f"manifests: {report.checked} tandem configurations accepted by {argv[1]}")
        return 0
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
