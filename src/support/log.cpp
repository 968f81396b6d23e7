// log.cpp - the KDSL_LOG level, read once, and the one place log lines are written
#include "support/log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

namespace kdsl {

LogLevel log_level() {
  static const LogLevel level = [] {
    const char *env = std::getenv("KDSL_LOG");
    std::string_view v = env ? env : "";
    if (v == "debug") return LogLevel::Debug;
    if (v == "info") return LogLevel::Info;
    if (v == "off" || v == "none") return LogLevel::Off;
    return LogLevel::Warn;
  }();
  return level;
}

void log_write(LogLevel level, const std::string &message) {
  static std::mutex mutex;
  const char *tag = level == LogLevel::Warn ? "warn" : level == LogLevel::Info ? "info" : "debug";
  std::lock_guard lock(mutex);
  std::fprintf(stderr, "[kdsl %s] %s\n", tag, message.c_str());
}

}  // namespace kdsl
