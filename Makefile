# turn: build, test, static release, install, benchmark.
PREFIX ?= /usr/local
MUSL := x86_64-unknown-linux-musl
STATIC := target/$(MUSL)/release/turn

.PHONY: build release test static dist dist-check install bench clean ci live-setup live-smoke live live-heldout live-peers demo

build:
	cargo build --release

release: build

# Everything CI checks: formatting, lints as errors, unit and integration tests.
test:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo test

# A fully static binary (no libc needed on the target machine). ring (TLS) compiles C, so
# this needs musl-gcc: Debian's musl-tools, installed by scripts/dist when missing.
static:
	scripts/dist --build-only $(MUSL)
	@ls -l $(STATIC)

# Release tarballs: static musl binaries for x86-64 and ARM64 and the man page turn.1 in dist/,
# with SHA256SUMS.
# Installs the rustup targets and Debian cross compilers it lacks (see scripts/dist).
dist:
	scripts/dist

# Checks the tarballs: sums, static ELF, size, and a real tool-calling turn against a loopback
# mock (ARM64 under qemu-user, installed when missing). Not part of `make test`.
dist-check: dist
	scripts/dist-check

# The binary, and its man page (turn --generate man) in $(PREFIX)/share/man/man1.
install: build
	target/release/turn --generate man >target/release/turn.1
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 target/release/turn $(DESTDIR)$(PREFIX)/bin/turn
	install -m 644 target/release/turn.1 $(DESTDIR)$(PREFIX)/share/man/man1/turn.1

bench:
	bench/run

# Live tests against llama.cpp's llama-server and real Qwen2.5-Coder models, built and fetched
# into ~/.cache/turn-live (TURN_LIVE_CACHE) on first use; see docs/performance.md.
ci:
	.ci/run

live-setup:
	live/setup --model all

live-smoke:
	live/smoke

live:
	live/suite

# The held-out set (live/heldout/, for the report only; see live/README.md), then the 0.5B model on it.
live-heldout:
	live/suite --set heldout
	live/suite --set heldout --model 0.5b --ctx 8192

# The peers (aider, mini-swe-agent; pinned, installed into the live cache) on the same runs.
live-peers:
	live/peers --install
	live/peers --set heldout
	live/peers --set dev

demo:
	live/demo

clean:
	cargo clean
