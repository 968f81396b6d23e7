// device_debug.cpp - device_print's line writer and device_assert's failure record for CPU launches
#include "codegen/host/device_debug.h"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <bit>
#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <kdsl/dtype.h>

namespace kdsl::codegen {
namespace {

std::string value_text(DType t, int64_t word) {
  if (is_float(t)) return fmt::format("{}", float(std::bit_cast<double>(word)));
  if (t == DType::Bool) return word ? "true" : "false";
  if (is_unsigned(t)) return fmt::format("{}", uint64_t(word));
  return fmt::format("{}", word);
}

// Nested brackets, row-major: [[1, 2], [3, 4]].
void append_block(std::string &out, DType t, int rank, const int64_t *dims, const int64_t *values, int axis, int64_t &next) {
  if (axis == rank) {
    out += value_text(t, values[next++]);
    return;
  }
  out += '[';
  for (int64_t i = 0; i < dims[axis]; ++i) {
    if (i) out += ", ";
    append_block(out, t, rank, dims, values, axis + 1, next);
  }
  out += ']';
}

struct Failure {
  std::string message;
  std::array<int32_t, 3> pid{};
  std::vector<int64_t> index;
  int64_t programs = 0;  // failing programs of the launch
};

std::mutex failures_mutex;
std::map<const uint64_t *, Failure> failures;  // by launch (its argument slots)
std::atomic<int> launches_failed{0};           // entries in `failures`: launches check it without the lock

// Program order of the grid: z, then y, then x (the host's linear program id).
auto program_order(const std::array<int32_t, 3> &pid) { return std::make_tuple(pid[2], pid[1], pid[0]); }

}  // namespace

void device_print_line(const char *label, const int32_t *pid, int32_t count, const int64_t *operands) {
  std::string line = fmt::format("pid ({}, {}, {}) {}:", pid[0], pid[1], pid[2], label);
  for (int32_t i = 0; i < count; ++i) {
    const int64_t *d = operands + i * kPrintOperandWords;
    int64_t next = 0;
    line += ' ';
    append_block(line, DType(d[0]), int(d[1]), d + 2, reinterpret_cast<const int64_t *>(d[6]), 0, next);
  }
  line += '\n';
  static std::mutex out;
  std::lock_guard lock(out);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

void device_assert_failed(const uint64_t *launch, const char *message, const int32_t *pid, const int64_t *index, int32_t rank) {
  std::array<int32_t, 3> at{pid[0], pid[1], pid[2]};
  std::lock_guard lock(failures_mutex);
  auto [it, fresh] = failures.try_emplace(launch);
  Failure &f = it->second;
  if (fresh) launches_failed.fetch_add(1);
  if (fresh || program_order(at) < program_order(f.pid)) {
    f.message = message;
    f.pid = at;
    f.index.assign(index, index + rank);
  }
  ++f.programs;
}

std::optional<std::string> take_device_assert_failure(const uint64_t *launch, const std::string &kernel) {
  if (launches_failed.load() == 0) return std::nullopt;
  std::lock_guard lock(failures_mutex);
  auto it = failures.find(launch);
  if (it == failures.end()) return std::nullopt;
  Failure f = std::move(it->second);
  failures.erase(it);
  launches_failed.fetch_sub(1);
  std::string element = f.index.empty() ? "the scalar condition" : fmt::format("element [{}]", fmt::join(f.index, ", "));
  std::string others = f.programs > 1 ? fmt::format(" ({} programs failed; the first is named)", f.programs) : "";
  return fmt::format("kernel '{}': device_assert failed in program ({}, {}, {}) at {}: {}{}", kernel, f.pid[0], f.pid[1], f.pid[2], element,
                     f.message, others);
}

}  // namespace kdsl::codegen
