#!/bin/sh
# The job's stand-in in the Pod tests, installed under each name the manifests
# run (/app/myjob, /app/migrate, ...). It logs which ports listen in the Pod when
# it starts (the sidecars tandem waited for) and the first line of a --secrets=PATH
# file, then does what the image's APP_MODE
# says: `exit3` exits 3, an exit status no sidecar and no signal gives, so the job
# container's status shows whose it is; `wait-term` runs until SIGTERM, then
# exits 42 (the Pod-level signal test: 42, not 143, shows the app handled it).
name=${0##*/}
ports=$(netstat -ltn 2>/dev/null | awk 'NR > 2 { n = split($4, a, ":"); print a[n] }' | sort -un | tr '\n' ' ')
echo "app: $name${*:+ $*} started; listening in the Pod: ${ports% }"
# --secrets=PATH: what the job reads first (a secret a sidecar rendered).
for arg in "$@"; do
  case $arg in
    --secrets=*)
      path=${arg#--secrets=}
      if read -r first < "$path"; then
        echo "app: read $path: $first"
      else
        echo "app: no secrets at $path"
      fi 2>/dev/null
      ;;
  esac
done
case ${APP_MODE:-exit3} in
  wait-term)
    trap 'echo "app: got SIGTERM, exiting 42"; exit 42' TERM
    echo "app: running until SIGTERM"
    # `wait` returns as soon as the trapped signal arrives; a plain sleep would not.
    while :; do
      sleep 1 &
      wait $!
    done
    ;;
  *)
    echo "app: done, exiting 3"
    exit 3
    ;;
esac
