#!/usr/bin/env bash
# Checks that the Kubernetes manifests a user copies are right: every file in
# examples/k8s/ and every ```yaml block of README.md and docs/**/*.md
#   - passes yamllint (.yamllint),
#   - validates strictly (unknown fields are errors) against the Kubernetes 1.29,
#     1.33 and 1.36 schemas with kubernetes-validate, offline (the schemas ship in
#     it); a kind it has no schema for is an error, unless the block is marked
#     `<!-- not a Kubernetes kind: WHY -->` (an Argo Workflow, a .gitlab-ci.yml):
#     such a block is only linted and tandem-checked,
#   - uses only tandem options and variables, with values, that the binary accepts
#     (.ci/manifests.py, which also checks the documents' other code blocks and tables).
# yamllint and kubernetes-validate come from the linters' venv, which `make
# lint-tools` installs from the hash-locked .ci/lint/requirements.txt.
#
# Usage: manifests.sh TANDEM LINT_BIN
set -euo pipefail
cd "$(dirname "$0")/.."

tandem=${1:?usage: manifests.sh TANDEM LINT_BIN}
bin=${2:?usage: manifests.sh TANDEM LINT_BIN}
versions=(1.29 1.33 1.36)

fail() {
  echo "manifests: FAILED: $*" >&2
  exit 1
}

[ -x "$bin/kubernetes-validate" ] && [ -x "$bin/yamllint" ] \
  || fail "no kubernetes-validate or yamllint in $bin (make lint-tools installs them)"

out=target/manifests
rm -rf "$out"
mkdir -p "$out/selftest"

# First, the checks must catch what they are for: a Job without metadata.name, an
# unknown field, an unknown tandem option, a variable tandem does not read, a bad
# value. (kubernetes-validate --quiet, for one, passes a document without metadata.)
cat >"$out/selftest/bad.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: job
          image: example/job
          comand: ["/tandem", "--mesh", "istio", "--", "/job"]
YAML
cat >"$out/selftest/bad-tandem.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: bad
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: option
          image: example/job
          command: ["/tandem", "--mesh-typo", "istio", "--", "/job"]
        - name: variable
          image: example/job
          command: ["/tandem", "/job"]
          env:
            - name: TANDEM_MESHH
              value: istio
        - name: value
          image: example/job
          command: ["/tandem", "--fail-timeout", "30", "/job"]
YAML
for version in "${versions[@]}"; do
  if "$bin/kubernetes-validate" --strict -k "$version" "$out/selftest/bad.yaml" >/dev/null 2>&1; then
    fail "self-test: kubernetes-validate $version passed a Job with no metadata and an unknown field"
  fi
done
if "$bin/yamllint" --strict --config-file .yamllint - <<<"a:  [1,2]" >/dev/null 2>&1; then
  fail "self-test: yamllint passed badly spaced YAML"
fi
found=$("$bin/python" .ci/manifests.py check "$tandem" /dev/null "$out/selftest/bad-tandem.yaml" 2>&1 || true)
for expected in "option --mesh-typo" "variable TANDEM_MESHH" '--fail-timeout "30"'; do
  case $found in
    *"$expected"*) ;;
    *) fail "self-test: the tandem check missed $expected: $found" ;;
  esac
done
# The markers must be refused where they would hide a Kubernetes manifest, or say
# nothing.
cat >"$out/selftest/marked.md" <<'MD'
<!-- not a Kubernetes kind: looks like one -->
```yaml
apiVersion: batch/v1
kind: Job
```

<!-- not a Kubernetes kind: -->
```yaml
job: {}
```
MD
found=$("$bin/python" .ci/manifests.py extract "$out/selftest/marked.md" "$out/selftest" 2>&1 >/dev/null || true)
for expected in "batch/v1 Job is one" "say why"; do
  case $found in
    *"$expected"*) ;;
    *) fail "self-test: the marker check missed \"$expected\": $found" ;;
  esac
done
mapfile -t docs < <(printf '%s\n' README.md; find docs -name '*.md' 2>/dev/null | LC_ALL=C sort)
blocks=()
for doc in "${docs[@]}"; do
  "$bin/python" .ci/manifests.py extract "$doc" "$out" >"$out/extracted" \
    || fail "$doc: the not-a-Kubernetes-kind markers (above)"
  mapfile -t -O "${#blocks[@]}" blocks <"$out/extracted"
done
files=(examples/k8s/*.yaml)
others=()
for block in "${blocks[@]}"; do
  case $block in
    "$out/not-kubernetes/"*) others+=("$block") ;;
    *) files+=("$block") ;;
  esac
done
[ -e "${files[0]}" ] || fail "no manifests in examples/k8s/"

"$bin/yamllint" --strict --config-file .yamllint "${files[@]}" "${others[@]}" \
  || fail "yamllint (above)"
for version in "${versions[@]}"; do
  # Not --quiet: kubernetes-validate 1.37.0 then exits 0 on a document it "could
  # not validate" (one without metadata, say). Its success lines are dropped here.
  code=0
  "$bin/kubernetes-validate" --strict -k "$version" "${files[@]}" >"$out/validate.log" 2>&1 || code=$?
  grep -v '^INFO ' "$out/validate.log" >&2 || true
  [ "$code" -eq 0 ] || fail "not valid for Kubernetes $version (above)"
  # A kind without a schema is only a warning to kubernetes-validate (exit 0).
  if grep -q "Couldn't find schema" "$out/validate.log"; then
    fail "no Kubernetes $version schema for the kind (above): a custom resource's block" \
      "needs <!-- not a Kubernetes kind: WHY --> on the line before its fence"
  fi
done
echo "manifests: ${#files[@]} manifests (from examples/k8s/, README.md and docs/) pass" \
  "yamllint and validate strictly for Kubernetes ${versions[*]}; blocks marked not a" \
  "Kubernetes kind, linted only: ${#others[@]}"

"$bin/python" .ci/manifests.py check "$tandem" "${docs[@]}" "${files[@]}" "${others[@]}"
