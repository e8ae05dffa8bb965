# turn: build, test, static release, install, benchmark.
PREFIX ?= /usr/local
MUSL := x86_64-unknown-linux-musl
STATIC := target/$(MUSL)/release/turn

.PHONY: build release test static install bench clean ci live-setup live-smoke live demo

build:
	cargo build --release

release: build

# Everything CI checks: formatting, lints as errors, unit and integration tests.
test:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo test

# A fully static binary (no libc needed on the target machine). ring (TLS) compiles C, so
# this needs musl-gcc: Debian's musl-tools, installed here when missing.
static:
	rustup target list --installed | grep -qx $(MUSL) || rustup target add $(MUSL)
	command -v musl-gcc >/dev/null || (apt-get update -qq && apt-get install -y -qq musl-tools)
	CC_x86_64_unknown_linux_musl=musl-gcc cargo build --release --target $(MUSL)
	@ls -l $(STATIC)

install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 target/release/turn $(DESTDIR)$(PREFIX)/bin/turn

bench:
	bench/run

# Live tests against llama.cpp's llama-server and real Qwen2.5-Coder models, built and fetched
# into ~/.cache/turn-live (TURN_LIVE_CACHE) on first use; see README's "Live tests and the demo".
ci:
	.ci/run

live-setup:
	live/setup --model all

live-smoke:
	live/smoke

live:
	live/suite

demo:
	live/demo

clean:
	cargo clean
