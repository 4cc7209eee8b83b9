#!/usr/bin/env bash
# Formats the tree with clang-format (Google base, 100 columns) and, with --tidy, runs clang-tidy
# over the compile database of build/.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.h' '*.cpp')
clang-format -i $files
if [ "${1:-}" = "--tidy" ]; then
  [ -f build/compile_commands.json ] || { echo "format.sh: run 'make build' first" >&2; exit 2; }
  clang-tidy -p build --quiet $(git ls-files '*.cpp' | grep -v '^tests/') || true
fi
