#!/usr/bin/env bash
# Builds every libFuzzer target (fuzz/README.md) with clang, ASan and UBSan in build-fuzz/, then
# runs each for SECONDS (default 30; 0 builds only). Installs clang and libclang-rt-14-dev with
# apt-get when missing, and fails loudly when libFuzzer cannot build or run here.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Each target starts from its seeds in fuzz/corpus/<target>/ and keeps what it finds in
# build-fuzz/corpus/<target>/ (the seeds are never written to); crashes, leaks and timeouts go to
# build-fuzz/artifacts/<target>/, logs to build-fuzz/logs/. FUZZ_JOBS targets run at once
# (default 1). Exit status: 0 when every target ran its time without a finding, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_grammar fuzz_envelope fuzz_readers fuzz_differential fuzz_adapters fuzz_context)
jobs="${FUZZ_JOBS:-1}"
build="${RECOURSE_FUZZ_BUILD:-build-fuzz}"

die() {
  echo "scripts/fuzz.sh: error: $*" >&2
  exit 1
}

scripts/deps.sh
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y "${missing[@]}" ||
    die "could not install ${missing[*]}; libFuzzer needs them"
fi
command -v clang++ >/dev/null || die "clang++ is not on PATH"

# libFuzzer itself: a one-line target must link and run.
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf '#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' \
  >"$probe/probe.cpp"
clang++ -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" 2>"$probe/log" ||
  die "clang++ cannot build a libFuzzer target (is libclang-rt-14-dev installed?): $(cat "$probe/log")"
"$probe/probe" -runs=10 >"$probe/log" 2>&1 || die "a libFuzzer target does not run here: $(tail -5 "$probe/log")"

CXX=clang++ cmake -S . -B "$build" -DRECOURSE_FUZZ=ON -DRECOURSE_BUILD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target "${targets[@]}" -j"$(nproc)"
[ "$seconds" -eq 0 ] && exit 0

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p "$build/logs"
run() {
  local t="$1"
  mkdir -p "$build/corpus/$t" "$build/artifacts/$t"
  # The seeds directory comes last: libFuzzer writes new inputs to the first one only.
  "$build/fuzz/$t" "$build/corpus/$t" "fuzz/corpus/$t" -dict=fuzz/recourse.dict \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t/" >"$build/logs/$t.log" 2>&1
}
declare -A status
pids=()
names=()
for t in "${targets[@]}"; do
  [ -x "$build/fuzz/$t" ] || die "no such target: $t"
  echo "fuzzing $t for ${seconds}s (log: $build/logs/$t.log)"
  run "$t" &
  pids+=($!)
  names+=("$t")
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" && status[${names[0]}]=0 || status[${names[0]}]=$?
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" && status[${names[$i]}]=0 || status[${names[$i]}]=$?
done

failed=0
printf '\n%-20s %8s %10s %12s  %s\n' target exec/s corpus runs result
for t in "${targets[@]}"; do
  log="$build/logs/$t.log"
  done_line="$(grep -a 'DONE' "$log" | tail -1 || true)"
  last_line="$(grep -a 'exec/s:' "$log" | tail -1 || true)"
  execs="$(grep -a '^stat::number_of_executed_units' "$log" | tail -1 | awk '{print $2}' || true)"
  rate="$(sed -n 's/.*exec\/s: \([0-9]*\).*/\1/p' <<<"$last_line")"
  corpus="$(sed -n 's/.*corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$last_line")"
  if [ "${status[$t]}" -eq 0 ] && [ -n "$done_line" ]; then
    result="ok"
  else
    result="FAILED (exit ${status[$t]}): see $log and $build/artifacts/$t/"
    failed=1
    grep -a -m1 -A3 -E 'FUZZ PROPERTY BROKEN|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' "$log" >&2 || tail -20 "$log" >&2
  fi
  printf '%-20s %8s %10s %12s  %s\n' "$t" "${rate:--}" "${corpus:--}" "${execs:--}" "$result"
done
exit "$failed"
