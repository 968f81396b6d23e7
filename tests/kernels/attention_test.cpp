// attention_test.cpp - paged KV cache append, decode (split-K) and prefill attention against float64 references
#include "tests/kernels/paged_kv_test_util.h"

namespace {
using namespace kernels_test;

TEST_CASE("kernels: kv_append writes rows through the block table, across pages, and nothing else") {
  KDSL_TEST_RNG(rng);
  const int page_size = 16, n_kv = 2, D = 32, pos0 = 5, rows = 40;
  PagedCache c(rng, pos0 + rows, page_size, n_kv, D);
  auto k_before = c.k_pages, v_before = c.v_pages;
  auto k = random_floats(rng, size_t(rows) * n_kv * D), v = random_floats(rng, size_t(rows) * n_kv * D);
  library().kv_append(k.data(), v.data(), c.k_pages.data(), c.v_pages.data(), c.block_table.data(), pos0, rows, n_kv, D, page_size);
  std::vector<double> k_ref(k_before.begin(), k_before.end()), v_ref(v_before.begin(), v_before.end());
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < n_kv; ++h)
      for (int d = 0; d < D; ++d) {
        size_t src = (size_t(r) * n_kv + h) * D + size_t(d);
        k_ref[c.at(pos0 + r, h) + size_t(d)] = k[src];
        v_ref[c.at(pos0 + r, h) + size_t(d)] = v[src];
      }
  expect_close_scaled("k pages", c.k_pages, k_ref, 1.0, 0);
  expect_close_scaled("v pages", c.v_pages, v_ref, 1.0, 0);
}

TEST_CASE("kernels: kv_append_at writes each row at the position device memory gives it") {
  KDSL_TEST_RNG(rng);
  const int page_size = 16, n_kv = 2, D = 40, rows = 5;
  const std::vector<int32_t> positions = {70, 3, 16, 15, 47};  // out of order, either side of page boundaries
  PagedCache c(rng, 80, page_size, n_kv, D);
  auto k_before = c.k_pages, v_before = c.v_pages;
  auto k = random_floats(rng, size_t(rows) * n_kv * D), v = random_floats(rng, size_t(rows) * n_kv * D);
  library().kv_append_at(k.data(), v.data(), c.k_pages.data(), c.v_pages.data(), c.block_table.data(), positions.data(), rows, n_kv, D, page_size);
  std::vector<double> k_ref(k_before.begin(), k_before.end()), v_ref(v_before.begin(), v_before.end());
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < n_kv; ++h)
      for (int d = 0; d < D; ++d) {
        size_t src = (size_t(r) * n_kv + h) * D + size_t(d);
        k_ref[c.at(positions[size_t(r)], h) + size_t(d)] = k[src];
        v_ref[c.at(positions[size_t(r)], h) + size_t(d)] = v[src];
      }
  expect_close_scaled("k pages", c.k_pages, k_ref, 1.0, 0);
  expect_close_scaled("v pages", c.v_pages, v_ref, 1.0, 0);
}

// attention_decode_at sizes its launches for max_context and reads the position from memory:
// one launch shape serves every position, and the splits past the position attend to nothing.
TEST_CASE("kernels: decode attention at a position in device memory, at every kind of position below the context it is sized for") {
  KDSL_TEST_RNG(rng);
  const int n_heads = 8;
  // 2 workers split little; 16 split a long context 32 ways, most splits empty at short positions.
  kdsl::kernels::Library many_threads(kdsl::Device::cpu(16));
  for (kdsl::kernels::Library *lib : {&library(), &many_threads}) {
    for (int n_kv : {4, 1}) {
      for (int max_context : {48, 2000}) {
        for (int pos : {0, 37, 300, 1999}) {
          if (pos >= max_context) continue;
          const int D = n_kv == 4 ? 64 : 40, page_size = n_kv == 4 ? 16 : 24;
          CAPTURE(lib == &many_threads);
          CAPTURE(n_kv);
          CAPTURE(max_context);
          CAPTURE(pos);
          PagedCache c(rng, max_context, page_size, n_kv, D);
          c.fill(rng, max_context);  // positions past pos hold values the kernel must not see
          auto q = random_floats(rng, size_t(n_heads) * D, -2, 2);
          const float scale = 1.0f / std::sqrt(float(D));
          std::vector<double> ref, size;
          attention_ref(c, q, 1, pos, n_heads, scale, ref, size);
          GuardedOutput out(ref.size(), -7.0f);
          const int32_t position[1] = {pos};
          lib->attention_at(q.data(), c.k_pages.data(), c.v_pages.data(), c.block_table.data(), position, 1, max_context, out.data(), n_heads, n_kv,
                            D, page_size, scale);
          expect_close_scaled("decode attention at a position", out.values(), ref, size, 1e-5);
          CHECK(out.intact());
        }
      }
    }
  }
}

TEST_CASE("kernels: attention of several rows at a first position in device memory (a speculative check's graph) is causal from there") {
  KDSL_TEST_RNG(rng);
  const int n_heads = 8;
  struct Case {
    int rows, pos0, n_kv, D, page_size;
  };
  for (Case t : {Case{8, 0, 2, 64, 16}, Case{5, 37, 4, 40, 24}, Case{17, 300, 1, 64, 32}}) {
    CAPTURE(t.rows);
    CAPTURE(t.pos0);
    const int max_context = 400;
    PagedCache c(rng, max_context, t.page_size, t.n_kv, t.D);
    c.fill(rng, max_context);  // positions past the rows' hold values the kernel must not see
    auto q = random_floats(rng, size_t(t.rows) * n_heads * t.D, -2, 2);
    const float scale = 1.0f / std::sqrt(float(t.D));
    std::vector<double> ref, size;
    attention_ref(c, q, t.rows, t.pos0, n_heads, scale, ref, size);
    GuardedOutput out(ref.size(), -7.0f);
    const int32_t position[1] = {t.pos0};
    library().attention_at(q.data(), c.k_pages.data(), c.v_pages.data(), c.block_table.data(), position, t.rows, max_context, out.data(), n_heads,
                           t.n_kv, t.D, t.page_size, scale);
    expect_close_scaled("attention at a position", out.values(), ref, size, 1e-5);
    CHECK(out.intact());
  }
}

TEST_CASE("kernels: decode attention over a shuffled paged cache, grouped-query heads, split across programs") {
  KDSL_TEST_RNG(rng);
  const int n_heads = 8;
  for (int n_kv : {4, 2, 1}) {
    for (int pos0 : {0, 37, 300, 1000}) {
      for (int D : {64, 40}) {
        if (D == 40 && n_kv != 2) continue;
        // Pages of 16 (steps of 16 inside a page), 32 (steps of 32) and 24 (steps across pages).
        const int page_size = n_kv == 4 ? 16 : n_kv == 2 ? 32 : 24;
        CAPTURE(n_kv);
        CAPTURE(pos0);
        CAPTURE(D);
        CAPTURE(page_size);
        PagedCache c(rng, pos0 + 1, page_size, n_kv, D);
        c.fill(rng, pos0 + 1);
        check_causal_attention(rng, c, c.k_pages.data(), c.v_pages.data(), {}, 1, pos0, n_heads, "decode attention");
      }
    }
  }
}

TEST_CASE("kernels: prefill attention, causal over pages, from the start and chunked (pos0 > 0)") {
  KDSL_TEST_RNG(rng);
  const int n_heads = 8;
  struct Case {
    int rows, pos0, n_kv, D, page_size;
  };
  // Rows of both query tiles (8 rows up to 8, else 16) and either side of the boundary.
  for (Case t : {Case{20, 0, 2, 64, 16}, Case{37, 50, 2, 64, 16}, Case{5, 3, 8, 64, 32}, Case{70, 0, 1, 40, 16}, Case{2, 100, 4, 64, 24},
                 Case{8, 17, 2, 64, 16}, Case{9, 40, 4, 40, 32}}) {
    CAPTURE(t.rows);
    CAPTURE(t.pos0);
    CAPTURE(t.n_kv);
    CAPTURE(t.D);
    CAPTURE(t.page_size);
    PagedCache c(rng, t.pos0 + t.rows, t.page_size, t.n_kv, t.D);
    c.fill(rng, t.pos0 + t.rows);
    check_causal_attention(rng, c, c.k_pages.data(), c.v_pages.data(), {}, t.rows, t.pos0, n_heads, "prefill attention");
  }
}

TEST_CASE("kernels: attention rejects heads that do not group and head dims past 256") {
  std::vector<float> buf(4096);
  std::vector<int32_t> table(4);
  std::string text = kdsl_test::error_text(
      [&] { library().attention(buf.data(), buf.data(), buf.data(), table.data(), buf.data(), 1, 0, 6, 4, 16, 16, 1.0f); });
  CHECK(kdsl_test::contains(text, "n_heads (6) must be a multiple of n_kv_heads (4)"));
  text = kdsl_test::error_text(
      [&] { library().attention(buf.data(), buf.data(), buf.data(), table.data(), buf.data(), 1, 0, 1, 1, 320, 16, 1.0f); });
  CHECK(kdsl_test::contains(text, "head_dim 320"));
}

}  // namespace

namespace {

TEST_CASE("kernels: tree attention, each node along its own branch, over pages") {
  KDSL_TEST_RNG(rng);
  const int n_heads = 4;
  struct Case {
    int nodes, pos0, n_kv, D, page_size;
  };
  for (Case t : {Case{11, 13, 2, 64, 4}, Case{37, 50, 1, 24, 16}, Case{64, 5, 4, 40, 32}, Case{1, 9, 2, 32, 8}, Case{7, 21, 2, 64, 16}}) {
    CAPTURE(t.nodes);
    CAPTURE(t.D);
    // A random tree: node i's parent an earlier node; bit j of ancestors[i] for each node on
    // the path from the root to i.
    std::vector<int> parent(size_t(t.nodes), -1);
    std::vector<int64_t> ancestors(size_t(t.nodes), 1);
    for (int i = 1; i < t.nodes; ++i) {
      parent[size_t(i)] = std::uniform_int_distribution<int>(std::max(0, i - 4), i - 1)(rng);
      ancestors[size_t(i)] = ancestors[size_t(parent[size_t(i)])] | (int64_t(1) << i);
    }
    PagedCache c(rng, t.pos0 + t.nodes, t.page_size, t.n_kv, t.D);
    c.fill(rng, t.pos0 + t.nodes);
    auto q = random_floats(rng, size_t(t.nodes) * n_heads * t.D);
    const float scale = 1.0f / std::sqrt(float(t.D));
    std::vector<double> ref, size;
    attention_ref(c, q, t.nodes, t.pos0, n_heads, scale, ref, size,
                  [&](int r, int slot) { return slot < t.pos0 || (ancestors[size_t(r)] >> (slot - t.pos0) & 1) != 0; });
    std::vector<float> out(ref.size());
    library().attention_tree(q.data(), c.k_pages.data(), c.v_pages.data(), c.block_table.data(), ancestors.data(), out.data(), t.nodes, t.pos0, n_heads,
                             t.n_kv, t.D, t.page_size, scale);
    expect_close_scaled("tree attention", out, ref, size, 2e-5);
    // The same with the root's slot read from memory (a tree check's graph).
    const int32_t position[1] = {t.pos0};
    std::vector<float> at(ref.size());
    library().attention_tree_at(q.data(), c.k_pages.data(), c.v_pages.data(), c.block_table.data(), ancestors.data(), position, at.data(), t.nodes,
                                n_heads, t.n_kv, t.D, t.page_size, scale);
    expect_close_scaled("tree attention at a slot in memory", at, ref, size, 2e-5);
  }
  std::vector<float> q(64);
  std::string text = kdsl_test::error_text([&] {
    library().attention_tree(q.data(), q.data(), q.data(), nullptr, nullptr, q.data(), 65, 0, 1, 1, 64, 16, 1.0f);
  });
  CHECK(kdsl_test::contains(text, "expected 0 <= rows <= 64"));
}

TEST_CASE("kernels: a chain is a tree: tree attention of a chain equals causal attention") {
  KDSL_TEST_RNG(rng);
  for (const int nodes : {19, 6}) {  // both query tiles
    CAPTURE(nodes);
    const int pos0 = 30, n_heads = 4, n_kv = 2, D = 64, page_size = 16;
    std::vector<int64_t> chain(static_cast<size_t>(nodes));
    for (int i = 0; i < nodes; ++i) chain[size_t(i)] = (int64_t(1) << (i + 1)) - 1;
    PagedCache c(rng, pos0 + nodes, page_size, n_kv, D);
    c.fill(rng, pos0 + nodes);
    auto q = random_floats(rng, size_t(nodes) * n_heads * D);
    std::vector<float> tree(q.size()), causal(q.size());
    library().attention_tree(q.data(), c.k_pages.data(), c.v_pages.data(), c.block_table.data(), chain.data(), tree.data(), nodes, pos0, n_heads, n_kv, D,
                             page_size, 0.125f);
    library().attention(q.data(), c.k_pages.data(), c.v_pages.data(), c.block_table.data(), causal.data(), nodes, pos0, n_heads, n_kv, D, page_size, 0.125f);
    std::vector<double> want(causal.begin(), causal.end());
    expect_close_scaled("chain as a tree", tree, want, 1.0, 1e-6);
  }
}

TEST_CASE("kernels: kv_move moves rows in order through the block table") {
  KDSL_TEST_RNG(rng);
  const int page_size = 4, n_kv = 2, D = 24, positions = 30;
  PagedCache c(rng, positions, page_size, n_kv, D);
  c.fill(rng, positions);
  // A branch's nodes from slots 20, 23, 27 to positions 18, 19, 20: the third move writes the
  // slot the first one read, so the moves must run in order.
  std::vector<int32_t> moves = {20, 18, 23, 19, 27, 20};
  std::vector<float> k_ref = c.k_pages, v_ref = c.v_pages;
  for (size_t m = 0; m < moves.size(); m += 2)
    for (int h = 0; h < n_kv; ++h)
      for (int d = 0; d < D; ++d) {
        k_ref[c.at(moves[m + 1], h) + size_t(d)] = k_ref[c.at(moves[m], h) + size_t(d)];
        v_ref[c.at(moves[m + 1], h) + size_t(d)] = v_ref[c.at(moves[m], h) + size_t(d)];
      }
  library().kv_move(c.k_pages.data(), c.v_pages.data(), c.block_table.data(), moves.data(), 3, n_kv, D, page_size);
  CHECK(c.k_pages == k_ref);
  CHECK(c.v_pages == v_ref);
}

}  // namespace

namespace {

// The cache's pages converted to S (kdsl::half or kdsl::bfloat16), and the f32 cache set to
// what S holds, so the float64 reference sees the values the kernels read.
template <class S>
std::vector<S> narrowed(std::vector<float> &pages) {
  std::vector<S> out(pages.size());
  for (size_t i = 0; i < pages.size(); ++i) pages[i] = float(out[i] = S(pages[i]));
  return out;
}

// A cache of S (kdsl::half or kdsl::bfloat16, WeightType t) for keys and values: appending rounds,
// decode, prefill and tree attention read it against the float64 reference.
template <class S>
// lib: the Library under test; prefill_tolerance: its prefill and tree attention's (a GPU's
// dispatch rounds q and P to the cache's type for its tensor cores).
void check_narrow_kv_cache(kdsl::kernels::WeightType t, kdsl::kernels::Library &lib = library(), double prefill_tolerance = 2e-5) {
  CAPTURE(kdsl::kernels::weight_type_info(t).name);
  KDSL_TEST_RNG(rng);
  const int n_heads = 4, n_kv = 2, D = 40, page_size = 16, pos0 = 37, rows = 9;
  PagedCache c(rng, pos0 + rows, page_size, n_kv, D);
  c.fill(rng, pos0 + rows);
  std::vector<S> k16 = narrowed<S>(c.k_pages);
  std::vector<S> v16 = narrowed<S>(c.v_pages);
  const kdsl::kernels::KvTypes types{t, t};
  const float scale = 0.15f;
  auto q = random_floats(rng, size_t(rows) * n_heads * D);
  std::vector<double> ref, size;
  attention_ref(c, q, rows, pos0, n_heads, scale, ref, size);
  std::vector<float> out(ref.size());
  lib.attention(q.data(), k16.data(), v16.data(), c.block_table.data(), out.data(), rows, pos0, n_heads, n_kv, D, page_size, scale, types);
  expect_close_scaled("prefill over a narrow cache", out, ref, size, prefill_tolerance);
  std::vector<float> q1(q.begin(), q.begin() + n_heads * D), out1(size_t(n_heads) * D);
  attention_ref(c, q1, 1, pos0, n_heads, scale, ref, size);
  lib.attention(q1.data(), k16.data(), v16.data(), c.block_table.data(), out1.data(), 1, pos0, n_heads, n_kv, D, page_size, scale, types);
  expect_close_scaled("decode over a narrow cache", out1, ref, size, 2e-5);
  std::vector<int64_t> chain(static_cast<size_t>(rows));
  for (int i = 0; i < rows; ++i) chain[size_t(i)] = (int64_t(1) << (i + 1)) - 1;
  attention_ref(c, q, rows, pos0, n_heads, scale, ref, size);
  lib.attention_tree(q.data(), k16.data(), v16.data(), c.block_table.data(), chain.data(), out.data(), rows, pos0, n_heads, n_kv, D, page_size, scale,
                     types);
  expect_close_scaled("tree over a narrow cache", out, ref, size, prefill_tolerance);
  if (&lib != &library()) {  // the rounding shows: the tensor-core form ran, not the f32 one
    std::vector<float> plain(out.size());
    library().attention(q.data(), k16.data(), v16.data(), c.block_table.data(), plain.data(), rows, pos0, n_heads, n_kv, D, page_size, scale, types);
    CHECK(plain != out);
  }

  // Appending rounds to nearest even; moving copies the stored bits.
  auto k = random_floats(rng, size_t(rows) * n_kv * D), v = random_floats(rng, size_t(rows) * n_kv * D);
  library().kv_append(k.data(), v.data(), k16.data(), v16.data(), c.block_table.data(), pos0, rows, n_kv, D, page_size, types);
  int mismatches = 0;
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < n_kv; ++h)
      for (int d = 0; d < D; ++d) {
        size_t src = (size_t(r) * n_kv + h) * D + size_t(d), dst = c.at(pos0 + r, h) + size_t(d);
        mismatches += k16[dst].bits != S(k[src]).bits || v16[dst].bits != S(v[src]).bits;
      }
  CHECK(mismatches == 0);
  std::vector<int32_t> moves = {pos0 + 3, pos0 + 1};
  library().kv_move(k16.data(), v16.data(), c.block_table.data(), moves.data(), 1, n_kv, D, page_size, types);
  CHECK(k16[c.at(pos0 + 1, 1)].bits == S(k[(size_t(3) * n_kv + 1) * D]).bits);
}

TEST_CASE("kernels: f16 and bf16 KV caches: append rounds, decode, prefill and tree attention read them") {
  check_narrow_kv_cache<kdsl::half>(kdsl::kernels::WeightType::F16);
  check_narrow_kv_cache<kdsl::bfloat16>(kdsl::kernels::WeightType::BF16);
  // A GPU's dispatch (run on the CPU here) takes the prefill and tree dots on tensor cores, q
  // and P rounded to the cache's type: 11 significant bits for f16, 8 for bf16.
  kdsl::kernels::Library gpu_forms(kdsl_test::cpu());
  gpu_forms.set_gpu_forms(true);
  check_narrow_kv_cache<kdsl::half>(kdsl::kernels::WeightType::F16, gpu_forms, 2e-3);
  check_narrow_kv_cache<kdsl::bfloat16>(kdsl::kernels::WeightType::BF16, gpu_forms, 1.6e-2);

  // Keys and values share one type; other types are refused by name.
  KDSL_TEST_RNG(rng);
  const int n_heads = 4, n_kv = 2, D = 40, page_size = 16, pos0 = 37, rows = 9;
  PagedCache c(rng, pos0 + rows, page_size, n_kv, D);
  auto q = random_floats(rng, size_t(rows) * n_heads * D);
  std::vector<float> out(q.size());

  std::vector<int8_t> bytes(64);
  std::string text = kdsl_test::error_text([&] {
    library().attention(q.data(), bytes.data(), bytes.data(), c.block_table.data(), out.data(), rows, pos0, n_heads, n_kv, D, page_size, 0.1f,
                        {kdsl::kernels::WeightType::Q4_0, kdsl::kernels::WeightType::Q4_0});
  });
  CHECK(kdsl_test::contains(text, "a KV cache of q4_0 is not supported (f32, f16, bf16 or q8_0)"));
  text = kdsl_test::error_text([&] {
    library().attention(q.data(), bytes.data(), bytes.data(), c.block_table.data(), out.data(), rows, pos0, n_heads, n_kv, D, page_size, 0.1f,
                        {kdsl::kernels::WeightType::F16, kdsl::kernels::WeightType::BF16});
  });
  CHECK(kdsl_test::contains(text, "keys in f16 and values in bf16: a KV cache holds keys and values of one type"));
}

}  // namespace
