// kdsl_compile.cpp - kdsl-compile: compiles registered kernels (the examples, a user's --load libraries') for a target without a device, writes every stage, fills the cache
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include <kdsl/compile_for.h>
#include <kdsl/error.h>
#include <kdsl/registry.h>

#include "src/tools/tool_main.h"

using namespace kdsl;
namespace fs = std::filesystem;

namespace {

void write_file(const fs::path &path, const void *data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char *>(data), std::streamsize(size));
  if (!out) throw Error(fmt::format("cannot write {}", path.string()));
}
void write_file(const fs::path &path, const std::string &text) { write_file(path, text.data(), text.size()); }

// Every stage the target produced: <name>.traced.kir .kir .ll .opt.ll, then .s .o for the host,
// .ptx .cubin .resources.txt for NVIDIA or .amdgcn .hsaco .resources.txt for AMD; the object by
// its format (PTX is the .ptx itself).
void write_stages(const fs::path &dir, const std::string &name, const CompileResult &r) {
  fs::create_directories(dir);
  auto file = [&](const char *extension) { return dir / (name + extension); };
  write_file(file(".traced.kir"), r.traced_ir);
  write_file(file(".kir"), r.optimized_ir);
  write_file(file(".ll"), r.llvm_ir);
  write_file(file(".opt.ll"), r.optimized_llvm_ir);
  if (!r.assembly.empty()) write_file(file(r.format == "hsaco" ? ".amdgcn" : ".s"), r.assembly);
  if (!r.ptx.empty()) write_file(file(".ptx"), r.ptx);
  if (r.format == "object") write_file(file(".o"), r.object.data(), r.object.size());
  if (r.format == "cubin") write_file(file(".cubin"), r.object.data(), r.object.size());
  if (r.format == "hsaco") write_file(file(".hsaco"), r.object.data(), r.object.size());
  if (!r.resources.report.empty()) write_file(file(".resources.txt"), r.resources.report);
}

void print_result(const std::string &name, const CompileResult &r) {
  const KernelResources &res = r.resources;
  if (r.format == "object")
    fmt::print("{:18} host   object {} bytes  ({:.1f} ms)\n", name, r.object.size(), r.compile_ms);
  else if (r.format == "hsaco")
    fmt::print("{:18} {}  {} threads (wave{})  {:3} VGPRs  {:3} SGPRs  spills {}/{}  scratch {} bytes  LDS {} + {} dynamic  kernargs {} bytes  "
               "hsaco {} bytes  ({:.1f} ms)\n",
               name, r.target, res.threads, res.wavefront_size, res.registers, res.scalar_registers, res.vector_spills, res.scalar_spills,
               res.stack_frame_bytes, res.static_shared_bytes, res.dynamic_shared_bytes, res.kernarg_bytes, r.object.size(), r.compile_ms);
  else if (res.assembled)
    fmt::print("{:18} {}  {} threads  {:3} registers  spills {}/{} bytes  smem {} + {} dynamic  cubin {} bytes  ({:.1f} ms)\n", name, r.target,
               res.threads, res.registers, res.spill_store_bytes, res.spill_load_bytes, res.static_shared_bytes, res.dynamic_shared_bytes,
               r.object.size(), r.compile_ms);
  else
    fmt::print("{:18} {}  {} threads  PTX {} bytes (no ptxas: left to the driver's JIT)  smem {} dynamic\n", name, r.target, res.threads,
               r.ptx.size(), res.dynamic_shared_bytes);
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-compile: compile registered kernels (the examples, and those of libraries given with --load) for a target "
               "(host, sm_80, sm_90, gfx90a, gfx942, ...) without a device, writing every stage to a folder and the code to the kernel cache"};
  std::string target = "sm_80", out_dir = "kdsl-compile-out", spec = "aligned";
  std::vector<std::string> names, libraries;
  int num_warps = 0, num_stages = 0;
  bool list = false;
  app.add_option("--target", target, "host, an NVIDIA sm_XX or an AMD gfxNNN (see --list)")->capture_default_str();
  app.add_option("--kernel", names, "registered kernel names (default: all; see --list)");
  app.add_option("--load", libraries, "a shared library whose KDSL_REGISTER_KERNEL lines register kernels (repeatable)");
  app.add_option("--spec", spec, "argument specialization: aligned, none, or one of 16/1/_ per argument (\"16,16,_\")")->capture_default_str();
  app.add_option("--num-warps", num_warps, "warps per program (default: the kernel's registered options)");
  app.add_option("--num-stages", num_stages, "pipeline stages for loads feeding dot (default: the kernel's registered options)");
  app.add_option("--out", out_dir, "folder for the stages: .traced.kir .kir .ll .opt.ll .ptx .cubin .resources.txt (host: .s .o; AMD: .amdgcn .hsaco)")->capture_default_str();
  app.add_flag("--list", list, "list the registered kernels and the targets");
  if (int status = tools::parse_command_line(app, "kdsl-compile", argc, argv); status >= 0) return status;

  return tools::run_tool("kdsl-compile", "", [&] {
    for (const std::string &library : libraries)
      if (load_kernel_library(library).empty())
        throw Error(fmt::format("kernel library '{}' registers no kernels: register them with KDSL_REGISTER_KERNEL (kdsl/registry.h), and "
                                "do not link kdsl into the library with its symbols hidden",
                                library));
    std::vector<RegisteredKernel> kernels = registered_kernels();
    if (list) {
      for (const RegisteredKernel &k : kernels) fmt::print("{:18} {:40} {}\n", k.name, k.signature.name, fs::path(k.library).filename().string());
      fmt::print("targets: {}\n", fmt::join(Target::names(), " "));
      return 0;
    }
    Target to(target);
    Specialization specialization = Specialization::parse(spec);
    for (const std::string &name : names) registered_kernel(name);  // a clear error for an unknown name, before any compile
    fs::path dir = fs::path(out_dir) / target;
    int failures = 0;
    for (const RegisteredKernel &k : kernels) {
      if (!names.empty() && std::find(names.begin(), names.end(), k.name) == names.end()) continue;
      CompileOptions options = k.options;
      if (num_warps) options.num_warps = num_warps;
      if (num_stages) options.num_stages = num_stages;
      try {
        CompileResult r = detail::compile_for(k.signature, to, specialization, options);
        write_stages(dir, k.name, r);
        print_result(k.name, r);
      } catch (const Error &e) {
        ++failures;
        fmt::print(stderr, "{}: {}\n", k.name, e.what());
      }
    }
    fmt::print("stages written to {}\n", dir.string());
    return failures ? 1 : 0;
  });
}
