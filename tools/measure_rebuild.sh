#!/usr/bin/env bash
# tools/measure_rebuild.sh — how long an incremental rebuild takes after one source file changes.
#
#   tools/measure_rebuild.sh [BUILD_DIR] [FILE]
#     BUILD_DIR  default build (configured and built already: run tools/bootstrap test first)
#     FILE       default judge/src/judge.cpp (a judge source: every door and most tests link the judge)
#
# Builds once so that nothing else is pending, touches FILE, rebuilds everything the build dir builds,
# and prints the wall time and the number of build steps. A figure to print, not a test (issue 20's
# target: <= 60 s on the 2-core machine for a judge source).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build}
file=${2:-$here/judge/src/judge.cpp}
[[ -f $build/build.ninja ]] || { echo "measure_rebuild.sh: $build is not a configured Ninja build (run tools/bootstrap test)" >&2; exit 2; }
[[ -f $file ]] || { echo "measure_rebuild.sh: no such file: $file" >&2; exit 2; }
cmake --build "$build" -j 2 >/dev/null
touch "$file"
steps=$(ninja -C "$build" -n | grep -c '^\[' || true)
start=$(date +%s.%N)
cmake --build "$build" -j 2 >/dev/null
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v f="${file#"$here"/}" -v n="$steps" -v b="$build" 'BEGIN { printf "[rebuild] touched %s: %.1f s, %d build steps (%s)\n", f, e - s, n, b }'
