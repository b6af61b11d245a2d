#!/bin/sh
# The istio-proxy container: the real Envoy (admin on :15000) under a stand-in
# for pilot-agent, which no package provides. As pilot-agent does, it answers
# GET :15021/healthz/ready only once Envoy's own /ready does, and on
# POST :15020/quitquitquit it stops Envoy and the container ends.
/usr/local/bin/envoy -c /etc/envoy/envoy.yaml --disable-hot-restart --log-level warn &
envoy=$!
/fake-sidecar --flavor pilot-agent --addr 127.0.0.1:15020 --exit-on-quit &
quit=$!
until wget -q -O /dev/null http://127.0.0.1:15000/ready 2>/dev/null; do
  kill -0 "$envoy" 2>/dev/null || { echo "pilot-agent stand-in: Envoy exited before it was ready"; exit 1; }
  sleep 0.1
done
echo "pilot-agent stand-in: Envoy is ready; serving :15021/healthz/ready"
/fake-sidecar --flavor pilot-agent --addr 127.0.0.1:15021 --ready-after 0 &
health=$!
wait "$quit"
echo "pilot-agent stand-in: asked to quit: POST Envoy's /quitquitquit"
wget -q -O /dev/null --post-data '' http://127.0.0.1:15000/quitquitquit
wait "$envoy"
code=$?
kill "$health"
echo "pilot-agent stand-in: Envoy exited $code"
exit "$code"
