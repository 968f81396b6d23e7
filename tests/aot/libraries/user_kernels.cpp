// user_kernels.cpp - a user's kernel library: registers its kernels by name for kdsl-compile --load and compile_for
#include "user_kernels.h"

KDSL_REGISTER_KERNEL(user_scale_add, user_kernels::scale_add<256>);
KDSL_REGISTER_KERNEL_WITH_OPTIONS(user_row_sums, (kdsl::CompileOptions{.num_warps = 8, .num_stages = 2}), user_kernels::row_sums);
