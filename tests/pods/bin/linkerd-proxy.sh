#!/bin/sh
# Stand-in for linkerd2-proxy: GET :4191/ready (ready after 1s) and
# POST :4191/shutdown, which answers 404 unless the injector enabled it
# (LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED, from the proxy-admin-shutdown
# annotation), as Linkerd 2.16 and later do.
set -- --flavor linkerd --addr 127.0.0.1:4191 --ready-after 1s --exit-on-quit
[ "$LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED" = true ] || set -- "$@" --no-shutdown
exec /fake-sidecar "$@"
