#!/bin/sh
# Stand-in for the Cloud SQL Auth Proxy (its image's entrypoint; the manifest's
# args arrive here). Its database port (--port=N, 5432 by default) opens once it
# is started, after STANDIN_READY_SECONDS (1 by default), as the real one
# listens once connected; with --health-check, health checks on 127.0.0.1:9090
# only (/startup, /readiness, /liveness: 503 until then, 200 after); and only
# when started with --quitquitquit, as the real proxy, POST :9091/quitquitquit
# ends it. Without that flag nothing listens on :9091 and the container runs on,
# as the real one does. SIGTERM (the kubelet's, stopping a native sidecar) ends
# it at once: 0 with --exit-zero-on-sigterm, else 143, as the real one.
echo "cloud-sql-proxy stand-in: args: $*"
port=5432
ready=${STANDIN_READY_SECONDS:-1}
on_term=143
for arg in "$@"; do
  case $arg in
    --port=*) port=${arg#--port=} ;;
    --exit-zero-on-sigterm) on_term=0 ;;
  esac
done
pids=
term() {
  echo "cloud-sql-proxy stand-in: SIGTERM, exiting $on_term"
  # shellcheck disable=SC2086 # the pids, one word each
  kill $pids 2>/dev/null
  exit "$on_term"
}
trap term TERM
(sleep "$ready"; exec /fake-sidecar --flavor generic --addr "127.0.0.1:$port") &
pids=$!
case " $* " in
  *" --health-check "*)
    /fake-sidecar --flavor generic --addr 127.0.0.1:9090 --ready-after "${ready}s" &
    pids="$pids $!"
    ;;
esac
case " $* " in
  *" --quitquitquit "*) ;;
  *)
    echo "cloud-sql-proxy stand-in: no --quitquitquit: :9091 stays closed"
    # `wait` returns when a trapped signal arrives (a command in the foreground
    # would hold the trap until it ended).
    wait
    exit 1
    ;;
esac
/fake-sidecar --flavor generic --addr 127.0.0.1:9091 --exit-on-quit &
quit=$!
wait "$quit"
code=$?
# shellcheck disable=SC2086 # the pids, one word each
kill $pids
exit "$code"
