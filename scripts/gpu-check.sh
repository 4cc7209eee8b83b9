#!/usr/bin/env bash
# The GPU check of the CUDA runtimes (docs/CUDA.md), in two steps:
#
#   scripts/gpu-check.sh build   here (the development machine, with nvcc and our Debian -dev
#                                packages): a Release CUDA build in build-gpu/ and the carry set
#                                in build-gpu/carry/ (vtrace, runtime_conformance_test,
#                                vtrace_bench, and in carry/lib the non-system shared libraries
#                                they need); checks its size (at most 64 MiB) and, with ldd, that
#                                every shared library needed is glibc's, libstdc++/libgcc, CUDA's
#                                (cudart) or one carried in carry/lib; cuBLAS, loaded at run time,
#                                is named in carry/cublas-soname. Exit 0 or 1.
#   scripts/gpu-check.sh run     there (the GPU machine: CUDA 13, no -dev packages, no network),
#                                from the repository root with build-gpu/carry carried: checks up
#                                front that a CUDA device is usable (else exit 4 with one
#                                sentence; nvidia-smi's answer is kept either way), then runs
#                                the conformance suite on cuda and cuda-cublas, the GPU
#                                benchmarks, records the decode workload on cuda, replays it on
#                                reference and cpu and compares reference,cuda,cpu bitwise,
#                                compares reference,cuda-cublas with --deep (the drift report and
#                                its first divergence), extracts that command and replays the
#                                repro on cuda-cublas (it must mismatch) and reference (it must
#                                match). Everything is written under
#                                $OUT (default build-gpu/out). Exit 0 when every step did what it
#                                must, 1 when one did not (the summary names it), 4 without a GPU.
#                                The whole run has a budget (VTRACE_GPU_CHECK_BUDGET_S, default
#                                460 s, inside the issue's 8 minutes): each step's limit is cut to
#                                what is left, and a step reached with nothing left is not run and
#                                counts as failed (0: only the probe runs; how the test suite
#                                checks that path). The device tool brings back at most 8 files from
#                                $OUT, 16 MiB each, so at the end the headline files stay as they
#                                are (summary.txt, nvidia-smi.txt, decode-cuda.vtrace,
#                                compare-bitwise.json, drift-cublas.json, drift-cublas.html,
#                                bench-cuda.json) and every other file (each step's log, the
#                                repro) is packed into $OUT/gpu-check-results.tar.gz.
#
# VTRACE_GPU_CHECK_BIN=DIR makes the run step take vtrace and runtime_conformance_test (and
# vtrace_bench, whose step is skipped when DIR has none) from DIR instead of the carry set: how
# the test suite runs every other step of it without a GPU, on the emulated cudart
# (tests/scripts/gpu_check_emulated_test.sh).
#
# Each step has its own time limit; the whole run is planned for well under 8 minutes on an H200.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${BUILD_DIR:-build-gpu}
carry=$build/carry
readonly kExitNoGpu=4
readonly kCarryLimitBytes=$((64 * 1024 * 1024))
# What the device tool brings back from $OUT: at most 8 files of at most 16 MiB each.
readonly kOutFileLimitBytes=$((16 * 1024 * 1024))
readonly kArchive=gpu-check-results.tar.gz
readonly kHeadlineFiles=(summary.txt nvidia-smi.txt decode-cuda.vtrace compare-bitwise.json
  drift-cublas.json drift-cublas.html bench-cuda.json)

die() {
  echo "gpu-check: $*" >&2
  exit 1
}

# Shared libraries a carried binary may take from the GPU machine: glibc's, the compiler's
# runtime and CUDA's (the toolkit is installed there).
system_library() {
  case "$1" in
    linux-vdso.so.* | ld-linux-x86-64.so.* | */ld-linux-x86-64.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
      librt.so.* | libstdc++.so.* | libgcc_s.so.* | libcublas.so.* | libcublasLt.so.* | libcudart.so.*)
      return 0
      ;;
  esac
  return 1
}

build_step() {
  command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || die "no nvcc: the build step needs the CUDA toolkit"
  local start=$SECONDS
  # What a fresh development machine lacks: the project's Debian packages (make deps) and ccache,
  # the compiler launcher of this second build tree.
  make -s deps || die "cannot install the project's Debian packages (make deps)"
  scripts/install-deps.sh ccache || die "cannot install ccache, the launcher of this build"
  # OpenBLAS (the CPU sgemm baseline of bench_dense_linear.cpp) is left out: it is not on the
  # GPU machine and its benchmarks are not the GPU check's.
  if [ ! -f "$build/build.ninja" ]; then
    mkdir -p "$build"
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVTRACE_CUDA=ON \
      -DVTRACE_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES:-90}" \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
      -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache \
      -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" \
      -DVTRACE_BENCH_OPENBLAS=OFF >"$build/configure.log" 2>&1 ||
      { cat "$build/configure.log"; die "configure failed"; }
  fi
  cmake --build "$build" -j "${JOBS:-2}" --target vtrace runtime_conformance_test vtrace_bench ||
    die "build failed"
  echo "gpu-check build: built in $((SECONDS - start)) s"
  rm -rf "$carry"
  mkdir -p "$carry/lib"
  cp "$build/cli/vtrace" "$build/tests/runtime/runtime_conformance_test" "$build/bench/vtrace_bench" "$carry/"
  strip "$carry/vtrace" "$carry/runtime_conformance_test" "$carry/vtrace_bench"
  # cuBLAS is loaded when cuda-cublas opens (dlopen), not linked: the run step makes sure the
  # loader can find the library of this toolkit's major version.
  local nvcc include major
  nvcc=$(awk -F= '/^CMAKE_CUDA_COMPILER:[A-Z]*=/ { print $2; exit }' "$build/CMakeCache.txt")
  include=$(dirname "$(dirname "$(readlink -f "$nvcc")")")/include
  major=$(awk '/^#define CUBLAS_VER_MAJOR/ { print $3; exit }' "$include/cublas_api.h" 2>/dev/null)
  [ -n "$major" ] || die "no CUBLAS_VER_MAJOR in $include/cublas_api.h (the toolkit of $nvcc)"
  echo "libcublas.so.$major" >"$carry/cublas-soname"
  local binary name path bad=()
  for binary in "$carry/vtrace" "$carry/runtime_conformance_test" "$carry/vtrace_bench"; do
    echo "$(basename "$binary") needs:"
    while read -r name path; do
      if system_library "$name"; then
        echo "  $name (system or CUDA: $path)"
      elif [ "$path" = NOTFOUND ] || [ -z "$path" ]; then
        bad+=("$(basename "$binary"): $name (not found)")
      else
        case "$name" in
          libzstd.so.* | libxxhash.so.* | libfmt.so.* | libbenchmark.so.*)
            cp -L "$path" "$carry/lib/$name"
            echo "  $name (carried in carry/lib, from $path)"
            ;;
          *) bad+=("$(basename "$binary"): $name ($path)") ;;
        esac
      fi
    done < <(ldd "$binary" | awk '$2 == "=>" { print $1, ($3 == "not" ? "NOTFOUND" : $3) } $2 != "=>" { print $1, "" }')
  done
  [ ${#bad[@]} -eq 0 ] || die "libraries the GPU machine may lack, neither system, CUDA nor carried: ${bad[*]}"
  # The loader fallback of the run step: this machine's glibc (loader, libc and the libraries
  # the CUDA driver and cuBLAS link), for a GPU machine whose glibc is older than the symbol
  # versions these binaries need. Never on LD_LIBRARY_PATH: only the run step's wrappers name it.
  local libc_dir loader
  libc_dir=$(dirname "$(ldd "$carry/vtrace" | awk '$1 == "libc.so.6" { print $3 }')")
  loader=$(ldd "$carry/vtrace" | awk '$1 ~ /^\/.*ld-linux-x86-64\.so\.2$/ { print $1 }')
  [ -n "$loader" ] && [ -f "$libc_dir/libc.so.6" ] || die "cannot find this machine's glibc loader and libc (ldd of vtrace)"
  mkdir -p "$carry/glibc"
  cp -L "$loader" "$carry/glibc/ld-linux-x86-64.so.2"
  for name in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1; do
    cp -L "$libc_dir/$name" "$carry/glibc/$name" || die "cannot copy $libc_dir/$name into the carry set"
  done
  # The fallback must work here too: the carried vtrace through the carried loader.
  "$carry/glibc/ld-linux-x86-64.so.2" --library-path "$carry/glibc:$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$carry/vtrace" --version >/dev/null || die "the carried vtrace does not start through the carried glibc loader"
  local glibc
  glibc=$(objdump -T "$carry"/vtrace "$carry"/runtime_conformance_test "$carry"/vtrace_bench 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1)
  local bytes
  bytes=$(du -sb "$carry" | cut -f1)
  echo "gpu-check build: carry set $carry: $bytes bytes ($((bytes / 1024 / 1024)) MiB), newest glibc symbol version $glibc"
  ls -l "$carry" "$carry/lib" "$carry/glibc"
  [ "$bytes" -le "$kCarryLimitBytes" ] || die "the carry set is $bytes bytes, over the 64 MiB limit"
  echo "gpu-check build: ready; on the GPU machine run: scripts/gpu-check.sh run (with $carry carried)"
}

# --- run ---------------------------------------------------------------------------------------

failures=()
run_start=$SECONDS
budget_s=460
# The seconds left of the run's budget (may be 0 or less).
budget_left() { echo $((budget_s - (SECONDS - run_start))); }

# step NAME LIMIT_S EXPECTED_RC COMMAND...: runs COMMAND with its output in $out/NAME.log and
# records a failure when it does not exit EXPECTED_RC (a limit hit counts as a failure). The
# limit is cut to what is left of the run's budget; with nothing left the step is not run.
step() {
  local name=$1 limit=$2 expected=$3
  shift 3
  local begin=$SECONDS rc left
  left=$(budget_left)
  if [ "$left" -le 0 ]; then
    echo "FAIL  $name (not run: the run's budget of $budget_s s is spent)" | tee -a "$out/summary.txt"
    failures+=("$name")
    return 0
  fi
  [ "$limit" -le "$left" ] || limit=$left
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  if [ "$rc" -eq "$expected" ]; then
    echo "ok    $name ($((SECONDS - begin)) s, exit $rc)" | tee -a "$out/summary.txt"
  else
    echo "FAIL  $name ($((SECONDS - begin)) s, exit $rc, expected $expected): see $name.log" |
      tee -a "$out/summary.txt"
    tail -20 "$out/$name.log"
    failures+=("$name")
  fi
  return 0
}

# Sets $bin, the folder the run step takes vtrace, runtime_conformance_test and vtrace_bench
# from: the carry set itself when its binaries start on this machine; else (a glibc older than
# the build machine's: "version `GLIBC_2.3x' not found") wrappers that run each through the
# carried loader and glibc (carry/glibc), which the machine's CUDA driver and cuBLAS, built for
# an older glibc, load into as well. VTRACE_GPU_CHECK_LOADER=1 takes the wrappers anyway (how
# the fallback is tested on a machine that does not need it).
choose_binaries() {
  if [ -n "${VTRACE_GPU_CHECK_BIN:-}" ]; then
    bin=$(cd "$VTRACE_GPU_CHECK_BIN" && pwd) || die "VTRACE_GPU_CHECK_BIN names no folder: $VTRACE_GPU_CHECK_BIN"
    echo "gpu-check run: binaries from $bin (VTRACE_GPU_CHECK_BIN), not the carry set" | tee -a "$out/summary.txt"
    return 0
  fi
  bin=$PWD/$carry
  local why
  if [ "${VTRACE_GPU_CHECK_LOADER:-0}" != 1 ]; then
    why=$("$bin/vtrace" --version 2>&1) && return 0
  else
    why="VTRACE_GPU_CHECK_LOADER=1"
  fi
  local loader=$PWD/$carry/glibc/ld-linux-x86-64.so.2
  [ -x "$loader" ] || die "the carried vtrace does not start here ($why), and the carry set has no glibc to fall back on: rebuild it with 'scripts/gpu-check.sh build'"
  bin=$(mktemp -d "${TMPDIR:-/tmp}/vtrace-gpu-check.XXXXXX")
  trap 'rm -rf "$bin"' EXIT
  local name
  for name in vtrace runtime_conformance_test vtrace_bench; do
    printf '#!/bin/sh\nexec "%s" --library-path "%s" "%s" "$@"\n' "$loader" \
      "$PWD/$carry/glibc:$LD_LIBRARY_PATH" "$PWD/$carry/$name" >"$bin/$name"
    chmod +x "$bin/$name"
  done
  "$bin/vtrace" --version >/dev/null 2>&1 ||
    die "the carried vtrace starts neither directly ($why) nor through the carried glibc loader"
  echo "gpu-check run: the carried binaries run through the carried glibc (carry/glibc), because: $why" |
    tee -a "$out/summary.txt"
}

# Packs every file of $out that is not a headline file into $out/$kArchive and removes it there,
# so that what comes back from the device tool (8 files at most, 16 MiB each) is complete. Says
# what it packed, and warns of a file too large to come back.
pack_results() {
  local listed packed name
  listed=$(mktemp "${TMPDIR:-/tmp}/gpu-check-results.XXXXXX") || return 0
  for name in "$out"/* "$out"/.[!.]*; do
    [ -f "$name" ] || continue
    name=$(basename "$name")
    case " $kArchive ${kHeadlineFiles[*]} " in
      *" $name "*) ;;
      *) printf '%s\n' "$name" >>"$listed" ;;
    esac
  done
  # Written outside $out (tar refuses a folder that changes while it reads it), then moved in.
  packed=$listed.tar.gz
  if tar -C "$out" -czf "$packed" -T "$listed" && mv "$packed" "$out/$kArchive"; then
    while read -r name; do rm -f "$out/$name"; done <"$listed"
    echo "gpu-check run: $(wc -l <"$listed") result files packed in $kArchive; beside it: $(cd "$out" && ls | tr '\n' ' ')"
  else
    echo "gpu-check: cannot pack the results into $kArchive; they stay as files" >&2
    rm -f "$packed"
  fi
  rm -f "$listed"
  for name in "$out"/*; do
    [ "$(stat -c %s "$name")" -le "$kOutFileLimitBytes" ] ||
      echo "gpu-check: $(basename "$name") is over the device tool's 16 MiB a file: it will not come back" >&2
  done
}

# Ends the run: the verdict in the summary, the results packed, exit 0 or 1.
finish_run() {
  local rc=0 verdict="every step did what it must"
  [ ${#failures[@]} -eq 0 ] || { rc=1; verdict="FAILED: ${failures[*]}"; }
  echo "gpu-check run: $verdict" | tee -a "$out/summary.txt"
  pack_results
  exit "$rc"
}

run_step() {
  budget_s=${VTRACE_GPU_CHECK_BUDGET_S:-$budget_s}
  [[ "$budget_s" =~ ^[0-9]+$ ]] || die "VTRACE_GPU_CHECK_BUDGET_S must be a whole number of seconds, not '$budget_s'"
  run_start=$SECONDS
  if [ -z "${VTRACE_GPU_CHECK_BIN:-}" ]; then
    local name
    for name in vtrace runtime_conformance_test vtrace_bench; do
      [ -x "$carry/$name" ] || die "no carried build in $carry ($name is missing): run 'scripts/gpu-check.sh build' first and carry it"
    done
  fi
  out=${OUT:-$build/out}
  mkdir -p "$out"
  : >"$out/summary.txt"
  export LD_LIBRARY_PATH="$PWD/$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # cuBLAS where the CUDA toolkit keeps it, last, for a machine whose loader is not told of it
  # (cuda-cublas loads libcublas.so.<major> when it opens, and would be unavailable).
  local dir
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$dir" ] && LD_LIBRARY_PATH+=":$dir"
  done
  # Still not found (a CUDA installed elsewhere, or only as Python wheels): the first
  # libcuBLAS of the carried binaries' version anywhere on this file system, said in the summary.
  local missing="" found
  if [ -z "${VTRACE_GPU_CHECK_BIN:-}" ] && [ -s "$carry/cublas-soname" ]; then
    missing=$(cat "$carry/cublas-soname")
    # Where the loader would look: LD_LIBRARY_PATH, then ld.so.cache's entries (which may name a
    # file that is gone).
    local candidates
    candidates=$(for dir in ${LD_LIBRARY_PATH//:/ }; do echo "$dir/$missing"; done
      ldconfig -p 2>/dev/null | awk -v n="$missing" '$1 == n { print $NF }')
    while read -r found; do
      [ -n "$found" ] && [ -e "$found" ] && missing="" && break
    done <<<"$candidates"
  fi
  if [ -n "$missing" ]; then
    found=$(timeout 60 find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o \
      -name "$missing" \( -type f -o -type l \) -print 2>/dev/null | head -1)
    if [ -n "$found" ]; then
      LD_LIBRARY_PATH+=":$(dirname "$found")"
      echo "gpu-check run: $missing found at $found, outside the loader's paths" | tee -a "$out/summary.txt"
    else
      echo "gpu-check run: $missing is nowhere on this machine: cuda-cublas will be unavailable" | tee -a "$out/summary.txt"
    fi
  fi
  export VTRACE_TEST_DATA_DIR="$PWD/tests/data"
  choose_binaries
  local vtrace=$bin/vtrace

  # What the machine says of its GPU and driver, kept even when the probe below finds no usable
  # device (a driver older than the toolkit is the likely reason then).
  command -v nvidia-smi >/dev/null && nvidia-smi >"$out/nvidia-smi.txt" 2>&1
  # Up front: is a CUDA device usable? The cuda runtime itself answers (exit 3: unavailable).
  local probe rc
  probe=$(timeout 120 "$vtrace" replay traces/contract-v1.2.vtrace --runtime cuda 2>&1)
  rc=$?
  if [ "$rc" -eq 3 ]; then
    echo "gpu-check: no usable CUDA GPU here, nothing was run: $probe" | tee -a "$out/summary.txt" >&2
    exit "$kExitNoGpu"
  fi
  echo "gpu-check run: the cuda runtime opened (a CUDA device answered); results under $out" | tee -a "$out/summary.txt"
  [ "$rc" -eq 0 ] || { echo "FAIL  probe: the contract trace did not replay on cuda (exit $rc): $probe" | tee -a "$out/summary.txt"; failures+=(probe); }

  local rt
  # "[conformance]": the suite's cases only (the emulated stand-in binary holds its own cases too).
  for rt in cuda cuda-cublas; do
    step "conformance-$rt" 180 0 env VTRACE_CONFORMANCE_RUNTIME="$rt" \
      "$bin/runtime_conformance_test" "[conformance]" --name "conformance-$rt" --durations yes
  done

  # The performance goals next, before the host-side replays and comparisons, so that a run short
  # of time still has its figures. 15 benchmarks (the strict kernel and cuBLAS on 3 shapes, 9
  # candidates): on the H200 on 2026-12-04 the first 6 took 72 s, about 12 s each.
  if [ -x "$bin/vtrace_bench" ]; then
    step bench-cuda 300 0 "$bin/vtrace_bench" --benchmark_filter=CudaDenseLinear \
      --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
      --benchmark_out="$out/bench-cuda.json" --benchmark_out_format=json
  else
    echo "skip  bench-cuda: no vtrace_bench in $bin" | tee -a "$out/summary.txt"
  fi
  if [ -s "$out/bench-cuda.json" ]; then
    # The strict kernel against cuBLAS per shape (median times), with the counters and the goals.
    python3 scripts/gpu_bench_summary.py "$out/bench-cuda.json" | tee -a "$out/summary.txt"
  fi

  local trace=$out/decode-cuda.vtrace
  step record-decode-cuda 120 0 "$vtrace" record --workload decode --runtime cuda -o "$trace"
  step replay-on-reference 120 0 "$vtrace" replay "$trace" --runtime reference
  step replay-on-cpu 120 0 "$vtrace" replay "$trace" --runtime cpu
  step compare-reference-cuda-cpu 180 0 "$vtrace" compare "$trace" --runtimes reference,cuda,cpu \
    --json "$out/compare-bitwise.json"
  # cuBLAS drifts: compare exits 1 and names the first divergent command.
  step drift-cublas 180 1 "$vtrace" compare "$trace" --runtimes reference,cuda-cublas --deep \
    --json "$out/drift-cublas.json" --html "$out/drift-cublas.html"
  local event=""
  if [ -s "$out/drift-cublas.json" ]; then
    event=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1])).get("first_divergence")
print(d["event"] if d else "")' "$out/drift-cublas.json" 2>>"$out/drift-cublas.log")
  fi
  if [ -n "$event" ]; then
    echo "      first divergence of cuda-cublas: event $event" | tee -a "$out/summary.txt"
    step extract-first-divergence 120 0 "$vtrace" extract "$trace" --event "$event" \
      -o "$out/repro.vtrace" --json "$out/repro.json"
    step repro-on-reference 60 0 "$vtrace" replay "$out/repro.vtrace" --runtime reference
    step repro-on-cuda-cublas 60 1 "$vtrace" replay "$out/repro.vtrace" --runtime cuda-cublas
  else
    echo "FAIL  drift-cublas: no first divergence in drift-cublas.json" | tee -a "$out/summary.txt"
    failures+=(first-divergence)
  fi

  finish_run
}

case "${1:-}" in
  build) build_step ;;
  run) run_step ;;
  *)
    echo "usage: scripts/gpu-check.sh build|run (docs/CUDA.md)" >&2
    exit 2
    ;;
esac
