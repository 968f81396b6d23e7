// kdsl.h - everything a kernel author needs: blocks, operations, control flow, compile and launch
#pragma once
#include <kdsl/block.h>
#include <kdsl/compile_for.h>
#include <kdsl/control.h>
#include <kdsl/cuda_source.h>
#include <kdsl/debug.h>
#include <kdsl/device.h>
#include <kdsl/error.h>
#include <kdsl/hip_source.h>
#include <kdsl/kernel.h>
#include <kdsl/memory.h>
#include <kdsl/ops.h>
#include <kdsl/reduce.h>
#include <kdsl/registry.h>
#include <kdsl/specialization.h>
#include <kdsl/tensor_descriptor.h>
#include <kdsl/views.h>
