#!/bin/bash
# cold_start.sh - kdsl-run's first token with a cold kernel cache and with one kdsl-prewarm filled, alternated; run from the repository root
# usage: bench/cold_start.sh MODEL [RUNS]   (the figures of bench/RESULTS.md's cold-start entry)
set -euo pipefail
model=${1:?usage: bench/cold_start.sh MODEL [RUNS]}
runs=${2:-3}
tools=./build/src/tools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tools/kdsl-prewarm" -m "$model" --target host --cache-dir "$work/prewarmed"
summary() {
  python3 -c "import json,sys; s=json.load(sys.stdin)['summary']; print('$1', 'load_ms', round(s['load_ms'],1), 'prompt_ms', round(s['prompt_ms'],1),
    'of which compiling', round(s['prompt_compile_ms'],1), 'compiled', s['kernels_compiled'], 'disk_hits', s['kernel_cache_disk_hits'])"
}
for ((i = 0; i < runs; ++i)); do
  rm -rf "$work/cold"
  "$tools/kdsl-run" -m "$model" -p "Once upon a time" -n 1 --temp 0 --cache-dir "$work/cold" --output-format json 2>/dev/null | summary cold
  "$tools/kdsl-run" -m "$model" -p "Once upon a time" -n 1 --temp 0 --cache-dir "$work/prewarmed" --output-format json 2>/dev/null | summary prewarmed
done
uptime
