#!/usr/bin/env bash
# One-command runner: builds what is missing, runs every engine in its own process, prints the table.
#   ./run.sh                 all engines
#   ENGINES="native-js cpp:lut" ./run.sh   a subset (JS engine = file in engines/, C++ = cpp:<variant>,
#                                          recourse = recourse:<variant> from the CMake build,
#                                          $RECOURSE_PEER or ../../build/bench/recourse_peer;
#                                          recourse-wasm*: the npm package in ../../js, built by
#                                          scripts/wasm.sh)
# Env: REPS (default 5), TARGET_MS (min ms per timed repetition, default 300), SEED, N (inputs).
set -euo pipefail
cd "$(dirname "$0")"
export REPS="${REPS:-5}" TARGET_MS="${TARGET_MS:-300}"

[ -d node_modules ] || npm ci --no-audit --no-fund >&2
[ -f data/inputs.json ] && [ -f data/inputs.bin ] && [ -f data/domain.bin ] || node gen.mjs
if [ ! -x cpp/bench ] || [ cpp/bench.cpp -nt cpp/bench ]; then
  g++ -O2 -std=c++17 -Wall -o cpp/bench cpp/bench.cpp
fi

DEFAULT="recourse:decide recourse:unpinned recourse-wasm recourse-wasm-json cpp:lut-inline cpp:lut cpp:ifchain-inline cpp:ifchain cpp:ifchain-str native-js \
cel-marcbachmann cel-bufbuild json-logic json-rules-engine cedar-hostmin cedar-exclusive"
mkdir -p results
OUT="results/run-$(date +%Y%m%d-%H%M%S).jsonl"
: > "$OUT"
for e in ${ENGINES:-$DEFAULT}; do
  echo "running $e ..." >&2
  if [[ "$e" == recourse:* ]]; then
    cmd=("${RECOURSE_PEER:-../../build/bench/recourse_peer}" "${e#recourse:}" data/inputs.bin data/domain.bin)
  elif [[ "$e" == cpp:* ]]; then
    cmd=(./cpp/bench "${e#cpp:}" data/inputs.bin data/domain.bin)
  else
    cmd=(node bench.mjs "$e")
  fi
  if ! line=$(timeout 900 "${cmd[@]}" 2>"results/last-stderr.txt" | tail -n 1) || [ -z "$line" ]; then
    msg=$(tail -c 300 results/last-stderr.txt | tr '\n"\\' '   ')
    line="{\"engine\":\"$e\",\"error\":\"exit/timeout: $msg\"}"
  fi
  echo "$line" >> "$OUT"
done
echo "machine: $(nproc) cpu(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load avg $(cut -d' ' -f1-3 /proc/loadavg)"
echo "raw results: $OUT"
node table.mjs "$OUT"
