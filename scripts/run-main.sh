#!/usr/bin/env bash
# run-main.sh - the main job: run each example kernel (each checks itself), the quick
# kdsl-bench table, then kdsl-run generating text on a synthetic Llama it writes into build/
set -euo pipefail
cd "$(dirname "$0")/.."
for example in vector_add softmax layer_norm matmul; do
  ./build/examples/example_"$example"
done
./build/src/tools/kdsl-bench --quick

# A synthetic model of the Llama 2 110M shape (dim 768, 12 layers, vocab 32000) in f16. Its
# weights are random numbers, so the text it generates is gibberish: this shows the engine
# running end to end (tokenizer, prefill, decode, sampling, the summary), not a trained model.
model=build/synthetic-llama-110m-f16.gguf
if [ ! -f "$model" ]; then
  ./build/models/kdsl-synth -o "$model" --preset 110m --type f16
fi
echo
echo "== kdsl-run on $model (random weights: expect gibberish) =="
./build/src/tools/kdsl-run -m "$model" -p "Once upon a time" -n 32 --seed 1

# A real (tiny) trained model, when the shared test models are laid out beside the checkout.
shared=../shared/models
if [ -f "$shared/aidreams260K.bin" ] && [ -f "$shared/aidreams-tok512.bin" ]; then
  echo
  echo "== kdsl-run on $shared/aidreams260K.bin (a trained 260K-parameter llama2.c model), greedy =="
  ./build/src/tools/kdsl-run -m "$shared/aidreams260K.bin" -z "$shared/aidreams-tok512.bin" -p "I dreamed" -n 64 --temp 0
fi
