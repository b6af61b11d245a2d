#!/bin/sh
# Stand-in for a sidecar with one HTTP admin port (daprd on :3500, Vault Agent
# on :8200): every GET is its readiness (ready after 1s), and a POST quits it
# when QUIT_ENABLED=true (Vault Agent's agent-enable-quit annotation; Dapr's
# shutdown API is always on). Usage: generic-sidecar.sh PORT
quit=
[ "$QUIT_ENABLED" = true ] && quit=--exit-on-quit
exec /fake-sidecar --flavor generic --addr "127.0.0.1:$1" --ready-after 1s $quit
