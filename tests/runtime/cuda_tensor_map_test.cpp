// cuda_tensor_map_test.cpp - TMA tensor maps on the runtime side: the cache entry's "tensor_maps" metadata and its checks, and
// through the fake libcuda (fake_libcuda.c) the encoding at launch, the maps passed after the arguments, their reuse, and the refusals.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <kdsl/kdsl.h>

#include "codegen/nvptx/ptxas.h"
#include "examples/matmul_descriptor.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/tensor_map_json.h"
#include "runtime/kernel_cache_key.h"
#include "tests/fake_libraries.h"
#include "tests/scratch_cache.h"

using namespace kdsl;
using codegen::TensorMapField;
using codegen::TensorMapSpec;

namespace tensor_map_test {

struct FakeTensorMapEncode {  // as fake_libcuda.c lays it out
  uint64_t serial;
  int data_type;
  unsigned rank;
  uint64_t address;
  uint64_t dims[5], strides[4];
  unsigned box[5], element_strides[5];
  int interleave, swizzle, l2_promotion, oob_fill;
};

struct Fake {
  cuda::Driver driver;
  uint64_t (*encodes)() = nullptr;
  const FakeTensorMapEncode *(*encode)(uint64_t) = nullptr;
  void (*fail_next_encode)(int) = nullptr;
  const void *(*param_pointer)(int) = nullptr;
  const unsigned char *(*param_bytes)(int) = nullptr;
  void (*set_params)(int, const size_t *) = nullptr;
  int (*launches)() = nullptr;
  int (*loads)() = nullptr;
};

template <class F>
F symbol(void *h, const char *name) {
  return test::fake_symbol<F>(h, "fake_libcuda.c", name);
}

Fake &fake() {
  static Fake f = [] {
    const std::string library = test::fake_library("KDSL_TEST_FAKE_LIBCUDA", KDSL_FAKE_LIBCUDA);
    Fake f;
    f.driver = cuda::load_driver(library);
    void *h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    REQUIRE(h);
    f.encodes = symbol<uint64_t (*)()>(h, "fake_cuda_tensor_map_encodes");
    f.encode = symbol<const FakeTensorMapEncode *(*)(uint64_t)>(h, "fake_cuda_tensor_map_encode");
    f.fail_next_encode = symbol<void (*)(int)>(h, "fake_cuda_fail_next_tensor_map_encode");
    f.param_pointer = symbol<const void *(*)(int)>(h, "fake_cuda_last_param_pointer");
    f.param_bytes = symbol<const unsigned char *(*)(int)>(h, "fake_cuda_last_param_bytes");
    f.set_params = symbol<void (*)(int, const size_t *)>(h, "fake_cuda_set_params");
    f.launches = symbol<int (*)()>(h, "fake_cuda_launches");
    f.loads = symbol<int (*)()>(h, "fake_cuda_loads");
    return f;
  }();
  return f;
}

std::string thrown(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TensorMapField param(int index) { return {index, 0}; }
TensorMapField constant(int64_t value) { return {-1, value}; }

// tma_copy<64>(Ptr<const f16> src, Ptr<f16> dst, i32 rows, i32 cols, i32 row_stride) as the
// launcher sees it: src read as rows x cols in 64 x 64 boxes with the 128-byte swizzle, dst as a
// 32 x 64 tensor fixed by the trace (constants) in 16 x 32 boxes with the 64-byte swizzle.
TensorMapSpec src_map() { return {0, param(2), param(3), param(4), DType::F16, 64, 64, 128}; }
TensorMapSpec dst_map() { return {1, constant(32), constant(64), param(4), DType::F16, 16, 32, 64}; }

detail::KernelSignature tma_copy_signature() {
  using detail::TypeDesc;
  TypeDesc src{.elem = DType::F16, .is_ptr = true, .read_only = true}, dst{.elem = DType::F16, .is_ptr = true}, integer{.elem = DType::I32};
  return {"tma_copy<64>", {src, dst, integer, integer, integer}, nullptr};
}

// The cache entry codegen would make of a kernel with these maps (kernel_cache_entry).
jit_cache::CacheEntry tma_entry(const std::vector<TensorMapSpec> &maps, const std::string &symbol = "kdsl_fake_tma") {
  codegen::CompiledObject compiled;
  compiled.symbol = symbol;
  compiled.object = {'P', 'T', 'X', 0};
  compiled.format = "ptx";
  compiled.resources.threads = 128;
  compiled.tensor_maps = maps;
  return detail::kernel_cache_entry("tma_copy<64>", compiled, 0);
}

// One loaded tma_copy on a fresh fake GPU, launched with explicit slots. The fake kernel
// declares the parameters codegen gave it: its arguments, then a 128-byte one per map
// (cuLaunchKernel reads that many through its array); cleared after, for the tests that follow.
struct Loaded {
  explicit Loaded(const std::vector<TensorMapSpec> &maps, const cuda::Driver &driver = fake().driver)
      : device(0, driver), code(device.load(tma_entry(maps))) {
    REQUIRE(static_cast<const detail::CudaCode &>(*code).tensor_maps.specs() == maps);
    param_sizes.insert(param_sizes.end(), maps.size(), 128);
  }
  ~Loaded() {
    device.unload(*code);
    fake().set_params(0, nullptr);
  }
  void launch(std::vector<uint64_t> values) {
    slots = std::move(values);
    std::vector<ArgValue> args(slots.size());
    fake().set_params(int(param_sizes.size()), param_sizes.data());
    device.launch(*code, detail::LaunchRequest{signature, args.data(), slots.data(), slots.size(), grid(2, 3), false});
  }
  detail::CudaDevice device;
  std::shared_ptr<detail::LoadedCode> code;
  detail::KernelSignature signature = tma_copy_signature();
  std::vector<size_t> param_sizes = {8, 8, 4, 4, 4};
  std::vector<uint64_t> slots;  // the last launch's, alive for the checks after it
};

// The fake's record of encode call `serial` (the last 8 are kept).
const FakeTensorMapEncode &encoded(uint64_t serial) {
  const FakeTensorMapEncode *e = fake().encode(serial);
  REQUIRE_MESSAGE(e, "the fake driver has no record of encode call ", serial, " (", fake().encodes(), " made)");
  return *e;
}

struct Blob {  // what the fake wrote into a map
  char magic[9] = {};
  uint64_t serial = 0, address = 0;
};
Blob blob(const unsigned char *bytes) {
  Blob b;
  std::memcpy(b.magic, bytes, 8);
  std::memcpy(&b.serial, bytes + 8, 8);
  std::memcpy(&b.address, bytes + 16, 8);
  return b;
}

}  // namespace tensor_map_test

using namespace tensor_map_test;

TEST_CASE("tensor map metadata: specs round-trip through the cache entry's JSON, arguments and constants alike") {
  std::vector<TensorMapSpec> maps = {src_map(), dst_map(), {3, constant(7), param(1), constant(4096), DType::BF16, 8, 8, 0},
                                     {0, param(5), param(6), param(7), DType::F32, 1, 8, 32, true}};
  nlohmann::json j = detail::tensor_maps_to_json(maps);
  CHECK(j[0].dump() ==
        R"({"base":0,"box":[64,64],"cols":{"param":3},"dtype":"f16","row_stride":{"param":4},"rows":{"param":2},"swizzle":128,"written":false})");
  CHECK(j[1].dump() ==
        R"({"base":1,"box":[16,32],"cols":{"value":64},"dtype":"f16","row_stride":{"param":4},"rows":{"value":32},"swizzle":64,"written":false})");
  CHECK(j[3]["written"] == true);
  CHECK(detail::tensor_maps_from_json(j, "tma_copy<64> (kdsl_x)") == maps);
  // A map without "written" is one that is read.
  nlohmann::json unwritten = j;
  unwritten[3].erase("written");
  CHECK_FALSE(detail::tensor_maps_from_json(unwritten, "e")[3].written);
  // As the disk cache stores it: text, read back.
  CHECK(detail::tensor_maps_from_json(nlohmann::json::parse(j.dump()), "tma_copy<64> (kdsl_x)") == maps);
  // Every element type TMA copies survives; i1 has no TMA type.
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::I8, DType::U8, DType::I16, DType::I32, DType::U32, DType::I64}) {
    TensorMapSpec s = src_map();
    s.elem = t;
    s.box_cols = 16;
    s.swizzle_bytes = 0;
    CHECK(detail::tensor_maps_from_json(detail::tensor_maps_to_json({s}), "e") == std::vector{s});
  }
}

TEST_CASE("tensor map metadata: kernel_cache_entry writes tensor_maps only for a kernel that has them") {
  jit_cache::CacheEntry with = tma_entry({src_map(), dst_map()});
  REQUIRE(with.metadata.contains("tensor_maps"));
  CHECK(with.metadata["tensor_maps"] == detail::tensor_maps_to_json({src_map(), dst_map()}));
  CHECK(detail::tensor_maps_from_json(with.metadata["tensor_maps"], "e") == std::vector{src_map(), dst_map()});
  CHECK(with.metadata["threads"] == 128);
  CHECK_FALSE(tma_entry({}).metadata.contains("tensor_maps"));
}

TEST_CASE("tensor map metadata: each malformed field is refused, naming the cache entry and the field") {
  const nlohmann::json good = detail::tensor_maps_to_json({src_map()});
  struct Case {
    std::function<void(nlohmann::json &)> spoil;
    std::string field;
  };
  const std::vector<Case> cases = {
      {[](nlohmann::json &j) { j = nlohmann::json::object(); }, "tensor_maps must be an array"},
      {[](nlohmann::json &j) { j[0] = 5; }, "tensor_maps[0] must be an object"},
      {[](nlohmann::json &j) { j[0].erase("base"); }, "tensor_maps[0].base must be"},
      {[](nlohmann::json &j) { j[0]["base"] = -1; }, "tensor_maps[0].base must be"},
      {[](nlohmann::json &j) { j[0]["base"] = "0"; }, "tensor_maps[0].base must be"},
      {[](nlohmann::json &j) { j[0].erase("rows"); }, "tensor_maps[0].rows must be"},
      {[](nlohmann::json &j) { j[0]["rows"] = {{"param", -1}}; }, "tensor_maps[0].rows must be"},
      {[](nlohmann::json &j) { j[0]["rows"] = {{"param", 1}, {"value", 2}}; }, "tensor_maps[0].rows must be"},
      {[](nlohmann::json &j) { j[0]["rows"] = {{"value", "64"}}; }, "tensor_maps[0].rows must be"},
      {[](nlohmann::json &j) { j[0]["rows"] = {{"value", 1.5}}; }, "tensor_maps[0].rows must be"},
      {[](nlohmann::json &j) { j[0]["cols"] = {{"params", 3}}; }, "tensor_maps[0].cols must be"},
      {[](nlohmann::json &j) { j[0]["cols"] = nlohmann::json::object(); }, "tensor_maps[0].cols must be"},
      {[](nlohmann::json &j) { j[0]["row_stride"] = 4; }, "tensor_maps[0].row_stride must be"},
      {[](nlohmann::json &j) { j[0]["row_stride"] = {{"value", uint64_t(1) << 63}}; }, "tensor_maps[0].row_stride must be"},
      {[](nlohmann::json &j) { j[0].erase("dtype"); }, "tensor_maps[0].dtype must be"},
      {[](nlohmann::json &j) { j[0]["dtype"] = "i1"; }, "tensor_maps[0].dtype must be"},
      {[](nlohmann::json &j) { j[0]["dtype"] = "f64"; }, "tensor_maps[0].dtype must be"},
      {[](nlohmann::json &j) { j[0].erase("box"); }, "tensor_maps[0].box must be"},
      {[](nlohmann::json &j) { j[0]["box"] = {64}; }, "tensor_maps[0].box must be"},
      {[](nlohmann::json &j) { j[0]["box"] = {0, 64}; }, "tensor_maps[0].box must be"},
      {[](nlohmann::json &j) { j[0]["box"] = {257, 64}; }, "tensor_maps[0].box must be"},
      {[](nlohmann::json &j) { j[0]["box"] = {64, 4}; }, "tensor_maps[0].box must be"},  // 4 f16: 8 bytes, not whole 16-byte units
      {[](nlohmann::json &j) { j[0].erase("swizzle"); }, "tensor_maps[0].swizzle must be"},
      {[](nlohmann::json &j) { j[0]["swizzle"] = 48; }, "tensor_maps[0].swizzle must be"},
      {[](nlohmann::json &j) { j[0]["swizzle"] = 256; }, "tensor_maps[0].swizzle must be"},  // spans the row, but TMA has no such swizzle
      {[](nlohmann::json &j) { j[0]["swizzle"] = 64; }, "tensor_maps[0].swizzle must be"},  // the box's row is 128 bytes
      {[](nlohmann::json &j) { j[0]["written"] = 1; }, "tensor_maps[0].written must be true or false"},
  };
  for (const Case &c : cases) {
    nlohmann::json spoiled = good;
    c.spoil(spoiled);
    CAPTURE(spoiled.dump());
    std::string message = thrown([&] { detail::tensor_maps_from_json(spoiled, "tma_copy<64> (kdsl_x)"); });
    CHECK(message.starts_with("kernel cache entry 'tma_copy<64> (kdsl_x)' has a malformed tensor map: "));
    CHECK(message.find(c.field) != std::string::npos);
    CHECK(message.ends_with("; remove it from the cache directory"));
  }
  CHECK(thrown([&] {
          nlohmann::json j = good;
          j[0]["box"] = {64, 4};
          detail::tensor_maps_from_json(j, "e");
        }) ==
        "kernel cache entry 'e' has a malformed tensor map: tensor_maps[0].box must be [rows, cols], each in [1, 256], cols * 2 bytes (f16) a "
        "multiple of 16, found [64,4]; remove it from the cache directory");

  // CudaDevice::load reads them before loading anything: the entry is refused and no module is left loaded.
  detail::CudaDevice dev(0, fake().driver);
  jit_cache::CacheEntry entry = tma_entry({src_map()});
  entry.metadata["tensor_maps"][0]["dtype"] = "i1";
  int loads = fake().loads();
  CHECK(thrown([&] { dev.load(entry); }).starts_with("kernel cache entry 'tma_copy<64> (kdsl_fake_tma)' has a malformed tensor map: "
                                                     "tensor_maps[0].dtype must be"));
  CHECK(fake().loads() == loads);
}

TEST_CASE("fake driver: a kernel's tensor maps are encoded from its arguments and passed after them, 64-byte aligned") {
  Loaded k({src_map(), dst_map()});
  const cuda::CUdeviceptr src = k.device.alloc(100 * 256 * 2), dst = k.device.alloc(32 * 256 * 2);
  const uint64_t encodes = fake().encodes();
  const int launches = fake().launches();
  k.launch({src, dst, 100, 200, 256});
  REQUIRE(fake().launches() == launches + 1);
  REQUIRE(fake().encodes() == encodes + 2);

  // src: 100 x 200 f16 elements, rows 256 elements (512 bytes) apart, innermost dimension first.
  const FakeTensorMapEncode &a = encoded(encodes + 1);
  CHECK(a.data_type == 6);  // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
  CHECK(a.rank == 2);
  CHECK(a.address == src);
  CHECK(a.dims[0] == 200);
  CHECK(a.dims[1] == 100);
  CHECK(a.strides[0] == 512);
  CHECK(a.box[0] == 64);
  CHECK(a.box[1] == 64);
  CHECK(a.element_strides[0] == 1);
  CHECK(a.element_strides[1] == 1);
  CHECK(a.interleave == 0);    // CU_TENSOR_MAP_INTERLEAVE_NONE
  CHECK(a.swizzle == 3);       // CU_TENSOR_MAP_SWIZZLE_128B
  CHECK(a.l2_promotion == 2);  // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
  CHECK(a.oob_fill == 0);      // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros outside the tensor
  // dst: the trace's constants 32 x 64, the stride still the argument's.
  const FakeTensorMapEncode &b = encoded(encodes + 2);
  CHECK(b.address == dst);
  CHECK(b.dims[0] == 64);
  CHECK(b.dims[1] == 32);
  CHECK(b.strides[0] == 512);
  CHECK(b.box[0] == 32);
  CHECK(b.box[1] == 16);
  CHECK(b.swizzle == 2);  // CU_TENSOR_MAP_SWIZZLE_64B

  // The arguments' slots first, as for any kernel, then the two maps' bytes as the driver wrote them.
  for (int i = 0; i < 5; ++i) CHECK(fake().param_pointer(i) == &k.slots[size_t(i)]);
  uint32_t rows = 0;
  std::memcpy(&rows, fake().param_bytes(2), 4);
  CHECK(rows == 100);
  for (int i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(reinterpret_cast<uintptr_t>(fake().param_pointer(5 + i)) % 64 == 0);
    Blob m = blob(fake().param_bytes(5 + i));
    CHECK(std::string(m.magic) == "FAKETMAP");
    CHECK(m.serial == encodes + 1 + uint64_t(i));
    CHECK(m.address == (i == 0 ? src : dst));
    CHECK(fake().param_bytes(5 + i)[127] == 0xA5);
  }

  // A kernel without maps encodes nothing and passes its slots alone.
  Loaded plain({});
  plain.launch({src, dst, 100, 200, 256});
  CHECK(fake().encodes() == encodes + 2);
  CHECK(fake().launches() == launches + 2);
  for (int i = 0; i < 5; ++i) CHECK(fake().param_pointer(i) == &plain.slots[size_t(i)]);
  k.device.free(src);
  k.device.free(dst);
}

// A 3-D map (TensorDescriptor3D): planes and their stride after cols and rows, a box one plane
// deep; its JSON carries them, a 2-D map's does not.
TEST_CASE("fake driver: a rank-3 tensor map is encoded with its planes outermost and a box one plane deep, and round-trips through JSON") {
  TensorMapSpec planar = src_map();
  planar.rank = 3;
  planar.planes = constant(3);
  planar.plane_stride = constant(100 * 256 + 64);
  const nlohmann::json j = detail::tensor_maps_to_json({planar, src_map()});
  CHECK(j[0]["planes"].dump() == R"({"value":3})");
  CHECK(j[0]["plane_stride"].dump() == R"({"value":25664})");
  CHECK_FALSE(j[1].contains("planes"));
  CHECK(detail::tensor_maps_from_json(nlohmann::json::parse(j.dump()), "e") == std::vector{planar, src_map()});

  Loaded k({planar});
  const cuda::CUdeviceptr src = k.device.alloc(3 * (100 * 256 + 64) * 2), dst = k.device.alloc(16);
  const uint64_t encodes = fake().encodes();
  k.launch({src, dst, 100, 200, 256});
  REQUIRE(fake().encodes() == encodes + 1);
  const FakeTensorMapEncode &a = encoded(encodes + 1);
  CHECK(a.rank == 3);
  CHECK(a.dims[0] == 200);
  CHECK(a.dims[1] == 100);
  CHECK(a.dims[2] == 3);
  CHECK(a.strides[0] == 512);
  CHECK(a.strides[1] == (100 * 256 + 64) * 2);
  CHECK(a.box[0] == 64);
  CHECK(a.box[1] == 64);
  CHECK(a.box[2] == 1);
  // A plane stride that is no multiple of 16 bytes is refused by name.
  planar.plane_stride = constant(100 * 256 + 3);
  Loaded odd({planar});
  CHECK(thrown([&] { odd.launch({src, dst, 100, 200, 256}); }).find("its plane stride a positive multiple of 16 bytes") != std::string::npos);
  k.device.free(src);
  k.device.free(dst);
}

TEST_CASE("fake driver: more tensor maps than a launch keeps on its stack all reach the kernel") {
  std::vector<TensorMapSpec> maps;
  for (int i = 0; i < 6; ++i) {
    TensorMapSpec s = src_map();
    s.rows = constant(10 + i);
    maps.push_back(s);
  }
  Loaded k(maps);
  const cuda::CUdeviceptr src = k.device.alloc(16 * 256 * 2);
  const uint64_t encodes = fake().encodes();
  k.launch({src, src, 1, 200, 256});
  REQUIRE(fake().encodes() == encodes + 6);
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(encoded(encodes + 1 + uint64_t(i)).dims[1] == uint64_t(10 + i));
    CHECK(reinterpret_cast<uintptr_t>(fake().param_pointer(5 + i)) % 64 == 0);
    CHECK(blob(fake().param_bytes(5 + i)).serial == encodes + 1 + uint64_t(i));
  }
  k.device.free(src);
}

TEST_CASE("fake driver: identical launches reuse their encoded tensor maps; a changed value encodes that map afresh") {
  Loaded k({src_map(), dst_map()});
  const cuda::CUdeviceptr src = k.device.alloc(100 * 256 * 2), dst = k.device.alloc(32 * 256 * 2);
  const uint64_t first = fake().encodes() + 1;
  for (int i = 0; i < 3; ++i) k.launch({src, dst, 100, 200, 256});
  CHECK(fake().encodes() == first + 1);
  CHECK(blob(fake().param_bytes(5)).serial == first);  // the same bytes, passed again
  CHECK(blob(fake().param_bytes(6)).serial == first + 1);

  // Fewer rows: src's map again, dst's (which does not read rows) kept.
  k.launch({src, dst, 50, 200, 256});
  CHECK(fake().encodes() == first + 2);
  CHECK(encoded(first + 2).dims[1] == 50);
  CHECK(blob(fake().param_bytes(5)).serial == first + 2);
  CHECK(blob(fake().param_bytes(6)).serial == first + 1);
  // Back to 100 rows: only the last encoding is kept, so src's is made again.
  k.launch({src, dst, 100, 200, 256});
  CHECK(fake().encodes() == first + 3);
  // Another dst address, another stride: each map that reads them.
  k.launch({src, dst + 512, 100, 200, 256});
  CHECK(fake().encodes() == first + 4);
  CHECK(encoded(first + 4).address == dst + 512);
  k.launch({src, dst + 512, 100, 200, 512});
  CHECK(fake().encodes() == first + 6);
  CHECK(encoded(first + 6).strides[0] == 1024);

  // Another loaded copy of the kernel keeps its own.
  Loaded other({src_map(), dst_map()});
  other.launch({src, dst + 512, 100, 200, 512});
  CHECK(fake().encodes() == first + 8);
  k.device.free(src);
  k.device.free(dst);
}

TEST_CASE("fake driver: a tensor map's misaligned base, row stride or extents are refused, naming the kernel and the argument") {
  Loaded k({src_map(), dst_map()});
  const cuda::CUdeviceptr src = k.device.alloc(100 * 256 * 2), dst = k.device.alloc(32 * 256 * 2);
  const uint64_t encodes = fake().encodes();
  const int launches = fake().launches();
  const std::string map_of_src = "kernel 'tma_copy<64>': argument 0 (Ptr<const f16>) is read with TMA (a tensor map), which needs ";

  CHECK(thrown([&] { k.launch({src + 2, dst, 100, 200, 256}); }) ==
        map_of_src + fmt::format("its address 16-byte aligned; found {:#x}, 2 bytes past a 16-byte boundary (pass a pointer a multiple of 8 f16 "
                                 "elements into an aligned allocation)",
                                 src + 2));
  CHECK(thrown([&] { k.launch({src, dst, 100, 200, 100}); }) ==
        map_of_src + "its row stride a positive multiple of 16 bytes below 2^40 bytes; found 100 f16 elements = 200 bytes (argument 4 (Scalar<i32>))");
  // An i32 slot holds its value sign-extended: -256, not 2^64 - 256.
  CHECK(thrown([&] { k.launch({src, dst, 100, 200, uint64_t(int64_t(-256))}); }) ==
        map_of_src + "its row stride a positive multiple of 16 bytes below 2^40 bytes; found -256 f16 elements (argument 4 (Scalar<i32>))");
  CHECK(thrown([&] { k.launch({src, dst, uint64_t(int64_t(-3)), 200, 256}); }) == map_of_src + "rows in [0, 2^32]; found -3 (argument 2 (Scalar<i32>))");
  CHECK(thrown([&] { k.launch({src, dst, 100, uint64_t(int64_t(-1)), 256}); }) == map_of_src + "cols in [0, 2^32]; found -1 (argument 3 (Scalar<i32>))");
  // dst's map: its constants are checked as arguments are, and named as constants.
  TensorMapSpec wide = dst_map();
  wide.cols = constant((int64_t(1) << 32) + 1);
  wide.row_stride = constant(int64_t(1) << 40);
  Loaded w({wide});
  CHECK(thrown([&] { w.launch({src, dst, 100, 200, 256}); }) ==
        "kernel 'tma_copy<64>': argument 1 (Ptr<f16>) is read with TMA (a tensor map), which needs cols in [0, 2^32]; found 4294967297 (the "
        "constant 4294967297)");
  wide.cols = constant(int64_t(1) << 32);  // the largest extent TMA takes
  Loaded w2({wide});
  CHECK(thrown([&] { w2.launch({src, dst, 100, 200, 256}); }) ==
        "kernel 'tma_copy<64>': argument 1 (Ptr<f16>) is read with TMA (a tensor map), which needs its row stride a positive multiple of 16 bytes "
        "below 2^40 bytes; found 1099511627776 f16 elements (the constant 1099511627776)");
  CHECK(fake().launches() == launches);  // nothing refused reached the driver
  CHECK(fake().encodes() == encodes);

  // A refused launch leaves nothing behind: the next good one encodes and launches.
  k.launch({src, dst, 100, 200, 256});
  CHECK(fake().encodes() == encodes + 2);
  CHECK(fake().launches() == launches + 1);
  k.device.free(src);
  k.device.free(dst);
}

// A tensor with no rows or no columns: TMA's extents start at 1, so its map is encoded over a
// 1 x 1 stand-in the device keeps (codegen/tensor_map_limits.h): zeros for a map that is read,
// bytes of their own for one that is written, never the argument's memory.
TEST_CASE("fake driver: an empty tensor's map is encoded over a 1 x 1 stand-in, zeros for a map that is read and its own for one written") {
  TensorMapSpec written = src_map();
  written.base = 1;
  written.written = true;
  Loaded k({src_map(), written});
  const cuda::CUdeviceptr src = k.device.alloc(100 * 256 * 2), dst = k.device.alloc(100 * 256 * 2);
  const uint64_t encodes = fake().encodes();
  k.launch({src, dst, 0, 200, 256});  // no rows
  REQUIRE(fake().encodes() == encodes + 2);
  const FakeTensorMapEncode &read = encoded(encodes + 1), &into = encoded(encodes + 2);
  for (const FakeTensorMapEncode *e : {&read, &into}) {
    CHECK(e->dims[0] == 1);
    CHECK(e->dims[1] == 1);
    CHECK(e->strides[0] == 16);
    CHECK(e->address % 16 == 0);
    CHECK(e->box[0] == 64);  // the box as compiled: TMA fills what the stand-in lacks with zeros
  }
  CHECK(read.address != src);
  CHECK(into.address != dst);
  CHECK(read.address != into.address);
  unsigned char bytes[16];
  k.device.copy_to_host(bytes, cuda::CUdeviceptr(read.address), sizeof bytes);
  CHECK(std::all_of(std::begin(bytes), std::end(bytes), [](unsigned char b) { return b == 0; }));
  // No columns either way; the same stand-ins (allocated once).
  k.launch({src, dst, 100, 0, 256});
  REQUIRE(fake().encodes() == encodes + 4);
  CHECK(encoded(encodes + 3).address == read.address);
  CHECK(encoded(encodes + 4).address == into.address);
  k.device.free(src);
  k.device.free(dst);
}

TEST_CASE("fake driver: tensor maps need a CUDA 12 driver; a refused encode names the driver's error") {
  cuda::Driver old_driver = fake().driver;
  old_driver.cuTensorMapEncodeTiled = nullptr;  // as load_driver leaves it where a driver lacks the symbol
  Loaded old({src_map()}, old_driver);
  const cuda::CUdeviceptr src = old.device.alloc(100 * 256 * 2);
  const int launches = fake().launches();
  CHECK(thrown([&] { old.launch({src, src, 100, 200, 256}); }) ==
        "kernel 'tma_copy<64>': argument 0 (Ptr<const f16>) is read with TMA (a tensor map), which needs a CUDA 12 driver; found " +
            fake().driver.library + ", which lacks cuTensorMapEncodeTiled (update the NVIDIA driver)");
  // A kernel without maps still runs on that driver.
  Loaded plain({}, old_driver);
  plain.launch({src, src, 100, 200, 256});
  CHECK(fake().launches() == launches + 1);

  Loaded k({src_map()});
  k.launch({src, src, 50, 200, 256});
  const uint64_t encoded = fake().encodes();
  fake().fail_next_encode(1);
  CHECK(thrown([&] { k.launch({src, src, 100, 200, 256}); }) ==
        "kernel 'tma_copy<64>': encoding the tensor map of argument 0 (Ptr<const f16>) (100 x 200 f16 elements, rows 512 bytes apart, box 64 x 64, "
        "swizzle 128 bytes) failed: CUDA driver call cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE (1) [driver " +
            fake().driver.library + "]");
  CHECK(fake().launches() == launches + 2);
  // The failed encode left the last map as it was: 50 rows launch again without encoding.
  k.launch({src, src, 50, 200, 256});
  CHECK(fake().encodes() == encoded);
  CHECK(blob(fake().param_bytes(5)).serial == encoded);
  CHECK(fake().launches() == launches + 3);
  old.device.free(src);
}

TEST_CASE("fake driver: a cache entry whose tensor maps do not fit the kernel's arguments is refused") {
  TensorMapSpec past = src_map();
  past.row_stride = param(9);
  Loaded k({past});
  const cuda::CUdeviceptr src = k.device.alloc(100 * 256 * 2);
  CHECK(thrown([&] { k.launch({src, src, 100, 200, 256}); }) ==
        "kernel 'tma_copy<64>': its cache entry's tensor map reads argument 9, but the kernel takes 5 arguments; the entry does not belong to this "
        "kernel: remove it from the cache directory");
  TensorMapSpec scalar_base = src_map();
  scalar_base.base = 2;
  Loaded s({scalar_base});
  CHECK(thrown([&] { s.launch({src, src, 100, 200, 256}); })
            .starts_with("kernel 'tma_copy<64>': its cache entry's tensor map 0 names argument 2 (Scalar<i32>) as its base and argument 2 "
                         "(Scalar<i32>), argument 3 (Scalar<i32>), argument 4 (Scalar<i32>) as its extents"));
  TensorMapSpec pointer_extent = src_map();
  pointer_extent.cols = param(1);
  Loaded p({pointer_extent});
  CHECK(thrown([&] { p.launch({src, src, 100, 200, 256}); }).find("which this kernel's arguments are not") != std::string::npos);
  k.device.free(src);
}

// From the trace to the launch: kdsl::compile on a 9.0 GPU (sm_90a) of the descriptor matmul
// makes a kernel with three tensor maps; the launch encodes them from the arguments it was
// given (A: M x K, B: K x N, C: M x N, the strides K, N and N) and passes them after the 6
// arguments. C's is the store's: a box of the tile's rows, one 128-byte swizzle slab wide.
TEST_CASE("fake driver: the descriptor matmul compiled for sm_90a launches with its three tensor maps encoded from M, N and K") {
  if (codegen::nvptx::find_libdevice().empty()) return;  // no CUDA toolkit: nothing compiles for sm_90a
  test::ScratchCache cache("tensor_map_end_to_end");
  Device gpu(std::make_shared<detail::CudaDevice>(0, fake().driver));
  const int M = 200, N = 144, K = 96;
  Buffer<half> a(gpu, size_t(M) * K), b(gpu, size_t(K) * N), c(gpu, size_t(M) * N);
  const size_t sizes[] = {8, 8, 8, 4, 4, 4, 128, 128, 128};
  fake().set_params(9, sizes);
  const uint64_t encodes = fake().encodes();
  compile<examples::matmul_descriptor<f16, f16, 128, 128, 64>>(gpu, {.num_warps = 8, .num_stages = 3})(grid(cdiv(M, 128), cdiv(N, 128)), a, b, c, M, N, K);
  fake().set_params(0, nullptr);
  REQUIRE(fake().encodes() == encodes + 3);
  const FakeTensorMapEncode &ma = encoded(encodes + 1), &mb = encoded(encodes + 2), &mc = encoded(encodes + 3);
  CHECK(ma.address == reinterpret_cast<uintptr_t>(a.data()));
  CHECK(ma.dims[0] == uint64_t(K));
  CHECK(ma.dims[1] == uint64_t(M));
  CHECK(ma.strides[0] == uint64_t(K) * 2);
  CHECK(ma.box[0] == 64);
  CHECK(ma.box[1] == 128);
  CHECK(mb.address == reinterpret_cast<uintptr_t>(b.data()));
  CHECK(mb.dims[0] == uint64_t(N));
  CHECK(mb.dims[1] == uint64_t(K));
  CHECK(mb.strides[0] == uint64_t(N) * 2);
  CHECK(mb.box[0] == 64);
  CHECK(mb.box[1] == 64);
  CHECK(mc.address == reinterpret_cast<uintptr_t>(c.data()));
  CHECK(mc.dims[0] == uint64_t(N));
  CHECK(mc.dims[1] == uint64_t(M));
  CHECK(mc.strides[0] == uint64_t(N) * 2);
  CHECK(mc.box[0] == 64);
  CHECK(mc.box[1] == 128);
  CHECK(mc.swizzle == ma.swizzle);  // 128 bytes, as A's
  for (int i = 0; i < 3; ++i) CHECK(blob(fake().param_bytes(6 + i)).serial == encodes + 1 + uint64_t(i));
}
