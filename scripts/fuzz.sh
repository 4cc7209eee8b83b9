#!/usr/bin/env bash
# scripts/fuzz.sh [RUNS]: builds the libFuzzer targets of fuzz/ with clang-19 (ASan + UBSan, no
# recovery) in build-fuzz/, makes their seed corpora, runs each target for RUNS executions
# (default 2000000), one target at a time under `nice -n 10`, and prints per target: executions,
# seconds, exec/s, corpus size, crashers. Crashers go to build-fuzz/crashers/<target>/; keep each
# one, once fixed, under traces/corrupt/ (fuzz/README.md). Exits 1 when a target found a crasher.
#
# Environment: FUZZ_TARGETS="trace_file event_record replay_plan safetensors" (a subset to run),
#   FUZZ_BUILD=build-fuzz, FUZZ_JOBS=2 (build parallelism), FUZZ_MAX_SECONDS (stop each target
#   after this many seconds even if RUNS are not done; for a deadline, the figures say so).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-2000000}
BUILD=${FUZZ_BUILD:-build-fuzz}
JOBS=${FUZZ_JOBS:-2}
TARGETS=${FUZZ_TARGETS:-"trace_file event_record replay_plan safetensors"}
time_limit=()
[ -n "${FUZZ_MAX_SECONDS:-}" ] && time_limit=(-max_total_time="$FUZZ_MAX_SECONDS")

# Debian's clang 14 cannot compile std::expected with libstdc++ 12; clang 19 can (bookworm).
scripts/install-deps.sh clang-19 libclang-rt-19-dev

# The libraries get coverage instrumentation without libFuzzer's main (fuzzer-no-link); the
# targets link -fsanitize=fuzzer (fuzz/CMakeLists.txt). -ffp-contract=off stays (VtraceWarnings).
# -Werror stays off here: clang 19's warnings are not the g++ build's contract.
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_C_COMPILER=clang-19 -DVTRACE_FUZZ=ON \
  -DVTRACE_WERROR=OFF -DVTRACE_BUILD_BENCH=OFF \
  -DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  "${launcher[@]}" >/dev/null
fuzz_bins=()
for t in $TARGETS; do fuzz_bins+=("fuzz_$t"); done
nice -n 10 cmake --build "$BUILD" -j "$JOBS" --target "${fuzz_bins[@]}" fuzz_seeds

# Seed corpora: the golden traces and the kept corrupt files; for the event target, every event
# record of the golden traces and the kept .event files; for safetensors, the test fixture and fuzz_bodies' hand-made files.
seeds="$BUILD/seeds"
rm -rf "$seeds"
mkdir -p "$seeds/trace" "$seeds/event" "$seeds/safetensors"
cp traces/*.vtrace "$seeds/trace/"
if compgen -G "traces/corrupt/*.vtrace" >/dev/null; then cp traces/corrupt/*.vtrace "$seeds/trace/"; fi
"$BUILD/fuzz/fuzz_seeds" events "$seeds/event" traces/*.vtrace
if compgen -G "traces/corrupt/*.event" >/dev/null; then cp traces/corrupt/*.event "$seeds/event/"; fi
"$BUILD/fuzz/fuzz_seeds" safetensors "$seeds/safetensors"
cp tests/data/tiny_linear.safetensors "$seeds/safetensors/"
if compgen -G "traces/corrupt/*.safetensors" >/dev/null; then cp traces/corrupt/*.safetensors "$seeds/safetensors/"; fi

# -max_len (fuzz/README.md): 16 KiB holds the tiny and contract traces whole (2.7-13.5 KiB; the
# 132 KiB decode-short traces come in cut, which exercises recovery); one event record is under
# 2 KiB in every golden trace, so 4 KiB leaves room to grow one; 4 KiB of safetensors is a header
# with many entries plus data.
declare -A corpus=([trace_file]=trace [replay_plan]=trace [event_record]=event [safetensors]=safetensors)
declare -A max_len=([trace_file]=4096 [replay_plan]=4096 [event_record]=4096 [safetensors]=4096)
declare -A dict=([trace_file]=trace [replay_plan]=trace [event_record]=event [safetensors]=safetensors)

status=0
summary=()
for t in $TARGETS; do
  work="$BUILD/corpus/$t"
  crashers="$BUILD/crashers/$t"
  rm -rf "$work" "$crashers"  # every run starts from the seeds: its figures stand alone
  mkdir -p "$work" "$crashers"
  log="$BUILD/fuzz-$t.log"
  start=$(date +%s.%N)
  set +e
  nice -n 10 "$BUILD/fuzz/fuzz_$t" "$work" "$seeds/${corpus[$t]}" \
    -runs="$RUNS" -max_len="${max_len[$t]}" -dict="fuzz/${dict[$t]}.dict" \
    -artifact_prefix="$crashers/" -print_final_stats=1 -timeout=30 -rss_limit_mb=4096 "${time_limit[@]}" \
    >"$log" 2>&1
  rc=$?
  set -e
  end=$(date +%s.%N)
  secs=$(echo "$end - $start" | bc)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  found=$(find "$crashers" -type f | wc -l)
  size=$(find "$work" -type f | wc -l)
  rate=$(echo "scale=0; ${execs:-0} / $secs" | bc)
  line=$(printf '%-13s executions %9s  seconds %7.1f  exec/s %6s  corpus %5s  crashers %s (rc %s)' \
    "$t" "${execs:-0}" "$secs" "$rate" "$size" "$found" "$rc")
  echo "$line"
  summary+=("$line")
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    status=1
    echo "  see $log and $crashers/" >&2
  fi
done
echo "---"
printf '%s\n' "${summary[@]}"

# The regression tests of tests/fuzz under the same sanitizers: every seed, every kept crasher and
# the bound cases through the same bodies (`make test` runs them in the ordinary build).
nice -n 10 cmake --build "$BUILD" -j "$JOBS" --target fuzz_regression_test
if nice -n 10 "$BUILD/tests/fuzz/fuzz_regression_test" >"$BUILD/fuzz-regression.log" 2>&1; then
  echo "fuzz_regression_test (ASan+UBSan): $(tail -n 2 "$BUILD/fuzz-regression.log" | tr -s '\n' ' ')"
else
  echo "fuzz_regression_test (ASan+UBSan) FAILED: see $BUILD/fuzz-regression.log" >&2
  status=1
fi
exit $status
