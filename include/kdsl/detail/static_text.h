// static_text.h - compile-time strings, so a static_assert can name the shapes and dtypes at fault
#pragma once
#include <array>
#include <cstddef>
#include <string_view>

namespace kdsl::detail {

// A string usable as a template argument: the compiler prints it in full when the
// `compile_error<...>` below fails, e.g. compile_error<Text<42>{"shapes [16] and [32] do not broadcast"}>.
template <std::size_t N>
struct Text {
  char s[N]{};
};

// A scratch buffer for building messages in constexpr code.
struct TextBuffer {
  char s[256]{};
  std::size_t n = 0;
  constexpr TextBuffer &add(std::string_view v) {
    for (char c : v)
      if (n + 1 < sizeof(s)) s[n++] = c;
    return *this;
  }
  constexpr TextBuffer &add(long long v) {
    char digits[24]{};
    int m = 0;
    bool negative = v < 0;
    unsigned long long u = negative ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do {
      digits[m++] = char('0' + u % 10);
      u /= 10;
    } while (u);
    if (negative) add("-");
    while (m) {
      char c[1] = {digits[--m]};
      add(std::string_view(c, 1));
    }
    return *this;
  }
  template <std::size_t R>
  constexpr TextBuffer &add_shape(const std::array<int, R> &dims) {
    add("[");
    for (std::size_t i = 0; i < R; ++i) {
      if (i) add(", ");
      add((long long)dims[i]);
    }
    return add("]");
  }
};

template <TextBuffer B>
constexpr auto to_text() {
  Text<B.n + 1> t{};
  for (std::size_t i = 0; i < B.n; ++i) t.s[i] = B.s[i];
  return t;
}

// Fails to compile with `Message` in the diagnostic. Use under `if constexpr (!ok)`.
template <auto Message>
struct compile_error {
  static constexpr bool value = false;
};

}  // namespace kdsl::detail

// Fails compilation with a message built at compile time; `buffer_expr` is a constexpr
// expression yielding a TextBuffer.
#define KDSL_STATIC_FAIL(buffer_expr, short_text)                                                       \
  static_assert(::kdsl::detail::compile_error<::kdsl::detail::to_text<(buffer_expr)>()>::value, short_text)
