// dynamic_library.cpp - dlopen and dlsym behind DynamicLibrary, with errors naming the library and the symbol
#include "runtime/dynamic_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <kdsl/error.h>

namespace kdsl::detail {

DynamicLibrary::DynamicLibrary(const std::string &path, const LibraryDescription &description) : path_(path), description_(description) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *why = dlerror();
    throw Error(fmt::format("{} ({}: {}); {}", description.not_found, path, why ? why : "not found", description.unavailable));
  }
}

void *DynamicLibrary::find(const char *symbol) const { return dlsym(handle_, symbol); }

void *DynamicLibrary::require(const char *symbol) const {
  void *address = find(symbol);
  if (!address) throw Error(fmt::format("{} {} lacks {} ({})", description_.name, path_, symbol, description_.too_old));
  return address;
}

void throw_library_error(const std::string &what) { throw Error(what); }

}  // namespace kdsl::detail
