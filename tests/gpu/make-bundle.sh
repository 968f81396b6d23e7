#!/usr/bin/env bash
# make-bundle.sh - build Release here and pack what tests/gpu/run.sh needs on a GPU machine that cannot build kdsl
# (no LLVM 19, fmt, CLI11, doctest there): the test and tool binaries, the shared libraries they load that glibc
# does not provide, the fake libcuda, libamdhip64 and libhiprtc, and the small models of ../shared/models, as gpu-bundle/kdsl-gpu-bundle.tar.xz
# (git-ignored; under 56 MiB, so that it travels with the checkout under the 64 MiB a device run carries).
# Usage: tests/gpu/make-bundle.sh    (BUILD=build; MODELS=../shared/models; JOBS=2)
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build}
MODELS=${MODELS:-${KDSL_SHARED_MODELS_DIR:-$ROOT/../shared/models}}
JOBS=${JOBS:-2}
OUTDIR=$ROOT/gpu-bundle
LIMIT=$((56 * 1024 * 1024))
die() { echo "make-bundle: $*" >&2; exit 1; }

TARGETS=(kdsl_tests kdsl_fake_cuda kdsl_fake_hip kdsl_fake_hiprtc kdsl-run kdsl-bench-engine kdsl-bench-cuda kdsl-compile kdsl-synth)
echo "== configure ($BUILD, Release) and build: ${TARGETS[*]}"
if [ "$BUILD" = build ]; then cmake --preset default >/dev/null || die "cmake --preset default failed"
else cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKDSL_BUILD_TESTS=ON >/dev/null || die "cmake failed"; fi
grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$BUILD/CMakeCache.txt" || die "$BUILD is not a Release build"
cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}" || die "the build failed"

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/kdsl-gpu-bundle.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/kdsl-gpu-bundle
mkdir -p "$B/bin" "$B/lib/fallback" "$B/fake" "$B/models"
for f in tests/kdsl_tests src/tools/kdsl-run src/tools/kdsl-bench-engine src/tools/kdsl-bench-cuda src/tools/kdsl-compile models/kdsl-synth; do
  cp "$BUILD/$f" "$B/bin/" || die "$BUILD/$f is missing"
done
strip --strip-unneeded "$B"/bin/* 2>/dev/null || true
for f in libkdsl_fake_cuda.so libkdsl_fake_hip.so libkdsl_fake_hiprtc.so; do
  cp "$BUILD/tests/$f" "$B/fake/" || die "the fake GPU library $f is missing"
done

# Every library the binaries load, except glibc's own (the GPU machine's glibc 2.39 is newer
# than this one's). libstdc++ and libgcc_s go to lib/fallback: the GPU machine's are newer and
# are used unless missing (run.sh checks with ldd), and python's torch must never see ours.
for bin in "$B"/bin/*; do ldd "$bin"; done | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
  case "$name" in
    linux-vdso*|ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libutil.so*|libresolv.so*) ;;
    libstdc++.so*|libgcc_s.so*) cp -L "$path" "$B/lib/fallback/$name" ;;
    *) cp -L "$path" "$B/lib/$name" ;;
  esac
done
missing=$(for bin in "$B"/bin/*; do LD_LIBRARY_PATH=$B/lib ldd "$bin"; done | grep 'not found' | sort -u)
[ -z "$missing" ] || die "libraries not found: $missing"

if [ -d "$MODELS" ]; then
  for f in README.md stories260K.bin aidreams260K.bin aidreams-tok512.bin; do
    [ -f "$MODELS/$f" ] && cp "$MODELS/$f" "$B/models/" || echo "make-bundle: WARNING: $MODELS/$f is absent; the GPU engine test will skip it"
  done
else
  echo "make-bundle: WARNING: no models folder ($MODELS); the GPU engine's reference tests will skip"
fi

{
  echo "kdsl GPU bundle"
  echo "commit: $(git rev-parse HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "build folder: $ROOT/$BUILD (Release)"
  echo; echo "files:"; (cd "$B" && find . -type f -printf '%P %s\n' | sort)
} >"$B/MANIFEST.txt"

mkdir -p "$OUTDIR"
ARCHIVE=$OUTDIR/kdsl-gpu-bundle.tar.xz
echo "== compressing (xz -9, a few minutes)"
tar -C "$STAGE" -cf - kdsl-gpu-bundle | xz -9 -T"$JOBS" >"$ARCHIVE.partial" || die "compression failed"
mv "$ARCHIVE.partial" "$ARCHIVE"
cp "$B/MANIFEST.txt" "$OUTDIR/MANIFEST.txt"
size=$(stat -c %s "$ARCHIVE")
echo "make-bundle: $ARCHIVE is $(awk -v s="$size" 'BEGIN {printf "%.1f MiB", s / 1048576}') ($size bytes; limit 56 MiB)"
[ "$size" -lt "$LIMIT" ] || die "the bundle is over 56 MiB: it would not travel with the checkout"
echo "make-bundle: carry it with the run tool: carry: [\"gpu-bundle\"], then OUT=\$OUT tests/gpu/run.sh there"
