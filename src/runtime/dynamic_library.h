// dynamic_library.h - the one loader for libraries kdsl opens at run time (CUDA driver, NVRTC; HIP next): dlopen, symbols from a .def, errors by name
#pragma once
#include <functional>
#include <mutex>
#include <string>

namespace kdsl::detail {

// What errors say of a library: "<not_found> (<path>: <dlerror>); <unavailable>" when it does
// not open, "<name> <path> lacks <symbol> (<too_old>)" when an entry point is missing.
struct LibraryDescription {
  const char *name;         // "the NVIDIA driver", "NVRTC"
  const char *not_found;    // "no NVIDIA driver found"
  const char *unavailable;  // what the user loses, or how to fix it
  const char *too_old;      // why an entry point can be missing
};

// A library opened with dlopen(RTLD_NOW | RTLD_LOCAL). It is never closed: the entry points
// taken from it stay valid for the life of the process.
class DynamicLibrary {
 public:
  // Throws kdsl::Error naming `path` and the loader's reason when it does not open.
  DynamicLibrary(const std::string &path, const LibraryDescription &description);

  const std::string &path() const { return path_; }
  // The entry point `symbol` into `fn`; throws kdsl::Error naming the library and the symbol.
  template <class F>
  void bind(F &fn, const char *symbol) const {
    fn = reinterpret_cast<F>(require(symbol));
  }
  // The same for an entry point of newer versions only: null where the library lacks it.
  template <class F>
  void bind_optional(F &fn, const char *symbol) const {
    fn = reinterpret_cast<F>(find(symbol));
  }

 private:
  void *find(const char *symbol) const;
  void *require(const char *symbol) const;

  std::string path_;
  LibraryDescription description_;
  void *handle_ = nullptr;
};

// A library loaded on first use and kept for the process; a failure is remembered and thrown
// again on every later call, never retried (a missing driver stays missing).
template <class Library>
class LoadedOnce {
 public:
  explicit LoadedOnce(std::function<Library()> load) : load_(std::move(load)) {}

  // The library; throws kdsl::Error with the first load's failure.
  const Library &get() {
    std::call_once(once_, [this] {
      try {
        library_ = load_();
      } catch (const std::exception &e) {
        failure_ = e.what();
      }
    });
    if (!failure_.empty()) throw_failure(failure_);
    return library_;
  }
  // Empty when get() returns a library; else what it throws.
  const std::string &failure() {
    try {
      get();
    } catch (...) {
    }
    return failure_;
  }

 private:
  [[noreturn]] static void throw_failure(const std::string &what);

  std::function<Library()> load_;
  std::once_flag once_;
  Library library_;
  std::string failure_;
};

// kdsl::Error(what), out of line so this header needs no error.h.
[[noreturn]] void throw_library_error(const std::string &what);

template <class Library>
void LoadedOnce<Library>::throw_failure(const std::string &what) {
  throw_library_error(what);
}

}  // namespace kdsl::detail
