// library_dense_f16.cpp - Library::matmul's tuned dispatch over f16 weights, instantiated in a file of its own (each weight type's candidates are a few dozen kernel templates)
#include "kernels/library_dense.h"

namespace kdsl::kernels::detail {
template void run_dense_matmul<f16>(Library::Impl &, const float *, const half *, const float *, float *, int, int, int);
template bool run_gpu_dense_matmul<f16, f16>(Library::Impl &, const half *, const half *, const float *, float *, int, int, int);
}
