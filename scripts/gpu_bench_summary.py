#!/usr/bin/env python3
"""The CUDA benchmarks' summary (scripts/gpu-check.sh's bench step).

From vtrace_bench's JSON (--benchmark_out, with --benchmark_repetitions and
--benchmark_report_aggregates_only): one line per shape with the strict kernel's and cuBLAS's
median times, the strict kernel's counters and the time ratio, then one line saying whether the
issue's goals were met (docs/BENCHMARKS.md), then one line per candidate kernel measured on that
shape (strict_<candidate>: its time against the strict kernel's and cuBLAS's). The goals
are information, never the exit status: 0 when the JSON could be read, 1 when it could not, 2 on
a wrong command line.
Tested by tests/scripts/gpu_bench_summary_test.sh, on bench_cuda run on the emulated cudart.
Usage: gpu_bench_summary.py BENCH.json
"""
import json
import sys


def main(argv):
    if len(argv) != 2:
        print("usage: gpu_bench_summary.py BENCH.json", file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            benchmarks = json.load(f)["benchmarks"]
    except (OSError, ValueError, KeyError) as e:
        print(f"gpu_bench_summary: cannot read {argv[1]}: {e}", file=sys.stderr)
        return 1
    # A benchmark that could not run (SkipWithError) has error_occurred and no aggregates.
    for b in benchmarks:
        if b.get("error_occurred"):
            print(f"      {b.get('run_name', b.get('name', '?'))}: did not run: "
                  f"{b.get('error_message', '')}")
    by = {}
    for b in benchmarks:
        if b.get("aggregate_name") != "median" or b.get("error_occurred"):
            continue
        # run_name: BM_CudaDenseLinear/<strict|cublas|strict_NAME>/rows:R/in:I/out:O/manual_time
        parts = b["run_name"].split("/")
        if len(parts) < 5 or parts[0] != "BM_CudaDenseLinear":
            continue
        by.setdefault("/".join(parts[2:5]), {})[parts[1]] = b
    if not by:
        print("      no median result of BM_CudaDenseLinear in the JSON")
    for shape, k in sorted(by.items()):
        s, c = k.get("strict"), k.get("cublas")
        if not s or not c:
            print(f"      {shape}: only {'strict' if s else 'cublas'} has a result: no ratio")
            continue
        ratio = s["real_time"] / c["real_time"] if c["real_time"] > 0 else float("inf")
        print(f"      {shape}: strict {s['real_time']:.1f} us "
              f"({s['GB/s']:.0f} GB/s, {s['%HBM']:.1f}% HBM, {s['GFLOP/s']:.0f} GFLOP/s, "
              f"{s['%FP32']:.1f}% FP32), cublas {c['real_time']:.1f} us, "
              f"strict/cublas time {ratio:.2f}")
        # The goals (docs/BENCHMARKS.md): decode (rows <= 8) within 1.5x of cuBLAS and at
        # least 60% of HBM; prefill at least 50% of the FP32 FMA peak.
        if int(shape.split("/")[0].split(":")[1]) <= 8:
            missed = [m for m, bad in ((f"time {ratio:.2f}x cuBLAS > 1.5x", ratio > 1.5),
                                       (f"{s['%HBM']:.1f}% HBM < 60%", s["%HBM"] < 60.0)) if bad]
        else:
            missed = [f"{s['%FP32']:.1f}% FP32 < 50%"] if s["%FP32"] < 50.0 else []
        print(f"      {shape}: goals " + ("met" if not missed else "missed: " + "; ".join(missed)))
        # The candidates for the runtime kernels' places (strict_<candidate>): each one's time
        # against the runtime's strict kernel and cuBLAS. Only information: the goals line above
        # is the runtime's kernel's.
        for name, b in sorted(k.items()):
            if not name.startswith("strict_"):
                continue
            print(f"      {shape}: candidate {name[len('strict_'):]} {b['real_time']:.1f} us "
                  f"({b['%FP32']:.1f}% FP32, {b['%HBM']:.1f}% HBM), "
                  f"candidate/strict time {b['real_time'] / s['real_time']:.2f}, "
                  f"candidate/cublas time {b['real_time'] / c['real_time']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
