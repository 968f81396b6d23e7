// static_text.h - compile-time strings, so a static_assert can name the shapes and dtypes at fault
#pragma once
#include <array>
#include <cstddef>
#include <string_view>
#include <utility>

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

// The diagnostic that carries a message built at compile time. GCC prints a string template
// argument whole, so there `compile_error` is left incomplete and the error naming it (the first
// one) shows the message. Clang prints at most 32 characters of one, so there the message is
// cut into pieces at spaces, each a template argument of a static_assert that fails.
#if defined(__clang__)
template <auto... Message>
struct compile_error {
  static constexpr bool value = false;
};

struct TextPieces {
  static constexpr std::size_t max_pieces = 16, max_length = 30;
  std::size_t begin[max_pieces]{}, end[max_pieces]{};
  std::size_t count = 0;
};

constexpr TextPieces split_text(const TextBuffer &b) {
  TextPieces out;
  std::size_t i = 0;
  while (i < b.n && out.count < TextPieces::max_pieces) {
    std::size_t end = i + TextPieces::max_length < b.n ? i + TextPieces::max_length : b.n;
    if (end < b.n) {
      std::size_t space = end;
      while (space > i && b.s[space] != ' ') --space;
      if (space > i) end = space + 1;
    }
    out.begin[out.count] = i;
    out.end[out.count++] = end;
    i = end;
  }
  return out;
}

template <TextBuffer B, std::size_t I>
constexpr auto text_piece() {
  constexpr TextPieces pieces = split_text(B);
  constexpr std::size_t begin = pieces.begin[I], length = pieces.end[I] - pieces.begin[I];
  Text<length + 1> t{};
  for (std::size_t k = 0; k < length; ++k) t.s[k] = B.s[begin + k];
  return t;
}

template <TextBuffer B, std::size_t... I>
constexpr bool fail_with_pieces(std::index_sequence<I...>) {
  static_assert(compile_error<text_piece<B, I>()...>::value, "kdsl: see the message in the requirement");
  return true;
}
#else
template <auto Message>
struct compile_error;  // incomplete on purpose: naming its ::value is the error
#endif

}  // namespace kdsl::detail

// Fails compilation with a message built at compile time; `buffer_expr` is a constexpr
// expression yielding a TextBuffer. Use under `if constexpr (!ok)`. `short_text` is for
// readers of the source: the compiler prints the built message.
#if defined(__clang__)
#define KDSL_STATIC_FAIL(buffer_expr, short_text)                                                                    \
  static_assert(::kdsl::detail::fail_with_pieces<(buffer_expr)>(                                                     \
                    std::make_index_sequence<::kdsl::detail::split_text((buffer_expr)).count>{}),                    \
                short_text)
#else
#define KDSL_STATIC_FAIL(buffer_expr, short_text) \
  static_assert(::kdsl::detail::compile_error<::kdsl::detail::to_text<(buffer_expr)>()>::value, short_text)
#endif
