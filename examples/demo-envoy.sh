#!/usr/bin/env bash
# The `make demo` story told with the real Envoy (`make demo-envoy`): tandem starts
# first, as when the job's container wins the race in a Pod; Envoy comes up 2 s
# later; the job sends a request through Envoy's listener; tandem quits Envoy and
# exits with the job's status. Envoy's admin access log shows what tandem asked it.
# Usage: demo-envoy.sh TANDEM ENVOY
set -euo pipefail
tandem=$1
envoy=$2
work=$(mktemp -d)
envoy_pid=
tandem_pid=
trap '[ -n "$tandem_pid" ] && kill "$tandem_pid" 2>/dev/null
      [ -n "$envoy_pid" ] && kill "$envoy_pid" 2>/dev/null
      rm -rf "$work"' EXIT

say() { printf '\n== %s\n' "$*" >&2; }
fail() { echo "demo-envoy: $*" >&2; [ -f "$work/envoy.log" ] && cat "$work/envoy.log" >&2; exit 1; }

# A loopback port where nothing answers (a refused connect), chosen at random.
free_port() {
  local port
  for port in $(shuf -i 20000-60000 -n 100); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  fail "no free loopback port found"
}
admin=$(free_port)
listener=$(free_port)
[ "$admin" != "$listener" ] || listener=$(free_port)

# Envoy's bootstrap: the admin API (with an access log), and an HTTP listener that
# answers the job itself (a direct response), so no upstream server is needed.
cat > "$work/envoy.yaml" <<EOF
admin:
  access_log:
  - name: envoy.access_loggers.file
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
      path: "$work/admin.log"
  address:
    socket_address: { address: 127.0.0.1, port_value: $admin }
static_resources:
  listeners:
  - name: app
    address:
      socket_address: { address: 127.0.0.1, port_value: $listener }
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: app
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
          route_config:
            virtual_hosts:
            - name: app
              domains: ["*"]
              routes:
              - match: { prefix: "/" }
                direct_response: { status: 200, body: { inline_string: "hello through Envoy" } }
EOF

# The job: one HTTP request through Envoy's listener (bash's /dev/tcp, no curl in
# the image), then a failure on purpose.
job='exec 3<>"/dev/tcp/127.0.0.1/$1"
printf "GET / HTTP/1.1\r\nHost: demo\r\nConnection: close\r\n\r\n" >&3
answer=$(timeout 10 tail -n 1 <&3)
echo "job: a request through Envoy on :$1 got: $answer"
[ "$answer" = "hello through Envoy" ] || exit 1
sleep 1
echo "job: failing on purpose with status 3"
exit 3'

say "1. The job's container starts first: tandem polls an Envoy admin API that is not there yet"
echo "   \$ ENVOY_ADMIN_API=http://127.0.0.1:$admin tandem --fail-timeout 30s bash -c '...; exit 3'" >&2
# --fail-timeout keeps the demo from hanging should Envoy fail to start.
ENVOY_ADMIN_API="http://127.0.0.1:$admin" "$tandem" --fail-timeout 30s bash -c "$job" bash "$listener" &
tandem_pid=$!

sleep 2
say "2. The real Envoy starts 2s later ($("$envoy" --version | grep -o '[0-9]*\.[0-9]*\.[0-9]*/Clean' | cut -d/ -f1)): admin on :$admin, listener on :$listener"
"$envoy" --config-path "$work/envoy.yaml" --disable-hot-restart --concurrency 1 \
  --log-level warning --file-flush-interval-msec 100 >"$work/envoy.log" 2>&1 &
envoy_pid=$!

set +e
wait "$tandem_pid"
code=$?
set -e
tandem_pid=

say "3. tandem exited with the job's status: $code"
if wait "$envoy_pid"; then
  echo "   Envoy got POST /quitquitquit and exited, so the Pod can complete" >&2
else
  envoy_pid=
  fail "Envoy did not exit cleanly after the quit"
fi
envoy_pid=

say "4. What tandem asked Envoy (its admin access log; the polls before Envoy listened were refused connections)"
# `[time] "GET /ready HTTP/1.1" 200 ...` -> `GET /ready -> 200`, repeats counted.
awk -F'"' '{ split($2, r, " "); split($3, s, " "); print r[1] " " r[2] " -> " s[1] }' "$work/admin.log" \
  | uniq -c | awk '{ n = $1; $1 = ""; print "  " n " x" $0 }' >&2

[ "$code" -eq 3 ] || fail "expected exit code 3, got $code"
grep -q '"POST /quitquitquit' "$work/admin.log" || fail "Envoy's access log has no POST /quitquitquit"
say "Done: wait -> run -> quit -> exit code, with the real Envoy"
