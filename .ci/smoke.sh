#!/usr/bin/env bash
# Scratch-root smoke test: the static binary alone in an empty directory, run with
# chroot against the fake sidecar on the host's loopback (chroot keeps the network
# namespace, so 127.0.0.1 is the same). There is no /etc in the root, so this also
# shows that `localhost` resolves without /etc/hosts, for the HTTP admin URL and
# for a tcp:// readiness check alike.
#
# Usage: smoke.sh TANDEM FAKE_SIDECAR [EMULATOR]
#   EMULATOR: a static qemu-user binary (name or path, e.g. qemu-aarch64-static) for
#   a foreign TANDEM; it is copied into the root and runs tandem there, so no
#   binfmt_misc registration is needed. Children that tandem starts are native
#   (busybox) or go through the emulator explicitly (tandem --wait-only).
#
# Needs root for chroot. Without it: "skipped" (recorded in $SKIPS when set) and
# exit 0, except in CI (CI=true), where a smoke test that cannot run is a failure.
set -euo pipefail

tandem=$1
fake=$2
emulator=${3:-}
work=
label=$(basename "$(dirname "$(dirname "$tandem")")")

skip() {
  if [ "${CI:-}" = true ]; then
    echo "smoke: FAILED, cannot run in CI: $*" >&2
    exit 1
  fi
  echo "smoke: skipped ($label): $*" >&2
  # The record `make test` counts at its end (.ci/skips.sh).
  if [ -n "${SKIPS:-}" ]; then
    { mkdir -p "$(dirname "$SKIPS")" &&
      printf 'smoke (%s)\t%s\t%s\n' "$label" "$*" "the smoke test did not run" >> "$SKIPS"; } \
      2>/dev/null || echo "smoke: (this skip is not recorded in $SKIPS)" >&2
  fi
  exit 0
}
fail() {
  echo "smoke: FAILED ($label): $*" >&2
  [ -f "$work/requests" ] && sed 's/^/  fake saw: /' "$work/requests" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || skip "chroot needs root (run as root, or in CI)"
chroot_bin=$(command -v chroot) || skip "no chroot (coreutils)"
busybox=$(command -v busybox || true)
if [ -n "$busybox" ] && readelf -lW "$busybox" | grep -q INTERP; then
  busybox= # Debian's dynamic busybox cannot run in an empty root; busybox-static can
fi
if [ -n "$emulator" ]; then
  emulator=$(command -v "$emulator") || skip "no $3 to run a foreign binary (apt-get install qemu-user-static)"
fi
[ -n "$busybox" ] || [ "${CI:-}" != true ] || fail "busybox-static is missing"

work=$(mktemp -d)
fake_pid=
cleanup() {
  if [ -n "$fake_pid" ]; then kill "$fake_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The root: tandem, the emulator if any, busybox for an exit-code child. Nothing else.
root=$work/root
mkdir -p "$root"
cp "$tandem" "$root/tandem"
run=(/tandem)
if [ -n "$emulator" ]; then
  cp "$emulator" "$root/emulator"
  run=(/emulator /tandem)
fi
[ -n "$busybox" ] && cp "$busybox" "$root/busybox"
[ ! -e "$root/etc" ] || fail "the root must have no /etc"

# start_fake: an Envoy admin that turns ready after 500 ms and exits on its quit.
start_fake() {
  rm -f "$work/port" "$work/requests"
  "$fake" --flavor envoy --ready-after 500ms --exit-on-quit \
    --port-file "$work/port" --log-file "$work/requests" 2>"$work/fake.err" &
  fake_pid=$!
  for _ in $(seq 200); do
    [ -s "$work/port" ] && return 0
    sleep 0.05
  done
  fail "the fake sidecar did not start: $(cat "$work/fake.err")"
}

# check_fake: it was polled before it was ready, got the quit, and exited.
check_fake() {
  local polls
  for _ in $(seq 100); do
    kill -0 "$fake_pid" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$fake_pid" 2>/dev/null; then fail "the fake sidecar is still running (no quit?)"; fi
  wait "$fake_pid" || fail "the fake sidecar exited with $?"
  fake_pid=
  polls=$(grep -c ' GET /ready$' "$work/requests" || true)
  [ "$polls" -ge 2 ] || fail "expected readiness polls before and after ready, saw $polls"
  grep -q ' READY$' "$work/requests" || fail "the fake never turned ready"
  sed -n '/ READY$/,$p' "$work/requests" | grep -q ' POST /quitquitquit$' ||
    fail "no POST /quitquitquit after ready"
}

# scenario NAME EXPECTED_CODE CHILD...: tandem in the empty root runs CHILD.
scenario() {
  local name=$1 expected=$2 code started elapsed
  shift 2
  start_fake
  started=$(date +%s%N)
  set +e
  # The same port as a tcp:// check too: its `localhost` must resolve without /etc.
  env -i ENVOY_ADMIN_API="http://localhost:$(cat "$work/port")" TANDEM_LOG=info \
    TANDEM_READY_URLS="tcp://localhost:$(cat "$work/port")" \
    timeout 30 "$chroot_bin" "$root" "${run[@]}" "$@" 2>"$work/tandem.err"
  code=$?
  set -e
  elapsed=$((($(date +%s%N) - started) / 1000000))
  if [ "$code" -ne "$expected" ]; then
    sed 's/^/  tandem: /' "$work/tandem.err" >&2
    fail "$name: exit code $code, expected $expected"
  fi
  check_fake
  echo "smoke: $label: $name: exit $code, waited, quit the sidecar (${elapsed} ms)" >&2
}

# The child is tandem itself in --wait-only mode: a second static binary in the root,
# and a second localhost resolution from inside the chroot.
scenario "child tandem --wait-only" 0 "${run[@]}" --wait-only
if [ -n "$busybox" ]; then
  scenario "child busybox exit 7" 7 /busybox sh -c 'exit 7'
else
  echo "smoke: $label: exit-code scenario skipped: no static busybox (busybox-static)" >&2
fi
echo "smoke: $label: ok" >&2
