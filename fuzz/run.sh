#!/bin/sh
# `make fuzz`: runs each target (or those named) for FUZZ_SECONDS on nightly.
# New inputs land in fuzz/corpus/TARGET (not committed); the committed seeds and
# crash reproducers are fuzz/seeds/TARGET, which `make test` replays on stable.
# Each run ends with libFuzzer's final stats (execution count) in
# fuzz/logs/TARGET.log; a crash stops the run and leaves its input in
# fuzz/artifacts/TARGET/.
set -eu
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-600}
targets=${*:-duration boolean url server_info http_answer config linkerd_await injector_review injector_registry injector_challenge injector_allow injector_audit compose_wait words keep_on_exit}
mkdir -p fuzz/logs
for t in $targets; do
	mkdir -p "fuzz/corpus/$t"
	echo "fuzz: $t for ${seconds}s"
	# -rss_limit_mb: the default 2 GiB is more than this shared box can give.
	if ! cargo +nightly fuzz run -O "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
		-max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=1024 \
		>"fuzz/logs/$t.log" 2>&1; then
		tail -n 40 "fuzz/logs/$t.log" >&2
		echo "fuzz: $t FAILED (log: fuzz/logs/$t.log)" >&2
		exit 1
	fi
	grep -E '^stat::number_of_executed_units' "fuzz/logs/$t.log" | sed "s/^/fuzz: $t: /"
done
