#!/usr/bin/env bash
# run.sh - the GPU check, for a machine with an NVIDIA GPU that is lent for minutes: every section in its own process
# under its own time limit inside one budget, every result written to $OUT as it comes, one table at the end.
#
# Usage: OUT=gpu-out BUDGET=360 [ONLY="bench-cuda bench-engine-llama3-8b"] tests/gpu/run.sh
#   ONLY: the sections to run (names as below), the others recorded as skipped: a later run of a session spends its
#   device time on what changed.
#   Binaries come from gpu-bundle/kdsl-gpu-bundle.tar.xz (tests/gpu/make-bundle.sh, run where kdsl builds); only
#   without a bundle does it build (cmake + ninja, which needs LLVM 19, fmt, CLI11, doctest, xxhash).
#   CUDA is found here: $KDSL_LIBCUDA or libcuda.so.1 (ldconfig, the usual driver folders), NVRTC, ptxas and
#   libdevice under $CUDA_HOME or /usr/local/cuda. KDSL_LIBCUDA=<build>/tests/libkdsl_fake_cuda.so runs it
#   against the fake driver: everything compiles and launches, nothing executes, comparisons and timings skip.
# Sections: gpu-kernels, gpu-runtime, gpu-engine (tests/gpu, one process per file: a sticky CUDA error stays in its
#   file), runtime-tests (tests/runtime), kdsl-run-smoke (aidreams260K on the GPU against the CPU), baselines
#   (torch, Triton), bench-cuda, bench-cuda-sm90 (the sweep on sm_90's mma.sync where Hopper runs sm_90a's wgmma), bench-engine-llama3-8b (bf16; its 16 GB model is written in the background from
#   the start), bench-engine-llama3-8b-q8_0 (the same shape in Q8_0, written by the section), profile-decode-llama3-8b
#   (KDSL_PROFILE: each kernel's GPU time in decode steps), kernel-dumps (kdsl-compile for sm_90a and the kernel cache, compressed).
# A section is ok, FAILED, TIMEOUT or skipped (with the reason; a test that prints "skipped:" makes its section
#   skipped, not ok). A failed GPU section is rerun once with CUDA_LAUNCH_BLOCKING=1 while the budget allows.
# $OUT gets run.log (everything), logs/<section>.log, summary.txt (the table), results.json, baselines.json,
#   bench-cuda.json, kernel-dumps.tar.xz. No section stops the others; the exit status is 1 when one FAILED.
set -uo pipefail  # deliberately no -e: a failure is recorded and the next section runs
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-gpu-out}
BUDGET=${BUDGET:-360}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
: >"$OUT/run.log"
exec > >(tee -a "$OUT/run.log") 2>&1
START=$(date +%s)
RESERVE=8  # seconds kept for the summary
elapsed() { echo $(($(date +%s) - START)); }
remaining() { echo $((BUDGET - $(elapsed))); }
say() { echo "[run.sh +$(elapsed)s] $*"; }

NAMES=() STATUS=() REASON=() SECONDS_TAKEN=()
record() {  # name status reason seconds
  NAMES+=("$1") STATUS+=("$2") REASON+=("$3") SECONDS_TAKEN+=("$4")
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$OUT/sections.tsv"
  say "$1: $2${3:+ ($3)}"
}
: >"$OUT/sections.tsv"

# ---- the driver: nothing else is worth unpacking without one ------------------------------------------------
find_libcuda() {
  if [ -n "${KDSL_LIBCUDA:-}" ]; then
    [ -f "$KDSL_LIBCUDA" ] && echo "$KDSL_LIBCUDA"
    return
  fi
  local p
  p=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')  # not a 32-bit one
  if [ -n "$p" ] && [ -f "$p" ]; then echo "$p"; return; fi
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/wsl/lib /usr/local/cuda/compat; do
    [ -f "$d/libcuda.so.1" ] && { echo "$d/libcuda.so.1"; return; }
  done
}
LIBCUDA=$(find_libcuda)
NO_GPU_REASON=""
FAKE=0
if [ -z "$LIBCUDA" ]; then
  NO_GPU_REASON="no CUDA driver${KDSL_LIBCUDA:+ (KDSL_LIBCUDA=$KDSL_LIBCUDA does not exist)}"
else
  export KDSL_LIBCUDA=$LIBCUDA  # kdsl's one loader opens exactly this file
  grep -q fake_cuda_launches "$LIBCUDA" 2>/dev/null && FAKE=1
fi
say "driver: ${LIBCUDA:-none}$([ $FAKE = 1 ] && echo ' (the fake libcuda: nothing executes)')"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader 2>&1 | sed 's/^/  nvidia-smi: /'

# ---- the binaries: the bundle, else a build ---------------------------------------------------------------
BIN="" LIBS="" FAKE_SO="" MODELS=""
ARCHIVE=$ROOT/gpu-bundle/kdsl-gpu-bundle.tar.xz
if [ -z "$NO_GPU_REASON" ]; then
  if [ -f "$ARCHIVE" ]; then
    # Unpacked outside gpu-bundle/, which must stay small enough to carry.
    U=${KDSL_BUNDLE_DIR:-${TMPDIR:-/tmp}/kdsl-gpu-bundle-$(id -u)}
    if ! cmp -s "$ROOT/gpu-bundle/MANIFEST.txt" "$U/kdsl-gpu-bundle/MANIFEST.txt" || [ ! -x "$U/kdsl-gpu-bundle/bin/kdsl_tests" ]; then
      say "unpacking $ARCHIVE into $U"
      rm -rf "$U" && mkdir -p "$U"
      if ! tar -C "$U" -xJf "$ARCHIVE" 2>/dev/null; then
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$ARCHIVE" "$U" || say "could not unpack the bundle"
      fi
    fi
    B=$U/kdsl-gpu-bundle
    if [ -x "$B/bin/kdsl_tests" ]; then
      BIN=$B/bin LIBS=$B/lib FAKE_SO=$B/fake/libkdsl_fake_cuda.so MODELS=$B/models
      bundled=$(awk '/^commit:/ {print $2}' "$B/MANIFEST.txt")
      head=$(git rev-parse HEAD 2>/dev/null || echo unknown)
      [ "$bundled" = "$head" ] || say "WARNING: the bundle was built from $bundled, the checkout is $head"
      # libstdc++ / libgcc_s: the machine's own unless missing or too old for these binaries.
      if LD_LIBRARY_PATH=$LIBS ldd "$BIN/kdsl_tests" 2>&1 | grep -qE 'not found'; then
        LIBS=$LIBS:$B/lib/fallback
        say "using the bundle's libstdc++ (the machine's is missing or too old)"
      fi
      missing=$(LD_LIBRARY_PATH=$LIBS ldd "$BIN"/* 2>&1 | grep 'not found' | sort -u)
      [ -z "$missing" ] || say "WARNING: libraries still missing: $missing"
    fi
  fi
  if [ -z "$BIN" ]; then
    say "no usable bundle: building (needs LLVM 19, fmt, CLI11, doctest, xxhash; see tests/gpu/make-bundle.sh)"
    if cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKDSL_BUILD_TESTS=ON >"$OUT/logs/build.log" 2>&1 &&
       timeout $(($(remaining) / 2)) cmake --build build-gpu -j"$(nproc)" --target kdsl_tests kdsl_fake_cuda kdsl-run kdsl-bench-engine kdsl-bench-cuda kdsl-compile kdsl-synth >>"$OUT/logs/build.log" 2>&1; then
      mkdir -p build-gpu/bin && for f in build-gpu/tests/kdsl_tests build-gpu/src/tools/kdsl-* build-gpu/models/kdsl-synth; do ln -sf "$ROOT/$f" build-gpu/bin/; done
      BIN=$ROOT/build-gpu/bin FAKE_SO=$ROOT/build-gpu/tests/libkdsl_fake_cuda.so MODELS=${KDSL_SHARED_MODELS_DIR:-$ROOT/../shared/models}
    else
      tail -25 "$OUT/logs/build.log"
      NO_GPU_REASON="no binaries: no bundle and the build failed (logs/build.log)"
    fi
  fi
fi

# ---- the CUDA toolkit (NVRTC, ptxas, libdevice): kdsl looks under $CUDA_HOME -------------------------------
if [ -z "${CUDA_HOME:-}" ]; then
  if [ -d /usr/local/cuda ]; then export CUDA_HOME=/usr/local/cuda
  elif command -v nvcc >/dev/null; then CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")"); export CUDA_HOME; fi
fi
PTXAS=${KDSL_PTXAS:-${CUDA_HOME:+$CUDA_HOME/bin/ptxas}}
say "CUDA_HOME=${CUDA_HOME:-none}; ptxas: $([ -x "${PTXAS:-}" ] && "$PTXAS" --version | grep -m1 release || echo none); libdevice: $(ls "${CUDA_HOME:-/nonexistent}"/nvvm/libdevice/libdevice.10.bc 2>/dev/null || echo none); NVRTC: $(ls "${CUDA_HOME:-/nonexistent}"/lib64/libnvrtc.so.* 2>/dev/null | head -1 || true)"

export KDSL_CACHE_DIR=$OUT/kernel-cache  # the compiled kernels: packed into kernel-dumps.tar.xz at the end
export KDSL_SHARED_MODELS_DIR=${MODELS:-${KDSL_SHARED_MODELS_DIR:-}}
export KDSL_TEST_SCRATCH_DIR=$OUT/scratch KDSL_TEST_FAKE_LIBCUDA=$FAKE_SO KDSL_TEST_TOOLS_DIR=$BIN
# The runtime tests' fake HIP runtime and hipRTC, beside the fake libcuda (the build folder does not travel).
FAKES=$(dirname "${FAKE_SO:-/nonexistent/x}")
export KDSL_TEST_FAKE_LIBAMDHIP64=$FAKES/libkdsl_fake_hip.so KDSL_TEST_FAKE_LIBHIPRTC=$FAKES/libkdsl_fake_hiprtc.so
mkdir -p "$KDSL_CACHE_DIR" "$KDSL_TEST_SCRATCH_DIR"
# The bundle's libraries for kdsl's binaries only: python (torch) and the system's tools keep the machine's own.
KLD=${LIBS}${LIBS:+${LD_LIBRARY_PATH:+:}}${LD_LIBRARY_PATH:-}
KENV=(env "LD_LIBRARY_PATH=$KLD")
k() { LD_LIBRARY_PATH=$KLD "$@"; }  # for section scripts: runs one kdsl binary with the bundle's libraries
export -f k
export KLD OUT BIN FAKE ROOT

# ---- the Llama-3-8B-shaped model, written while the tests run ----------------------------------------------
BIG_DIR=${KDSL_BENCH_MODELS:-/tmp/kdsl-bench-models}
BIG_MODEL=$BIG_DIR/synth-llama3-8b-bf16.gguf
WRITER_PID=""
if [ -z "$NO_GPU_REASON" ] && [ $FAKE = 0 ]; then
  mkdir -p "$BIG_DIR"
  if [ ! -f "$BIG_MODEL" ]; then
    say "writing $BIG_MODEL in the background (about 16 GB)"
    (k "$BIN/kdsl-synth" -o "$BIG_MODEL.partial" --preset llama3-8b --type bf16 >"$OUT/logs/llama3-8b-writer.log" 2>&1 &&
      mv "$BIG_MODEL.partial" "$BIG_MODEL") &
    WRITER_PID=$!
  fi
fi

# ---- sections ------------------------------------------------------------------------------------------------
# run_section NAME LIMIT KIND COMMAND...   KIND: gpu (a fake driver runs it but it proves nothing), cpu (meaningful
# anywhere). A kdsl binary runs with the bundle's libraries; `bash -c FUNCTION` (a section script) without them,
# calling kdsl binaries through k. The command's output goes to logs/NAME.log and here.
first_failure() {
  local line
  line=$(grep -m1 -E 'ERROR:|FATAL|FAILED:|Error|error:|Traceback' "$1" 2>/dev/null)
  [ -n "$line" ] || line=$(grep -v '^\s*$' "$1" | tail -1)
  local logged
  logged=$(grep -m1 -A1 -E 'ERROR:|FATAL' "$1" 2>/dev/null | grep -m1 -E 'logged:|values:' | sed 's/^\s*//')
  echo "${line:0:220}${logged:+ | ${logged:0:200}}" | tr '\t' ' '
}
run_once() {  # log limit command... -> rc
  local log=$1 limit=$2
  shift 2
  timeout -k 10 "$limit" "$@" 2>&1 | tee "$log"
  return "${PIPESTATUS[0]}"
}
run_section() {
  local name=$1 limit=$2 kind=$3
  shift 3
  if [ -n "$NO_GPU_REASON" ]; then record "$name" skipped "$NO_GPU_REASON" 0; return; fi
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then record "$name" skipped "not in ONLY ($ONLY)" 0; return; fi
  local left=$(($(remaining) - RESERVE))
  if [ "$left" -lt 10 ]; then record "$name" skipped "budget spent (BUDGET=$BUDGET s)" 0; return; fi
  [ "$limit" -gt "$left" ] && limit=$left
  local log=$OUT/logs/$name.log t0=$(date +%s)
  say "== $name (limit ${limit}s, $(remaining)s of the budget left): $*"
  local runner=("${KENV[@]}")
  [ "$1" = bash ] && runner=(env)
  # Line-buffered, so that a section killed at its limit leaves its output up to then.
  command -v stdbuf >/dev/null && runner+=(stdbuf -oL -eL)
  run_once "$log" "$limit" "${runner[@]}" "$@"
  local rc=$? status reason=""
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    status=TIMEOUT reason="over its ${limit}s limit; the last it printed: $(grep -v '^\s*$' "$log" | tail -1 | cut -c1-160)"
  elif [ $rc != 0 ]; then
    status=FAILED reason="exit $rc: $(first_failure "$log")"
    local left2=$(($(remaining) - RESERVE))
    if [ "$name" != baselines ] && [ "$left2" -ge 30 ]; then
      local limit2=$limit
      [ "$limit2" -gt "$left2" ] && limit2=$left2
      say "== $name again with CUDA_LAUNCH_BLOCKING=1 (the failing launch then reports itself)"
      run_once "$OUT/logs/$name.blocking.log" "$limit2" env CUDA_LAUNCH_BLOCKING=1 "${runner[@]}" "$@"
      local rc2=$?
      local again
      again=$(first_failure "$OUT/logs/$name.blocking.log")
      if [ $rc2 = 0 ]; then reason="$reason; passed when rerun with CUDA_LAUNCH_BLOCKING=1 (timing-dependent?)"
      elif [ "exit $rc2: $again" = "$reason" ]; then reason="$reason; the same with CUDA_LAUNCH_BLOCKING=1"
      else reason="$reason; with CUDA_LAUNCH_BLOCKING=1: $again"; fi
    fi
  elif grep -q -E 'test cases: *0 \|' "$log"; then
    status=FAILED reason="no test case ran (the binary and this checkout disagree?)"
  elif skip=$(grep -m1 -oE 'skipped( \([^)]*\))?: .*' "$log"); then
    status=skipped reason=${skip#*: }
    reason=${reason:0:220}
  elif [ $FAKE = 1 ] && [ "$kind" != cpu ]; then
    status=skipped reason="the fake driver: ran to the end (exit 0), but nothing executes or is timed on it"
  else
    status=ok
  fi
  record "$name" "$status" "$reason" $(($(date +%s) - t0))
}

TESTS=${BIN:+$BIN/kdsl_tests}
run_section gpu-kernels 120 gpu "$TESTS" --source-file='*tests/gpu/cuda_kernels_test*' --no-intro
run_section gpu-runtime 60 gpu "$TESTS" --source-file='*tests/gpu/cuda_runtime_test*' --no-intro
run_section gpu-engine 150 gpu "$TESTS" --source-file='*tests/gpu/cuda_engine_test*' --no-intro
run_section runtime-tests 120 cpu "$TESTS" --source-file='*tests/runtime/*' --no-intro

smoke() {  # aidreams260K greedy on the GPU and on the CPU: the same text
  local m=$KDSL_SHARED_MODELS_DIR
  if [ ! -f "$m/aidreams260K.bin" ]; then echo "skipped: $m/aidreams260K.bin is absent (the bundle carries it)"; return 0; fi
  local args=(-m "$m/aidreams260K.bin" -z "$m/aidreams-tok512.bin" -p "I dreamed" -n 48 --temp 0)
  k "$BIN/kdsl-run" "${args[@]}" --device cuda >"$OUT/logs/smoke.gpu.txt" || return 1
  k "$BIN/kdsl-run" "${args[@]}" --device cpu >"$OUT/logs/smoke.cpu.txt" || return 1
  echo "GPU: $(cat "$OUT/logs/smoke.gpu.txt")"
  echo "CPU: $(cat "$OUT/logs/smoke.cpu.txt")"
  if [ "$FAKE" = 1 ]; then echo "skipped: the fake driver: kdsl-run --device cuda ran, its text is not compared"; return 0; fi
  cmp -s "$OUT/logs/smoke.gpu.txt" "$OUT/logs/smoke.cpu.txt" || { echo "FAILED: the GPU's greedy text differs from the CPU's"; return 1; }
}
export -f smoke
run_section kdsl-run-smoke 60 gpu bash -c smoke

baselines() {  # torch and Triton, each on its own; an "error: ..." value fails the section, "not installed" skips it
  python3 "$ROOT/tests/gpu/baselines.py" $([ "$FAKE" = 1 ] && echo --quick) >"$OUT/baselines.json" || return 1
  cat "$OUT/baselines.json"
  python3 - "$OUT/baselines.json" <<'PY'
import json, sys
values = [v for v in json.load(open(sys.argv[1])).values() if isinstance(v, str)]
errors = [v for v in values if v.startswith("error")]
if errors:
    print("FAILED: " + errors[0])
    sys.exit(1)
if values:
    print("skipped: " + values[0])
PY
}
export -f baselines
run_section baselines 120 gpu bash -c baselines
[ -f "$OUT/baselines.json" ] || echo '{}' >"$OUT/baselines.json"

run_section bench-cuda 150 gpu "$BIN/kdsl-bench-cuda" --baselines "$OUT/baselines.json" --json "$OUT/bench-cuda.json" $([ $FAKE = 1 ] && echo --quick)
# The same sweep on sm_90 code (mma.sync) on a Hopper GPU, which otherwise runs sm_90a's wgmma: the two side by side.
run_section bench-cuda-sm90 150 gpu env KDSL_CUDA_ARCH=sm_90 "$BIN/kdsl-bench-cuda" --baselines "$OUT/baselines.json" \
  --json "$OUT/bench-cuda-sm90.json" $([ $FAKE = 1 ] && echo --quick)

bench_engine() {
  if [ "$FAKE" = 1 ]; then  # no 16 GB model for a driver that runs nothing: the tiny preset exercises the path
    k "$BIN/kdsl-bench-engine" --device cuda --quick --type bf16 --no-kernels || return 1
    echo "skipped: the fake driver: the tiny preset ran, nothing timed; the Llama-3-8B shape needs the GPU"
    return 0
  fi
  if [ -n "$WRITER_PID" ]; then
    echo "waiting for the model writer (pid $WRITER_PID)"
    while [ ! -f "$BIG_MODEL" ] && kill -0 "$WRITER_PID" 2>/dev/null; do sleep 2; done
  fi
  [ -f "$BIG_MODEL" ] || { echo "FAILED: $BIG_MODEL was not written: $(tail -3 "$OUT/logs/llama3-8b-writer.log" 2>/dev/null)"; return 1; }
  k "$BIN/kdsl-bench-engine" --device cuda --preset llama3-8b --type bf16 --dir "$BIG_DIR" --keep --prompt 512 --decode 32 --no-kernels
  # Decode without the CUDA graph, in the same run: what capturing the step saves.
  k "$BIN/kdsl-bench-engine" -m "$BIG_MODEL" --device cuda --prompt 0 --decode 32 --no-kernels --decode-graph off
}
export -f bench_engine
export WRITER_PID BIG_MODEL BIG_DIR
run_section bench-engine-llama3-8b 240 gpu bash -c bench_engine


profile_engine() {  # where a decode step's time goes: each kernel's launches timed with CUDA events (KDSL_PROFILE)
  [ "$FAKE" = 1 ] && { echo "skipped: the fake driver times nothing"; return 0; }
  [ -f "$BIG_MODEL" ] || { echo "skipped: $BIG_MODEL was not written (see bench-engine-llama3-8b)"; return 0; }
  # Eager launches: a CUDA graph's replay is timed as one entry, which hides the kernels.
  KDSL_PROFILE=1 k "$BIN/kdsl-bench-engine" -m "$BIG_MODEL" --device cuda --prompt 0 --warmup 2 --decode 16 --no-kernels --decode-graph off
}
export -f profile_engine
run_section profile-decode-llama3-8b 60 gpu bash -c profile_engine

bench_engine_q8_0() {  # the same shape in Q8_0 (about 8.5 GB, written here): the quantized GPU decode at engine level
  [ "$FAKE" = 1 ] && { echo "skipped: the fake driver times nothing"; return 0; }
  local model=$BIG_DIR/synth-llama3-8b-q8_0.gguf
  if [ ! -f "$model" ]; then
    k "$BIN/kdsl-synth" -o "$model.partial" --preset llama3-8b --type q8_0 >"$OUT/logs/llama3-8b-q8_0-writer.log" 2>&1 && mv "$model.partial" "$model" ||
      { echo "FAILED: $model was not written: $(tail -3 "$OUT/logs/llama3-8b-q8_0-writer.log")"; return 1; }
  fi
  k "$BIN/kdsl-bench-engine" -m "$model" --device cuda --prompt 512 --decode 32 --no-kernels
}
export -f bench_engine_q8_0
run_section bench-engine-llama3-8b-q8_0 150 gpu bash -c bench_engine_q8_0

dumps() {  # every example kernel for sm_90a (PTX, cubin, ptxas's report) and the kernel cache of this run, compressed
  k "$BIN/kdsl-compile" --target sm_90a --out "$OUT/kdsl-compile" >"$OUT/logs/kdsl-compile.txt" 2>&1
  local rc=$?
  tail -5 "$OUT/logs/kdsl-compile.txt"
  tar -C "$OUT" -cJf "$OUT/kernel-dumps.tar.xz" kernel-cache $(cd "$OUT" && ls -d kdsl-compile 2>/dev/null) || return 1
  ls -la "$OUT/kernel-dumps.tar.xz"
  return $rc
}
export -f dumps
run_section kernel-dumps 90 cpu bash -c dumps

# The writer's subshell and its kdsl-synth (a partial model is rewritten next time).
[ -n "$WRITER_PID" ] && kill $(pgrep -P "$WRITER_PID" 2>/dev/null) "$WRITER_PID" 2>/dev/null

# ---- summary ---------------------------------------------------------------------------------------------
failed=0
table() {
  printf '%-24s %-8s %6s  %s\n' section status time reason
  printf '%-24s %-8s %6s  %s\n' ------------------------ -------- ------ ------
  for i in "${!NAMES[@]}"; do
    local why=${REASON[$i]}
    [ ${#why} -gt 200 ] && why="${why:0:197}..."  # in full in results.json and logs/
    printf '%-24s %-8s %5ss  %s\n' "${NAMES[$i]}" "${STATUS[$i]}" "${SECONDS_TAKEN[$i]}" "$why"
    [ "${STATUS[$i]}" = FAILED ] || [ "${STATUS[$i]}" = TIMEOUT ] && failed=1
  done
  return 0
}
{
  echo "kdsl tests/gpu/run.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null), $(elapsed)s of BUDGET=$BUDGET"
  echo "driver: ${LIBCUDA:-none}$([ $FAKE = 1 ] && echo ' (fake)'); binaries: ${BIN:-none}"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  echo
  table
} >"$OUT/summary.txt"
python3 - "$OUT" <<'EOF' 2>/dev/null || echo '{"error": "python3 could not write results.json; see sections.tsv"}' >"$OUT/results.json"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception:
        return None
sections = []
for line in open(os.path.join(out, "sections.tsv")):
    name, status, reason, seconds = line.rstrip("\n").split("\t")
    sections.append({"section": name, "status": status, "reason": reason, "seconds": int(seconds)})
json.dump({"summary": open(os.path.join(out, "summary.txt")).read().splitlines()[:3], "sections": sections,
           "baselines": load("baselines.json"), "bench_cuda": load("bench-cuda.json"),
           "bench_cuda_sm90": load("bench-cuda-sm90.json")}, open(os.path.join(out, "results.json"), "w"), indent=1)
EOF
echo
table
exit $failed
