#!/usr/bin/env bash
# The `make demo` story: a fake Envoy sidecar that turns ready after 2 s, a job
# wrapped in tandem, and what each side sees. Usage: demo.sh TANDEM FAKE_SIDECAR
set -euo pipefail
tandem=$1
fake=$2
work=$(mktemp -d)
fake_pid=
trap '[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$work"' EXIT

say() { printf '\n== %s\n' "$*" >&2; }

say "1. A fake Envoy sidecar starts; its admin API turns ready after 2s"
"$fake" --flavor envoy --ready-after 2s --exit-on-quit --port-file "$work/port" &
fake_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
port=$(cat "$work/port")

say "2. tandem waits for the admin API, runs the job, then quits the sidecar"
echo "   \$ ENVOY_ADMIN_API=http://127.0.0.1:$port tandem sh -c '...; exit 3'" >&2
set +e
ENVOY_ADMIN_API="http://127.0.0.1:$port" "$tandem" \
  sh -c 'echo "job: working (this stdout belongs to the job alone)"; sleep 1; echo "job: failing on purpose with status 3"; exit 3'
code=$?
set -e

say "3. tandem exited with the job's status: $code"
if wait "$fake_pid"; then
  echo "   the sidecar got POST /quitquitquit and exited, so the Pod can complete" >&2
else
  echo "   the sidecar did not exit cleanly" >&2
fi
fake_pid=
[ "$code" -eq 3 ] || { echo "demo: expected exit code 3, got $code" >&2; exit 1; }
say "Done: wait -> run -> quit -> exit code"
