# Thin wrapper over CMake + CTest. `make` builds into build/ (binaries in
# build/bin), `make test` builds and runs the whole suite, `make demo` runs the
# demo, `make bench` runs the benchmarks beside the peer anchors, `make
# install` installs the build (DESTDIR=... and PREFIX=... as usual;
# docs/install.md), `make deb` builds the Debian packages.
BUILD   ?= build
JOBS    ?= $(shell nproc)
CMAKE_FLAGS ?=
# WERROR=ON: warnings are errors (CI sets it, .ci/run); off for whoever builds
# ulnet with another compiler. A build directory configured with the other
# value is reconfigured.
WERROR  ?= OFF
# make install: cmake --install's prefix (empty: the configured one,
# /usr/local unless CMAKE_FLAGS set CMAKE_INSTALL_PREFIX) and DESTDIR.
PREFIX  ?=
DESTDIR ?=

.PHONY: all build test test-sanitize test-tsan fuzz demo bench deps clean install deb

all: build

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DULNET_WERROR=$(WERROR) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	@grep -qx 'ULNET_WERROR:BOOL=$(WERROR)' $(BUILD)/CMakeCache.txt || \
		cmake -S . -B $(BUILD) -DULNET_WERROR=$(WERROR)
	cmake --build $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-sanitize:
	$(MAKE) BUILD=build-asan CMAKE_FLAGS="-DULNET_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug" test

# The same suite under ThreadSanitizer (TSAN_OPTIONS: any report fails the
# test that made it).
test-tsan:
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 $${TSAN_OPTIONS:-}" \
	$(MAKE) BUILD=build-tsan CMAKE_FLAGS="-DULNET_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo" test

# libFuzzer targets, each run briefly (FUZZ_SECONDS each).
FUZZ_SECONDS ?= 20
fuzz:
	CC=clang cmake -S . -B build-fuzz -DULNET_WERROR=$(WERROR) -DULNET_FUZZ=ON -DULNET_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS=-O1
	cmake --build build-fuzz -j$(JOBS)
	scripts/run-fuzz.sh build-fuzz $(FUZZ_SECONDS)

demo: build
	scripts/demo.sh $(BUILD)

bench: build
	bench/run.sh $(BUILD)

# installs what `make` built (no package installation, no build: `sudo make
# install` must not leave root-owned files in the build tree)
install:
	@test -f $(BUILD)/CMakeCache.txt || { echo "make install: nothing built in $(BUILD); run make first" >&2; exit 1; }
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) $(if $(PREFIX),--prefix "$(PREFIX)")

# the Debian packages libulnet0, libulnet-dev and ulnet, checked by lintian,
# into build-deb/ (debian/, scripts/make-deb.sh; docs/install.md)
deb: deps
	JOBS=$(JOBS) scripts/make-deb.sh build-deb

deps:
	scripts/install-deps.sh

clean:
	rm -rf build build-asan build-tsan build-fuzz build-deb
