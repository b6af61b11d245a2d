#!/bin/sh
# The istio-proxy container: the real Envoy (admin on :15000) under a stand-in
# for pilot-agent, which no package provides. As pilot-agent does, it answers
# GET :15021/healthz/ready only once Envoy's own /ready does, and on
# POST :15020/quitquitquit it stops Envoy and the container ends. On SIGTERM
# (the kubelet stopping the container: a native sidecar after the job, a Pod
# deleted) it drains as pilot-agent does: Envoy's listeners drained
# (POST /drain_listeners?graceful&inboundonly), then TERMINATION_DRAIN_DURATION_SECONDS
# (Istio's terminationDrainDuration, 5 by default), then Envoy stopped, exit 0.
/usr/local/bin/envoy -c /etc/envoy/envoy.yaml --disable-hot-restart --log-level warn &
envoy=$!
health=
drain() {
  seconds=${TERMINATION_DRAIN_DURATION_SECONDS:-5}
  echo "pilot-agent stand-in: SIGTERM: draining Envoy for ${seconds}s"
  wget -q -O /dev/null --post-data '' 'http://127.0.0.1:15000/drain_listeners?graceful&inboundonly'
  sleep "$seconds"
  echo "pilot-agent stand-in: drained; stopping Envoy"
  # shellcheck disable=SC2086 # none, or one pid
  kill "$envoy" "$quit" $health 2>/dev/null
  wait "$envoy"
  exit 0
}
trap drain TERM
/fake-sidecar --flavor pilot-agent --addr 127.0.0.1:15020 --exit-on-quit &
quit=$!
until wget -q -O /dev/null http://127.0.0.1:15000/ready 2>/dev/null; do
  kill -0 "$envoy" 2>/dev/null || { echo "pilot-agent stand-in: Envoy exited before it was ready"; exit 1; }
  sleep 0.1
done
echo "pilot-agent stand-in: Envoy is ready; serving :15021/healthz/ready"
/fake-sidecar --flavor pilot-agent --addr 127.0.0.1:15021 --ready-after 0 &
health=$!
# `wait` returns when a trapped signal arrives (SIGTERM: drain above).
wait "$quit"
echo "pilot-agent stand-in: asked to quit: POST Envoy's /quitquitquit"
wget -q -O /dev/null --post-data '' http://127.0.0.1:15000/quitquitquit
wait "$envoy"
code=$?
kill "$health"
echo "pilot-agent stand-in: Envoy exited $code"
exit "$code"
