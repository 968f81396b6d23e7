#!/usr/bin/env bash
# run-main.sh - the main job: run each example kernel (each checks itself), then kdsl-bench
set -euo pipefail
cd "$(dirname "$0")/.."
for example in vector_add softmax layer_norm matmul; do
  ./build/examples/example_"$example"
done
./build/src/tools/kdsl-bench --quick
