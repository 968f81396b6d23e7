// registry.h - kernels registered by name in a process-wide list (KDSL_REGISTER_KERNEL), and kernel libraries loaded at run time
#pragma once
#include <string>
#include <vector>

#include <kdsl/kernel.h>

namespace kdsl {

// One kernel in the registry.
struct RegisteredKernel {
  std::string name;                   // as registered: "scale_add"
  detail::KernelSignature signature;  // signature.name is what launches and the log call it: "mylib::scale_add<256>"
  CompileOptions options;             // the defaults compile_for(name, ...) and kdsl-compile use
  std::string library;                // the file that registered it: a shared library or the program
};

// Every registered kernel, by name. Throws kdsl::Error when a name was registered twice (the
// error names both registrations), as long as both are in the process.
std::vector<RegisteredKernel> registered_kernels();
// The kernel registered as `name`; throws kdsl::Error naming the registered ones when there is none.
RegisteredKernel registered_kernel(const std::string &name);

// Loads a shared library whose KDSL_REGISTER_KERNEL lines register its kernels (dlopen with
// RTLD_NOW | RTLD_GLOBAL; a path naming an existing file is opened as that file, anything else
// through the dynamic linker's search). The program that loads it must export kdsl's symbols
// (link with -rdynamic / ENABLE_EXPORTS, as kdsl-compile does) so that the library's kernels
// register into, and trace through, the program's kdsl. Throws kdsl::Error naming the file and
// the loader's reason; a library registering a name already registered is closed again, its
// kernels unregistered, and the error names both. Returns the names the library registered
// (loaded twice: the same names, registered once). An empty list usually means a library built
// without KDSL_REGISTER_KERNEL, or one whose registrations went to its own copy of kdsl because
// the program does not export kdsl's symbols; kdsl-compile refuses it.
std::vector<std::string> load_kernel_library(const std::string &path);

namespace detail {

// Registers kernels for as long as it lives: what KDSL_REGISTER_KERNEL defines at namespace
// scope. A name already registered is not thrown at static-init time (nothing could catch it):
// it is recorded, and registered_kernels() and load_kernel_library() report it.
class KernelRegistrar {
 public:
  explicit KernelRegistrar(std::vector<RegisteredKernel> kernels);
  ~KernelRegistrar();
  KernelRegistrar(const KernelRegistrar &) = delete;
  KernelRegistrar &operator=(const KernelRegistrar &) = delete;

 private:
  uint64_t id_;
};

template <auto K>
RegisteredKernel registry_entry(std::string name, CompileOptions options = {}) {
  return {std::move(name), kernel_signature<K>(), options, {}};
}

}  // namespace detail
}  // namespace kdsl

// Registers a kernel under `name` (an identifier, unique in the program and the libraries it
// loads) at static-init time, for compile_for(name, ...) and kdsl-compile --load:
//   KDSL_REGISTER_KERNEL(scale_add, mylib::scale_add<256>);
// The kernel may have template arguments with commas; the options, where given, are one
// expression (a named constant, or parenthesized: (kdsl::CompileOptions{.num_warps = 8})).
#define KDSL_REGISTER_KERNEL(name, ...)                                                                  \
  static const ::kdsl::detail::KernelRegistrar kdsl_registered_kernel_##name {                           \
    std::vector<::kdsl::RegisteredKernel> { ::kdsl::detail::registry_entry<__VA_ARGS__>(#name) } \
  }
#define KDSL_REGISTER_KERNEL_WITH_OPTIONS(name, options, ...)                                                     \
  static const ::kdsl::detail::KernelRegistrar kdsl_registered_kernel_##name {                                    \
    std::vector<::kdsl::RegisteredKernel> { ::kdsl::detail::registry_entry<__VA_ARGS__>(#name, options) } \
  }
