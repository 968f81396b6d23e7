// multiply_ports.c - the CPU's rate of vpmaddubsw (+ vpaddw, broadcast operands, as the host's byte-dot tiles issue them) against ymm FMAs, on one core and with every core busy
//
// Not part of the build: it asks whether integer tiles can beat the f32 tiles on a given CPU.
// Build and run (one copy, then one per core at once):
//   gcc -O2 -mavx2 -mfma bench/multiply_ports.c -o /tmp/multiply_ports && /tmp/multiply_ports
//   for i in $(seq $(nproc)); do /tmp/multiply_ports & done; wait
// A vpmaddubsw makes 32 byte products, an FMA 8 f32 ones.
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int8_t A[11 * 32] __attribute__((aligned(64)));
static int8_t B[8 * 128] __attribute__((aligned(64)));

int main(void) {
  for (int i = 0; i < (int)sizeof A; ++i) A[i] = (int8_t)(i * 7);
  for (int i = 0; i < (int)sizeof B; ++i) B[i] = (int8_t)(i & 15);
  // 11 rows by one vector of 8 columns, 8 quads a group: the tile the lowering picks on AVX2.
  __m256i acc[11];
  for (int i = 0; i < 11; ++i) acc[i] = _mm256_setzero_si256();
  const long reps = 20000000;
  double t0 = now();
  for (long r = 0; r < reps; ++r) {
    for (int q = 0; q < 8; ++q) {
      __m256i b = _mm256_load_si256((const __m256i *)(B + q * 128));
#pragma GCC unroll 11
      for (int m = 0; m < 11; ++m) {
        __m256i a = _mm256_set1_epi32(*(const int *)(A + m * 32 + 4 * q));
        acc[m] = _mm256_add_epi16(acc[m], _mm256_maddubs_epi16(b, a));
      }
    }
    __asm__ volatile("" ::: "memory");
  }
  double t1 = now();
  __m256i x = acc[0];
  for (int i = 1; i < 11; ++i) x = _mm256_add_epi16(x, acc[i]);
  const double maddubs_ns = (t1 - t0) / ((double)reps * 88.0) * 1e9;
  printf("vpmaddubsw + vpaddw: %.3f ns each, %.1f byte products/ns (%d)\n", maddubs_ns, 32.0 / maddubs_ns, _mm256_extract_epi16(x, 0));

  // 12 independent FMA chains on registers.
  __m256 f[12];
  __m256 fb = _mm256_set1_ps(1.0001f), fs = _mm256_set1_ps(0.999f);
  for (int i = 0; i < 12; ++i) f[i] = _mm256_setzero_ps();
  const long n = 200000000 / 12;
  t0 = now();
  for (long i = 0; i < n; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) {
      f[j] = _mm256_fmadd_ps(fb, fs, f[j]);
      __asm__ volatile("" : "+x"(fs));
    }
  t1 = now();
  __m256 y = f[0];
  for (int i = 1; i < 12; ++i) y = _mm256_add_ps(y, f[i]);
  const double fma_ns = (t1 - t0) / ((double)n * 12.0) * 1e9;
  printf("vfmadd ymm: %.3f ns each, %.1f f32 products/ns (%f)\n", fma_ns, 8.0 / fma_ns, (double)_mm256_cvtss_f32(y));
  return 0;
}
