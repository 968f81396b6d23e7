// nvptx_tma_test.cpp - tile loads and stores through tensor descriptors: TMA copies, stores and mbarrier pipelines on sm_90a, masked loads and stores everywhere else (no GPU needed)
#include <doctest/doctest.h>

#include <kdsl/kdsl.h>

#include "codegen/codegen.h"
#include "codegen/nvptx/ptxas.h"
#include "examples/matmul_descriptor.h"
#include "src/tools/example_kernels.h"

using namespace kdsl;

namespace {

codegen::CompiledObject compile_descriptor_matmul(const std::string &arch, const std::string &spec, int num_stages) {
  auto k = tools::named_kernel<examples::matmul_descriptor<f16, f16, 128, 128, 64>>("matmul_descriptor", 8);
  codegen::Options options;
  options.num_warps = k.num_warps;
  options.num_stages = num_stages;
  return codegen::compile(tools::trace_kernel(k.signature, tools::parse_specialization(spec, k.signature)), "kdsl_" + k.name,
                          codegen::Target::named(arch), options);
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

// Triton's tutorial tile through descriptors: A's [128 x 64] tile is one 128-byte-swizzled box,
// B's [64 x 128] two (a box is one swizzle slab wide), so each stage is 3 copies by one thread
// announced on one barrier; C's [128 x 128] tile goes out as two 128-byte-swizzled boxes. The arguments
// (a, b, c, M, N, K) come first, then A's, B's and C's maps.
TEST_CASE("nvptx: descriptor tiles feeding wgmma on sm_90a are copied by TMA into the swizzled tiles, with one mbarrier a stage") {
  for (int stages : {2, 3, 4}) {
    CAPTURE(stages);
    codegen::CompiledObject obj = compile_descriptor_matmul("sm_90a", "aligned", stages);
    CHECK(obj.ptx.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") != std::string::npos);
    // The prologue copies `ahead` iterations (num_stages - 1; - 2 where the wgmma group stays
    // in flight across iterations, from 3 stages on), the body one.
    const int ahead = stages >= 3 ? stages - 2 : stages - 1;
    CHECK(count(obj.ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == size_t(3 * (ahead + 1)));
    CHECK((stages >= 3) == (obj.ptx.find("wgmma.wait_group.sync.aligned 1;") != std::string::npos));
    CHECK(count(obj.ptx, "mbarrier.init.shared::cta.b64") == size_t(stages));  // unrolled: one a stage
    CHECK(count(obj.ptx, "mbarrier.inval.shared::cta.b64") == size_t(stages));
    CHECK(obj.ptx.find("mbarrier.try_wait.parity.shared::cta.b64") != std::string::npos);
    CHECK(obj.ptx.find("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%rd") != std::string::npos);
    CHECK(obj.ptx.find("cp.async.cg.shared.global") == std::string::npos);  // no thread copies a tile itself
    CHECK(obj.ptx.find(".param .align 64 .b8 kdsl_matmul_descriptor_param_6[128]") != std::string::npos);
    CHECK(obj.ptx.find(".param .align 64 .b8 kdsl_matmul_descriptor_param_7[128]") != std::string::npos);
    CHECK(obj.ptx.find(".param .align 64 .b8 kdsl_matmul_descriptor_param_8[128]") != std::string::npos);
    REQUIRE(obj.tensor_maps.size() == 3);
    const codegen::TensorMapSpec &a = obj.tensor_maps[0], &b = obj.tensor_maps[1], &c = obj.tensor_maps[2];
    CHECK(a.base == 0);
    CHECK(a.rows.param == 3);  // M
    CHECK(a.cols.param == 5);  // K
    CHECK(a.row_stride.param == 5);
    CHECK(a.elem == DType::F16);
    CHECK(a.box_rows == 128);
    CHECK(a.box_cols == 64);
    CHECK(a.swizzle_bytes == 128);
    CHECK(b.base == 1);
    CHECK(b.rows.param == 5);  // K
    CHECK(b.cols.param == 4);  // N
    CHECK(b.row_stride.param == 4);
    CHECK(b.box_rows == 64);
    CHECK(b.box_cols == 64);  // of B's 128 columns: two boxes a tile
    CHECK(b.swizzle_bytes == 128);
    CHECK(c.base == 2);
    CHECK(c.rows.param == 3);  // M
    CHECK(c.cols.param == 4);  // N
    CHECK(c.row_stride.param == 4);
    CHECK(c.elem == DType::F16);
    CHECK(c.box_rows == 128);
    CHECK(c.box_cols == 64);
    CHECK(c.swizzle_bytes == 128);
    // The store: every thread's writes to the box fenced for the async proxy, a barrier, then
    // thread 0's TMA stores (one a 128-byte slab), waited for until they have read the box.
    const size_t fence = obj.ptx.rfind("fence.proxy.async.shared::cta;"), store = obj.ptx.find("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group");
    CHECK(count(obj.ptx, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group") == 2);
    REQUIRE(store != std::string::npos);
    REQUIRE(fence != std::string::npos);
    CHECK(fence < store);
    CHECK(obj.ptx.find("bar.sync", fence) < store);
    CHECK(obj.ptx.find("cp.async.bulk.commit_group;", store) < obj.ptx.find("cp.async.bulk.wait_group.read 0;", store));
    CHECK(obj.ptx.find("st.global") == std::string::npos);  // no thread writes C itself
    // TMA's tiles take the same space as cp.async's, plus 8 bytes a stage of barriers.
    CHECK(obj.resources.dynamic_shared_bytes >= stages * (16384 + 16384));
    if (codegen::nvptx::find_ptxas().empty()) continue;
    REQUIRE(obj.resources.assembled);
    CHECK(obj.resources.spill_store_bytes == 0);
  }
}

// The launcher can encode a tensor map only from a base it knows to be 16-byte aligned and a
// stride whose bytes are a multiple of 16; sm_90 has no TMA. Those read the tiles through
// masked loads and write C through a masked store. One stage has nothing to copy ahead: the
// tiles are masked loads, but C still goes out by TMA.
TEST_CASE("nvptx: descriptor tiles are plain masked loads and stores where TMA cannot copy them") {
  struct Case {
    const char *arch, *spec;
  };
  for (Case c : {Case{"sm_90a", "none"}, Case{"sm_90", "aligned"}}) {
    CAPTURE(c.arch);
    CAPTURE(c.spec);
    codegen::CompiledObject obj = compile_descriptor_matmul(c.arch, c.spec, 3);
    CHECK(obj.tensor_maps.empty());
    CHECK(obj.ptx.find("cp.async.bulk") == std::string::npos);
    CHECK(obj.ptx.find("mbarrier") == std::string::npos);
    CHECK(obj.ptx.find(".align 64 .b8") == std::string::npos);
    CHECK(obj.ptx.find("st.global") != std::string::npos);
  }
  codegen::CompiledObject one_stage = compile_descriptor_matmul("sm_90a", "aligned", 1);
  REQUIRE(one_stage.tensor_maps.size() == 1);
  CHECK(one_stage.tensor_maps[0].base == 2);  // C
  CHECK(one_stage.ptx.find("mbarrier") == std::string::npos);
  CHECK(one_stage.ptx.find("cp.async.bulk.tensor.2d.shared::cluster") == std::string::npos);
  CHECK(count(one_stage.ptx, "cp.async.bulk.tensor.2d.global.shared::cta") == 2);
  // sm_90: still cp.async's 16-byte copies, where the plain loads allow them.
  CHECK(compile_descriptor_matmul("sm_90", "aligned", 3).ptx.find("cp.async.cg.shared.global") != std::string::npos);
  // N not known divisible by 16 (B's and C's stride): A's tiles by TMA, B's through registers,
  // C through a masked store.
  codegen::CompiledObject mixed = compile_descriptor_matmul("sm_90a", "16,16,16,16,_,16", 3);
  REQUIRE(mixed.tensor_maps.size() == 1);
  CHECK(mixed.tensor_maps[0].base == 0);
  CHECK(count(mixed.ptx, "cp.async.bulk.tensor.2d") == 3);  // 2 iterations ahead (B is not copied ahead: no group in flight), 1 in the body
  CHECK(mixed.ptx.find("cp.async.bulk.tensor.2d.global") == std::string::npos);
}
