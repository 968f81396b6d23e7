// warning.cpp - the loaders' one warning channel: stderr, or a test's sink
#include "models/common/warning.h"

#include <fmt/format.h>

#include <cstdio>
#include <mutex>

namespace kdsl::models {
namespace {
std::mutex g_mutex;
WarningSink g_sink;
}  // namespace

void report_warning(const std::string &message) {
  std::lock_guard lock(g_mutex);
  if (g_sink) return g_sink(message);
  fmt::print(stderr, "kdsl: warning: {}\n", message);
}

WarningSink set_warning_sink(WarningSink sink) {
  std::lock_guard lock(g_mutex);
  std::swap(g_sink, sink);
  return sink;
}

}  // namespace kdsl::models
