// emulated_tma_test.cpp - the SIMT emulator's Hopper mbarriers (phases, transaction bytes, misuse as faults) and TMA tile copies (zero fill, the swizzle StagedLayout reads)
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "codegen/gpu/staged_tile.h"
#include "codegen/target_info.h"
#include "examples/matmul_descriptor.h"
#include "src/tools/example_kernels.h"
#include "tests/support/simt_emulator.h"
#include "tests/support/simt_machine.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl::simt;

namespace emulated_tma_test {

uint64_t shared_at(uint64_t offset) { return reinterpret_cast<uint64_t>(machine.shared) + offset; }

// Barriers live past the tiles the tests copy into (offsets below 64 KiB).
const uint64_t kBarrier = shared_at(200 * 1024), kOtherBarrier = shared_at(200 * 1024 + 8);

// Every test starts from a machine with no barriers and no fault, as a launch does.
void fresh_machine() {
  mbarrier_reset();
  machine.fault.clear();
  set_thread(0);
}

// The fault the calls so far recorded, cleared with the barriers for the next check.
std::string take_fault() {
  std::string f = machine.fault;
  fresh_machine();
  return f;
}

// Checks that the calls so far recorded a fault saying `part` (showing the fault if not).
void check_fault(const std::string &part) {
  const std::string f = take_fault();
  CHECK_MESSAGE(kdsl_test::contains(f, part), "the fault: '" << f << "'");
}

// A [rows][cols] tensor of `elem_bytes` elements, `stride` elements a row, each element's
// bytes a pattern of its coordinates that is never zero, so zero fill is told apart.
struct Tensor {
  int64_t rows, cols, stride;
  int elem_bytes;
  alignas(16) static inline uint8_t storage[1 << 16];

  Tensor(int64_t r, int64_t c, int64_t s, int e) : rows(r), cols(c), stride(s), elem_bytes(e) {
    REQUIRE(size_t(rows * stride * elem_bytes) <= sizeof storage);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < stride; ++j)
        for (int b = 0; b < elem_bytes; ++b) storage[(i * stride + j) * elem_bytes + b] = byte(i, j, b);
  }
  static uint8_t byte(int64_t row, int64_t col, int b) { return uint8_t(1 + (row * 37 + col * 11 + b * 101) % 255); }
  uint64_t address() const { return reinterpret_cast<uint64_t>(storage); }
};

// The tensor map emulate_launch makes for `t` copied in boxes of box_rows x (swizzle / elem)
// columns: through encode_tensor_map, rows and cols i32 arguments whose slots carry junk in
// their high bytes (only the low 32 bits are the argument), the stride a constant.
EmulatedTensorMap map_of(const Tensor &t, int box_rows, int swizzle) {
  codegen::TensorMapSpec spec;
  spec.base = 0;
  spec.rows = {1, 0};
  spec.cols = {2, 0};
  spec.row_stride = {-1, t.stride};
  spec.elem = t.elem_bytes == 2 ? DType::F16 : DType::I8;
  spec.box_rows = box_rows;
  spec.box_cols = swizzle / t.elem_bytes;
  spec.swizzle_bytes = swizzle;
  uint64_t slots[3] = {t.address(), 0xDEADBEEF00000000ull | uint64_t(t.rows), 0xFFFFFFFF00000000ull | uint64_t(t.cols)};
  return encode_tensor_map(spec, slots);
}

// The layout the sm_90a lowering stages a tile of `width_bytes` rows in for wgmma.
codegen::gpu::StagedLayout wgmma_layout(int64_t rows, int64_t width_bytes) {
  for (const codegen::MatrixInstruction &mi : codegen::target_info("sm_90a").matrix_instructions)
    if (mi.descriptor_operands) return codegen::gpu::staged_layout(mi, rows, width_bytes);
  FAIL("sm_90a has no descriptor instruction");
  return {};
}

// Copies the box at (col, row) with a barrier of count 1 and checks it completed the phase.
void copy_box(uint64_t dst, const EmulatedTensorMap &map, int32_t col, int32_t row) {
  mbarrier_init(kBarrier, 1);
  mbarrier_arrive_expect_tx(kBarrier, map.box_rows * map.box_cols * map.elem_bytes);
  tma_load_2d(dst, reinterpret_cast<uint64_t>(&map), col, row, kBarrier);
  CHECK(mbarrier_try_wait_parity(kBarrier, 0) == 1);
  mbarrier_inval(kBarrier);
}

}  // namespace emulated_tma_test

using namespace emulated_tma_test;

TEST_CASE("emulated mbarrier: a count-1 barrier's phases complete when its thread has arrived and the announced bytes have landed") {
  fresh_machine();
  Tensor t(16, 64, 64, 2);
  EmulatedTensorMap map = map_of(t, 8, 32);  // 8 rows of 16 f16: 256 bytes a copy
  const uint64_t dst = shared_at(0);
  const auto copy = [&](int32_t row) { tma_load_2d(dst, reinterpret_cast<uint64_t>(&map), 0, row, kBarrier); };

  mbarrier_init(kBarrier, 1);
  CHECK(mbarrier_try_wait_parity(kBarrier, 0) == 0);  // phase 0 has not completed
  CHECK(mbarrier_try_wait_parity(kBarrier, 1) == 1);  // "the phase before", parity 1, has
  mbarrier_arrive_expect_tx(kBarrier, 256);
  CHECK(mbarrier_try_wait_parity(kBarrier, 0) == 0);  // arrived, but the bytes are still to land
  copy(0);
  CHECK(mbarrier_try_wait_parity(kBarrier, 0) == 1);
  CHECK(mbarrier_try_wait_parity(kBarrier, 1) == 0);  // now phase 1 is the one in progress

  // Phase 1: two copies announced by one arrival; the phase waits for both.
  mbarrier_arrive_expect_tx(kBarrier, 512);
  copy(0);
  CHECK(mbarrier_try_wait_parity(kBarrier, 1) == 0);
  copy(8);
  CHECK(mbarrier_try_wait_parity(kBarrier, 1) == 1);
  CHECK(mbarrier_try_wait_parity(kBarrier, 0) == 0);

  // Phase 0 again: an arrival announcing nothing completes it at once.
  mbarrier_arrive_expect_tx(kBarrier, 0);
  CHECK(mbarrier_try_wait_parity(kBarrier, 0) == 1);
  mbarrier_inval(kBarrier);
  mbarrier_program_end();
  CHECK(machine.fault == "");
}

TEST_CASE("emulated mbarrier: a count-2 barrier waits for both threads' arrivals; threads looping over phases in step") {
  fresh_machine();
  Tensor t(16, 64, 64, 2);
  EmulatedTensorMap map = map_of(t, 8, 32);
  const uint64_t map_address = reinterpret_cast<uint64_t>(&map);

  SUBCASE("the second thread's arrival completes the phase") {
    mbarrier_init(kBarrier, 2);
    mbarrier_arrive_expect_tx(kBarrier, 256);
    tma_load_2d(shared_at(0), map_address, 0, 0, kBarrier);
    CHECK(mbarrier_try_wait_parity(kBarrier, 0) == 0);  // the bytes have landed; one arrival is missing
    std::thread other([] {
      set_thread(1);
      mbarrier_arrive_expect_tx(kBarrier, 0);
    });
    other.join();
    CHECK(mbarrier_try_wait_parity(kBarrier, 0) == 1);
    mbarrier_inval(kBarrier);
  }

  SUBCASE("4 threads, 200 phases: thread 0 announces and copies, every thread waits for each phase") {
    constexpr int kThreads = 4, kPhases = 200;
    const auto saved = machine.mbarrier_timeout;
    machine.mbarrier_timeout = std::chrono::seconds(5);  // a broken barrier fails in seconds, not 20 s a wait
    mbarrier_init(kBarrier, kThreads);
    std::atomic<int> completed_waits = 0;
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id)
      threads.emplace_back([&, id] {
        set_thread(id);
        for (int phase = 0; phase < kPhases; ++phase) {
          if (id == 0) {
            mbarrier_arrive_expect_tx(kBarrier, 256);
            tma_load_2d(shared_at(0), map_address, 0, phase % 9, kBarrier);
          } else {
            mbarrier_arrive_expect_tx(kBarrier, 0);
          }
          while (!mbarrier_try_wait_parity(kBarrier, phase % 2)) {
          }
          ++completed_waits;
        }
      });
    for (auto &th : threads) th.join();
    machine.mbarrier_timeout = saved;
    CHECK(completed_waits == kThreads * kPhases);
    set_thread(0);
    CHECK(mbarrier_try_wait_parity(kBarrier, kPhases % 2) == 0);  // the next phase has had no arrivals
    mbarrier_inval(kBarrier);
  }
  mbarrier_program_end();
  CHECK(machine.fault == "");
}

TEST_CASE("emulated mbarrier: misuse the hardware leaves undefined is a fault") {
  fresh_machine();
  Tensor t(16, 64, 64, 2);
  EmulatedTensorMap map = map_of(t, 8, 32);
  const uint64_t map_address = reinterpret_cast<uint64_t>(&map);

  mbarrier_init(kBarrier, 1);
  mbarrier_init(kBarrier, 1);
  check_fault("mbarrier.init: the barrier at shared offset 204800 is already initialized");

  mbarrier_init(kBarrier, 1);
  mbarrier_inval(kBarrier);
  mbarrier_init(kBarrier, 1);  // init after inval is fine
  mbarrier_inval(kBarrier);
  CHECK(take_fault() == "");

  CHECK(mbarrier_try_wait_parity(kBarrier, 0) == 1);  // 1, so that a kernel's wait loop ends
  check_fault("mbarrier.try_wait.parity: the barrier at shared offset 204800 is not initialized");

  mbarrier_init(kBarrier, 1);
  mbarrier_inval(kBarrier);
  mbarrier_arrive_expect_tx(kBarrier, 16);
  check_fault("mbarrier.arrive.expect_tx: the barrier at shared offset 204800 is invalidated");

  mbarrier_init(kBarrier, 1);
  tma_load_2d(shared_at(0), map_address, 0, 0, kOtherBarrier);
  check_fault("cp.async.bulk.tensor (complete_tx): the barrier at shared offset 204808 is not initialized");

  mbarrier_init(kBarrier, 1);
  tma_load_2d(shared_at(0), map_address, 0, 0, kBarrier);  // 256 bytes nobody announced
  check_fault("256 bytes landed on the barrier at shared offset 204800, which expected only 0");

  mbarrier_init(kBarrier, 2);
  mbarrier_arrive_expect_tx(kBarrier, 256);
  mbarrier_arrive_expect_tx(kBarrier, 0);
  mbarrier_arrive_expect_tx(kBarrier, 0);  // a third arrival while the phase waits for its bytes
  check_fault("more arrivals in one phase than the barrier's count (2)");

  mbarrier_init(kBarrier + 4, 1);
  check_fault("is not 8 aligned bytes of shared memory");

  mbarrier_init(kBarrier, 1);
  mbarrier_init(kOtherBarrier, 1);
  mbarrier_inval(kOtherBarrier);
  mbarrier_program_end();
  check_fault("the program ended with the barrier at shared offset 204800 still valid");
  mbarrier_program_end();  // the program's barriers are gone with it
  CHECK(take_fault() == "");
}

TEST_CASE("emulated mbarrier: a wait for a phase that never completes faults after the timeout, and later waits give up at once") {
  fresh_machine();
  const auto saved = machine.mbarrier_timeout;
  machine.mbarrier_timeout = std::chrono::milliseconds(50);
  mbarrier_init(kBarrier, 2);
  mbarrier_arrive_expect_tx(kBarrier, 0);  // the second arrival never comes
  const auto start = std::chrono::steady_clock::now();
  int spins = 0;
  while (!mbarrier_try_wait_parity(kBarrier, 0)) ++spins;
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(spins > 0);
  CHECK(waited >= std::chrono::milliseconds(50));
  CHECK(waited < std::chrono::milliseconds(900));
  CHECK(kdsl_test::contains(machine.fault, "mbarrier: a thread waited 50 ms for a phase that never completed (thread 0, barrier at shared offset 204800, parity 0)"));
  CHECK(mbarrier_try_wait_parity(kBarrier, 0) == 1);  // the launch has faulted: no second 50 ms
  machine.mbarrier_timeout = saved;
  take_fault();
}

TEST_CASE("emulated TMA: a box lands where StagedLayout says, swizzled 128, 64 and 32 bytes, f16 and i8, zeros outside the tensor") {
  fresh_machine();
  for (int elem_bytes : {2, 1})
    for (int swizzle : {128, 64, 32})
      for (int box_rows : {8, 24}) {
        CAPTURE(elem_bytes);
        CAPTURE(swizzle);
        CAPTURE(box_rows);
        // 40 x 100 elements, rows 112 apart (a multiple of 16 bytes for both types).
        Tensor t(40, 100, 112, elem_bytes);
        EmulatedTensorMap map = map_of(t, box_rows, swizzle);
        const int box_cols = swizzle / elem_bytes;
        const int64_t box_bytes = int64_t(box_rows) * swizzle;
        const codegen::gpu::StagedLayout layout = wgmma_layout(box_rows, swizzle);
        REQUIRE(layout.swizzle_bytes == swizzle);
        const uint64_t dst_offset = 4096;  // aligned to 1024, 8 rows of the widest swizzle
        struct Corner {
          int32_t col, row;
        };
        // Inside; over the top-left corner; over the bottom-right; wholly past the end; wholly before.
        for (Corner at : {Corner{3, 5}, Corner{-7, -3}, Corner{100 - box_cols / 2, 40 - box_rows / 2}, Corner{100, 0}, Corner{0, -box_rows}}) {
          CAPTURE(at.col);
          CAPTURE(at.row);
          std::memset(machine.shared, 0xCD, dst_offset + size_t(box_bytes) + 64);
          copy_box(shared_at(dst_offset), map, at.col, at.row);
          int wrong = 0;
          for (int r = 0; r < box_rows; ++r)
            for (int c = 0; c < box_cols; ++c) {
              const int64_t tr = at.row + r, tc = at.col + c;
              const bool inside = tr >= 0 && tr < t.rows && tc >= 0 && tc < t.cols;
              const uint8_t *got = machine.shared + dst_offset + layout.offset<int64_t>(r, int64_t(c) * elem_bytes);
              for (int b = 0; b < elem_bytes; ++b) wrong += got[b] != (inside ? Tensor::byte(tr, tc, b) : 0);
            }
          CHECK(wrong == 0);
          CHECK(machine.shared[dst_offset - 1] == 0xCD);  // nothing written around the box
          CHECK(machine.shared[dst_offset + size_t(box_bytes)] == 0xCD);
        }
      }
  mbarrier_program_end();
  CHECK(machine.fault == "");
}

TEST_CASE("emulated TMA: destinations, boxes and maps the copy does not take are faults; maps TMA cannot encode are errors") {
  fresh_machine();
  Tensor t(16, 64, 64, 2);
  EmulatedTensorMap map = map_of(t, 8, 64);  // 8 rows of 32 f16
  const uint64_t map_address = reinterpret_cast<uint64_t>(&map);
  mbarrier_init(kBarrier, 1);
  mbarrier_arrive_expect_tx(kBarrier, 512);
  tma_load_2d(shared_at(256), map_address, 0, 0, kBarrier);  // a 64-byte swizzle needs 512-byte alignment
  check_fault("is not shared memory aligned to 512 bytes");

  mbarrier_init(kBarrier, 1);
  tma_load_2d(shared_at(sizeof machine.shared), map_address, 0, 0, kBarrier);  // just past the end
  check_fault("is not shared memory aligned to 512 bytes");

  mbarrier_init(kBarrier, 1);
  EmulatedTensorMap narrow = map;
  narrow.box_cols = 16;  // 32 bytes a row under a 64-byte swizzle
  tma_load_2d(shared_at(0), reinterpret_cast<uint64_t>(&narrow), 0, 0, kBarrier);
  check_fault("a box of 16 columns of 2 bytes under a 64-byte swizzle");

  mbarrier_init(kBarrier, 1);
  alignas(64) uint8_t junk[128] = {};
  tma_load_2d(shared_at(0), reinterpret_cast<uint64_t>(junk), 0, 0, kBarrier);
  check_fault("is not one of the kernel's tensor map parameters");

  codegen::TensorMapSpec spec;
  spec.base = 0;
  spec.rows = {-1, 16};
  spec.cols = {-1, 60};
  spec.row_stride = {1, 0};
  spec.elem = DType::F16;
  spec.box_rows = 8;
  spec.box_cols = 32;
  spec.swizzle_bytes = 64;
  uint64_t slots[2] = {t.address(), 60};  // 120-byte rows
  CHECK_THROWS_WITH_AS(encode_tensor_map(spec, slots), doctest::Contains("a row stride of 60 elements of 2 bytes; TMA needs a positive multiple of 16 bytes"), Error);
  slots[0] = t.address() + 8;
  slots[1] = 64;
  CHECK_THROWS_WITH_AS(encode_tensor_map(spec, slots), doctest::Contains("the tensor map of argument 0: its address"), Error);
  slots[0] = t.address();
  EmulatedTensorMap ok = encode_tensor_map(spec, slots);
  CHECK(ok.rows == 16);
  CHECK(ok.cols == 60);
  CHECK(ok.row_stride == 64);
  CHECK(ok.elem_bytes == 2);
}

// What compile_for_emulation keeps for emulate_launch: the kernel's six arguments, then A's,
// B's and C's (the store's) tensor maps, encoded at launch from the argument slots. A K that the trace was told is
// divisible by 16 but is not (rows of 200 bytes) is what the launcher refuses to encode, and so
// does emulate_launch, naming the map. (emulated_descriptor_test.cpp runs such kernels whole.)
TEST_CASE("emulated TMA: an sm_90a kernel takes its tensor maps after its arguments, encoded by emulate_launch from the slots") {
  auto k = tools::named_kernel<examples::matmul_descriptor<f16, f32, 64, 64, 64>>("matmul_descriptor_64", 4);
  const ir::ArgClass aligned = ir::ArgClass::Divisible16;
  const std::vector<ir::ArgClass> classes = {aligned, aligned, aligned, ir::ArgClass::None, aligned, aligned};
  EmulatedKernel kernel = compile_for_emulation(tools::trace_kernel(k.signature, classes), "kdsl_emulated_tma_maps", {"sm_90a", 4, true, 2});
  CHECK(kernel.arguments == 6);
  REQUIRE(kernel.tensor_maps.size() == 3);
  CHECK(kernel.tensor_maps[0].base == 0);
  CHECK(kernel.tensor_maps[0].swizzle_bytes == 128);
  CHECK(kernel.tensor_maps[1].base == 1);
  CHECK(kernel.tensor_maps[2].base == 2);
  CHECK(kernel.tensor_maps[2].swizzle_bytes == 128);

  const int M = 64, N = 64, K = 100;
  std::vector<half> a(size_t(M) * K), b(size_t(K) * N);
  std::vector<float> c(size_t(M) * N);
  const uint64_t slots[6] = {reinterpret_cast<uint64_t>(a.data()), reinterpret_cast<uint64_t>(b.data()), reinterpret_cast<uint64_t>(c.data()),
                             uint64_t(M), uint64_t(N), uint64_t(K)};
  const int32_t one_program[3] = {1, 1, 1};
  CHECK_THROWS_WITH_AS(emulate_launch(kernel, one_program, slots),
                       doctest::Contains("the tensor map of argument 0: a row stride of 100 elements of 2 bytes; TMA needs a positive multiple of 16 bytes"), Error);
}
