"""What charts/tandem-injector holds that another home owns, made from that home
(`make chart-files`), and what `make chart` compares it with:

  files/webhook.yaml               `tandem-injector webhook`
  files/policy-MODE-ROUTE.yaml     `tandem-injector policy --image IMAGE --install MODE --route ROUTE`
  files/alert-rules.yaml           docs/injector.md's block of alert rules
  the values tables                values.schema.json's descriptions and values.yaml's
                                   defaults, between the chart-values markers of
                                   docs/injector.md and the chart's README.md

The chart's templates read the files and change only the namespace, the tandem
image, the failure policy, the caBundle and the labels (templates/_helpers.tpl).
"""

import json
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
CHART = ROOT / "charts" / "tandem-injector"
DOC = ROOT / "docs" / "injector.md"
MODES = ["emptydir", "image-volume"]
ROUTES = ["wrap", "native"]
# The namespace `tandem-injector webhook` and `policy` print (INJECTOR_NAMESPACE).
PRINTED_NAMESPACE = "tandem-system"
BEGIN = "<!-- chart-values: made by `make chart-files` from charts/tandem-injector/values.schema.json -->"
END = "<!-- /chart-values -->"


def version():
    """The workspace's release version (injector/Cargo.toml's)."""
    for line in (ROOT / "injector" / "Cargo.toml").read_text().splitlines():
        if line.startswith("version = "):
            return line.split('"')[1]
    raise SystemExit("chart: no version in injector/Cargo.toml")


def printed_image():
    """The tandem image the policy files are printed for (the chart's default)."""
    return f"ghcr.io/tandem-sidecar/tandem:{version()}"


def run(injector, *args):
    """What `tandem-injector ARGS` prints (it must exit 0)."""
    done = subprocess.run([str(injector), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"chart: tandem-injector {' '.join(args)}: exit {done.returncode}: "
                         f"{done.stderr.strip()}")
    return done.stdout


def policy_args(mode, route, image=None):
    return ["policy", "--image", image or printed_image(), "--install", mode, "--route", route]


def alert_rules(doc_text):
    """docs/injector.md's alert rules: the first ```yaml block after the line that
    starts "**Alert rules**" (doc_alerts.py reads the same)."""
    at = doc_text.index("\n**Alert rules**")
    fence = doc_text.index("```yaml\n", at)
    end = doc_text.index("\n```", fence + 8)
    return doc_text[fence + 8:end + 1]


def expected_files(injector):
    """{path under the chart: text} of every generated file."""
    files = {"files/webhook.yaml": run(injector, "webhook")}
    for mode in MODES:
        for route in ROUTES:
            files[f"files/policy-{mode}-{route}.yaml"] = run(injector, *policy_args(mode, route))
    files["files/alert-rules.yaml"] = (
        "# docs/injector.md's alert rules, copied by `make chart-files` (make chart fails\n"
        "# when they differ): change them there.\n" + alert_rules(DOC.read_text()))
    return files


def described(schema):
    """Whether any property below SCHEMA has a description."""
    return any("description" in c or described(c) for c in schema.get("properties", {}).values())


def leaves(schema, prefix=""):
    """(dotted key, schema) of every value the table lists: a property with a
    description and none below it (an object whose properties are described is
    listed by them)."""
    for key, sub in schema.get("properties", {}).items():
        name = f"{prefix}{key}"
        if described(sub):
            yield from leaves(sub, f"{name}.")
        elif "description" in sub:
            yield name, sub


def default(values, dotted):
    for part in dotted.split("."):
        values = values[part]
    return values


def table():
    """The Markdown table of values, from the schema and values.yaml."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    rows = ["| Value | Default | What it sets |", "|---|---|---|"]
    for name, sub in leaves(schema):
        value = default(values, name)
        shown = value if isinstance(value, str) and value else json.dumps(value, separators=(", ", ": "))
        what = sub["description"].replace("|", "\\|")
        rows.append(f"| `{name}` | `{shown}` | {what} |")
    return "\n".join(rows) + "\n"


def with_table(text, where):
    """TEXT with the table between its markers."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"chart: {where} has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table()}{END}{tail}"


def expected_tables():
    """{path: text} of the documents with their table as it should be."""
    return {path: with_table(path.read_text(), path.relative_to(ROOT))
            for path in (DOC, CHART / "README.md")}


def write(injector):
    """`make chart-files`: every generated file and table, written."""
    for name, text in expected_files(injector).items():
        path = CHART / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"chart-files: {path.relative_to(ROOT)}")
    for path, text in expected_tables().items():
        path.write_text(text)
        print(f"chart-files: {path.relative_to(ROOT)}: the table of values")


def stale(injector):
    """Each generated file or table that is not what it would be made now."""
    found = []
    for name, text in expected_files(injector).items():
        path = CHART / name
        if not path.exists() or path.read_text() != text:
            found.append(f"charts/tandem-injector/{name}")
    for path, text in expected_tables().items():
        if path.read_text() != text:
            found.append(f"{path.relative_to(ROOT)} (its table of values)")
    return found
