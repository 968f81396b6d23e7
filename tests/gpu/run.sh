#!/usr/bin/env bash
# run.sh - one command for a machine with an NVIDIA GPU (written for an H200): build, check every
# GPU kernel test against the CPU backend, print the benchmark table.
#
# Honest status (written on a machine without a GPU or driver):
#   - UNTESTED on a GPU: everything this script runs on the device. The PTX/cubin it loads is
#     checked here only by ptxas (tests/codegen/nvptx_compile_test.cpp: assembles for sm_80 and
#     sm_90, no spills); no kdsl kernel has executed on an NVIDIA GPU yet.
#   - Tested without a GPU: the build, the driver's error paths, and that the GPU tests and
#     kdsl-bench-cuda report "no NVIDIA driver found" and skip/exit cleanly.
#   - The GPU tests go through the public path (Device::cuda, Buffer, kdsl::compile's launch:
#     specialization, memory/disk cache with cubins per sm_XX, cuLaunchKernel) and
#     kdsl::cuda_source (NVRTC); tests/gpu/cuda_runtime_test.cpp covers Buffers, the
#     host-pointer refusal, NVRTC launches and dynamic shared memory past 48 KB. Here that path
#     ran against a fake libcuda (tests/runtime/cuda_fake_driver_test.cpp: cubins cached and
#     loaded, launch shape and argument bytes checked), never executing a kernel.
#   - The engine runs on the GPU (weights uploaded once, activations and paged KV cache in device
#     memory); tests/gpu/cuda_engine_test.cpp compares its logits with the CPU engine's and
#     checks stories260K's greedy ids. Here it ran only against the fake libcuda
#     (tests/models/engine_cuda_test.cpp: uploads, launches and per-token copies counted).
#   - f16/bf16 and i8 dot lower to mma.sync with ldmatrix operands and cp.async pipelining on
#     sm_80+ (checked here by ptxas and by the SIMT emulator, which executes ldmatrix, mma.sync
#     and cp.async on the CPU); tile sizes and num_stages are not tuned, and there is no
#     Hopper wgmma path yet, so expect matmul below cuBLAS.
# Usage: tests/gpu/run.sh [build-dir]    (default: build-gpu; uses all cores of the GPU machine)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
JOBS=${JOBS:-$(nproc)}

echo "== configure and build ($BUILD, -j$JOBS)"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKDSL_BUILD_TESTS=ON >/dev/null
ninja -C "$BUILD" -j"$JOBS" kdsl_tests kdsl-compile kdsl-bench-cuda kdsl-bench-engine

echo "== GPU found?"
if command -v nvidia-smi >/dev/null; then nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; else echo "nvidia-smi not found"; fi

echo "== compile every example for sm_90 (stages in $BUILD/kdsl-compile)"
"$BUILD"/src/tools/kdsl-compile --target sm_90 --out "$BUILD/kdsl-compile"

echo "== unit tests (codegen, runtime)"
"$BUILD"/tests/kdsl_tests --source-file='*tests/codegen/*' --no-intro
"$BUILD"/tests/kdsl_tests --source-file='*tests/runtime/*' --no-intro

echo "== GPU kernel tests against the CPU backend"
# Each check prints 'no CUDA device' and passes vacuously when the driver is missing: make that loud.
out=$("$BUILD"/tests/kdsl_tests --source-file='*tests/gpu/*' --no-intro 2>&1) || { echo "$out"; exit 1; }
echo "$out"
if grep -q "no CUDA device" <<<"$out"; then echo "ERROR: the GPU tests did not find a CUDA device"; exit 1; fi

echo "== baselines (PyTorch / Triton, where installed)"
BASE="$BUILD/gpu-baselines.json"
if command -v python3 >/dev/null; then python3 tests/gpu/baselines.py > "$BASE" || echo '{}' > "$BASE"; else echo '{}' > "$BASE"; fi
cat "$BASE"

echo "== benchmark table ($(date -u +%Y-%m-%d), record it in bench/RESULTS.md with the GPU and this command)"
"$BUILD"/src/tools/kdsl-bench-cuda --baselines "$BASE"

echo "== engine: decode and prompt on a Llama-3-8B-shaped synthetic model in bf16 (writes a 16 GB model to /tmp)"
"$BUILD"/src/tools/kdsl-bench-engine --device cuda --preset llama3-8b --type bf16 --prompt 512 --decode 32 --dir /tmp/kdsl-bench-models --keep
