#!/bin/sh
# The job's stand-in in the Pod tests, installed under each name the manifests
# run (/app/myjob, /app/migrate, ...). It logs which ports listen in the Pod
# when it starts (the sidecars tandem waited for), what APP_PROBE's URLs answer
# then, and the first line of a --secrets=PATH file, writes --out=PATH, then
# does what the image's APP_MODE says: `exit3` exits 3, an exit status no
# sidecar and no signal gives, so the job container's status shows whose it is
# (APP_SECONDS and APP_CODE change when and how it exits); `wait-term` runs
# until SIGTERM, then exits 42 (the Pod-level signal test: 42, not 143, shows
# the app handled it). APP_FAIL_ONCE=PATH: a run that finds no PATH writes it
# and exits 3, so on a volume that outlives the container only the first run in
# a Pod fails (a restart in place then succeeds).
# A second role, run by the app itself (below): the orphan says who its parent is.
if [ "$APP_ROLE" = orphan ]; then
  sleep 0.2
  parent=$(awk '/^PPid:/ { print $2 }' /proc/$$/status)
  if [ "$parent" = "$APP_TANDEM" ]; then
    echo "app: orphan $$ re-parented to tandem (pid $parent)"
  else
    echo "app: orphan $$ re-parented to pid $parent, not to tandem (pid $APP_TANDEM)"
  fi
  exit 0
fi
name=${0##*/}
ports=$(netstat -ltn 2>/dev/null | awk 'NR > 2 { n = split($4, a, ":"); print a[n] }' | sort -un | tr '\n' ' ')
echo "app: $name${*:+ $*} started; listening in the Pod: ${ports% }"
# APP_PROBE="URL ...": what the job sees of its sidecars the moment it starts, one
# GET each (the e2e-node native-route scenarios: were they ready before it ran?).
for url in $APP_PROBE; do
  if seen=$(wget -q -O /dev/null "$url" 2>&1); then seen=ok; else seen=${seen#wget: }; fi
  echo "app: at start GET $url: ${seen:-failed}"
done
# How the job runs (pods.py checks this line): its user, its root filesystem's
# mount (ro/rw), its capability bounding set and no_new_privs, as the manifest's
# securityContext asked and podman applied.
root=$(awk '$5 == "/" { o = $6 } END { split(o, a, ","); print a[1] }' /proc/self/mountinfo)
echo "app: as uid $(awk '/^Uid:/ { print $2 }' /proc/self/status)," \
  "root filesystem $root," \
  "CapBnd $(awk '/^CapBnd:/ { print $2 }' /proc/self/status)," \
  "NoNewPrivs $(awk '/^NoNewPrivs:/ { print $2 }' /proc/self/status)"
# An orphan: the subshell exits at once, so its child goes to the nearest
# subreaper, which must be tandem (PID 1 of the container, or by prctl when the
# Pod shares its process namespace), and must be reaped, not left a zombie.
orphan=$( (APP_ROLE=orphan APP_TANDEM=$PPID "$0" >&2 & echo $!) )
n=0
while [ -e "/proc/$orphan" ] && [ "$n" -lt 50 ]; do
  sleep 0.1
  n=$((n + 1))
done
if [ -e "/proc/$orphan" ]; then
  echo "app: orphan $orphan not reaped within 5s"
else
  echo "app: orphan $orphan reaped"
fi
# --secrets=PATH: what the job reads first (a secret a sidecar rendered).
# --out=PATH: the job's output, written to a shared volume for the --on-exit
# program to upload.
for arg in "$@"; do
  case $arg in
    --out=*)
      path=${arg#--out=}
      echo "report: rows=42, written by $name" > "$path"
      echo "app: wrote $path"
      ;;
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
    if [ -n "$APP_FAIL_ONCE" ] && [ ! -e "$APP_FAIL_ONCE" ]; then
      : > "$APP_FAIL_ONCE"
      echo "app: first run in this Pod (no $APP_FAIL_ONCE yet), exiting 3"
      exit 3
    fi
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
