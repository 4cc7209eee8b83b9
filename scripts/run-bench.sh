#!/usr/bin/env bash
# Runs the benchmark suite of a Release build with repetitions and prints medians.
# Usage: scripts/run-bench.sh [BUILD_DIR] [extra google-benchmark flags]
set -euo pipefail
dir=${1:-build-release}; shift || true
exec "$dir/bench/vtrace_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_display_aggregates_only=true "$@"
