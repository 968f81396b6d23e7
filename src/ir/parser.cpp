// parser.cpp - reads the block IR's text form (what printer.cpp writes) back into a Function
//
// The grammar, one op per line; blank lines and `//` comments are skipped:
//
//   function := 'kernel' '@' NAME '(' [argument {',' argument}] ')' '{' NL {op} '}'
//   argument := VALUE ':' type ['{' ('div16' | 'one') '}']
//   op       := [VALUE {',' VALUE} '='] OPNAME ['[' number {',' number} ']'] [STRING]
//               [VALUE {',' VALUE}] [':' type {',' type}] (NL | regions)
//   regions  := '{' NL region {'}' 'else' '{' NL region} '}' NL
//   region   := ['^' '(' [VALUE ':' type {',' VALUE ':' type}] ')' ':' NL] {op}
//   type     := DTYPE [shape] | 'ptr' '<' DTYPE '>' [shape]        f32[64,32], ptr<f16>[128], i1
//   shape    := '[' INT {',' INT} ']'
//   number   := integer | decimal | 'inf' | '-inf' | 'nan'           (decimals only in constant[])
//   VALUE    := '%' followed by letters, digits, '_' or '.'
//   STRING   := '"' characters, with \" \\ \n and \xHH escapes '"'      (device_print's label)
//   NAME     := everything between '@' and the last '(' of the line (kernel names hold '<', ',')
//
// A value is visible after its definition, in its region and the regions nested in it; the
// results of an op with regions are visible only after the op.
#include "ir/parser.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <unordered_map>

#include <kdsl/error.h>

#include "ir/verifier.h"

namespace kdsl::ir {
namespace {

enum class Tok { Value, Word, Number, Punct, String, Newline, End };

struct Token {
  Tok kind = Tok::End;
  std::string_view text;
  int line = 1, column = 1;

  bool is(char punct) const { return kind == Tok::Punct && text[0] == punct; }
  bool is_word(std::string_view w) const { return kind == Tok::Word && text == w; }
};

std::string describe(const Token &t) {
  switch (t.kind) {
    case Tok::Newline: return "end of line";
    case Tok::End: return "end of input";
    default: return fmt::format("'{}'", t.text);
  }
}

[[noreturn]] void fail_at(int line, int column, const std::string &what) {
  throw Error(fmt::format("line {}, column {}: {}", line, column, what));
}
[[noreturn]] void fail_at(const Token &t, const std::string &what) { fail_at(t.line, t.column, what); }

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  const Token &peek() {
    if (!ahead_) ahead_ = lex();
    return *ahead_;
  }
  Token next() {
    Token t = peek();
    ahead_.reset();
    return t;
  }

  // The kernel name after '@': raw text up to the last '(' on the line (before any comment),
  // since names such as `matmul<64, 64, 32>` are not tokens.
  Token raw_name() {
    if (ahead_) internal_error("ir parser: raw_name with a token looked ahead");
    size_t end = std::min(src_.find('\n', pos_), src_.find("//", pos_));
    if (end == std::string_view::npos) end = src_.size();
    size_t paren = src_.substr(0, end).rfind('(');
    Token t{Tok::Word, {}, line_, column()};
    if (paren == std::string_view::npos || paren < pos_) fail_at(t, "expected the kernel name and its '(' after '@'");
    std::string_view name = src_.substr(pos_, paren - pos_);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.remove_suffix(1);
    if (name.empty()) fail_at(t, "expected the kernel name after '@', found '('");
    t.text = name;
    pos_ = paren;
    return t;
  }

 private:
  int column() const { return int(pos_ - line_start_) + 1; }

  Token lex() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (src_.substr(pos_, 2) == "//") {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
    Token t{Tok::End, {}, line_, column()};
    if (pos_ >= src_.size()) return t;
    size_t start = pos_;
    char c = src_[pos_];
    auto take = [&](Tok kind) {
      t.kind = kind;
      t.text = src_.substr(start, pos_ - start);
      return t;
    };
    if (c == '\n') {
      ++pos_;
      Token nl = take(Tok::Newline);
      ++line_;
      line_start_ = pos_;
      return nl;
    }
    if (c == '%') {
      ++pos_;
      while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
      if (pos_ == start + 1) fail_at(t, "expected a value name such as %3 after '%'");
      return take(Tok::Value);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
      return take(Tok::Word);
    }
    bool sign = (c == '-' || c == '+') && pos_ + 1 < src_.size() &&
                (std::isalnum(static_cast<unsigned char>(src_[pos_ + 1])) || src_[pos_ + 1] == '.');
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || sign) {
      ++pos_;
      // Letters too, so that "1.5x" is one (bad) token in the error rather than two.
      while (pos_ < src_.size()) {
        char d = src_[pos_];
        char prev = src_[pos_ - 1];
        if (is_name_char(d) || ((d == '+' || d == '-') && (prev == 'e' || prev == 'E'))) ++pos_;
        else break;
      }
      return take(Tok::Number);
    }
    if (std::string_view("(){}[]<>,:=^@").find(c) != std::string_view::npos) {
      ++pos_;
      return take(Tok::Punct);
    }
    if (c == '"') {
      for (++pos_; pos_ < src_.size() && src_[pos_] != '"' && src_[pos_] != '\n'; ++pos_)
        if (src_[pos_] == '\\') ++pos_;
      if (pos_ >= src_.size() || src_[pos_] != '"') fail_at(t, "unterminated string: a message ends with '\"' on its line");
      ++pos_;
      return take(Tok::String);
    }
    if (std::isprint(static_cast<unsigned char>(c))) fail_at(t, fmt::format("unexpected character '{}'", c));
    fail_at(t, fmt::format("unexpected byte 0x{:02x}", static_cast<unsigned char>(c)));
  }

  std::string_view src_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
  std::optional<Token> ahead_;
};

// The text of a STRING token, escapes decoded (printer.cpp's quoted() in reverse).
std::string unquoted(const Token &t) {
  std::string out;
  std::string_view s = t.text.substr(1, t.text.size() - 2);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    char e = ++i < s.size() ? s[i] : '\0';
    if (e == 'n') out += '\n';
    else if (e == '"' || e == '\\') out += e;
    else if (e == 'x' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) && std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += char(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      fail_at(t, fmt::format("unknown escape '\\{}' in a string (known: \\\" \\\\ \\n \\xHH)", e));
    }
  }
  return out;
}

std::optional<OpKind> op_kind_named(std::string_view name) {
  static const std::unordered_map<std::string_view, OpKind> kinds = {
#define OP(name, text, operands, traits) {text, OpKind::name},
#include <kdsl/detail/ops.def>
  };
  auto it = kinds.find(name);
  if (it == kinds.end()) return std::nullopt;
  return it->second;
}

std::optional<DType> dtype_named(std::string_view name) {
#define X(e, text, storage, bytes) \
  if (name == text) return DType::e;
  KDSL_DTYPES(X)
#undef X
  return std::nullopt;
}

std::optional<int64_t> integer_of(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<double> double_of(std::string_view text) {
  if (text == "inf" || text == "+inf") return HUGE_VAL;
  if (text == "-inf") return -HUGE_VAL;
  if (text == "nan" || text == "+nan" || text == "-nan") return std::nan("");
  std::string s(text);
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+' || s[0] == '.')) return std::nullopt;
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || std::isnan(v) || std::isinf(v)) return std::nullopt;  // "1e999", "-nan(1)"
  return v;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : lex_(text) {}

  Function run() {
    skip_newlines();
    Token kw = lex_.next();
    if (!kw.is_word("kernel")) expected(kw, "'kernel' to start the function");
    Token at = lex_.next();
    if (!at.is('@')) expected(at, "'@' and the kernel name");
    fn_.name = std::string(lex_.raw_name().text);
    expect('(', "'(' opening the arguments");
    scopes_.emplace_back();
    if (!accept(')')) {
      do argument();
      while (accept(','));
      expect(')', "',' or ')' after an argument");
    }
    Token open = expect('{', "'{' opening the kernel body");
    end_of_line();
    body(fn_.body, fmt::format("kernel @{} (line {})", fn_.name, open.line));
    lex_.next();  // the closing '}'
    skip_newlines();
    if (Token t = lex_.next(); t.kind != Tok::End) expected(t, "end of input after the kernel's closing '}'");
    return std::move(fn_);
  }

 private:
  // Names of values, with where they were defined; a name stays here after its region ends
  // (hidden) so that a use out of scope is reported as such, and is never defined twice.
  struct Binding {
    ValueId id = kNoValue;
    int line = 0, column = 0;
    bool visible = true;
  };
  // Result names of an op being parsed: defined only once the op (with its regions) ends.
  struct Pending {
    std::string_view op;
    int line = 0;
    std::vector<Token> names;
  };

  [[noreturn]] void expected(const Token &found, std::string_view what) {
    fail_at(found, fmt::format("expected {}, found {}", what, describe(found)));
  }
  Token expect(char punct, std::string_view what) {
    Token t = lex_.next();
    if (!t.is(punct)) expected(t, what);
    return t;
  }
  bool accept(char punct) {
    if (!lex_.peek().is(punct)) return false;
    lex_.next();
    return true;
  }
  void skip_newlines() {
    while (lex_.peek().kind == Tok::Newline) lex_.next();
  }
  void end_of_line() {
    Token t = lex_.next();
    if (t.kind != Tok::Newline && t.kind != Tok::End) expected(t, "end of line");
  }
  Token value_token(std::string_view what) {
    Token t = lex_.next();
    if (t.kind != Tok::Value) expected(t, what);
    return t;
  }

  // --- names ---------------------------------------------------------------------------

  void check_new_name(const Token &t) {
    if (auto it = names_.find(t.text); it != names_.end())
      fail_at(t, fmt::format("value {} is already defined at line {}, column {}", t.text, it->second.line, it->second.column));
    for (const Pending &p : pending_)
      for (const Token &n : p.names)
        if (n.text == t.text) fail_at(t, fmt::format("value {} is already a result of '{}' at line {}", t.text, p.op, p.line));
  }

  void bind(const Token &t, ValueId id) {
    names_[t.text] = Binding{id, t.line, t.column, true};
    scopes_.back().push_back(t.text);
  }

  ValueId define(const Token &t, const Type &type) {
    check_new_name(t);
    ValueId id = fn_.new_value(type);
    bind(t, id);
    return id;
  }

  ValueId use(const Token &t) {
    auto it = names_.find(t.text);
    if (it == names_.end()) {
      for (const Pending &p : pending_)
        for (const Token &n : p.names)
          if (n.text == t.text) fail_at(t, fmt::format("value {} is used by '{}' at line {}, which defines it", t.text, p.op, p.line));
      fail_at(t, fmt::format("undefined value {}", t.text));
    }
    if (!it->second.visible)
      fail_at(t, fmt::format("value {} (defined at line {}) is not visible here: its region has ended", t.text, it->second.line));
    return it->second.id;
  }

  void close_scope() {
    for (std::string_view n : scopes_.back()) names_[n].visible = false;
    scopes_.pop_back();
  }

  // --- types ---------------------------------------------------------------------------

  Type type() {
    Token t = lex_.next();
    Type out;
    if (t.is_word("ptr")) {
      expect('<', "'<' after ptr, as in ptr<f16>");
      Token e = lex_.next();
      auto d = e.kind == Tok::Word ? dtype_named(e.text) : std::nullopt;
      if (!d) expected(e, "an element type such as f16");
      out.elem = *d;
      out.is_ptr = true;
      expect('>', "'>' closing ptr<...>");
    } else {
      auto d = t.kind == Tok::Word ? dtype_named(t.text) : std::nullopt;
      if (!d) expected(t, "a type such as f32[16]");
      out.elem = *d;
    }
    if (accept('[')) {
      do {
        Token d = lex_.next();
        auto n = d.kind == Tok::Number ? integer_of(d.text) : std::nullopt;
        if (!n) expected(d, "a block extent such as 16");
        if (*n <= 0) fail_at(d, fmt::format("block extents must be positive, found {}", *n));
        if (out.shape.rank == kMaxRank) fail_at(d, fmt::format("block rank above the maximum of {}", kMaxRank));
        out.shape.dims[out.shape.rank++] = *n;
      } while (accept(','));
      expect(']', "',' or ']' in the block shape");
    }
    return out;
  }

  // --- arguments, ops, regions ---------------------------------------------------------

  void argument() {
    Token v = value_token("an argument such as %0: i32");
    expect(':', "':' and the argument's type");
    Argument a;
    a.name = fmt::format("arg{}", fn_.args.size());
    a.value = define(v, type());
    if (accept('{')) {
      Token c = lex_.next();
      if (c.is_word("div16")) a.spec = ArgClass::Divisible16;
      else if (c.is_word("one")) a.spec = ArgClass::EqualToOne;
      else expected(c, "an argument class {div16} or {one}");
      expect('}', "'}' closing the argument class");
    }
    fn_.args.push_back(a);
  }

  // Ops up to (not including) the '}' that closes the enclosing body.
  void body(Region &r, const std::string &owner) {
    while (true) {
      skip_newlines();
      const Token &t = lex_.peek();
      if (t.is('}')) return;
      if (t.kind == Tok::End) expected(t, fmt::format("'}}' closing {}", owner));
      op(r);
    }
  }

  void op(Region &r) {
    Pending results;
    if (lex_.peek().kind == Tok::Value) {
      do {
        Token t = value_token("a result name such as %3");
        check_new_name(t);
        for (const Token &n : results.names)
          if (n.text == t.text) fail_at(t, fmt::format("value {} is named twice among the results", t.text));
        results.names.push_back(t);
      } while (accept(','));
      expect('=', "',' or '=' after the result names");
    }
    Token name = lex_.next();
    if (name.kind != Tok::Word) expected(name, "an op name such as add");
    std::optional<OpKind> kind = op_kind_named(name.text);
    if (!kind) fail_at(name, fmt::format("unknown op '{}'", name.text));
    results.op = name.text;
    results.line = name.line;

    Op op;
    op.kind = *kind;
    std::vector<Token> attrs;
    if (accept('[')) {
      do {
        Token a = lex_.next();
        if (a.kind != Tok::Number && a.kind != Tok::Word) expected(a, "a number");
        attrs.push_back(a);
      } while (accept(','));
      expect(']', "',' or ']' after an attribute");
    }
    if (lex_.peek().kind == Tok::String) op.text = unquoted(lex_.next());
    if (lex_.peek().kind == Tok::Value) {
      do op.operands.push_back(use(value_token("an operand such as %3")));
      while (accept(','));
    }
    int want = op_operand_count(op.kind);
    if (want >= 0 && int(op.operands.size()) != want)
      fail_at(name, fmt::format("'{}' takes {} operand{}, found {}", name.text, want, want == 1 ? "" : "s", op.operands.size()));

    std::vector<Type> types;
    if (!results.names.empty()) {
      expect(':', "':' and the result types");
      do types.push_back(type());
      while (accept(','));
      if (types.size() != results.names.size())
        fail_at(name, fmt::format("'{}' has {} result{} but {} type{}", name.text, results.names.size(), results.names.size() == 1 ? "" : "s",
                                  types.size(), types.size() == 1 ? "" : "s"));
    }
    attributes(op, name, attrs, types);
    for (const Type &t : types) op.results.push_back(fn_.new_value(t));

    if (has_regions(op.kind)) {
      pending_.push_back(results);
      regions(op, name);
      pending_.pop_back();
    } else {
      Token t = lex_.next();
      if (t.is('{')) fail_at(t, fmt::format("'{}' has no regions, found '{{'", name.text));
      if (t.kind != Tok::Newline && t.kind != Tok::End)
        expected(t, results.names.empty() ? "',' or end of line" : "',' or end of line after the result types");
    }
    for (size_t i = 0; i < results.names.size(); ++i) bind(results.names[i], op.results[i]);
    r.ops.push_back(std::move(op));
  }

  void attributes(Op &op, const Token &name, const std::vector<Token> &attrs, const std::vector<Type> &types) {
    if (op.kind == OpKind::Constant) {
      if (attrs.size() != 1) fail_at(name, "'constant' needs one value in brackets, such as constant[1.5] or constant[-inf]");
      if (types.size() != 1) fail_at(name, "'constant' needs one result, as in %0 = constant[1.5] : f32");
      const Token &a = attrs[0];
      if (is_float(types[0].elem) && !types[0].is_ptr) {
        auto v = double_of(a.text);
        if (!v) expected(a, "a number such as 1.5, -inf or nan");
        op.fval = *v;
      } else {
        auto v = integer_of(a.text);
        if (!v) expected(a, fmt::format("an integer constant for {}", types[0].str()));
        op.ints = {*v};
      }
      return;
    }
    for (const Token &a : attrs) {
      auto v = integer_of(a.text);
      if (!v) expected(a, fmt::format("an integer attribute of '{}'", name.text));
      op.ints.push_back(*v);
    }
  }

  void regions(Op &op, const Token &name) {
    Token open = lex_.next();
    if (!open.is('{')) expected(open, fmt::format("'{{' opening the region of '{}'", name.text));
    end_of_line();
    std::string owner = fmt::format("the region of '{}' at line {}", name.text, name.line);
    while (true) {
      op.regions.emplace_back();
      region(op.regions.back(), owner);
      lex_.next();  // '}'
      if (!lex_.peek().is_word("else")) break;
      lex_.next();
      expect('{', "'{' after else");
      end_of_line();
    }
    end_of_line();
    size_t want = op.kind == OpKind::If ? 2 : 1;
    if (op.regions.size() != want)
      fail_at(name, op.kind == OpKind::If ? fmt::format("'if' needs a then and an else region ('}} else {{'), found {}", op.regions.size())
                                          : fmt::format("'{}' has one region, found {}", name.text, op.regions.size()));
  }

  void region(Region &r, const std::string &owner) {
    scopes_.emplace_back();
    skip_newlines();
    if (accept('^')) {
      expect('(', "'(' opening the region arguments");
      if (!accept(')')) {
        do {
          Token v = value_token("a region argument such as %4: i32");
          expect(':', "':' and the region argument's type");
          r.args.push_back(define(v, type()));
        } while (accept(','));
        expect(')', "',' or ')' after a region argument");
      }
      expect(':', "':' after the region arguments");
      end_of_line();
    }
    body(r, owner);
    close_scope();
  }

  Lexer lex_;
  Function fn_;
  std::unordered_map<std::string_view, Binding> names_;
  std::vector<std::vector<std::string_view>> scopes_;
  std::vector<Pending> pending_;
};

}  // namespace

Function parse_unverified(std::string_view text) { return Parser(text).run(); }

Function parse(std::string_view text) {
  Function fn = parse_unverified(text);
  std::vector<std::string> problems = verify(fn);
  if (!problems.empty())
    throw Error(fmt::format("kernel @{}: the text parses but is not valid IR:\n  {}", fn.name, fmt::join(problems, "\n  ")));
  return fn;
}

}  // namespace kdsl::ir
