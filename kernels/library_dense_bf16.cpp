// library_dense_bf16.cpp - Library::matmul's tuned dispatch over bf16 weights, instantiated in a file of its own (each weight type's candidates are a few dozen kernel templates)
#include "kernels/library_dense.h"

namespace kdsl::kernels::detail {
template void run_dense_matmul<bf16>(Library::Impl &, const float *, const bfloat16 *, const float *, float *, int, int, int);
template bool run_gpu_dense_matmul<bf16, bf16>(Library::Impl &, const bfloat16 *, const bfloat16 *, const float *, float *, int, int, int);
}
