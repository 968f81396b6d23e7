// stderr_capture.h - collects what a test's code writes to stderr (kdsl's log lines), by file descriptor
#pragma once
#include <unistd.h>

#include <cstdio>
#include <string>

namespace kdsl_test {

// Collects what kdsl logs to stderr while alive.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = ::dup(2);
    ::dup2(::fileno(file_), 2);
  }
  ~StderrCapture() {
    restore();
    std::fclose(file_);
  }
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
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE *file_;
  int saved_;
};

}  // namespace kdsl_test
