// library_device.h - which kind of device a Library's dispatch chooses kernels for: its own, or the GPU a plan's recording stands for
#pragma once
#include "kernels/library_impl.h"

namespace kdsl::kernels::detail {

// Whether the dispatch picks host CPU kernels. A plan recorded on the CPU for a GPU target
// (kdsl-prewarm --target sm_90 or gfx942) stands for that GPU, so it must plan the GPU's
// kernels, not the CPU-only ones: the integer-dot kernels are chosen on the CPU alone (dot4
// lowers to dp4a and v_dot4 on GPUs and is checked there on the emulator, but no GPU has
// yet measured them against the f32 path).
// Library::set_gpu_forms has a CPU Library take a GPU's kernels too (its engine tests).
inline bool dispatches_for_cpu(const Library::Impl &im) {
  const bool stands_for_gpu = (im.recorder && im.recorder->stand_in().gpu) || im.gpu_forms;
  return !stands_for_gpu && im.device.kind() == Device::Kind::Cpu;
}

}  // namespace kdsl::kernels::detail
