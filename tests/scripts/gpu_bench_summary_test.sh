#!/usr/bin/env bash
# scripts/gpu_bench_summary.py on the JSON of bench_cuda.cpp's own code, run on the emulated
# cudart (vtrace_bench_cuda_emulated): the decode shape 1x4096x11008 only (the host computes what
# the GPU would), with the arguments of gpu-check.sh's bench step. The summary must give that
# shape its line (both kernels' median times, the counters, the ratio) and its goals line, and
# report a benchmark that could not run; a JSON it cannot read exits 1.
# Usage: gpu_bench_summary_test.sh VTRACE_BENCH_CUDA_EMULATED REPO_ROOT. Exits 77 without python3.
set -eu
command -v python3 >/dev/null || { echo "python3 is not installed: skipped"; exit 77; }
bench=$1
summary=$2/scripts/gpu_bench_summary.py
work=$(mktemp -d "${TMPDIR:-/tmp}/vtrace-bench-summary.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "gpu_bench_summary_test: $*"
  exit 1
}
"$bench" --benchmark_filter='CudaDenseLinear/.*/rows:1/' --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.01 \
  --benchmark_out="$work/bench.json" --benchmark_out_format=json >"$work/bench.log" 2>&1 ||
  { cat "$work/bench.log"; fail "the emulated bench failed"; }
python3 "$summary" "$work/bench.json" >"$work/summary.txt" || fail "the summary exited $?"
cat "$work/summary.txt"
shape="rows:1/in:4096/out:11008"
grep -Eq "^      $shape: strict [0-9.]+ us \([0-9]+ GB/s, [0-9.]+% HBM, [0-9]+ GFLOP/s, [0-9.]+% FP32\), cublas [0-9.]+ us, strict/cublas time [0-9.]+$" \
  "$work/summary.txt" || fail "no result line for $shape"
grep -Eq "^      $shape: goals (met|missed: .+)$" "$work/summary.txt" || fail "no goals line for $shape"
[ "$(grep -c ": strict " "$work/summary.txt")" -eq 1 ] || fail "a line for a shape that did not run"
# A candidate kernel (strict_<configuration>) gets its own line against the strict kernel and
# cuBLAS; the goals line stays the strict kernel's.
python3 - "$work/bench.json" "$work/candidate.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for b in list(d["benchmarks"]):
    name = b["run_name"]
    if name.startswith("BM_CudaDenseLinear/strict/") and b.get("aggregate_name") == "median":
        c = dict(b, run_name=name.replace("/strict/", "/strict_pipelined_test/"))
        c["real_time"] = b["real_time"] * 2
        d["benchmarks"].append(c)
json.dump(d, open(sys.argv[2], "w"))
PY
python3 "$summary" "$work/candidate.json" >"$work/candidate.txt" || fail "the summary exited $?"
grep -Eq "^      $shape: candidate pipelined_test [0-9.]+ us \([0-9.]+% FP32, [0-9.]+% HBM\), candidate/strict time 2.00, candidate/cublas time [0-9.]+$" \
  "$work/candidate.txt" || fail "no candidate line for $shape"
[ "$(grep -c ": goals " "$work/candidate.txt")" -eq 1 ] || fail "a candidate changed the goals lines"
# A benchmark that could not run is named, with its reason.
python3 - "$work/bench.json" "$work/broken.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["benchmarks"].append({"name": "BM_CudaDenseLinear/cublas/rows:8/in:4096/out:4096/manual_time",
                        "run_name": "BM_CudaDenseLinear/cublas/rows:8/in:4096/out:4096/manual_time",
                        "error_occurred": True, "error_message": "cublasCreate failed"})
json.dump(d, open(sys.argv[2], "w"))
PY
python3 "$summary" "$work/broken.json" | grep -q "rows:8/in:4096/out:4096/manual_time: did not run: cublasCreate failed" ||
  fail "a benchmark that did not run is not named"
echo '{"benchmarks": ' >"$work/truncated.json"
rc=0
python3 "$summary" "$work/truncated.json" 2>"$work/err.txt" || rc=$?
[ "$rc" -eq 1 ] && grep -q "cannot read" "$work/err.txt" || fail "a truncated JSON did not exit 1 with a sentence (exit $rc)"
echo "gpu_bench_summary_test: ok"
