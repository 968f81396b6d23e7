// stream_capture.h - collects what a test's code writes to stdout or stderr, by file descriptor (as JIT code and kdsl's log write)
#pragma once
#include <unistd.h>

#include <cstdio>
#include <string>

namespace kdsl_test {

// Redirects one standard stream's file descriptor to a temporary file while alive.
class StreamCapture {
 public:
  StreamCapture(std::FILE *stream, int fd) : stream_(stream), fd_(fd) {
    std::fflush(stream_);
    file_ = std::tmpfile();
    saved_ = ::dup(fd_);
    ::dup2(::fileno(file_), fd_);
  }
  ~StreamCapture() {
    restore();
    std::fclose(file_);
  }
  StreamCapture(const StreamCapture &) = delete;
  StreamCapture &operator=(const StreamCapture &) = delete;

  // What was written; ends the capture.
  std::string text() {
    restore();
    std::string out;
    std::rewind(file_);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), file_)) > 0;) out.append(buf, n);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stream_);
    ::dup2(saved_, fd_);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE *stream_;
  int fd_;
  std::FILE *file_;
  int saved_;
};

// What kdsl logs to stderr while alive.
struct StderrCapture : StreamCapture {
  StderrCapture() : StreamCapture(stderr, 2) {}
};

// What kernels print (device_print) to stdout while alive.
struct StdoutCapture : StreamCapture {
  StdoutCapture() : StreamCapture(stdout, 1) {}
};

}  // namespace kdsl_test
