// duplicate_kernels.cpp - a library registering a name user_kernels.cpp already registers: its load must be refused
#include "user_kernels.h"

KDSL_REGISTER_KERNEL(duplicate_only, user_kernels::scale_add<64>);
KDSL_REGISTER_KERNEL(user_scale_add, user_kernels::scale_add<128>);
