// registry.cpp - the process-wide list of registered kernels, duplicate names, and kernel libraries opened with dlopen
#include <kdsl/registry.h>

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <map>
#include <mutex>

#include <kdsl/error.h>

namespace kdsl {
namespace {

struct Registration {
  uint64_t registrar = 0;
  RegisteredKernel kernel;
};

// A registration refused for its name: reported while its registrar lives.
struct Conflict {
  uint64_t registrar = 0;
  std::string message;
};

struct Registry {
  std::mutex mutex;
  uint64_t next_registrar = 1;
  std::map<std::string, Registration> by_name;
  std::vector<Conflict> conflicts;
};

// Never destroyed: a library's registrars may outlive the program's static objects.
Registry &registry() {
  static Registry *r = new Registry;
  return *r;
}

// The shared library (or program) holding `address`.
std::string file_holding(const void *address) {
  Dl_info info{};
  if (dladdr(address, &info) && info.dli_fname && *info.dli_fname) return info.dli_fname;
  return "the program";
}

std::string describe(const RegisteredKernel &k) { return fmt::format("{} (in {})", k.signature.name, k.library); }

std::string conflicts_text(const std::vector<Conflict> &conflicts) {
  std::vector<std::string> messages;
  for (const Conflict &c : conflicts) messages.push_back(c.message);
  return fmt::format("{}", fmt::join(messages, "; "));
}

// True when no registrar was created since `first`: a dlopen that ran no static initializers.
bool no_registrars_since(Registry &r, uint64_t first) {
  std::lock_guard lock(r.mutex);
  return r.next_registrar == first;
}

}  // namespace

namespace detail {

KernelRegistrar::KernelRegistrar(std::vector<RegisteredKernel> kernels) {
  std::string library = file_holding(this);
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  id_ = r.next_registrar++;
  for (RegisteredKernel &k : kernels) {
    k.library = library;
    auto [it, inserted] = r.by_name.try_emplace(k.name, Registration{id_, k});
    if (!inserted)
      r.conflicts.push_back({id_, fmt::format("kernel name '{}' is registered twice: as {} and as {}; give one of them another name", k.name,
                                              describe(it->second.kernel), describe(k))});
  }
}

KernelRegistrar::~KernelRegistrar() {
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  std::erase_if(r.by_name, [&](const auto &entry) { return entry.second.registrar == id_; });
  std::erase_if(r.conflicts, [&](const Conflict &c) { return c.registrar == id_; });
}

}  // namespace detail

std::vector<RegisteredKernel> registered_kernels() {
  Registry &r = registry();
  std::lock_guard lock(r.mutex);
  if (!r.conflicts.empty()) throw Error(conflicts_text(r.conflicts));
  std::vector<RegisteredKernel> out;
  for (const auto &[name, registration] : r.by_name) out.push_back(registration.kernel);
  return out;
}

RegisteredKernel registered_kernel(const std::string &name) {
  std::vector<RegisteredKernel> all = registered_kernels();
  std::vector<std::string> names;
  for (const RegisteredKernel &k : all) {
    if (k.name == name) return k;
    names.push_back(k.name);
  }
  if (names.empty())
    throw Error(fmt::format("no kernel registered as '{}': no kernels are registered (KDSL_REGISTER_KERNEL in a library loaded with "
                            "kdsl::load_kernel_library or kdsl-compile --load)",
                            name));
  throw Error(fmt::format("no kernel registered as '{}'; registered: {}", name, fmt::join(names, ", ")));
}

std::vector<std::string> load_kernel_library(const std::string &path) {
  // One load at a time: the registrars a dlopen creates are told apart by their ids.
  static std::mutex loading;
  static std::map<void *, std::vector<std::string>> loaded;  // handle -> the names it registered
  // A refused library that dlclose could not unload (some never are) comes back from dlopen
  // without running its registrations again: refused again by what was said the first time.
  static std::map<std::pair<void *, std::string>, std::string> refused_before;
  std::lock_guard load_lock(loading);
  std::error_code ec;
  // A file named as a file, not looked up in the dynamic linker's search path ("libk.so" in
  // the current folder is that file).
  std::string file = std::filesystem::is_regular_file(path, ec) ? std::filesystem::absolute(path, ec).string() : path;
  Registry &r = registry();
  uint64_t first;
  {
    std::lock_guard lock(r.mutex);
    first = r.next_registrar;
  }
  dlerror();
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char *why = dlerror();
    throw Error(fmt::format("cannot load kernel library '{}': {}", path, why ? why : "the dynamic loader gave no reason"));
  }
  // A library already open: dlopen ran no static initializers this time.
  if (auto it = loaded.find(handle); it != loaded.end()) {
    dlclose(handle);  // the reference this dlopen added
    return it->second;
  }
  if (auto it = refused_before.find({handle, file}); it != refused_before.end() && no_registrars_since(r, first)) {
    dlclose(handle);
    throw Error(it->second);
  }
  std::vector<Conflict> refused;
  {
    std::lock_guard lock(r.mutex);
    for (const Conflict &c : r.conflicts)
      if (c.registrar >= first) refused.push_back(c);
    if (refused.empty()) {
      std::vector<std::string> names;
      for (const auto &[name, registration] : r.by_name)
        if (registration.registrar >= first) names.push_back(name);
      return loaded[handle] = names;
    }
    std::erase_if(r.by_name, [&](const auto &entry) { return entry.second.registrar >= first; });
    std::erase_if(r.conflicts, [&](const Conflict &c) { return c.registrar >= first; });
  }
  std::string message = fmt::format("kernel library '{}' not loaded: {}", path, conflicts_text(refused));
  refused_before[{handle, file}] = message;
  dlclose(handle);
  throw Error(message);
}

}  // namespace kdsl
