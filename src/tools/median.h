// median.h - the middle of a tool's measured times: the mean of the two middle ones for an even count
#pragma once
#include <algorithm>
#include <vector>

namespace kdsl::tools {

// The middle value of v (the mean of the two middle ones for an even count); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace kdsl::tools
