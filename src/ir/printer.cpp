// printer.cpp - writes the text form of the block IR (see parser.cpp for the grammar)
#include "ir/printer.h"

#include <fmt/format.h>

#include <cmath>
#include <unordered_map>

namespace kdsl::ir {
namespace {

const char *spec_text(ArgClass c) {
  switch (c) {
    case ArgClass::Divisible16:
      return " {div16}";
    case ArgClass::EqualToOne:
      return " {one}";
    case ArgClass::None:
      break;
  }
  return "";
}

std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // Float constants hold values of their dtype (at most f32 precision): the shortest text
  // that reads back as the same f32.
  return fmt::format("{}", float(v));
}

// A message as a C-style string literal: quotes, backslashes and control bytes escaped.
std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') out += fmt::format("\\{}", char(c));
    else if (c == '\n') out += "\\n";
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += char(c);
  }
  return out + "\"";
}

class Printer {
 public:
  explicit Printer(const Function &fn) : fn_(fn) {}

  std::string run() {
    out_ += fmt::format("kernel @{}(", fn_.name);
    for (size_t i = 0; i < fn_.args.size(); ++i) {
      const Argument &a = fn_.args[i];
      out_ += fmt::format("{}{}: {}{}", i ? ", " : "", define(a.value), fn_.type(a.value).str(), spec_text(a.spec));
    }
    out_ += ") {\n";
    region_body(fn_.body, 1);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  std::string define(ValueId v) {
    int n = int(names_.size());
    names_[v] = n;
    return fmt::format("%{}", n);
  }
  std::string use(ValueId v) const {
    auto it = names_.find(v);
    return it == names_.end() ? fmt::format("%<undefined {}>", v) : fmt::format("%{}", it->second);
  }

  void region_body(const Region &r, int depth) {
    for (const Op &op : r.ops) print_op(op, depth);
  }

  void print_op(const Op &op, int depth) {
    std::string indent(size_t(depth) * 2, ' ');
    out_ += indent;
    if (!op.results.empty()) {
      for (size_t i = 0; i < op.results.size(); ++i) out_ += (i ? ", " : "") + define(op.results[i]);
      out_ += " = ";
    }
    out_ += op_name(op.kind);
    if (op.kind == OpKind::Constant) {
      const Type &t = fn_.type(op.results[0]);
      out_ += "[" + (is_float(t.elem) ? number_text(op.fval) : fmt::format("{}", op.ints.at(0))) + "]";
    } else if (!op.ints.empty()) {
      out_ += fmt::format("[{}]", fmt::join(op.ints, ", "));
    }
    if (!op.text.empty()) out_ += " " + quoted(op.text);
    for (size_t i = 0; i < op.operands.size(); ++i) out_ += (i ? ", " : " ") + use(op.operands[i]);
    if (!op.results.empty()) {
      out_ += " :";
      for (size_t i = 0; i < op.results.size(); ++i) out_ += (i ? ", " : " ") + fn_.type(op.results[i]).str();
    }
    if (op.regions.empty()) {
      out_ += "\n";
      return;
    }
    out_ += " {\n";
    for (size_t ri = 0; ri < op.regions.size(); ++ri) {
      const Region &r = op.regions[ri];
      if (ri) out_ += indent + "} else {\n";
      if (!r.args.empty()) {
        out_ += indent + "^(";
        for (size_t i = 0; i < r.args.size(); ++i)
          out_ += fmt::format("{}{}: {}", i ? ", " : "", define(r.args[i]), fn_.type(r.args[i]).str());
        out_ += "):\n";
      }
      region_body(r, depth + 1);
    }
    out_ += indent + "}\n";
  }

  const Function &fn_;
  std::unordered_map<ValueId, int> names_;
  std::string out_;
};

}  // namespace

std::string print(const Function &fn) { return Printer(fn).run(); }

}  // namespace kdsl::ir
