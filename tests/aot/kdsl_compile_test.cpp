// kdsl_compile_test.cpp - kdsl-compile --load: a user's registered kernels listed, compiled for sm_90 without a GPU, accepted by ptxas, cached
#include <doctest/doctest.h>

#include <filesystem>

#include "codegen/nvptx/ptxas.h"
#include "jit_cache/disk_cache.h"
#include "tests/aot/aot_test_util.h"
#include "tests/tools/tool_process.h"

using namespace kdsl;
using kdsl::aot_test::kdsl_compile_path;
using kdsl::aot_test::user_kernels_library;
using kdsl::test::run_tool_process;
using kdsl::test::ToolRun;
namespace fs = std::filesystem;

TEST_CASE("kdsl-compile --load: a library's kernels are listed beside the examples") {
  ToolRun r = run_tool_process(kdsl_compile_path, {"--load", user_kernels_library, "--list"});
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  std::string library = fs::path(user_kernels_library).filename().string();
  CHECK(r.out.find("user_scale_add") != std::string::npos);
  CHECK(r.out.find("user_kernels::scale_add<256>") != std::string::npos);
  CHECK(r.out.find("user_row_sums") != std::string::npos);
  CHECK(r.out.find(library) != std::string::npos);
  CHECK(r.out.find("vector_add") != std::string::npos);  // the examples, registered by kdsl-compile itself
  CHECK(r.out.find("targets: host") != std::string::npos);
}

TEST_CASE("kdsl-compile --load --target sm_90: a user's kernels compile without a GPU, ptxas accepts them, the cache holds them") {
  aot_test::ScratchCache cache("aot_kdsl_compile_cache");
  fs::path out = test::scratch_path("aot_kdsl_compile_out");
  fs::remove_all(out);
  ToolRun r = run_tool_process(kdsl_compile_path, {"--load", user_kernels_library, "--target", "sm_90", "--kernel", "user_scale_add", "--kernel",
                                                   "user_row_sums", "--spec", "aligned", "--out", out.string()},
                               120, {"KDSL_CACHE_DIR=" + cache.dir.string()});
  CAPTURE(r.out);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  for (const char *name : {"user_scale_add", "user_row_sums"}) {
    CAPTURE(name);
    fs::path stem = out / "sm_90" / name;
    for (const char *extension : {".traced.kir", ".kir", ".ll", ".opt.ll", ".ptx", ".resources.txt"})
      CHECK(fs::file_size(stem.string() + extension) > 0);
    CHECK(test::read_whole(stem.string() + ".ptx").find(".target sm_90") != std::string::npos);
    if (codegen::nvptx::find_ptxas().empty()) {
      MESSAGE("skipped the ptxas checks: no ptxas ($CUDA_HOME/bin, /usr/local/cuda/bin, PATH)");
      CHECK(r.out.find("no ptxas") != std::string::npos);
      continue;
    }
    CHECK(fs::file_size(stem.string() + ".cubin") > 0);
    CHECK(test::read_whole(stem.string() + ".resources.txt").find("registers") != std::string::npos);
  }
  if (!codegen::nvptx::find_ptxas().empty()) {
    CHECK(r.out.find("user_row_sums      sm_90  256 threads") != std::string::npos);  // its registered num_warps = 8
    CHECK(r.out.find("user_scale_add     sm_90  128 threads") != std::string::npos);
  }
  // Two entries, under the keys an sm_90 launch computes (cuda, sm_90, the kernels' own names).
  std::vector<std::string> kernels;
  for (const auto &e : fs::recursive_directory_iterator(cache.dir)) {
    if (e.path().extension() != ".kdslbin") continue;
    jit_cache::EntryReport report = jit_cache::inspect_entry(e.path());
    CHECK(report.problem == "");
    REQUIRE(report.key);
    CHECK(report.key->backend == "cuda");
    CHECK(report.key->arch == "sm_90");
    kernels.push_back(report.key->kernel_name);
  }
  std::sort(kernels.begin(), kernels.end());
  CHECK(kernels == std::vector<std::string>{"user_kernels::row_sums", "user_kernels::scale_add<256>"});
}

TEST_CASE("kdsl-compile: a missing library, an unknown kernel or target, a duplicate name are one-line user errors") {
  test::expect_user_error(run_tool_process(kdsl_compile_path, {"--load", "/nonexistent/libmykernels.so", "--list"}), "kdsl-compile",
                          "cannot load kernel library '/nonexistent/libmykernels.so': /nonexistent/libmykernels.so: cannot open shared object file");
  test::expect_user_error(run_tool_process(kdsl_compile_path, {"--load", user_kernels_library, "--kernel", "user_scale_ad"}), "kdsl-compile",
                          "no kernel registered as 'user_scale_ad'; registered: ");
  test::expect_user_error(run_tool_process(kdsl_compile_path, {"--load", "libm.so.6", "--list"}), "kdsl-compile",
                          "kernel library 'libm.so.6' registers no kernels");
  test::expect_user_error(run_tool_process(kdsl_compile_path, {"--target", "sm_70"}), "kdsl-compile", "unknown target 'sm_70'");
  test::expect_user_error(run_tool_process(kdsl_compile_path, {"--load", user_kernels_library, "--load", aot_test::duplicate_kernels_library, "--list"}),
                          "kdsl-compile", "kernel name 'user_scale_add' is registered twice");
}
