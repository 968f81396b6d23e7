// launch_recorder.cpp - recording launches by kernel and argument classes, cheaply enough for a plan's thousands of steps
#include "kernels/launch_recorder.h"

#include <algorithm>

namespace kdsl::kernels {

std::string RecordedKernel::text() const {
  std::string out = signature.name + " [" + specialization.str() + "] num_warps=" + std::to_string(options.num_warps) +
                    ",num_stages=" + std::to_string(options.num_stages);
  return options.checked ? out + ",checked" : out;
}

void LaunchRecorder::record(const void *identity, kdsl::detail::KernelSignature (*signature)(), const CompileOptions &options, const ArgValue *args,
                            size_t count) {
  ++launches_;
  auto it = by_kernel_.find(identity);
  if (it == by_kernel_.end()) it = by_kernel_.emplace(identity, Kernel{signature(), options, {}, {}}).first;
  Kernel &k = it->second;
  // A count the kernel does not take is refused by the launch itself (and does not compile
  // through the Library): classify what there is.
  size_t n = std::min(count, k.signature.params.size());
  if (n <= 32) {
    uint64_t key = 0;
    for (size_t i = 0; i < n; ++i) key |= uint64_t(launch_arg_spec(k.signature.params[i], args[i])) << (2 * i);
    ++k.packed[key];
    return;
  }
  std::vector<ArgSpec> key(n);
  for (size_t i = 0; i < n; ++i) key[i] = launch_arg_spec(k.signature.params[i], args[i]);
  ++k.wide[key];
}

std::vector<RecordedKernel> LaunchRecorder::kernels() const {
  std::vector<RecordedKernel> out;
  for (const auto &[identity, k] : by_kernel_) {
    const size_t n = k.signature.params.size();
    for (const auto &[key, launches] : k.packed) {
      std::vector<ArgSpec> classes(n);
      for (size_t i = 0; i < n; ++i) classes[i] = ArgSpec((key >> (2 * i)) & 3);
      out.push_back({k.signature, k.options, Specialization(std::move(classes)), launches});
    }
    for (const auto &[classes, launches] : k.wide) out.push_back({k.signature, k.options, Specialization(classes), launches});
  }
  std::sort(out.begin(), out.end(), [](const RecordedKernel &a, const RecordedKernel &b) { return a.text() < b.text(); });
  return out;
}

}  // namespace kdsl::kernels
