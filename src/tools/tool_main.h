// tool_main.h - how every kdsl command-line tool ends: 0, 1 with one line for a user error, 2 for a bug, never a signal
#pragma once
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <kdsl/error.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <exception>
#include <functional>
#include <new>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace kdsl::tools {

namespace detail {
// The SIGBUS line, formatted before the fact: a signal handler may only write(2) and _exit(2).
inline char sigbus_message[1024] = {};
inline size_t sigbus_length = 0;

inline void on_sigbus(int) {
  if (sigbus_length) [[maybe_unused]] auto n = ::write(STDERR_FILENO, sigbus_message, sigbus_length);
  ::_exit(1);
}
}  // namespace detail

// Model files are memory-mapped and read in place, so a file truncated or on a failing disk
// while in use raises SIGBUS at whatever instruction touches the lost page. There is no
// recovering from that, but the user gets one line naming the file instead of a core dump.
// Each call adds a file (a target and its draft model): the signal does not say which it was.
inline void report_sigbus_for(std::string_view tool, std::string_view file) {
  static std::vector<std::string> files;
  files.emplace_back(file);
  std::string which = files.size() == 1 ? files[0] : fmt::format("one of {}", fmt::join(files, ", "));
  std::string line = fmt::format("{}: error: {} was truncated or became unreadable while it was in use (SIGBUS on its memory map)\n", tool, which);
  detail::sigbus_length = std::min(line.size(), sizeof detail::sigbus_message);
  std::memcpy(detail::sigbus_message, line.data(), detail::sigbus_length);
  struct sigaction action = {};
  action.sa_handler = detail::on_sigbus;
  sigemptyset(&action.sa_mask);
  sigaction(SIGBUS, &action, nullptr);
}

// Parses the command line (`args` without the program name). A parse error is a user error (one
// line, status 1, as every other user error), not CLI11's own status codes; --help prints and
// returns 0. Returns the status to exit with, or -1 to go on.
inline int parse_command_line(CLI::App &app, std::string_view tool, std::vector<std::string> args) {
  try {
    std::reverse(args.begin(), args.end());  // CLI11 takes a vector last argument first
    app.parse(args);
    return -1;
  } catch (const CLI::Success &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    fmt::print(stderr, "{}: error: {} (see --help)\n", tool, e.what());
    return 1;
  }
}

inline int parse_command_line(CLI::App &app, std::string_view tool, int argc, char **argv) {
  return parse_command_line(app, tool, std::vector<std::string>(argv + 1, argv + argc));
}

// Runs a tool's body. kdsl::Error is the user's to fix: status 1 and its message. Running out
// of memory is reported as such (status 1). Anything else is a bug in kdsl: status 2, saying so
// and naming `subject` (the file being worked on), so the report can be acted on.
inline int run_tool(std::string_view tool, std::string_view subject, const std::function<int()> &body) {
  try {
    return body();
  } catch (const Error &e) {
    fmt::print(stderr, "{}: error: {}\n", tool, e.what());
    return 1;
  } catch (const std::bad_alloc &) {
    fmt::print(stderr, "{}: error: out of memory{}\n", tool, subject.empty() ? std::string() : fmt::format(" while working on {}", subject));
    return 1;
  } catch (const std::exception &e) {
    fmt::print(stderr, "{}: internal error (a bug in kdsl, please report it){}: {}\n", tool,
               subject.empty() ? std::string() : fmt::format(" while working on {}", subject), e.what());
    return 2;
  } catch (...) {
    fmt::print(stderr, "{}: internal error (a bug in kdsl, please report it): an unknown exception\n", tool);
    return 2;
  }
}

}  // namespace kdsl::tools
