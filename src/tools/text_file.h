// text_file.h - a text file read whole for the evaluation tools (kdsl-perplexity, kdsl-imatrix), with the error naming the file
#pragma once
#include <fmt/format.h>
#include <kdsl/error.h>

#include <fstream>
#include <sstream>
#include <string>

namespace kdsl::tools {

inline std::string read_text_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("{}: cannot open the text file", path));
  std::stringstream s;
  s << f.rdbuf();
  if (f.bad()) throw Error(fmt::format("{}: read error", path));
  return s.str();
}

}  // namespace kdsl::tools
