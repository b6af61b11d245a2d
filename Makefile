# tandem: `make demo` shows the lifecycle, `make test` is everything CI checks.
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
