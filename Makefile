# tandem: `make demo` shows the lifecycle, `make test` is everything CI checks,
# `make bench` measures what tandem costs (BENCHMARKS.md).
# Every cargo call uses the committed Cargo.lock.

CARGO ?= cargo
TARGET ?= x86_64-unknown-linux-musl

.PHONY: all build demo test lint unit clean

all: build

build:
	$(CARGO) build --release --locked

## demo: build tandem and the fake sidecar, then run a sample job through
## wait → run → quit → exit code, narrating each step.
demo:
	$(CARGO) build --release --locked --bin tandem --example fake_sidecar
	@bash examples/demo.sh target/release/tandem target/release/examples/fake_sidecar

## test: format, clippy -D warnings, unit and integration tests.
test: lint unit

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

unit:
	$(CARGO) test --locked

clean:
	$(CARGO) clean

## bench: what tandem costs its users, beside the floor; prints one table and
## writes it with the machine's description to target/bench/results.md
## (copy a real run into BENCHMARKS.md). Takes a few minutes.
## bench-smoke: the same in a short mode (CI keeps it working; numbers not for quoting).
## Both measure the static musl build when the $(TARGET) target is installed,
## else the glibc release build, and install hyperfine and GNU time (Debian's
## packages, used for cross-checks) when run as root and missing.
.PHONY: bench bench-smoke bench-deps

bench: BENCH_FLAGS = --markdown target/bench/results.md
bench-smoke: BENCH_FLAGS = --smoke --markdown target/bench/smoke.md

bench bench-smoke: bench-deps
	@set -e; \
	if rustup target list --installed 2>/dev/null | grep -qx '$(TARGET)' \
	   || timeout 120 rustup target add '$(TARGET)' >/dev/null 2>&1; then \
	  $(CARGO) build --release --locked --target '$(TARGET)' --bin tandem --example bench_probe; \
	  tandem='target/$(TARGET)/release/tandem'; build='static, $(TARGET)'; \
	  floor='--size-floor target/$(TARGET)/release/examples/bench_probe'; \
	else \
	  echo "bench: no $(TARGET) target here: measuring the glibc release build instead"; \
	  $(CARGO) build --release --locked --bin tandem; \
	  tandem=target/release/tandem; build='glibc release (no musl target)'; floor=; \
	fi; \
	$(CARGO) build --release --locked --example bench --example bench_probe; \
	mkdir -p target/bench; \
	target/release/examples/bench --tandem "$$tandem" --build "$$build" $$floor \
	  --probe target/release/examples/bench_probe --out target/bench $(BENCH_FLAGS)

bench-deps:
	@missing=; \
	command -v hyperfine >/dev/null || missing="$$missing hyperfine"; \
	[ -x /usr/bin/time ] || missing="$$missing time"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "bench: installing$$missing (Debian packages)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing </dev/null; } \
	    || echo "bench: could not install$$missing: their cross-checks are skipped"; \
	else \
	  echo "bench:$$missing missing (apt-get needs root): their cross-checks are skipped"; \
	fi
