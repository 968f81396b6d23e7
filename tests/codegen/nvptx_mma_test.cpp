// nvptx_mma_test.cpp - tensor-core dot: fragment index math against the PTX ISA on the host, PTX golden checks, FMA fallbacks
#include <doctest/doctest.h>

#include <map>
#include <set>

#include <kdsl/kdsl.h>

#include "codegen/codegen.h"
#include "codegen/gpu/assign_layouts.h"
#include "codegen/gpu/layout.h"
#include "codegen/gpu/plan_pipelining.h"
#include "codegen/pipeline.h"
#include "codegen/nvptx/mma_fragments.h"
#include "codegen/nvptx/ptxas.h"
#include "codegen/target_info.h"
#include "tests/codegen/nvptx_test_kernels.h"

using namespace kdsl;
using namespace kdsl::codegen::nvptx;
using namespace kdsl::codegen::gpu;
using kdsl::codegen::MatrixInstruction;

namespace mma_test {

const std::vector<MatrixInstruction> &instructions() { return codegen::target_info("sm_80").matrix_instructions; }

// Shared memory of one operand tile as the lowering stages it (staged_row_bytes), byte by
// byte: which (row, col) element and which of its bytes sits at each address.
struct TileMemory {
  int rows, cols, elem_bytes, row_bytes;
  struct Byte {
    int row, col, byte;
  };
  std::vector<Byte> bytes;
  TileMemory(int r, int c, int eb) : rows(r), cols(c), elem_bytes(eb), row_bytes(int(staged_row_bytes(c * eb))) {
    bytes.assign(size_t(rows * row_bytes), Byte{-1, -1, -1});
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j)
        for (int b = 0; b < eb; ++b) bytes[size_t(i * row_bytes + j * eb + b)] = {i, j, b};
  }
  int address(int row, int col) const { return row * row_bytes + col * elem_bytes; }
};

// ldmatrix as the PTX ISA describes it: lanes 8j .. 8j + 7 give the rows of matrix j; lane
// `lane` receives in register j the 16-bit pair at row lane / 4, columns 2 (lane % 4) + h
// (.trans: rows 2 (lane % 4) + h, column lane / 4). Returns the 4 bytes of that register.
std::array<TileMemory::Byte, 4> ldmatrix_register(const TileMemory &mem, const std::vector<int> &row_address, int lane, int j, bool trans) {
  std::array<TileMemory::Byte, 4> out{};
  for (int h = 0; h < 2; ++h) {
    int row = trans ? 2 * (lane % 4) + h : lane / 4, col16 = trans ? lane / 4 : 2 * (lane % 4) + h;
    int address = row_address[size_t(8 * j + row)] + 2 * col16;
    out[size_t(2 * h)] = mem.bytes[size_t(address)];
    out[size_t(2 * h + 1)] = mem.bytes[size_t(address + 1)];
  }
  return out;
}

// Element i of a fragment register: bytes [i * eb, (i + 1) * eb), which must be one whole
// element of the tile.
std::pair<int, int> element_of(const std::array<TileMemory::Byte, 4> &reg, int i, int eb) {
  const TileMemory::Byte &first = reg[size_t(i * eb)];
  for (int b = 0; b < eb; ++b) {
    const TileMemory::Byte &x = reg[size_t(i * eb + b)];
    if (x.row != first.row || x.col != first.col || x.byte != b) return {-1, -1};
  }
  return {first.row, first.col};
}

codegen::CompiledObject compile(const std::string &name, const std::string &arch, int num_stages = 2) {
  const tools::NamedKernel &k = nvptx_test::find(name);
  codegen::Options options;
  options.num_warps = k.num_warps;
  options.num_stages = num_stages;
  return codegen::compile(tools::trace_kernel(k.signature, tools::parse_specialization("aligned", k.signature)), "kdsl_" + name,
                          codegen::Target::named(arch), options);
}

bool contains(const std::string &text, const std::string &what) { return text.find(what) != std::string::npos; }

// A kernel after the block-IR pipeline, with its sm_80 layout plan.
struct Planned {
  ir::Function fn;
  LayoutPlan plan;
  std::vector<const ir::Op *> ops(OpKind kind) const {
    std::vector<const ir::Op *> found;
    ir::walk(fn.body, [&](const ir::Op &op) {
      if (op.kind == kind) found.push_back(&op);
    });
    return found;
  }
  std::string layout_of(ir::ValueId v) const { return plan.layout[size_t(v)].str(); }
};
Planned plan_for(const std::string &name, const std::string &arch = "sm_80", int num_stages = 2) {
  const tools::NamedKernel &k = nvptx_test::find(name);
  Planned p{tools::trace_kernel(k.signature, tools::parse_specialization("aligned", k.signature)), {}};
  codegen::run_pipeline(p.fn);
  p.plan = assign_layouts(p.fn, codegen::target_info(arch), k.num_warps);
  plan_pipelining(p.fn, codegen::target_info(arch), num_stages, p.plan);
  return p;
}

}  // namespace mma_test

using namespace mma_test;

TEST_CASE("mma fragments: A, B and C of each sm_80 instruction cover their tiles exactly once") {
  for (const MatrixInstruction &mi : instructions()) {
    CAPTURE(mi.name);
    CAPTURE(dtype_name(mi.a));
    std::map<std::pair<int, int>, int> a, b, c;
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < mma_a_elements(mi); ++i) {
        FragmentElement e = mma_a_element(mi, lane, i);
        CHECK((e.row >= 0 && e.row < mi.m && e.col >= 0 && e.col < mi.k));
        ++a[{e.row, e.col}];
      }
      for (int i = 0; i < mma_b_elements(mi); ++i) {
        FragmentElement e = mma_b_element(mi, lane, i);
        CHECK((e.row >= 0 && e.row < mi.k && e.col >= 0 && e.col < mi.n));
        ++b[{e.row, e.col}];
      }
      for (int i = 0; i < kMmaCElements; ++i) {
        FragmentElement e = mma_c_element(mi, lane, i);
        CHECK((e.row >= 0 && e.row < mi.m && e.col >= 0 && e.col < mi.n));
        ++c[{e.row, e.col}];
      }
    }
    CHECK(a.size() == size_t(mi.m * mi.k));
    CHECK(b.size() == size_t(mi.k * mi.n));
    CHECK(c.size() == size_t(mi.m * mi.n));
    for (auto *counts : {&a, &b, &c})
      for (auto &[at, n] : *counts) CHECK(n == 1);
    // 32 bits per register: 32 lanes x 4 registers of A, x 2 of B, x 4 accumulators.
    CHECK(mma_a_elements(mi) * dtype_bytes(mi.a) == 16);
    CHECK(mma_b_elements(mi) * dtype_bytes(mi.b) == 8);
  }
}

TEST_CASE("mma fragments: ldmatrix at the lowering's row addresses delivers exactly the A fragment") {
  for (const MatrixInstruction &mi : instructions()) {
    CAPTURE(dtype_name(mi.a));
    int eb = dtype_bytes(mi.a), per_reg = 4 / eb;
    TileMemory mem(16, mi.k, eb);  // one m tile, one k step
    std::vector<int> rows(32);
    for (int lane = 0; lane < 32; ++lane) {
      TileCoord<int> at = ldmatrix_a_row(lane, eb);
      rows[size_t(lane)] = mem.address(at.row, at.col);
      CHECK(rows[size_t(lane)] % 16 == 0);  // ldmatrix rows are 16-byte aligned
    }
    for (int lane = 0; lane < 32; ++lane)
      for (int j = 0; j < 4; ++j) {
        auto reg = ldmatrix_register(mem, rows, lane, j, false);
        for (int i = 0; i < per_reg; ++i) {
          FragmentElement want = mma_a_element(mi, lane, j * per_reg + i);
          CHECK(element_of(reg, i, eb) == std::pair(want.row, want.col));
        }
      }
  }
}

TEST_CASE("mma fragments: ldmatrix delivers the B fragments of two n tiles (x4) or one (x2), 16-bit B transposed on load, 8-bit B staged transposed") {
  for (const MatrixInstruction &mi : instructions())
    for (int n_stride : {8, 16, 32}) {
      CAPTURE(dtype_name(mi.b));
      CAPTURE(n_stride);
      int eb = dtype_bytes(mi.b), per_reg = 4 / eb;
      bool trans = mma_b_transposed_load(mi);
      int n_extent = n_stride + 8;
      // As the lowering stages it: [k][n] for 16-bit B, [n][k] for 8-bit B.
      TileMemory mem = trans ? TileMemory(mi.k, n_extent, eb) : TileMemory(n_extent, mi.k, eb);
      for (bool pair : {true, false}) {
        CAPTURE(pair);
        std::vector<int> rows(32);
        for (int lane = 0; lane < 32; ++lane) {
          TileCoord<int> at = trans ? ldmatrix_b_trans_row(lane, pair ? n_stride : 0) : ldmatrix_b_row(lane, eb, pair ? n_stride : 0);
          rows[size_t(lane)] = mem.address(at.row, at.col);
          CHECK(rows[size_t(lane)] % 16 == 0);
        }
        for (int lane = 0; lane < 32; ++lane)
          for (int j = 0; j < (pair ? 4 : 2); ++j) {
            auto reg = ldmatrix_register(mem, rows, lane, j, trans);
            int tile = j >> 1, breg = j & 1;  // register j: b register j & 1 of n tile j >> 1
            for (int i = 0; i < per_reg; ++i) {
              FragmentElement want = mma_b_element(mi, lane, breg * per_reg + i);  // (k, n)
              std::pair<int, int> got = element_of(reg, i, eb);
              std::pair<int, int> k_n = trans ? got : std::pair(got.second, got.first);
              CHECK(k_n == std::pair(want.row, want.col + tile * n_stride));
            }
          }
      }
    }
}

TEST_CASE("mma fragments: the staged rows make ldmatrix conflict-free (8 rows of a matrix in 8 different 16-byte bank groups)") {
  for (int row_elems : {16, 32, 64, 128, 8, 24}) {
    TileMemory mem(16, row_elems, 2);
    CAPTURE(mem.row_bytes);
    std::set<int> groups;
    for (int r = 0; r < 8; ++r) groups.insert((mem.address(r, 0) / 16) % 8);
    CHECK(groups.size() == 8);
  }
}

// Row vectors of an accumulator whose warps hold whole rows (flash attention's running maximum
// and sum): lane l of warp w holds rows 16 w + l / 4 + {0, 8} (+ 128 per further m tile), the
// rows its accumulator registers are on; the four lanes of a row hold the same values.
TEST_CASE("slice layout: a row vector of an mma accumulator is held by the lanes that hold its rows") {
  const MatrixInstruction &mi = instructions()[0];
  Layout parent = mma_layout(mi, {8, 1});
  Layout rows = slice_layout(parent, 1);
  CHECK(rows.str() == "slice{axis=1 of spt=[1,2] tpw=[8,4] wpc=[8,1] order=[1,0] warp_tile=[16,8]}");
  CHECK(rows.same_fields(parent));
  CHECK_FALSE(rows == parent);
  RegisterMap map = register_map(rows, ir::Shape{128});
  REQUIRE(map.count == 2);
  CHECK(map.offset[0][0] == 0);
  CHECK(map.offset[1][0] == 8);
  CHECK(register_map(rows, ir::Shape{256}).count == 4);
  RegisterMap accumulator = register_map(parent, ir::Shape{128, 64});
  for (int warp = 0; warp < 8; ++warp)
    for (int lane = 0; lane < 32; ++lane) {
      int row0 = thread_offset(rows, 0, lane, warp);
      CHECK(row0 == 16 * warp + lane / 4);
      CHECK(row0 == thread_offset(parent, 0, lane, warp));
      for (int r = 0; r < accumulator.count; ++r) {  // every accumulator row of the thread has its register
        int offset = accumulator.offset[size_t(r)][0];
        CHECK((offset == map.offset[0][0] || offset == map.offset[1][0]));
      }
    }
}

TEST_CASE("mma layout: the accumulator registers of each warp and lane are the C fragments of its instruction tiles, each element once") {
  const MatrixInstruction &mi = instructions()[0];
  struct Case {
    int m, n;
    std::array<int, 2> warps;
  };
  for (Case cs : {Case{32, 32, {2, 2}}, Case{128, 128, {2, 2}}, Case{128, 128, {4, 2}}, Case{64, 32, {4, 1}}, Case{16, 64, {1, 4}}, Case{16, 8, {1, 1}}}) {
    CAPTURE(cs.m);
    CAPTURE(cs.n);
    CAPTURE(cs.warps[0]);
    Layout l = mma_layout(mi, cs.warps);
    ir::Shape shape{cs.m, cs.n};
    RegisterMap map = register_map(l, shape);
    int warps = cs.warps[0] * cs.warps[1];
    CHECK(map.count * warps * 32 == cs.m * cs.n);
    std::map<std::pair<int, int>, int> seen;
    for (int warp = 0; warp < warps; ++warp)
      for (int lane = 0; lane < 32; ++lane) {
        int row0 = thread_offset(l, 0, lane, warp), col0 = thread_offset(l, 1, lane, warp);
        int warp_row = thread_offset(l, 0, 0, warp), warp_col = thread_offset(l, 1, 0, warp);
        for (int r = 0; r < map.count; ++r) ++seen[{row0 + map.offset[size_t(r)][0], col0 + map.offset[size_t(r)][1]}];
        // The lowering's choice of register for C element i of tile (tm, tn): the one at
        // offset tile origin + lane 0's position of i (lower_mma.cpp).
        for (int tm = 0; tm < cs.m / l.tile(0); ++tm)
          for (int tn = 0; tn < cs.n / l.tile(1); ++tn)
            for (int i = 0; i < kMmaCElements; ++i) {
              FragmentElement c0 = mma_c_element(mi, 0, i), c = mma_c_element(mi, lane, i);
              int r = -1;
              for (int x = 0; x < map.count; ++x)
                if (map.offset[size_t(x)][0] == tm * l.tile(0) + c0.row && map.offset[size_t(x)][1] == tn * l.tile(1) + c0.col) r = x;
              REQUIRE(r >= 0);
              CHECK(row0 + map.offset[size_t(r)][0] == warp_row + tm * l.tile(0) + c.row);
              CHECK(col0 + map.offset[size_t(r)][1] == warp_col + tn * l.tile(1) + c.col);
            }
      }
    CHECK(seen.size() == size_t(cs.m * cs.n));
    for (auto &[at, count] : seen) CHECK(count == 1);
    // Consecutive registers pair adjacent columns: stores of an f32 accumulator are 8 bytes.
    CHECK(map.offset[1][1] == map.offset[0][1] + 1);
  }
}

TEST_CASE("nvptx mma: f16, bf16 and i8 matmuls assemble for sm_80 and sm_90 on mma.sync with ldmatrix operands, without spills") {
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  struct Case {
    const char *kernel, *mma;
    bool trans;  // B loaded with ldmatrix .trans (16-bit); 8-bit B is staged transposed
  };
  for (Case cs : {Case{"matmul", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", true},
                  Case{"matmul_f16_128x128", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", true},
                  Case{"matmul_f16_128x128_w8", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", true},
                  Case{"matmul_bf16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", true},
                  Case{"matmul_i8", "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", false},
                  Case{"matmul_relu_f16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", true},
                  Case{"attention_tile", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", true}})
    for (const char *arch : {"sm_80", "sm_90"}) {
      CAPTURE(cs.kernel);
      CAPTURE(arch);
      codegen::CompiledObject obj = compile(cs.kernel, arch);
      CHECK(contains(obj.ptx, cs.mma));
      CHECK(contains(obj.ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));
      CHECK(contains(obj.ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == cs.trans);
      CHECK_FALSE(contains(obj.ptx, "fma.rn.f32"));
      if (!have_ptxas) continue;
      REQUIRE(obj.resources.assembled);
      CHECK(obj.resources.spill_store_bytes == 0);
      CHECK(obj.resources.spill_load_bytes == 0);
      std::string report = std::string(cs.kernel) + " " + arch + ": " + std::to_string(obj.resources.registers) + " registers, " +
                           std::to_string(obj.resources.dynamic_shared_bytes) + " bytes shared";
      MESSAGE(report);
    }
}

TEST_CASE("nvptx mma: f32 operands, tiles that are not whole instruction tiles and too few tiles for the warps multiply with FMAs") {
  for (const char *name : {"matmul_f32", "matmul_f16_k8", "matmul_f16_n4", "matmul_f16_one_tile"})
    for (const char *arch : {"sm_80", "sm_90"}) {
      CAPTURE(name);
      CAPTURE(arch);
      std::string ptx = compile(name, arch).ptx;
      CHECK_FALSE(contains(ptx, "mma.sync"));
      CHECK_FALSE(contains(ptx, "ldmatrix"));
      CHECK(contains(ptx, "fma.rn.f32"));
    }
}

TEST_CASE("nvptx mma: sm_75 has no m16n8k16 in kdsl's table: the f16 matmul multiplies with FMAs and assembles") {
  for (const char *name : {"matmul", "matmul_bf16", "matmul_i8"}) {
    CAPTURE(name);
    codegen::CompiledObject obj = compile(name, "sm_75");
    CHECK(contains(obj.ptx, ".target sm_75"));
    CHECK_FALSE(contains(obj.ptx, "mma.sync"));
    CHECK_FALSE(contains(obj.ptx, "ldmatrix"));
    if (codegen::nvptx::find_ptxas().empty()) continue;
    REQUIRE(obj.resources.assembled);
    CHECK(obj.resources.spill_store_bytes == 0);
  }
  CHECK(contains(compile("matmul", "sm_75").ptx, "fma.rn.f32"));
}

// Flash attention at Triton's tutorial configuration on mma.sync: its warps along m (the mma
// plan test), Q is staged once before the key loop, K and V are copied ahead, P feeds the second
// dot from the registers of the first's accumulator, and the row maximum and sum stay in the
// lanes of their rows. Shared memory holds those tiles alone: Q, 128 rows of 128 f16 (256
// bytes, padded to 272); per stage, K and V, 64 rows of 272 each. Four barriers: after Q's
// staging, one per key step (the cp.async copies landed), two around the f16 output's
// conversion to a blocked layout for its 16-byte stores.
TEST_CASE("nvptx mma: flash attention stages Q once, feeds P to the second dot from registers and keeps row vectors in registers") {
  for (int stages : {2, 3}) {
    CAPTURE(stages);
    codegen::CompiledObject obj = compile("flash_attention", "sm_80", stages);
    CHECK(obj.resources.dynamic_shared_bytes == 128 * 272 + stages * 2 * 64 * 272);
    size_t barriers = 0;
    for (size_t at = obj.ptx.find("bar.sync"); at != std::string::npos; at = obj.ptx.find("bar.sync", at + 1)) ++barriers;
    CHECK(barriers == 4);
    CHECK(contains(obj.ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));  // V as stored, [k][n]
    if (codegen::nvptx::find_ptxas().empty()) continue;
    REQUIRE(obj.resources.assembled);
    CHECK(obj.resources.spill_store_bytes == 0);
    MESSAGE("flash_attention sm_80 num_stages=" << stages << ": " << obj.resources.registers << " registers, " << obj.resources.dynamic_shared_bytes
                                                << " bytes shared");
  }
}

TEST_CASE("nvptx mma: loads feeding tensor-core dots in for_range are copied num_stages - 1 iterations ahead with cp.async") {
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  for (int stages : {2, 3, 4}) {
    CAPTURE(stages);
    codegen::CompiledObject obj = compile("matmul_f16_128x128", "sm_80", stages);
    CHECK(contains(obj.ptx, "cp.async.cg.shared.global"));
    CHECK(contains(obj.ptx, "cp.async.wait_group " + std::to_string(stages - 2)));
    CHECK_FALSE(contains(obj.ptx, "ld.global"));
    // Per stage: A, 128 rows of 32 f16 (64 bytes, padded to 80); B, 32 rows of 128 f16 (256, padded to 272).
    CHECK(obj.resources.dynamic_shared_bytes == stages * (128 * 80 + 32 * 272));
    if (!have_ptxas) continue;
    CHECK(obj.resources.spill_store_bytes == 0);
    std::string report = "matmul_f16_128x128 sm_80 num_stages=" + std::to_string(stages) + ": " + std::to_string(obj.resources.registers) + " registers";
    MESSAGE(report);
  }
  // i8: A is copied ahead; B is staged transposed ([n][k]: ldmatrix cannot transpose bytes),
  // so it goes through registers.
  std::string i8 = compile("matmul_i8", "sm_80").ptx;
  CHECK(contains(i8, "cp.async.cg.shared.global"));
  CHECK(contains(i8, "ld.global"));
  CHECK(contains(i8, "st.shared.u8"));
  // No cp.async before sm_80; none for FMA dots; none with num_stages = 1.
  CHECK_FALSE(contains(compile("matmul", "sm_75").ptx, "cp.async"));
  CHECK_FALSE(contains(compile("matmul_f32", "sm_80").ptx, "cp.async"));
  CHECK_FALSE(contains(compile("matmul", "sm_80", 1).ptx, "cp.async"));
}

TEST_CASE("nvptx mma: bf16 operands loaded into registers are staged as loaded, not re-rounded to bf16") {
  // The rounding (round half to even on the f32 bits) adds 0x7fff: its constant must not appear.
  std::string ptx = compile("matmul_bf16", "sm_80", 1).ptx;
  CHECK(contains(ptx, "st.shared.v4.b32"));
  CHECK_FALSE(contains(ptx, "32767"));
}

TEST_CASE("mma plan: which dots take the tensor-core path, which values take the accumulator layout, which loads are pipelined") {
  const std::string mma_2x2 = "mma{spt=[1,2] tpw=[8,4] wpc=[2,2] order=[1,0] warp_tile=[16,8]}";
  {
    Planned p = plan_for("matmul");
    auto dots = p.ops(OpKind::Dot);
    REQUIRE(dots.size() == 1);
    CHECK(p.plan.instruction_of(dots[0]) == 0);  // f16 m16n8k16
    CHECK(p.layout_of(dots[0]->results[0]) == mma_2x2);
    CHECK(p.layout_of(dots[0]->operands[2]) == mma_2x2);  // the loop-carried accumulator
    auto fors = p.ops(OpKind::For);
    REQUIRE(fors.size() == 1);
    CHECK(p.layout_of(fors[0]->results[0]) == mma_2x2);
    auto stores = p.ops(OpKind::Store);
    REQUIRE(stores.size() == 1);
    CHECK(p.layout_of(stores[0]->operands[0]) == mma_2x2);  // f32: stored from the fragments
    for (const ir::Op *load : p.ops(OpKind::Load)) {
      CHECK(p.plan.layout[size_t(load->results[0])].kind == LayoutKind::Blocked);
      REQUIRE(p.plan.pipelined_load(load));
      CHECK(p.plan.pipelined_load(load)->dot == dots[0]);
    }
    CHECK(p.plan.pipelined.size() == 2);
    CHECK(plan_for("matmul", "sm_80", 1).plan.pipelined.empty());
  }
  {
    // f16 output: the cast keeps the accumulator layout, the narrow store converts to blocked.
    Planned p = plan_for("matmul_relu_f16");
    for (const ir::Op *cast : p.ops(OpKind::Cast)) CHECK(p.plan.layout[size_t(cast->results[0])].kind == LayoutKind::Mma);
    for (const ir::Op *store : p.ops(OpKind::Store)) CHECK(p.plan.layout[size_t(store->operands[0])].kind == LayoutKind::Blocked);
  }
  {
    // 8 warps over 128 x 128: 4 x 2, each warp 32 x 64.
    Planned p = plan_for("matmul_f16_128x128_w8");
    CHECK(p.layout_of(p.ops(OpKind::Dot)[0]->results[0]) == "mma{spt=[1,2] tpw=[8,4] wpc=[4,2] order=[1,0] warp_tile=[16,8]}");
  }
  {
    // i8: A pipelined; B staged transposed through registers.
    Planned p = plan_for("matmul_i8");
    const ir::Op *dot = p.ops(OpKind::Dot)[0];
    CHECK(p.plan.instruction_of(dot) == 2);
    REQUIRE(p.plan.pipelined.size() == 1);
    CHECK(p.plan.pipelined[0].operand == 0);
  }
  {
    // Flash attention at 8 warps: the scores are reduced along rows and feed the second dot,
    // whose accumulator is rescaled per row, so both put all 8 warps along m (16 whole rows
    // each) where a plain 128 x 128 product splits them 4 x 2 as above.
    Planned p = plan_for("flash_attention");
    auto dots = p.ops(OpKind::Dot);
    REQUIRE(dots.size() == 2);
    CHECK(p.layout_of(dots[0]->results[0]) == "mma{spt=[1,2] tpw=[8,4] wpc=[8,1] order=[1,0] warp_tile=[16,8]}");
    CHECK(p.layout_of(dots[1]->results[0]) == "mma{spt=[1,2] tpw=[8,4] wpc=[8,1] order=[1,0] warp_tile=[16,8]}");
    // The scores' row maximum and sum, and the running maximum and sum the loop carries, are
    // row vectors of that layout.
    const std::string rows = "slice{axis=1 of spt=[1,2] tpw=[8,4] wpc=[8,1] order=[1,0] warp_tile=[16,8]}";
    auto reductions = p.ops(OpKind::ReduceMax), sums = p.ops(OpKind::ReduceSum);
    reductions.insert(reductions.end(), sums.begin(), sums.end());
    REQUIRE(reductions.size() == 2);
    for (const ir::Op *r : reductions) CHECK(p.layout_of(r->results[0]) == rows);
    const ir::Op *loop = p.ops(OpKind::For)[0];
    CHECK(p.layout_of(loop->results[0]) == rows);
    CHECK(p.layout_of(loop->results[1]) == rows);
  }
  {
    // A row sum that is stored stays blocked: the store reads it through shared memory.
    Planned p = plan_for("matmul_relu_f16");
    for (const ir::Op *r : p.ops(OpKind::ReduceSum)) CHECK(p.plan.layout[size_t(r->results[0])].kind == LayoutKind::Blocked);
  }
  for (const char *name : {"matmul_f32", "matmul_f16_k8", "matmul_f16_n4", "matmul_f16_one_tile"}) {
    CAPTURE(name);
    Planned p = plan_for(name);
    CHECK(p.plan.instruction_of(p.ops(OpKind::Dot)[0]) == -1);
    CHECK(p.plan.pipelined.empty());
    for (const Layout &l : p.plan.layout) CHECK(l.kind == LayoutKind::Blocked);
  }
  Planned turing = plan_for("matmul", "sm_75");
  CHECK(turing.plan.dot_instruction.empty());
  CHECK(turing.plan.pipelined.empty());
}

// --- Hopper (sm_90a): warpgroup MMA ------------------------------------------------------

TEST_CASE("wgmma layout: warps stacked along m hold each warpgroup's D fragments (PTX ISA m64nNk16), each element once") {
  const MatrixInstruction &mi = codegen::target_info("sm_90a").matrix_instructions[0];
  REQUIRE(mi.descriptor_operands);
  struct Case {
    int m, n, warps;
  };
  for (Case cs : {Case{64, 8, 4}, Case{64, 256, 4}, Case{128, 64, 4}, Case{128, 128, 8}, Case{256, 32, 8}}) {
    CAPTURE(cs.m);
    CAPTURE(cs.n);
    CAPTURE(cs.warps);
    Layout l = mma_layout(mi, {cs.warps, 1});
    RegisterMap map = register_map(l, ir::Shape{cs.m, cs.n});
    CHECK(map.count * cs.warps * 32 == cs.m * cs.n);
    std::map<std::pair<int, int>, int> seen;
    for (int thread = 0; thread < cs.warps * 32; ++thread) {
      int lane = thread % 32, warp = thread / 32, in_group = thread % 128;
      int row0 = thread_offset(l, 0, lane, warp), col0 = thread_offset(l, 1, lane, warp);
      for (int r = 0; r < map.count; ++r) ++seen[{row0 + map.offset[size_t(r)][0], col0 + map.offset[size_t(r)][1]}];
      // The lowering's register for element i of the wgmma over m tile tm (lower_wgmma.cpp):
      // the one at offset tm * tile + thread 0's position of i, which for this thread must be
      // the fragment table's element, 64 rows down per warpgroup.
      for (int tm = 0; tm < cs.m / l.tile(0); ++tm)
        for (int i = 0; i < cs.n / 2; ++i) {
          FragmentElement c0 = wgmma_c_element(0, i), c = wgmma_c_element(in_group, i);
          int r = -1;
          for (int x = 0; x < map.count; ++x)
            if (map.offset[size_t(x)][0] == tm * l.tile(0) + c0.row && map.offset[size_t(x)][1] == c0.col) r = x;
          REQUIRE(r >= 0);
          CHECK(row0 + map.offset[size_t(r)][0] == tm * l.tile(0) + 64 * (warp / 4) + c.row);
          CHECK(col0 + map.offset[size_t(r)][1] == c.col);
        }
    }
    CHECK(seen.size() == size_t(cs.m * cs.n));
    for (auto &[at, count] : seen) CHECK(count == 1);
  }
}

TEST_CASE("wgmma staging: swizzled tiles place each 16-byte chunk once, where the descriptor's swizzle mode reads it, without bank conflicts") {
  const MatrixInstruction &mi = codegen::target_info("sm_90a").matrix_instructions[0];
  struct Case {
    int rows, width, swizzle;  // width: bytes of k a row
  };
  for (Case cs : {Case{64, 32, 32}, Case{64, 64, 64}, Case{128, 128, 128}, Case{72, 256, 128}, Case{64, 96, 32}}) {
    CAPTURE(cs.rows);
    CAPTURE(cs.width);
    StagedLayout l = staged_layout(mi, cs.rows, cs.width);
    REQUIRE(l.swizzled());
    CHECK(l.swizzle_bytes == cs.swizzle);
    CHECK(l.slab_bytes % l.stride_bytes() == 0);  // every slab starts on the swizzle's 8-row boundary
    std::set<int> chunks;
    for (int r = 0; r < cs.rows; ++r) {
      std::set<int> row_groups;
      for (int c = 0; c < cs.width; c += 16) {
        int at = l.offset(r, c);
        CHECK(at % 16 == 0);
        CHECK(at + 16 <= l.bytes());
        CHECK(l.offset(r, c + 15) == at + 15);  // a chunk is contiguous: one 16-byte copy
        chunks.insert(at);
        if (c < l.swizzle_bytes) row_groups.insert(at / 16 % 8);
        // The descriptor's view, as the emulator decodes it: start at the slab, row r at
        // stride * (r / 8) + W * (r % 8), then the address's chunk bits XORed with its bits
        // from 7 up.
        int W = l.swizzle_bytes;
        int linear = c / W * int(l.slab_bytes) + (r / 8) * int(l.stride_bytes()) + (r % 8) * W + c % W;
        CHECK(at == (linear ^ (((linear >> 7) & (W / 16 - 1)) << 4)));
      }
      CHECK(row_groups.size() == size_t(std::min(l.swizzle_bytes, cs.width) / 16));  // one row's chunks: distinct bank groups
    }
    CHECK(chunks.size() == size_t(cs.rows * cs.width / 16));
    if (l.swizzle_bytes == 128) {  // one chunk of 8 consecutive rows (a column read): distinct bank groups too
      std::set<int> column;
      for (int r = 0; r < 8; ++r) column.insert(l.offset(r, 32) / 16 % 8);
      CHECK(column.size() == 8);
    }
  }
  CHECK_FALSE(staged_layout(codegen::target_info("sm_90a").matrix_instructions[6], 64, 64).swizzled());  // mma.sync: padded rows
}

// B given [k][n] is staged as stored, rows of k, and read MN-major (PTX ISA, the MN-major
// canonical layouts: n within a slab of the swizzle's width contiguous, k rows W apart, 8 rows
// of k by the stride offset, the slabs of n by the leading offset). For every element (n, k)
// of the k steps and n chunks the lowering gives descriptors for, the descriptor's address
// (after the swizzle of the address bits) is where the staging put it.
TEST_CASE("wgmma MN-major B: [k][n] staged as stored is where the MN-major descriptors read it; which B qualify") {
  const std::vector<MatrixInstruction> &hopper = codegen::target_info("sm_90a").matrix_instructions;
  const MatrixInstruction &f16 = hopper[0];
  struct Case {
    int k_extent, n_extent;
  };
  for (Case cs : {Case{32, 128}, Case{64, 64}, Case{16, 256}, Case{48, 32}, Case{32, 384}}) {
    CAPTURE(cs.k_extent);
    CAPTURE(cs.n_extent);
    REQUIRE(b_as_stored(f16, cs.n_extent));
    const int n = descriptor_n(cs.n_extent, f16), eb = 2;
    StagedLayout l = staged_layout(f16, cs.k_extent, cs.n_extent * eb);
    const int W = l.swizzle_bytes;
    for (int k0 = 0; k0 < cs.k_extent; k0 += f16.k)
      for (int chunk = 0; chunk < cs.n_extent / n; ++chunk) {
        int start = int(l.offset(k0, chunk * n * eb));  // the descriptor's start (lower_wgmma.cpp)
        for (int j = 0; j < n; ++j)
          for (int k = 0; k < f16.k; ++k) {
            int linear = start + (k / 8) * int(l.stride_bytes()) + (k % 8) * W + j * eb / W * int(l.slab_bytes) + j * eb % W;
            CHECK((linear ^ (((linear >> 7) & (W / 16 - 1)) << 4)) == l.offset(k0 + k, (chunk * n + j) * eb));
          }
      }
  }
  CHECK_FALSE(b_as_stored(f16, 320));     // n = 160: 320 bytes, not whole 128-byte slabs
  CHECK_FALSE(b_as_stored(f16, 8));       // 16 bytes a row: no swizzle that wide
  CHECK_FALSE(b_as_stored(hopper[2], 128));  // s8: no transpose bit
  CHECK(b_as_stored(codegen::target_info("sm_80").matrix_instructions[0], 40));  // mma.sync: ldmatrix.trans, any width
}

TEST_CASE("nvptx wgmma: f16 and bf16 matmuls on sm_90a are wgmma.mma_async over descriptors, fenced and waited for; too-small dots take mma.sync") {
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  struct Case {
    const char *kernel, *wgmma;
    int per_k_step;  // wgmma instructions a k step of 16 (m tiles x n chunks)
  };
  for (Case cs : {Case{"matmul_f16_128x128", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", 2},
                  Case{"matmul_f16_128x128_w8", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", 1},
                  Case{"matmul_bf16", "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", 1},
                  Case{"matmul_relu_f16", "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16", 1},
                  Case{"matmul_nt_f16_64x256", "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", 1},
                  Case{"matmul_nt_bf16_128x64_w8", "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", 1},
                  Case{"matmul_i8", "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8", 1},
                  Case{"matmul_u8", "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.u8", 1}}) {
    CAPTURE(cs.kernel);
    codegen::CompiledObject obj = compile(cs.kernel, "sm_90a", 3);
    CHECK(contains(obj.ptx, ".target sm_90a"));
    CHECK(contains(obj.ptx, cs.wgmma));
    CHECK(contains(obj.ptx, "fence.proxy.async.shared::cta"));
    CHECK(contains(obj.ptx, "wgmma.fence.sync.aligned"));
    CHECK(contains(obj.ptx, "wgmma.commit_group.sync.aligned"));
    CHECK(contains(obj.ptx, "wgmma.wait_group.sync.aligned 0"));
    CHECK_FALSE(contains(obj.ptx, "mma.sync"));
    CHECK_FALSE(contains(obj.ptx, "ldmatrix"));
    size_t count = 0;
    for (size_t at = obj.ptx.find("wgmma.mma_async"); at != std::string::npos; at = obj.ptx.find("wgmma.mma_async", at + 1)) ++count;
    CHECK(count % size_t(cs.per_k_step) == 0);
    CHECK(count >= size_t(cs.per_k_step * 2));  // BK >= 32: two k steps at least
    if (!have_ptxas) continue;
    REQUIRE(obj.resources.assembled);
    CHECK(obj.resources.spill_store_bytes == 0);
    CHECK(obj.resources.spill_load_bytes == 0);
    std::string report = std::string(cs.kernel) + " sm_90a: " + std::to_string(obj.resources.registers) + " registers, " +
                         std::to_string(obj.resources.dynamic_shared_bytes) + " bytes shared";
    MESSAGE(report);
  }
  // B [k][n] of 16-bit types is read MN-major (the transpose bit, the last immediate); 8-bit B,
  // staged [n][k], is not.
  CHECK(contains(compile("matmul_f16_128x128", "sm_90a", 3).ptx, ", 1, 1, 1, 0, 1;"));
  CHECK_FALSE(contains(compile("matmul_nt_bf16_128x64_w8", "sm_90a", 3).ptx, ", 1, 1, 1, 0, 1;"));
  // Both operands copied ahead (trans(W) as stored): each k step's tiles are fenced for the
  // async proxy between the cp.async wait and the step's one barrier, and the dot adds none.
  {
    std::string nt = compile("matmul_nt_bf16_128x64_w8", "sm_90a", 3).ptx;
    size_t wait = nt.find("cp.async.wait_group"), fence = nt.find("fence.proxy.async.shared::cta", wait), barrier = nt.find("bar.sync", wait);
    REQUIRE(wait != std::string::npos);
    CHECK(fence < barrier);
    CHECK(nt.find("wgmma.fence", wait) > barrier);
    size_t barriers = 0;
    for (size_t at = nt.find("bar.sync"); at != std::string::npos; at = nt.find("bar.sync", at + 1)) ++barriers;
    CHECK(barriers == 1);
  }
  // Attention at 64 rows: both dots on wgmma; P, the first's result, is the second's A from
  // registers (a brace list of 4 words where a descriptor would be), so only K and V are staged.
  std::string attention = compile("attention_tile_64", "sm_90a").ptx;
  size_t count = 0;
  for (size_t at = attention.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"); at != std::string::npos;
       at = attention.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", at + 1))
    ++count;
  CHECK(count == 8);  // 4 k steps of each dot
  CHECK(contains(attention, "}, {%r"));
  // 32 rows: no warpgroup fits, so mma.sync; sm_90 (PTX any later GPU runs) has no wgmma.
  std::string small = compile("attention_tile", "sm_90a").ptx;
  CHECK(contains(small, "mma.sync.aligned.m16n8k16"));
  CHECK_FALSE(contains(small, "wgmma"));
  CHECK_FALSE(contains(compile("matmul_f16_128x128", "sm_90").ptx, "wgmma"));
}

// A matmul whose operands are both copied ahead lets each k step's wgmma group run on while
// the next step's copies go out: wait_group 1 after the commit, wait_group 0 in the block by
// which the last iteration leaves (the loop is guarded once and tests its bound at the end), so
// ptxas reports neither serialized wgmma (C7514) nor an injected wait (C7517). At 3 stages the
// copies run one step ahead (wait_group 0 for cp.async); at 2 nothing overlaps.
TEST_CASE("nvptx wgmma: a k loop with both operands copied ahead keeps one wgmma group in flight, and ptxas keeps it so") {
  for (const char *kernel : {"matmul_f16_128x128", "matmul_nt_bf16_128x64_w8"})
    for (int stages : {2, 3, 4}) {
      CAPTURE(kernel);
      CAPTURE(stages);
      codegen::CompiledObject obj = compile(kernel, "sm_90a", stages);
      CHECK(contains(obj.ptx, "wgmma.wait_group.sync.aligned 1;") == (stages >= 3));
      CHECK(contains(obj.ptx, "wgmma.wait_group.sync.aligned 0;"));
      CHECK(contains(obj.ptx, "cp.async.wait_group " + std::to_string(stages >= 3 ? stages - 3 : 0) + ";"));
      if (codegen::nvptx::find_ptxas().empty()) continue;
      REQUIRE(obj.resources.assembled);
      CHECK_FALSE(contains(obj.resources.ptxas_log, "C7514"));
      CHECK_FALSE(contains(obj.resources.ptxas_log, "C7517"));
      CHECK(obj.resources.spill_store_bytes == 0);
    }
  // Flash attention rescales its accumulator every step: its dots wait for their own groups.
  CHECK_FALSE(contains(compile("flash_attention", "sm_90a", 3).ptx, "wgmma.wait_group.sync.aligned 1;"));
}

TEST_CASE("wgmma plan: warps stacked along m; A copied ahead as core matrices, 16-bit B [k][n] copied as stored (MN-major), 8-bit B through registers, trans(W) copied as stored") {
  {
    Planned p = plan_for("matmul_f16_128x128", "sm_90a", 3);
    const ir::Op *dot = p.ops(OpKind::Dot)[0];
    CHECK(p.plan.instruction_of(dot) == 0);
    CHECK(p.layout_of(dot->results[0]) == "mma{spt=[1,2] tpw=[8,4] wpc=[4,1] order=[1,0] warp_tile=[16,8]}");
    REQUIRE(p.plan.pipelined.size() == 2);
    CHECK(p.plan.pipelined[0].operand + p.plan.pipelined[1].operand == 1);  // A and B
  }
  {
    Planned p = plan_for("matmul_i8", "sm_90a", 3);  // wgmma has no transpose bit for 8-bit types
    REQUIRE(p.plan.pipelined.size() == 1);
    CHECK(p.plan.pipelined[0].operand == 0);
  }
  {
    Planned p = plan_for("matmul_nt_bf16_128x64_w8", "sm_90a", 3);
    const ir::Op *dot = p.ops(OpKind::Dot)[0];
    CHECK(p.plan.instruction_of(dot) == 1);  // bf16
    CHECK(p.layout_of(dot->results[0]) == "mma{spt=[1,2] tpw=[8,4] wpc=[8,1] order=[1,0] warp_tile=[16,8]}");
    CHECK(p.plan.pipelined.size() == 2);
  }
  // 32 rows: mma.sync m16n8k16 (the first of sm_80's entries, after the six wgmma ones).
  Planned small = plan_for("attention_tile", "sm_90a");
  for (const ir::Op *dot : small.ops(OpKind::Dot)) CHECK(small.plan.instruction_of(dot) == 6);
}

// --- TF32: f32 dots that ask for it -------------------------------------------------------

TEST_CASE("nvptx mma: a dot of f32 blocks with DotPrecision::TF32 is mma.sync m16n8k8 .tf32 (sm_80, sm_90) or wgmma m64nNk8 .tf32 (sm_90a); an IEEE one stays on FMAs, warning of nothing") {
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  for (const char *arch : {"sm_80", "sm_90", "sm_90a"}) {
    CAPTURE(arch);
    codegen::CompiledObject tf32 = compile("matmul_tf32", arch);
    if (std::string(arch) == "sm_90a") {
      CHECK(contains(tf32.ptx, "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"));
    } else {
      CHECK(contains(tf32.ptx, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
      CHECK(contains(tf32.ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"));  // A as 8 x 4 words; B staged [n][k] through registers
    }
    CHECK(tf32.warnings.empty());
    codegen::CompiledObject ieee = compile("matmul_f32", arch);
    CHECK_FALSE(contains(ieee.ptx, "mma.sync"));
    CHECK(ieee.warnings.empty());
    if (!have_ptxas) continue;
    REQUIRE(tf32.resources.assembled);
    CHECK(tf32.resources.spill_store_bytes == 0);
  }
  Planned p = plan_for("matmul_tf32");
  CHECK(p.plan.instruction_of(p.ops(OpKind::Dot)[0]) == 3);  // sm_80's fourth entry
  REQUIRE(p.plan.pipelined.size() == 1);                      // A copied ahead; B through registers
  CHECK(p.plan.pipelined[0].operand == 0);
  CHECK(plan_for("matmul_f32").plan.dot_instruction.empty());
}

TEST_CASE("nvptx fp8: f8e4m3 matmuls are wgmma m64nNk32 .e4m3 on sm_90a, mma.sync m16n8k32 .e4m3 on sm_89, and f16 mma.sync on operands widened to f16 on sm_80, sm_90 and for dots too small for wgmma; they assemble without spills") {
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  struct Case {
    const char *kernel, *arch, *instruction;
  };
  for (Case cs : {Case{"matmul_f8e4m3", "sm_90a", "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3"},
                  Case{"matmul_f8e4m3_128x128_w8", "sm_90a", "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"},
                  Case{"matmul_f8e4m3", "sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
                  Case{"matmul_f8e4m3_128x128_w8", "sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
                  Case{"matmul_f8e4m3_128x128_w8", "sm_89", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"},
                  Case{"matmul_f8e4m3", "sm_89", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"},
                  Case{"matmul_f8e4m3", "sm_90", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
                  Case{"matmul_f8e4m3_128x128_w8", "sm_90", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
                  // 32 rows: too few for wgmma's warpgroups, so widened to f16 for mma.sync on sm_90a too.
                  Case{"matmul_f8e4m3_32_rows", "sm_90a", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"}}) {
    const std::string kernel = cs.kernel, arch = cs.arch;
    CAPTURE(kernel);
    CAPTURE(arch);
    codegen::CompiledObject obj = compile(cs.kernel, cs.arch, 3);
    CHECK(contains(obj.ptx, cs.instruction));
    CHECK(obj.warnings.empty());
    if (kernel != "matmul_f8e4m3_32_rows" && arch == "sm_90a") CHECK_FALSE(contains(obj.ptx, "mma.sync"));
    // Widened operands: by cvt on sm_90 and sm_90a, by integer IR on sm_80; wgmma and sm_89's
    // mma.sync read the bytes as stored.
    const bool widened = contains(obj.ptx, ".f16.f16");
    CHECK(widened == (arch == "sm_80" || arch == "sm_90" || kernel == "matmul_f8e4m3_32_rows"));
    CHECK(contains(obj.ptx, "cvt.rn.f16x2.e4m3x2") == (widened && arch != "sm_80"));
    if (!have_ptxas) continue;
    REQUIRE(obj.resources.assembled);
    CHECK(obj.resources.spill_store_bytes == 0);
    CHECK(obj.resources.spill_load_bytes == 0);
    std::string report = kernel + " " + arch + ": " + std::to_string(obj.resources.registers) + " registers, " +
                         std::to_string(obj.resources.dynamic_shared_bytes) + " bytes shared";
    MESSAGE(report);
  }
  // On sm_90a the fp8 tiles are copied ahead (cp.async into core matrices: 16 bytes are 16
  // elements), as i8's are; widened to f16 they are loaded into registers first.
  CHECK_FALSE(plan_for("matmul_f8e4m3", "sm_90a", 3).plan.pipelined.empty());
}

TEST_CASE("nvptx fp8: f8e4m3 converts by cvt on sm_89, sm_90 and sm_90a and by integer IR on sm_80; a copied byte is never converted; ptxas assembles both") {
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  const std::string widen = "cvt.rn.f16x2.e4m3x2", narrow = "cvt.rn.satfinite.e4m3x2.f32";
  for (const std::string arch : {"sm_80", "sm_89", "sm_90", "sm_90a"}) {
    CAPTURE(arch);
    const bool hardware = codegen::target_info(arch).fp8_conversions;
    CHECK(hardware == (arch != "sm_80"));
    codegen::CompiledObject convert = compile("f8e4m3_convert", arch);
    CHECK(contains(convert.ptx, widen) == hardware);
    CHECK(contains(convert.ptx, narrow) == hardware);
    codegen::CompiledObject copy = compile("f8e4m3_copy", arch);
    CHECK_FALSE(contains(copy.ptx, widen));
    CHECK_FALSE(contains(copy.ptx, narrow));
    CHECK_FALSE(contains(copy.ptx, "cvt.f32.f16"));
    if (!have_ptxas) continue;
    CHECK(convert.resources.assembled);
    CHECK(copy.resources.assembled);
  }
}
