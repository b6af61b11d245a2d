#!/usr/bin/env bash
# `make injector-manifests`: the injector's deployment manifests and the Pods it
# patches are right for Kubernetes 1.29, 1.33 and 1.36:
#   - injector/deploy/*.yaml pass yamllint (.yamllint);
#   - the Kubernetes resources validate strictly (unknown fields are errors) with
#     kubernetes-validate, offline;
#   - the cert-manager resources, which kubernetes-validate has no schema for (it
#     passes them with a warning), validate strictly against
#     deploy/cert-manager.schema.json (cert_manager.py);
#   - the Deployment meets Pod Security "restricted" with a read-only root, and so
#     does the init container the injector adds (restricted.py);
#   - every webhook sends only Pods that run to completion (matchConditions), and the
#     Deployment's grace period covers the drain and the requests in flight;
#   - every webhook fails closed, and the Deployment keeps two replicas on two
#     nodes (a required spread over hostnames) under a PodDisruptionBudget;
#   - deploy/self-signed.sh makes a certificate that the injector serves and that
#     verifies for the Service's name against the CA it puts in caBundle; that
#     injector's /metrics shows every metric docs/injector.md names, and its
#     alert rules parse (doc_alerts.py);
#   - every Pod the HTTPS tests patched (PATCHED, written by `make injector-test`)
#     validates strictly, and so does every Pod the unit tests patched through
#     the image-volume route (PATCHED-image-volume) for Kubernetes 1.35 and 1.36;
#   - what `tandem-injector policy` prints, for both routes, passes yamllint and
#     validates strictly for Kubernetes 1.36 and 1.37, and deploy/policy/ holds
#     what it prints for the published image;
#   - deploy/tandem-injector.yaml ends with what `tandem-injector webhook` prints.
# Each check first shows it can fail (self-tests).
#
# Usage: manifests.sh LINT_BIN INJECTOR PATCHED
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(realpath -m "${1:?usage: manifests.sh LINT_BIN INJECTOR PATCHED}")
injector=$(realpath "${2:?usage: manifests.sh LINT_BIN INJECTOR PATCHED}")
patched=$(realpath -m "${3:?usage: manifests.sh LINT_BIN INJECTOR PATCHED}")
cd "$root/injector"
versions=(1.29 1.33 1.36)
py="$bin/python"

fail() {
  echo "injector-manifests: FAILED: $*" >&2
  exit 1
}

[ -x "$bin/kubernetes-validate" ] && [ -x "$bin/yamllint" ] \
  || fail "no kubernetes-validate or yamllint in $bin (make lint-tools installs them)"
command -v openssl >/dev/null || fail "openssl is missing (Debian: openssl)"
out="$root/target/injector-manifests"
rm -rf "$out"
mkdir -p "$out/selftest"

# kubernetes-validate: an unknown field fails, and so does the validation of a
# kind it has no schema for (it only warns: this script treats that as failure).
validate() {
  local version=$1
  shift
  local log="$out/validate-$version.log" code=0
  "$bin/kubernetes-validate" --strict -k "$version" "$@" >"$log" 2>&1 || code=$?
  grep -v '^INFO ' "$log" >&2 || true
  [ "$code" -eq 0 ] && ! grep -q "Couldn't find schema" "$log"
}

# The API server generates a Pod's name from generateName after admission, before
# storing it; kubernetes-validate needs the name, so each copy gets one the same way.
name_pods() {
  "$py" - "$1" "$2" <<'PY'
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    pod = json.loads(path.read_text())
    meta = pod["metadata"]
    meta.setdefault("name", meta.get("generateName", "pod-") + "x7k2p")
    (pathlib.Path(sys.argv[2]) / path.name).write_text(json.dumps(pod, indent=2))
PY
}

# Self-tests: each check rejects what it is for.
sed 's/^  replicas: 2$/  replica: 2/' deploy/tandem-injector.yaml >"$out/selftest/unknown-field.yaml"
sed 's/^  renewBefore: /  renewBfore: /' deploy/cert-manager.yaml >"$out/selftest/cert-manager.yaml"
sed '/allowPrivilegeEscalation: false/d' deploy/tandem-injector.yaml >"$out/selftest/escalates.yaml"
cmp -s deploy/tandem-injector.yaml "$out/selftest/unknown-field.yaml" && fail "self-test: no replicas line to break"
for version in "${versions[@]}"; do
  if validate "$version" "$out/selftest/unknown-field.yaml" 2>/dev/null; then
    fail "self-test: kubernetes-validate $version passed a Deployment with an unknown field"
  fi
done
if "$py" scripts/cert_manager.py deploy/cert-manager.schema.json "$out/selftest/cert-manager.yaml" >/dev/null 2>&1; then
  fail "self-test: cert_manager.py passed a Certificate with an unknown field"
fi
if "$py" scripts/restricted.py "$out/selftest/escalates.yaml" >/dev/null 2>&1; then
  fail "self-test: restricted.py passed a container without allowPrivilegeEscalation: false"
fi

"$bin/yamllint" --strict --config-file "$root/.yamllint" deploy/*.yaml deploy/policy/*.yaml || fail "yamllint (above)"
for version in "${versions[@]}"; do
  validate "$version" deploy/tandem-injector.yaml || fail "deploy/tandem-injector.yaml: not valid for Kubernetes $version (above)"
done
"$py" scripts/cert_manager.py deploy/cert-manager.schema.json deploy/cert-manager.yaml
"$py" scripts/restricted.py deploy/tandem-injector.yaml
# Only Pods that run to completion are sent (every webhook has the restart
# policy condition), and a leaving
# replica has time to drain and finish its requests (each within 10 s).
"$py" - deploy/tandem-injector.yaml <<'PY' || fail "deploy/tandem-injector.yaml: matchConditions or drain (above)"
import re, sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
hooks = [w for d in docs if d["kind"] == "MutatingWebhookConfiguration" for w in d["webhooks"]]
bad = [w["name"] for w in hooks
       if not any("restartPolicy in ['Never', 'OnFailure']" in c["expression"]
                  for c in w.get("matchConditions", []))]
(deploy,) = [d for d in docs if d["kind"] == "Deployment"]
pod = deploy["spec"]["template"]["spec"]
env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
drain = int(re.fullmatch(r"(\d+)s", env["TANDEM_INJECTOR_DRAIN"]).group(1))
grace = pod.get("terminationGracePeriodSeconds", 30)
if bad or not hooks:
    sys.exit(f"webhooks without the runs-to-completion matchCondition: {bad or 'no webhooks'}")
if grace < drain + 10 + 5:
    sys.exit(f"terminationGracePeriodSeconds {grace} < drain {drain}s + 10 s in flight + 5 s")
PY
# Failing closed needs a replica to answer through a drain, a rollout and one
# lost node (SPEC §10).
"$py" scripts/outage_ready.py deploy/tandem-injector.yaml || fail "deploy/tandem-injector.yaml: failurePolicy, replicas, spread or PodDisruptionBudget (above)"
sed 's/^    failurePolicy: Fail$/    failurePolicy: Ignore/' deploy/tandem-injector.yaml >"$out/selftest/ignore.yaml"
sed 's/whenUnsatisfiable: DoNotSchedule/whenUnsatisfiable: ScheduleAnyway/' deploy/tandem-injector.yaml >"$out/selftest/anyway.yaml"
for broken in ignore anyway; do
  if "$py" scripts/outage_ready.py "$out/selftest/$broken.yaml" >/dev/null 2>&1; then
    fail "self-test: outage_ready.py passed $broken.yaml"
  fi
done
echo "injector-manifests: deploy/ passes yamllint and validates strictly for Kubernetes ${versions[*]}"

# self-signed.sh's certificate, served by the injector, verified as the API
# server does: against the CA, for the Service's DNS name.
deploy/self-signed.sh --out "$out/self-signed"
openssl verify -CAfile "$out/self-signed/ca.crt" "$out/self-signed/tls.crt" >/dev/null \
  || fail "self-signed.sh: tls.crt does not verify against ca.crt"
"$injector" --listen 127.0.0.1:0 --image example/tandem:1 --tls-cert "$out/self-signed/tls.crt" \
  --tls-key "$out/self-signed/tls.key" 2>"$out/injector.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q 'listening on' "$out/injector.log" && break
  kill -0 "$pid" 2>/dev/null || fail "the injector exited: $(cat "$out/injector.log")"
  sleep 0.1
done
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\);.*/\1/p' "$out/injector.log")
[ -n "$port" ] || fail "the injector did not start: $(cat "$out/injector.log")"
name=tandem-injector.tandem-system.svc
openssl s_client -connect "127.0.0.1:$port" -servername "$name" -verify_hostname "$name" \
  -CAfile "$out/self-signed/ca.crt" -verify_return_error </dev/null >"$out/s_client.log" 2>&1 \
  || fail "self-signed.sh: the served certificate does not verify for $name: $(tail -5 "$out/s_client.log")"
grep -q 'Verify return code: 0 (ok)' "$out/s_client.log" || fail "self-signed.sh: no successful verification"
# docs/injector.md's alert rules and metric names, against what this injector shows.
"$py" scripts/doc_alerts.py ../docs/injector.md "127.0.0.1:$port" "$out/self-signed/ca.crt" "$name" \
  || fail "docs/injector.md: its alert rules or metric names (above)"
sed 's/tandem_injector_certificate_expires_in_seconds) </tandem_injector_certificate_expiry) </' ../docs/injector.md >"$out/selftest/injector.md"
if "$py" scripts/doc_alerts.py "$out/selftest/injector.md" "127.0.0.1:$port" "$out/self-signed/ca.crt" "$name" 2>/dev/null; then
  fail "self-test: doc_alerts.py passed an alert rule on a metric the injector does not show"
fi
kill "$pid"
wait "$pid" || true
trap - EXIT
echo "injector-manifests: self-signed.sh's certificate is served and verifies for $name; docs/injector.md's alert rules read metrics that exist"

mkdir -p "$out/patched"
name_pods "$patched" "$out/patched"
mapfile -t pods < <(find "$out/patched" -name '*.json' | sort)
[ "${#pods[@]}" -gt 0 ] || fail "no patched Pods in $patched (make injector-test writes them)"
for version in "${versions[@]}"; do
  validate "$version" "${pods[@]}" || fail "a patched Pod is not valid for Kubernetes $version (above)"
done
"$py" scripts/restricted.py --container tandem-install "${pods[@]}"
echo "injector-manifests: ${#pods[@]} patched Pods validate strictly for Kubernetes ${versions[*]}"

# The admission policies (Kubernetes 1.36+), for both routes, and the checked-in copy.
for mode in emptydir image-volume; do
  "$injector" policy --image ghcr.io/tandem-sidecar/tandem:0.1.0 --install "$mode" >"$out/policy-$mode.yaml"
  "$bin/yamllint" --strict --config-file "$root/.yamllint" "$out/policy-$mode.yaml" || fail "policy --install $mode: yamllint (above)"
  for version in 1.36 1.37; do
    validate "$version" "$out/policy-$mode.yaml" || fail "policy --install $mode: not valid for Kubernetes $version (above)"
  done
done
cmp -s "$out/policy-emptydir.yaml" deploy/policy/tandem-injector.yaml \
  || fail "deploy/policy/tandem-injector.yaml is not what \`tandem-injector policy --image ghcr.io/tandem-sidecar/tandem:0.1.0\` prints: run it again"
echo "injector-manifests: the printed policies validate strictly for Kubernetes 1.36 1.37; deploy/policy/ is current"

# The webhook's configuration: deploy/tandem-injector.yaml ends with what
# `tandem-injector webhook` prints (validated above as part of that file).
"$injector" webhook >"$out/webhook.yaml"
ends_with_webhook() {
  tail -c "$(wc -c <"$2")" "$1" | cmp -s - "$2"
}
sed 's/timeoutSeconds: 5/timeoutSeconds: 6/' "$out/webhook.yaml" >"$out/selftest/webhook.yaml"
ends_with_webhook deploy/tandem-injector.yaml "$out/selftest/webhook.yaml" \
  && fail "self-test: a changed webhook configuration passed as the shipped one"
ends_with_webhook deploy/tandem-injector.yaml "$out/webhook.yaml" \
  || fail "deploy/tandem-injector.yaml does not end with what \`tandem-injector webhook\` prints: replace its webhook part"
"$injector" webhook --install image-volume >"$out/webhook-image-volume.yaml"
"$bin/yamllint" --strict --config-file "$root/.yamllint" "$out/webhook-image-volume.yaml" || fail "webhook --install image-volume: yamllint (above)"
# Both failure policies print a configuration that validates, each webhook
# with the policy asked for.
for policy in Fail Ignore; do
  "$injector" webhook --failure-policy "$policy" >"$out/webhook-$policy.yaml"
  "$bin/yamllint" --strict --config-file "$root/.yamllint" "$out/webhook-$policy.yaml" || fail "webhook --failure-policy $policy: yamllint (above)"
  for version in "${versions[@]}"; do
    validate "$version" "$out/webhook-$policy.yaml" || fail "webhook --failure-policy $policy: not valid for Kubernetes $version (above)"
  done
  "$py" - "$out/webhook-$policy.yaml" "$policy" <<'PY' || fail "webhook --failure-policy $policy (above)"
import sys, yaml
(config,) = yaml.safe_load_all(open(sys.argv[1]))
found = {w["failurePolicy"] for w in config["webhooks"]}
if found != {sys.argv[2]}:
    sys.exit(f"failurePolicy {sorted(found)}, asked for {sys.argv[2]}")
PY
done
cmp -s "$out/webhook.yaml" "$out/webhook-Fail.yaml" || fail "webhook without --failure-policy is not webhook --failure-policy Fail"
echo "injector-manifests: deploy/tandem-injector.yaml ends with what \`tandem-injector webhook\` prints; both failure policies validate"

mapfile -t volume_pods < <(find "$patched-image-volume" -name '*.json' | sort)
[ "${#volume_pods[@]}" -gt 0 ] || fail "no image-volume Pods in $patched-image-volume (make injector-test writes them)"
mkdir -p "$out/patched-image-volume"
name_pods "$patched-image-volume" "$out/patched-image-volume"
mapfile -t volume_pods < <(find "$out/patched-image-volume" -name '*.json' | sort)
for version in 1.35 1.36; do
  validate "$version" "${volume_pods[@]}" || fail "an image-volume Pod is not valid for Kubernetes $version (above)"
done
echo "injector-manifests: ${#volume_pods[@]} image-volume Pods validate strictly for Kubernetes 1.35 1.36"
