#!/bin/sh
# The job's stand-in in the Pod tests, installed under each name the manifests
# run (/app/myjob, /app/migrate, ...). It logs which ports listen in the Pod when
# it starts (the sidecars tandem waited for), then does what the image's APP_MODE
# says: `exit3` exits 3, an exit status no sidecar and no signal gives, so the job
# container's status shows whose it is (APP_SECONDS and APP_CODE change when and
# how it exits); `wait-term` runs until SIGTERM, then exits 42 (the Pod-level
# signal test: 42, not 143, shows the app handled it).
name=${0##*/}
ports=$(netstat -ltn 2>/dev/null | awk 'NR > 2 { n = split($4, a, ":"); print a[n] }' | sort -un | tr '\n' ' ')
echo "app: $name${*:+ $*} started; listening in the Pod: ${ports% }"
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
    # APP_SECONDS: run that long, then log the ports again (is the mesh still
    # there?); APP_CODE: exit with it instead of 3.
    if [ -n "$APP_SECONDS" ]; then
      sleep "$APP_SECONDS"
      ports=$(netstat -ltn 2>/dev/null | awk 'NR > 2 { n = split($4, a, ":"); print a[n] }' | sort -un | tr '\n' ' ')
      echo "app: $name ran ${APP_SECONDS}s; listening in the Pod now: ${ports% }"
    fi
    echo "app: done, exiting ${APP_CODE:-3}"
    exit "${APP_CODE:-3}"
    ;;
esac
