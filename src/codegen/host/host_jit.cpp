// host_jit.cpp - one ORC LLJIT per process: links kernel objects and resolves their entry points
#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <kdsl/error.h>
#include <kdsl/half.h>

#include "codegen/codegen.h"
#include "codegen/host/device_debug.h"
#include "codegen/host/target_machine.h"

// Compiler-runtime conversions LLVM may call for f16 on CPUs without F16C; libgcc does not
// always provide them, so the JIT resolves them here.
extern "C" {
static float kdsl_extendhfsf2(uint16_t h) { return kdsl::f16_bits_to_f32(h); }
static uint16_t kdsl_truncsfhf2(float f) { return kdsl::f32_to_f16_bits(f); }
}

namespace kdsl::codegen {
namespace {

std::string describe(llvm::Error e) { return llvm::toString(std::move(e)); }

class HostJit {
 public:
  HostJit() {
    make_host_target_machine();  // initializes the native target
    auto jit = llvm::orc::LLJITBuilder().create();
    if (!jit) throw Error("cannot start the LLVM JIT: " + describe(jit.takeError()));
    jit_ = std::move(*jit);
    auto &main = jit_->getMainJITDylib();
    auto generator = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix());
    if (!generator) throw Error("cannot expose process symbols to the JIT: " + describe(generator.takeError()));
    main.addGenerator(std::move(*generator));
    llvm::orc::SymbolMap runtime;
    auto add = [&](const char *name, void *address) {
      runtime[jit_->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address), llvm::JITSymbolFlags::Exported};
    };
    add("__extendhfsf2", reinterpret_cast<void *>(&kdsl_extendhfsf2));
    add("__truncsfhf2", reinterpret_cast<void *>(&kdsl_truncsfhf2));
    add(kDevicePrintSymbol, reinterpret_cast<void *>(&device_print_line));
    add(kDeviceAssertSymbol, reinterpret_cast<void *>(&device_assert_failed));
    if (auto err = main.define(llvm::orc::absoluteSymbols(std::move(runtime)))) throw Error("cannot define JIT runtime symbols: " + describe(std::move(err)));
  }

  HostEntry load(const std::vector<uint8_t> &object, const std::string &symbol) {
    std::lock_guard lock(mutex_);
    // The same kernel may arrive twice (two threads compiled it at once): reuse the first.
    if (auto found = jit_->lookup(symbol)) return found->toPtr<HostEntry>();
    else llvm::consumeError(found.takeError());
    const llvm::StringRef bytes(reinterpret_cast<const char *>(object.data()), object.size());
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(bytes, symbol);
    if (auto err = jit_->addObjectFile(std::move(buffer))) throw Error(fmt::format("cannot link kernel object '{}': {}", symbol, describe(std::move(err))));
    auto address = jit_->lookup(symbol);
    if (!address) throw Error(fmt::format("kernel object does not define '{}': {}", symbol, describe(address.takeError())));
    if (std::getenv("KDSL_PERF_MAP")) write_perf_map(llvm::MemoryBufferRef(bytes, symbol));
    return address->toPtr<HostEntry>();
  }

 private:
  // KDSL_PERF_MAP: each function of a linked kernel object goes into /tmp/perf-<pid>.map as
  // "address size name", where `perf report` finds JIT code's names (otherwise it shows bare
  // addresses in anonymous memory). Called with mutex_ held.
  void write_perf_map(llvm::MemoryBufferRef object) {
    auto file = llvm::object::ObjectFile::createObjectFile(object);
    if (!file) return llvm::consumeError(file.takeError());
    std::FILE *map = std::fopen(fmt::format("/tmp/perf-{}.map", getpid()).c_str(), "a");
    if (!map) return;
    for (const llvm::object::SymbolRef &sym : (*file)->symbols()) {
      auto type = sym.getType();
      auto name = sym.getName();
      if (!type || !name || *type != llvm::object::SymbolRef::ST_Function) {
        if (!type) llvm::consumeError(type.takeError());
        if (!name) llvm::consumeError(name.takeError());
        continue;
      }
      auto found = jit_->lookup(*name);
      if (!found) {
        llvm::consumeError(found.takeError());
        continue;
      }
      const uint64_t size = llvm::object::ELFSymbolRef(sym).getSize();
      std::fprintf(map, "%llx %llx %s\n", (unsigned long long)found->getValue(), (unsigned long long)size, name->str().c_str());
    }
    std::fclose(map);
  }

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::mutex mutex_;
};

HostJit &host_jit() {
  static HostJit jit;
  return jit;
}

}  // namespace

void start_host_jit() { host_jit(); }

HostEntry load_host_object(const std::vector<uint8_t> &object, const std::string &symbol) { return host_jit().load(object, symbol); }

}  // namespace kdsl::codegen
