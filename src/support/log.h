// log.h - KDSL_LOG=info|debug|warn logging to stderr, and a monotonic clock for timings
#pragma once
#include <fmt/format.h>

#include <chrono>

namespace kdsl {

enum class LogLevel { Off = 0, Warn = 1, Info = 2, Debug = 3 };

// Read once from KDSL_LOG (default: warn).
LogLevel log_level();
void log_write(LogLevel level, const std::string &message);

template <class... A>
void log_info(fmt::format_string<A...> f, A &&...a) {
  if (log_level() >= LogLevel::Info) log_write(LogLevel::Info, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void log_debug(fmt::format_string<A...> f, A &&...a) {
  if (log_level() >= LogLevel::Debug) log_write(LogLevel::Debug, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void log_warn(fmt::format_string<A...> f, A &&...a) {
  if (log_level() >= LogLevel::Warn) log_write(LogLevel::Warn, fmt::format(f, std::forward<A>(a)...));
}

// Milliseconds since `start`, for compile and cache timings.
inline double elapsed_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kdsl
