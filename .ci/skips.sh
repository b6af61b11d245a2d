#!/usr/bin/env bash
# The end of `make test`: how many tests skipped and why, from the records that
# tests/support's `skip` (and smoke.sh) append, one `TEST<TAB>PREREQUISITE<TAB>REASON`
# line per skip. Under CI=true a missing prerequisite fails instead, so CI has none.
#
# Usage: skips.sh RECORDS
set -euo pipefail
records=$1

if [ ! -s "$records" ]; then
  echo "skips: none: every test ran"
  exit 0
fi
total=$(wc -l < "$records")
echo "skips: $total skipped (a test skipped on glibc and on musl counts twice); by missing prerequisite:"
# Per prerequisite: the count, then the first test and reason as an example.
awk -F '\t' '
  !($2 in n) { order[++k] = $2; first[$2] = $1 ": " $3 }
  { n[$2]++ }
  END { for (i = 1; i <= k; i++) printf "  %4d  %s  (e.g. %s)\n", n[order[i]], order[i], first[order[i]] }
' "$records"
echo "skips: see $records; under CI=true each of these fails instead"
