# The two commands a newcomer needs: `make demo` and `make test`. Both install what a fresh
# Debian 12 machine lacks (apt-get, as root), configure, build and run. Both are idempotent.
BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
# Warnings are errors in CI builds (CI=true), warnings elsewhere.
WERROR     ?= $(if $(CI),ON,OFF)

DEB_PACKAGES := cmake ninja-build g++ pkg-config zstd libflatbuffers-dev flatbuffers-compiler \
  libzstd-dev libfmt-dev catch2 libbenchmark-dev libcli11-dev libxxhash-dev nlohmann-json3-dev

.PHONY: all deps configure build test demo bench clean format

all: build

deps:
	@scripts/install-deps.sh $(DEB_PACKAGES)

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DVTRACE_WERROR=$(WERROR)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Test-only: headless Chromium renders the HTML report (tests/report; skipped without it);
# python3 runs gpu-check.sh's JSON readers (tests/scripts/gpu_*_test.sh; skipped without it).
TEST_PACKAGES := chromium python3

test: build
	@scripts/install-deps.sh $(TEST_PACKAGES)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 1500

demo: build
	$(BUILD)/cli/vtrace demo

# Benchmarks use a separate Release build. OpenBLAS is a benchmark-only dependency (the sgemm
# baseline of bench/bench_dense_linear.cpp); nothing else needs it.
BENCH_PACKAGES := libopenblas-dev

bench: deps
	@scripts/install-deps.sh $(BENCH_PACKAGES)
	cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DVTRACE_BUILD_TESTS=OFF
	cmake --build build-release -j $(JOBS)
	scripts/run-bench.sh build-release

format:
	scripts/format.sh

clean:
	rm -rf $(BUILD) build-release
