// library_dense_f32.cpp - Library::matmul's tuned dispatch over f32 weights, instantiated in a file of its own (each weight type's candidates are a few dozen kernel templates)
#include "kernels/library_dense.h"

namespace kdsl::kernels::detail {
template void run_dense_matmul<f32>(Library::Impl &, const float *, const float *, const float *, float *, int, int, int);
}
