#!/bin/sh
# Stand-in for the Cloud SQL Auth Proxy (its image's entrypoint; the manifest's
# args arrive here). Its database port (--port=N, 5432 by default) opens after
# 1s, as the real one listens once started; with --health-check, health checks
# on :9090 (/startup, /readiness, /liveness), ready after 1s; and only when
# started with --quitquitquit, as the real proxy, POST :9091/quitquitquit ends
# it. Without that flag nothing listens on :9091 and the container runs on, as
# the real one does.
echo "cloud-sql-proxy stand-in: args: $*"
port=5432
for arg in "$@"; do
  case $arg in --port=*) port=${arg#--port=} ;; esac
done
(sleep 1; exec /fake-sidecar --flavor generic --addr "127.0.0.1:$port") &
pids=$!
case " $* " in
  *" --health-check "*)
    /fake-sidecar --flavor generic --addr 127.0.0.1:9090 --ready-after 1s &
    pids="$pids $!"
    ;;
esac
case " $* " in
  *" --quitquitquit "*) ;;
  *)
    echo "cloud-sql-proxy stand-in: no --quitquitquit: :9091 stays closed"
    wait
    exit 1
    ;;
esac
/fake-sidecar --flavor generic --addr 127.0.0.1:9091 --exit-on-quit
code=$?
# shellcheck disable=SC2086 # the pids, one word each
kill $pids
exit "$code"
