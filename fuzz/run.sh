#!/usr/bin/env bash
# fuzz/run.sh — build the libFuzzer targets (fuzz/CMakeLists.txt) and run each for a while.
#
#   fuzz/run.sh [BUILD_DIR] [SECONDS_PER_TARGET] [TARGET...]
#     BUILD_DIR           default <repo>/build-fuzz (git-ignored); configured with CC=clang CXX=clang++
#     SECONDS_PER_TARGET  default 20 (libFuzzer -max_total_time)
#     TARGET              safetensors npy config_json (default: all three)
#   environment: CC, CXX (default clang, clang++), CMAKE (default cmake), FUZZ_JOBS (build, default 2),
#                ROPECHECK_FUZZ_FINITE=0 (config_json: non-finite frequencies are not findings),
#                FUZZ_STACK_KB (run the targets with this stack limit, e.g. 1024: recursion per JSON
#                level then overflows within -max_len; the system default otherwise)
#
# Each target fuzzes a temporary copy of fuzz/corpus/<target>/ (new inputs never go into the repo)
# with its dictionary, -max_len suited to the format, -rss_limit_mb=2048, -malloc_limit_mb=64 (a
# reader that allocates what a header claims instead of what the file holds is a finding) and
# -timeout=10 per input. Prints executions, executions/s, coverage and crashes per target. Exit
# status: 0 if every target ran clean; 1 if one crashed, leaked, ran out of memory or timed out
# (the input is kept in BUILD_DIR/artifacts/<date-time>/ and the command that replays it is
# printed); 2 if the tools are missing or the build failed. Logs: BUILD_DIR/logs/<target>.log.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$repo/build-fuzz}
seconds=${2:-20}
shift $(($# < 2 ? $# : 2))
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(safetensors npy config_json)
export CC=${CC:-clang} CXX=${CXX:-clang++}
cmake=${CMAKE:-cmake}

declare -A max_len=([safetensors]=8192 [npy]=4096 [config_json]=8192)
for t in "${targets[@]}"; do
  [[ -n ${max_len[$t]:-} ]] || { echo "run.sh: unknown target '$t' (want: safetensors npy config_json)" >&2; exit 2; }
done
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "run.sh: seconds must be a positive integer, got '$seconds'" >&2; exit 2; }

missing() {
  echo "run.sh: $1" >&2
  echo "run.sh: the fuzz targets need clang++ with its libFuzzer/ASan/UBSan runtime (Debian: clang, libclang-rt-14-dev," >&2
  echo "        listed in tools/debian-packages.txt). Run tools/bootstrap to install what is missing." >&2
  exit 2
}
command -v "$CXX" >/dev/null || missing "C++ compiler '$CXX' not found"
command -v "$cmake" >/dev/null || missing "cmake not found"
work=$(mktemp -d "${TMPDIR:-/tmp}/ropecheck-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The runtime check: link a trivial fuzz target (clang without libclang-rt-*-dev fails here).
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' > "$work/probe.cpp"
"$CXX" -fsanitize=fuzzer,address,undefined "$work/probe.cpp" -o "$work/probe" 2> "$work/probe.log" ||
  { cat "$work/probe.log" >&2; missing "'$CXX' cannot link a libFuzzer target with -fsanitize=fuzzer,address,undefined"; }

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
[[ -f $build/CMakeCache.txt ]] && generator=()  # keep whatever generator the build dir already has
echo "run.sh: building the fuzz targets in $build ($CXX)"
"$cmake" -S "$repo/fuzz" -B "$build" "${generator[@]}" -DCMAKE_CXX_COMPILER="$CXX" > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log" >&2; echo "run.sh: configuring $repo/fuzz failed" >&2; exit 2; }
"$cmake" --build "$build" -j "${FUZZ_JOBS:-2}" > "$work/build.log" 2>&1 ||
  { tail -n 60 "$work/build.log" >&2; echo "run.sh: building the fuzz targets failed" >&2; exit 2; }

# Inputs that failed are kept per run (never deleted by a later run).
artifacts="$build/artifacts/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$artifacts" "$build/logs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=0
summary=()
for t in "${targets[@]}"; do
  corpus="$work/corpus-$t"
  cp -r "$repo/fuzz/corpus/$t" "$corpus"
  log="$build/logs/$t.log"
  echo "run.sh: fuzz_$t for ${seconds} s (max_len ${max_len[$t]}), log $log"
  (
    [[ -z ${FUZZ_STACK_KB:-} ]] || ulimit -s "$FUZZ_STACK_KB"
    exec "$build/fuzz_$t" "$corpus" -dict="$repo/fuzz/$t.dict" -max_total_time="$seconds" -max_len="${max_len[$t]}" \
      -rss_limit_mb=2048 -malloc_limit_mb=64 -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/$t-"
  ) > "$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' <<< "$last")
  mapfile -t found < <(ls "$artifacts/$t-"* 2>/dev/null)
  if [[ $rc -ne 0 || ${#found[@]} -gt 0 ]]; then
    failed=1
    echo "run.sh: fuzz_$t FAILED (exit $rc):" >&2
    grep -E '^(==[0-9]+==ERROR|SUMMARY|FUZZ_CHECK|.*runtime error:|.*terminate called|ALARM|.*out-of-memory|.*malloc\(.*exceeds)' "$log" | head -n 8 >&2
    if [[ ${#found[@]} -gt 0 ]]; then
      for f in "${found[@]}"; do
        echo "  input:     $f" >&2
        replay="$build/fuzz_$t $f"
        [[ -z ${ROPECHECK_FUZZ_FINITE:-} ]] || replay="ROPECHECK_FUZZ_FINITE=$ROPECHECK_FUZZ_FINITE $replay"
        [[ -z ${FUZZ_STACK_KB:-} ]] || replay="(ulimit -s $FUZZ_STACK_KB; $replay)"
        echo "  reproduce: $replay" >&2
      done
    else
      echo "  (no input saved; see $log)" >&2
    fi
  fi
  summary+=("$(printf '%-12s %10s %8s %6s %6s %10s  %s' "$t" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" \
    "$( ((${#found[@]})) && echo "${found[*]}" || { ((rc)) && echo "exit $rc" || echo 0; })")")
done

printf '\n%-12s %10s %8s %6s %6s %10s  %s\n' target executions exec/s cov ft corpus crashes
printf '%s\n' "${summary[@]}"
rmdir "$artifacts" 2>/dev/null  # nothing found: leave no empty folder
exit $failed
