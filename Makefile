# turn: build, test, static release, install, benchmark.
PREFIX ?= /usr/local
MUSL := x86_64-unknown-linux-musl
STATIC := target/$(MUSL)/release/turn

.PHONY: build release test static install bench clean

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

clean:
	cargo clean
