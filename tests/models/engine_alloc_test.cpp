// engine_alloc_test.cpp - the per-token decode loop and speculative checks allocate nothing (a counting global operator new)
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include <kdsl/kdsl.h>

#include "models/engine/engine.h"
#include "tests/models/shared_models.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

// Replaces the global allocator for this test binary; it counts only while `counting` is set.
void *operator new(std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void *operator new[](std::size_t n) { return ::operator new(n); }
// The nothrow forms too: left to the runtime (a sanitizer's, say), their memory would come from
// another allocator than the free() below.
void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void *operator new[](std::size_t n, const std::nothrow_t &t) noexcept { return ::operator new(n, t); }
// GCC sees free() of what it takes for operator new's memory; the operator new above is malloc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }
#pragma GCC diagnostic pop

TEST_CASE("engine: decode steps allocate nothing once the kernels are compiled") {
  auto model_path = kdsl::test::shared_model("stories260K.bin");
  if (!model_path) return;
  kdsl::models::ModelWeights model = kdsl::models::load_model_weights(*model_path);
  kdsl::models::Engine engine(model, kdsl::Device::cpu(), kdsl::models::EngineOptions{.context = 128, .page_size = 16, .max_logit_rows = 8});
  std::vector<int> prompt = {1, 400, 35, 270, 9};
  engine.forward(prompt, 0);
  int pos = int(prompt.size());
  int token[1] = {42};
  for (int i = 0; i < 4; ++i) engine.forward(token, pos++);  // compiles every decode kernel
  // The counter itself works: one vector, one allocation.
  allocations = 0;
  counting = true;
  { std::vector<int> probe(10); }
  counting = false;
  REQUIRE(allocations.load() == 1);
  allocations = 0;
  counting = true;
  for (int i = 0; i < 20; ++i) engine.forward(token, pos++);
  counting = false;
  CHECK(allocations.load() == 0);

  // Speculative checks: the last token and up to 7 drafts, logits for every row, then the
  // rejected rows rewritten by the next check (pos advances by fewer than the rows run).
  std::vector<int> check = {42, 17, 99, 3, 250, 8, 61, 7};
  for (int rows = 1; rows <= 8; ++rows) engine.forward_rows(std::span<const int>(check.data(), size_t(rows)), pos);  // compiles
  allocations = 0;
  counting = true;
  for (int i = 0; i < 20; ++i) {
    int rows = 1 + i % 8;
    auto logits = engine.forward_rows(std::span<const int>(check.data(), size_t(rows)), pos);
    if (logits.size() != size_t(rows) * size_t(engine.vocab())) break;
    pos += 1 + i % 3;
  }
  counting = false;
  CHECK(allocations.load() == 0);
  CHECK(pos == 29 + 39);  // every check ran
}
