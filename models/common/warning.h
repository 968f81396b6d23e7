// warning.h - warnings from the model loaders: a file that loads, but not quite as written (llama.cpp's "warning:" lines)
#pragma once
#include <functional>
#include <string>

namespace kdsl::models {

// Writes "kdsl: warning: <message>" to stderr, or hands it to the sink a test installed.
void report_warning(const std::string &message);

// Replaces where warnings go (nullptr: back to stderr); returns the previous sink. For tests.
using WarningSink = std::function<void(const std::string &)>;
WarningSink set_warning_sink(WarningSink sink);

}  // namespace kdsl::models
