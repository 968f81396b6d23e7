// library_tuning.cpp - a Library's tuned choices, and a tuned point's key as its record names it
#include "kernels/library_tuning.h"

namespace kdsl::kernels::detail {

TunedChoices &tuned_choices(Library::Impl &im) {
  static const char identity = 0;
  auto it = im.kernels.find(&identity);
  if (it == im.kernels.end()) it = im.kernels.emplace(&identity, std::make_shared<TunedChoices>()).first;
  // Made here, not const: the table holds its objects as const void, kernels and this alike.
  return *const_cast<TunedChoices *>(static_cast<const TunedChoices *>(it->second.get()));
}

std::string TunedKey::text() const {
  // names is "N,K" or "rows,N,K": one name per size used, in order.
  std::string out;
  const int64_t values[] = {a, b, c};
  int i = 0;
  for (const char *p = names; *p && i < 3; ++i) {
    const char *end = p;
    while (*end && *end != ',') ++end;
    if (!out.empty()) out += ',';
    out.append(p, end) += '=' + std::to_string(values[i]);
    p = *end ? end + 1 : end;
  }
  return out;
}

}  // namespace kdsl::kernels::detail
