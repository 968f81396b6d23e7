// kdsl_compile.cpp - kdsl-compile: compiles named kernels for a target without a device and writes every stage
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include <kdsl/error.h>

#include "codegen/codegen.h"
#include "codegen/target_info.h"
#include "ir/printer.h"
#include "src/tools/example_kernels.h"
#include "src/tools/tool_main.h"

using namespace kdsl;

int main(int argc, char **argv) {
  CLI::App app{"kdsl-compile: compile kernels for a target (sm_80, sm_90, host) without a device, writing every stage to a folder"};
  std::string target = "sm_80", out_dir = "kdsl-compile-out", spec = "aligned";
  std::vector<std::string> names;
  int num_warps = 0;
  bool list = false;
  app.add_option("--target", target, "sm_80, sm_90 or host")->capture_default_str();
  app.add_option("--kernel", names, "kernel names (default: all; see --list)");
  app.add_option("--spec", spec, "argument specialization: aligned, none, or one of 16/1/_ per argument (\"16,16,_\")")->capture_default_str();
  app.add_option("--num-warps", num_warps, "warps per program (default: the kernel's default configuration)");
  app.add_option("--out", out_dir, "folder for the stages: .traced.kir .kir .ll .opt.ll .ptx .cubin .resources.txt (host: .s)")->capture_default_str();
  app.add_flag("--list", list, "list the kernels and targets");
  if (int status = tools::parse_command_line(app, "kdsl-compile", argc, argv); status >= 0) return status;

  std::vector<tools::NamedKernel> kernels = tools::example_kernels();
  if (list) {
    for (const auto &k : kernels) fmt::print("{:18} {}\n", k.name, k.signature.name);
    fmt::print("targets: host {}\n", fmt::join(codegen::target_names(), " "));
    return 0;
  }
  return tools::run_tool("kdsl-compile", "", [&] {
    if (target != "host") codegen::target_info(target);  // a clear error for unknown names
    int failures = 0;
    bool matched_any = names.empty();
    for (const auto &k : kernels) {
      if (!names.empty() && std::find(names.begin(), names.end(), k.name) == names.end()) continue;
      matched_any = true;
      codegen::DumpOptions dump;
      dump.dir = (std::filesystem::path(out_dir) / target).string();
      dump.ir = dump.llvm = dump.asm_text = true;
      ir::Function fn = tools::trace_kernel(k.signature, tools::parse_specialization(spec, k.signature));
      std::string symbol = "kdsl_" + k.name;
      try {
        if (target == "host") {
          codegen::CompiledObject obj = codegen::compile_for_host(fn, symbol, dump);
          std::ofstream(std::filesystem::path(dump.dir) / (symbol + ".o"), std::ios::binary).write(reinterpret_cast<const char *>(obj.object.data()),
                                                                                                     std::streamsize(obj.object.size()));
          fmt::print("{:18} host   object {} bytes  ({:.1f} ms)\n", k.name, obj.object.size(), obj.passes_ms + obj.lower_ms + obj.llvm_ms);
          continue;
        }
        codegen::CudaCompileOptions options;
        options.arch = target;
        options.num_warps = num_warps ? num_warps : k.num_warps;
        codegen::CompiledObject obj = codegen::compile_for_cuda(fn, symbol, options, dump);
        const codegen::ResourceReport &r = obj.resources;
        if (r.assembled)
          fmt::print("{:18} {}  {} threads  {:3} registers  spills {}/{} bytes  smem {} + {} dynamic  cubin {} bytes  ({:.1f} ms)\n", k.name, target,
                     r.threads, r.registers, r.spill_store_bytes, r.spill_load_bytes, r.static_shared_bytes, r.dynamic_shared_bytes, obj.object.size(),
                     obj.passes_ms + obj.lower_ms + obj.llvm_ms);
        else
          fmt::print("{:18} {}  {} threads  PTX {} bytes (no ptxas: left to the driver's JIT)  smem {} dynamic\n", k.name, target, r.threads,
                     obj.ptx.size(), r.dynamic_shared_bytes);
      } catch (const Error &e) {
        ++failures;
        fmt::print(stderr, "{}: {}\n", k.name, e.what());
      }
    }
    if (!matched_any) throw Error(fmt::format("no kernel named {} (see --list)", fmt::join(names, ", ")));
    fmt::print("stages written to {}\n", (std::filesystem::path(out_dir) / target).string());
    return failures ? 1 : 0;
  });
}
