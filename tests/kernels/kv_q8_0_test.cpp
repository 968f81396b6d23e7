// kv_q8_0_test.cpp - a Q8_0 KV cache: kv_append quantizes as ggml does, bit for bit; decode, prefill and tree attention and kv_move read and move it, against float64 references on the dequantized cache
#include "tests/kernels/paged_kv_test_util.h"

namespace {
using namespace kernels_test;
using kdsl::kernels::WeightType;

const kdsl::kernels::KvTypes kQ8_0{WeightType::Q8_0, WeightType::Q8_0};

// Appends `rows` random rows at pos0 (one of them all zeros, one of ties) and checks every byte
// of both page pools against the reference quantizer's, including the bytes nobody may touch.
void check_append(std::mt19937 &rng, int n_kv, int D, int page_size, int pos0, int rows) {
  CAPTURE(n_kv);
  CAPTURE(D);
  CAPTURE(page_size);
  CAPTURE(pos0);
  CAPTURE(rows);
  PagedCache c(rng, pos0 + rows, page_size, n_kv, D);
  Q8Pages q(rng, c);
  const size_t row = size_t(n_kv) * size_t(D);
  auto k = random_floats(rng, size_t(rows) * row, -3, 3), v = random_floats(rng, size_t(rows) * row, -3, 3);
  // A block of zeros (d = 0: every quant 0) and one whose scale is exactly 1 with values
  // halfway between integers: ties round away from zero (2.5 -> 3, -2.5 -> -3).
  std::fill(k.begin(), k.begin() + 32, 0.0f);
  for (int j = 0; j < 32; ++j) v[size_t(j)] = j == 31 ? 127.0f : float(j) - 15.5f;
  std::vector<int8_t> k_want = q.k, v_want = q.v;
  for (int r = 0; r < rows; ++r) q.put(k_want, pos0 + r, &k[size_t(r) * row]), q.put(v_want, pos0 + r, &v[size_t(r) * row]);
  library().kv_append(k.data(), v.data(), q.k.data(), q.v.data(), c.block_table.data(), pos0, rows, n_kv, D, page_size, kQ8_0);
  int k_bad = 0, v_bad = 0;
  for (size_t i = 0; i < q.k.size(); ++i) k_bad += q.k[i] != k_want[i], v_bad += q.v[i] != v_want[i];
  CHECK(k_bad == 0);
  CHECK(v_bad == 0);
  CHECK(q.value(q.k, pos0, 5) == 0.0f);
  CHECK(q.value(q.v, pos0, 13) == -3.0f);  // -2.5
  CHECK(q.value(q.v, pos0, 18) == 3.0f);   // 2.5
}

TEST_CASE("kernels: kv_append into a q8_0 cache quantizes each block of 32 as ggml's Q8_0, bit for bit, and writes nothing else") {
  KDSL_TEST_RNG(rng);
  check_append(rng, 2, 32, 16, 5, 40);   // rows of 64: one program per row
  check_append(rng, 1, 64, 24, 0, 30);   // pages that are not a multiple of 16
  check_append(rng, 4, 128, 5, 3, 12);   // rows of 512, pages of 5
  check_append(rng, 3, 96, 16, 17, 9);   // rows of 288 in a block of 512: whole blocks masked
  check_append(rng, 8, 160, 8, 1, 3);    // rows of 1280: two programs of 1024 columns, the second ragged
}

TEST_CASE("kernels: decode attention over a q8_0 cache, grouped-query heads, split across programs") {
  KDSL_TEST_RNG(rng);
  const int n_heads = 8;
  struct Case {
    int n_kv, pos0, D, page_size;
  };
  for (Case t : {Case{4, 0, 64, 16}, Case{2, 37, 32, 32}, Case{1, 300, 128, 24}, Case{2, 1000, 64, 16}, Case{8, 77, 96, 5}, Case{4, 130, 256, 48}}) {
    CAPTURE(t.n_kv);
    CAPTURE(t.pos0);
    CAPTURE(t.D);
    CAPTURE(t.page_size);
    PagedCache c(rng, t.pos0 + 1, t.page_size, t.n_kv, t.D);
    c.fill(rng, t.pos0 + 1);
    Q8Pages q8(rng, c);
    q8.quantize_from(c, t.pos0 + 1);
    check_causal_attention(rng, c, q8.k.data(), q8.v.data(), kQ8_0, 1, t.pos0, n_heads, "decode over a q8_0 cache");
  }
}

TEST_CASE("kernels: prefill and tree attention over a q8_0 cache, causal and along branches") {
  KDSL_TEST_RNG(rng);
  const int n_heads = 8;
  struct Case {
    int rows, pos0, n_kv, D, page_size;
  };
  for (Case t : {Case{20, 0, 2, 64, 16}, Case{37, 50, 4, 32, 24}, Case{5, 3, 8, 128, 32}, Case{33, 10, 1, 96, 7}, Case{2, 100, 2, 64, 16}}) {
    CAPTURE(t.rows);
    CAPTURE(t.pos0);
    CAPTURE(t.n_kv);
    CAPTURE(t.D);
    CAPTURE(t.page_size);
    PagedCache c(rng, t.pos0 + t.rows, t.page_size, t.n_kv, t.D);
    c.fill(rng, t.pos0 + t.rows);
    Q8Pages q8(rng, c);
    q8.quantize_from(c, t.pos0 + t.rows);
    auto q = check_causal_attention(rng, c, q8.k.data(), q8.v.data(), kQ8_0, t.rows, t.pos0, n_heads, "prefill over a q8_0 cache");
    const float scale = 1.0f / std::sqrt(float(t.D));
    std::vector<double> ref, size;

    // A random tree over the same rows (at most 64 nodes): node i's parent an earlier node.
    std::vector<int64_t> ancestors(size_t(t.rows), 1);
    for (int i = 1; i < t.rows; ++i) {
      int parent = std::uniform_int_distribution<int>(std::max(0, i - 4), i - 1)(rng);
      ancestors[size_t(i)] = ancestors[size_t(parent)] | (int64_t(1) << i);
    }
    attention_ref(c, q, t.rows, t.pos0, n_heads, scale, ref, size,
                  [&](int r, int slot) { return slot < t.pos0 || (ancestors[size_t(r)] >> (slot - t.pos0) & 1) != 0; });
    std::vector<float> tree(ref.size());
    library().attention_tree(q.data(), q8.k.data(), q8.v.data(), c.block_table.data(), ancestors.data(), tree.data(), t.rows, t.pos0, n_heads, t.n_kv,
                             t.D, t.page_size, scale, kQ8_0);
    expect_close_scaled("tree over a q8_0 cache", tree, ref, size, 2e-5);
  }
}

TEST_CASE("kernels: attention over a q8_0 cache sees the quantized values, not the originals") {
  // The kernels must read what the cache holds: against the unquantized values the output
  // differs by about the quantization step (max|x| / 254 per value), far beyond f32 rounding.
  KDSL_TEST_RNG(rng);
  const int n_heads = 4, n_kv = 2, D = 64, page_size = 16, pos0 = 40;
  PagedCache c(rng, pos0 + 1, page_size, n_kv, D);
  c.fill(rng, pos0 + 1);
  PagedCache original = c;
  Q8Pages q8(rng, c);
  q8.quantize_from(c, pos0 + 1);
  auto q = random_floats(rng, size_t(n_heads) * D, -2, 2);
  std::vector<float> out(size_t(n_heads) * D);
  library().attention(q.data(), q8.k.data(), q8.v.data(), c.block_table.data(), out.data(), 1, pos0, n_heads, n_kv, D, page_size, 0.125f, kQ8_0);
  std::vector<double> exact, size;
  attention_ref(original, q, 1, pos0, n_heads, 0.125f, exact, size);
  double worst = 0;
  for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::fabs(out[i] - exact[i]) / size[i]);
  CHECK(worst > 1e-4);  // quantized: f32 rounding alone stays below 1e-5
  CHECK(worst < 2e-2);  // but by no more than a few quantization steps
}

TEST_CASE("kernels: kv_move in a q8_0 cache moves each row's quants and scales, in order") {
  KDSL_TEST_RNG(rng);
  struct Case {
    int n_kv, D, page_size;
  };
  for (Case t : {Case{2, 32, 4}, Case{1, 96, 16}, Case{4, 64, 5}}) {
    CAPTURE(t.D);
    CAPTURE(t.page_size);
    const int positions = 30;
    PagedCache c(rng, positions, t.page_size, t.n_kv, t.D);
    c.fill(rng, positions);
    Q8Pages q8(rng, c);
    q8.quantize_from(c, positions);
    // The third move writes the slot the first one read, so the moves must run in order.
    std::vector<int32_t> moves = {20, 18, 23, 19, 27, 20};
    std::vector<int8_t> k_want = q8.k, v_want = q8.v;
    for (size_t m = 0; m < moves.size(); m += 2) {
      for (int col = 0; col < q8.row; ++col)
        k_want[q8.quant_at(moves[m + 1], col)] = k_want[q8.quant_at(moves[m], col)],
                                   v_want[q8.quant_at(moves[m + 1], col)] = v_want[q8.quant_at(moves[m], col)];
      for (int b = 0; b < q8.blocks; ++b)
        for (int byte = 0; byte < 2; ++byte)
          k_want[q8.scale_at(moves[m + 1], b) + size_t(byte)] = k_want[q8.scale_at(moves[m], b) + size_t(byte)],
                                                  v_want[q8.scale_at(moves[m + 1], b) + size_t(byte)] = v_want[q8.scale_at(moves[m], b) + size_t(byte)];
    }
    library().kv_move(q8.k.data(), q8.v.data(), c.block_table.data(), moves.data(), 3, t.n_kv, t.D, t.page_size, kQ8_0);
    CHECK(q8.k == k_want);
    CHECK(q8.v == v_want);
  }
}

TEST_CASE("kernels: a q8_0 cache refuses a head_dim that is not a multiple of 32, naming it") {
  std::vector<float> buf(8192);
  std::vector<int8_t> pages(8192);
  std::vector<int32_t> table(4);
  const std::string want = "a q8_0 KV cache stores blocks of 32 values along head_dim: head_dim 40 is not a multiple of 32";
  std::string text = kdsl_test::error_text(
      [&] { library().kv_append(buf.data(), buf.data(), pages.data(), pages.data(), table.data(), 0, 1, 2, 40, 16, kQ8_0); });
  CHECK(kdsl_test::contains(text, "kdsl::kernels::kv_append: " + want));
  text = kdsl_test::error_text(
      [&] { library().attention(buf.data(), pages.data(), pages.data(), table.data(), buf.data(), 1, 0, 2, 2, 40, 16, 1.0f, kQ8_0); });
  CHECK(kdsl_test::contains(text, "kdsl::kernels::attention: " + want));
  std::vector<int32_t> moves = {0, 1};
  text = kdsl_test::error_text([&] { library().kv_move(pages.data(), pages.data(), table.data(), moves.data(), 1, 2, 40, 16, kQ8_0); });
  CHECK(kdsl_test::contains(text, "kdsl::kernels::kv_move: " + want));
}

}  // namespace
