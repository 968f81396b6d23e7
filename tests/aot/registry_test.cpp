// registry_test.cpp - KDSL_REGISTER_KERNEL in a shared library, load_kernel_library, and the errors: duplicate names, unknown names, missing libraries
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>

#include <kdsl/kdsl.h>

#include "tests/aot/aot_test_util.h"
#include "tests/aot/libraries/user_kernels.h"

using namespace kdsl;
using kdsl::aot_test::duplicate_kernels_library;
using kdsl::aot_test::user_kernels_library;

namespace {

std::optional<RegisteredKernel> find(const std::string &name) {
  for (const RegisteredKernel &k : registered_kernels())
    if (k.name == name) return k;
  return std::nullopt;
}

}  // namespace

TEST_CASE("registry: a library's KDSL_REGISTER_KERNEL lines register its kernels, with their options and the file they came from") {
  std::vector<std::string> names = load_kernel_library(user_kernels_library);
  CHECK(names == std::vector<std::string>{"user_row_sums", "user_scale_add"});
  CHECK(load_kernel_library(user_kernels_library) == names);  // a second load registers nothing new, and is no error
  // A shared library without registrations (found by the loader's search: no such file here) loads, and says so by its empty list.
  CHECK(load_kernel_library("libm.so.6").empty());
  auto scale_add = find("user_scale_add"), row_sums = find("user_row_sums");
  REQUIRE(scale_add);
  REQUIRE(row_sums);
  CHECK(scale_add->signature.name == "user_kernels::scale_add<256>");
  CHECK(scale_add->signature.params.size() == 5);
  CHECK(scale_add->options.num_warps == 4);
  CHECK(row_sums->signature.name == "user_kernels::row_sums");
  CHECK(row_sums->options.num_warps == 8);
  CHECK(std::filesystem::path(scale_add->library).filename() == std::filesystem::path(user_kernels_library).filename());
  CHECK(registered_kernel("user_row_sums").signature.params.size() == 3);
  auto all = registered_kernels();
  CHECK(std::is_sorted(all.begin(), all.end(), [](const auto &a, const auto &b) { return a.name < b.name; }));
}

TEST_CASE("registry: a library registering a name already taken is refused, closed again, and its kernels unregistered") {
  load_kernel_library(user_kernels_library);
  std::string library_name = std::filesystem::path(duplicate_kernels_library).filename().string();
  std::string expected = "kernel library '" + duplicate_kernels_library + "' not loaded: kernel name 'user_scale_add' is registered twice: as " +
                         "user_kernels::scale_add<256> (in " + std::filesystem::absolute(user_kernels_library).string() +
                         ") and as user_kernels::scale_add<128> (in ";
  CHECK_THROWS_WITH_AS(load_kernel_library(duplicate_kernels_library), doctest::Contains(expected.c_str()), Error);
  CHECK_THROWS_WITH_AS(load_kernel_library(duplicate_kernels_library), doctest::Contains(library_name.c_str()), Error);
  // Nothing of the refused library stays registered; the first registration stands.
  CHECK_FALSE(find("duplicate_only"));
  CHECK(registered_kernel("user_scale_add").signature.name == "user_kernels::scale_add<256>");
}

TEST_CASE("registry: a duplicate registered at static-init time is reported by every lookup while both registrations live") {
  {
    detail::KernelRegistrar first({detail::registry_entry<user_kernels::scale_add<32>>("aot_test_twice")});
    CHECK(registered_kernel("aot_test_twice").signature.name == "user_kernels::scale_add<32>");
    {
      detail::KernelRegistrar second({detail::registry_entry<user_kernels::scale_add<16>>("aot_test_twice")});
      CHECK_THROWS_WITH_AS(registered_kernels(),
                           doctest::Contains("kernel name 'aot_test_twice' is registered twice: as user_kernels::scale_add<32> (in "), Error);
      CHECK_THROWS_WITH_AS(compile_for("aot_test_twice", Target::host()), doctest::Contains("and as user_kernels::scale_add<16>"), Error);
    }
    CHECK(registered_kernel("aot_test_twice").signature.name == "user_kernels::scale_add<32>");
  }
  CHECK_THROWS_WITH_AS(registered_kernel("aot_test_twice"), doctest::Contains("no kernel registered as 'aot_test_twice'"), Error);
}

TEST_CASE("registry: an unknown name lists the registered ones; a library that does not exist or does not load names the file and the reason") {
  load_kernel_library(user_kernels_library);
  CHECK_THROWS_WITH_AS(compile_for("user_scale_ad", Target("sm_90")),
                       doctest::Contains("no kernel registered as 'user_scale_ad'; registered: "), Error);
  CHECK_THROWS_WITH_AS(registered_kernel("user_scale_ad"), doctest::Contains("user_row_sums, user_scale_add"), Error);
  CHECK_THROWS_WITH_AS(load_kernel_library("/nonexistent/libmykernels.so"),
                       doctest::Contains("cannot load kernel library '/nonexistent/libmykernels.so': /nonexistent/libmykernels.so: cannot open shared "
                                         "object file: No such file or directory"),
                       Error);
  // A file that is not a shared library: the loader's own reason.
  std::string not_elf = test::scratch_path("aot_not_a_library.so");
  std::ofstream(not_elf) << "not an ELF file\n";
  CHECK_THROWS_WITH_AS(load_kernel_library(not_elf), doctest::Contains(("cannot load kernel library '" + not_elf + "': ").c_str()), Error);
  std::filesystem::remove(not_elf);
}
