#!/usr/bin/env bash
# scripts/gpu-check.sh run, every step but the benchmarks, on the emulated cudart
# (tests/runtime/cuda_emulator/): a bin folder (VTRACE_GPU_CHECK_BIN) holding vtrace_cuda_emulated
# as vtrace and runtime_cuda_emulated_test as runtime_conformance_test. The run must exit 0, its
# summary must call every step ok and name cuda-cublas's first divergent event, the benchmarks
# must be skipped (no vtrace_bench: emulated times mean nothing), and $OUT must hold at most the 8
# files the device tool brings back: the headline files and one archive with everything else.
# Then the run's budget: with none left every step is reported not run (exit 1), and a malformed
# budget is refused.
# What a GPU adds is the device itself: its kernels, cuBLAS, timings.
# Usage: gpu_check_emulated_test.sh VTRACE_CUDA_EMULATED RUNTIME_CUDA_EMULATED_TEST REPO_ROOT.
# Exits 77 (skipped) without python3, which the script reads the drift report with.
set -eu
command -v python3 >/dev/null || { echo "python3 is not installed: skipped"; exit 77; }
for binary in "$1" "$2"; do
  [ -x "$binary" ] || { echo "gpu_check_emulated_test: $binary is not built"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/vtrace-gpu-check-emulated.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
ln -s "$1" "$work/bin/vtrace"
ln -s "$2" "$work/bin/runtime_conformance_test"
cd "$3"
rc=0
OUT="$work/out" VTRACE_GPU_CHECK_BIN="$work/bin" bash scripts/gpu-check.sh run >"$work/run.log" 2>&1 || rc=$?
summary=$work/out/summary.txt
cat "$summary"
fail() {
  echo "gpu_check_emulated_test: $*"
  tail -40 "$work/run.log"
  exit 1
}
[ "$rc" -eq 0 ] || fail "gpu-check.sh run exited $rc, not 0"
for step in conformance-cuda conformance-cuda-cublas record-decode-cuda replay-on-reference \
  replay-on-cpu compare-reference-cuda-cpu drift-cublas extract-first-divergence \
  repro-on-reference repro-on-cuda-cublas; do
  grep -q "^ok    $step (" "$summary" || fail "the summary does not call step $step ok"
done
grep -q "first divergence of cuda-cublas: event [0-9]" "$summary" || fail "no first divergence named"
grep -q "^skip  bench-cuda: no vtrace_bench" "$summary" || fail "the benchmarks were not skipped"
grep -q "every step did what it must" "$summary" || fail "no final verdict"
# The device tool brings back at most 8 files from $OUT, 16 MiB each: the headline files as they
# are, and one archive of everything else, every step's log included.
count=$(find "$work/out" -type f | wc -l)
[ "$count" -le 8 ] || fail "$count files under \$OUT, more than the 8 the device tool brings back"
for file in summary.txt decode-cuda.vtrace compare-bitwise.json drift-cublas.json \
  drift-cublas.html gpu-check-results.tar.gz; do
  [ -s "$work/out/$file" ] || fail "$file is missing or empty"
  [ "$(stat -c %s "$work/out/$file")" -le $((16 * 1024 * 1024)) ] || fail "$file is over 16 MiB"
done
tar -tzf "$work/out/gpu-check-results.tar.gz" >"$work/packed.txt"
for file in repro.vtrace repro.json conformance-cuda.log conformance-cuda-cublas.log \
  record-decode-cuda.log drift-cublas.log repro-on-cuda-cublas.log; do
  grep -qx "$file" "$work/packed.txt" || fail "$file is not in gpu-check-results.tar.gz"
  [ ! -e "$work/out/$file" ] || fail "$file was packed but left beside the archive"
done

# A run whose budget is spent runs no step after the probe, fails each one by name, and still
# packs what it wrote.
rc=0
OUT="$work/spent" VTRACE_GPU_CHECK_BIN="$work/bin" VTRACE_GPU_CHECK_BUDGET_S=0 \
  bash scripts/gpu-check.sh run >"$work/spent.log" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "with no budget left gpu-check.sh run exited $rc, not 1"
for step in conformance-cuda record-decode-cuda drift-cublas; do
  grep -q "^FAIL  $step (not run: the run's budget of 0 s is spent)" "$work/spent/summary.txt" ||
    fail "with no budget left, step $step was not reported as not run"
done
grep -q "gpu-check run: FAILED: conformance-cuda " "$work/spent/summary.txt" || fail "no FAILED verdict"
[ -s "$work/spent/gpu-check-results.tar.gz" ] || fail "a failed run packed nothing"
rc=0
OUT="$work/bad" VTRACE_GPU_CHECK_BIN="$work/bin" VTRACE_GPU_CHECK_BUDGET_S=5m \
  bash scripts/gpu-check.sh run >"$work/bad.log" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q "VTRACE_GPU_CHECK_BUDGET_S must be a whole number of seconds, not '5m'" "$work/bad.log" ||
  fail "a malformed budget was not refused in one sentence (exit $rc)"
echo "gpu_check_emulated_test: every step did what it must"
