// extract_snippets.cpp - writes the C++ blocks of a Markdown file as one source file, so docs are compiled as tests
//
//   kdsl-extract-snippets INPUT.md PROGRAM OUTPUT.cpp
//
// A fenced block whose info string is `cpp` belongs to program "main"; `cpp program=NAME` to
// program NAME; `cpp skip` to none (a fragment shown, not compiled). The blocks of PROGRAM are
// written in order, each after a #line directive, so a compiler error points into the Markdown.
// A program with no block is an error: a renamed program must not turn its test into nothing.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

// The program a fence's info string names ("" for a block that is not compiled C++).
std::string program_of(const std::string &info) {
  std::istringstream words(info);
  std::string language, word;
  words >> language;
  if (language != "cpp") return "";
  std::string program = "main";
  while (words >> word) {
    if (word == "skip") return "";
    if (word.rfind("program=", 0) == 0) program = word.substr(8);
  }
  return program;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s INPUT.md PROGRAM OUTPUT.cpp\n", argv[0]);
    return 2;
  }
  const std::string input = argv[1], wanted = argv[2], output = argv[3];
  std::ifstream in(input);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read %s\n", argv[0], input.c_str());
    return 1;
  }
  std::ostringstream source;
  source << "// generated from " << input << " (program " << wanted << ") by kdsl-extract-snippets: edit the Markdown\n";
  std::string line, fence;
  bool inside = false, keep = false;
  int line_number = 0, blocks = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!inside) {
      if (line.rfind("```", 0) == 0) {
        inside = true;
        fence = "```";
        keep = program_of(line.substr(3)) == wanted;
        if (keep) {
          ++blocks;
          source << "#line " << line_number + 1 << " \"" << input << "\"\n";
        }
      }
      continue;
    }
    if (line.rfind(fence, 0) == 0 && line.find_first_not_of('`') == std::string::npos) {
      inside = false;
      continue;
    }
    if (keep) source << line << '\n';
  }
  if (inside) {
    std::fprintf(stderr, "%s: a code block opened in %s is never closed\n", argv[0], input.c_str());
    return 1;
  }
  if (blocks == 0) {
    std::fprintf(stderr, "%s: %s has no ```cpp block of program '%s'\n", argv[0], input.c_str(), wanted.c_str());
    return 1;
  }
  // Written only when changed, so an edit elsewhere in the Markdown does not rebuild the program.
  std::string text = source.str();
  {
    std::ifstream old(output, std::ios::binary);
    std::ostringstream previous;
    previous << old.rdbuf();
    if (old && previous.str() == text) return 0;
  }
  std::string temporary = output + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary);
    out << text;
    if (!out.flush()) {
      std::fprintf(stderr, "%s: cannot write %s\n", argv[0], temporary.c_str());
      return 1;
    }
  }
  if (std::rename(temporary.c_str(), output.c_str()) != 0) {
    std::fprintf(stderr, "%s: cannot rename %s to %s\n", argv[0], temporary.c_str(), output.c_str());
    return 1;
  }
  return 0;
}
