#!/bin/sh
# Stand-in for the Cloud SQL Auth Proxy (its image's entrypoint; the manifest's
# args arrive here): health checks on :9090 (/startup, /readiness, /liveness),
# ready after 1s, and, only when started with --quitquitquit as the real proxy,
# POST :9091/quitquitquit ends it. Without that flag nothing listens on :9091 and
# the container runs on, as the real one does.
echo "cloud-sql-proxy stand-in: args: $*"
/fake-sidecar --flavor generic --addr 127.0.0.1:9090 --ready-after 1s &
health=$!
case " $* " in
  *" --quitquitquit "*) ;;
  *)
    echo "cloud-sql-proxy stand-in: no --quitquitquit: :9091 stays closed"
    wait "$health"
    exit 1
    ;;
esac
/fake-sidecar --flavor generic --addr 127.0.0.1:9091 --exit-on-quit
code=$?
kill "$health"
exit "$code"
