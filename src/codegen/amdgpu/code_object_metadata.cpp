// code_object_metadata.cpp - the amdhsa metadata note of an AMDGPU ELF, through LLVM's ELF reader and MessagePack document
#include "codegen/amdgpu/code_object_metadata.h"

#include <fmt/format.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/Object/ELF.h>

#include <kdsl/error.h>

namespace kdsl::codegen::amdgpu {
namespace {

int integer(llvm::msgpack::MapDocNode &map, const char *key) {
  auto it = map.find(key);
  if (it == map.end()) return -1;
  llvm::msgpack::DocNode &node = it->second;
  if (node.getKind() == llvm::msgpack::Type::UInt) return int(node.getUInt());
  if (node.getKind() == llvm::msgpack::Type::Int) return int(node.getInt());
  return -1;
}

std::string text(llvm::msgpack::MapDocNode &map, const char *key) {
  auto it = map.find(key);
  return it != map.end() && it->second.getKind() == llvm::msgpack::Type::String ? it->second.getString().str() : "";
}

void read_note(llvm::StringRef blob, CodeObjectMetadata &out) {
  llvm::msgpack::Document doc;
  if (!doc.readFromBlob(blob, false) || doc.getRoot().getKind() != llvm::msgpack::Type::Map)
    throw Error("the AMDGPU metadata note is not a MessagePack map");
  llvm::msgpack::MapDocNode &root = doc.getRoot().getMap();
  out.target = text(root, "amdhsa.target");
  if (auto it = root.find("amdhsa.version"); it != root.end() && it->second.getKind() == llvm::msgpack::Type::Array)
    for (llvm::msgpack::DocNode &v : it->second.getArray()) out.version.push_back(v.getKind() == llvm::msgpack::Type::UInt ? int(v.getUInt()) : -1);
  auto kernels = root.find("amdhsa.kernels");
  if (kernels == root.end() || kernels->second.getKind() != llvm::msgpack::Type::Array) return;
  for (llvm::msgpack::DocNode &node : kernels->second.getArray()) {
    if (node.getKind() != llvm::msgpack::Type::Map) continue;
    llvm::msgpack::MapDocNode &k = node.getMap();
    KernelMetadata m;
    m.name = text(k, ".name");
    m.symbol = text(k, ".symbol");
    m.vgprs = integer(k, ".vgpr_count");
    m.sgprs = integer(k, ".sgpr_count");
    m.agprs = integer(k, ".agpr_count");
    m.vgpr_spills = integer(k, ".vgpr_spill_count");
    m.sgpr_spills = integer(k, ".sgpr_spill_count");
    m.lds_bytes = integer(k, ".group_segment_fixed_size");
    m.scratch_bytes = integer(k, ".private_segment_fixed_size");
    m.kernarg_bytes = integer(k, ".kernarg_segment_size");
    m.wavefront_size = integer(k, ".wavefront_size");
    m.max_workgroup_size = integer(k, ".max_flat_workgroup_size");
    out.kernels.push_back(m);
  }
}

}  // namespace

CodeObjectMetadata read_code_object_metadata(const std::vector<uint8_t> &elf) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(elf.data()), elf.size());
  auto file = llvm::object::ELF64LEFile::create(bytes);
  if (!file) {
    llvm::consumeError(file.takeError());
    throw Error(fmt::format("not an AMDGPU code object: {} bytes that are not a 64-bit little-endian ELF", elf.size()));
  }
  CodeObjectMetadata out;
  out.elf_machine = file->getHeader().e_machine;
  if (out.elf_machine != llvm::ELF::EM_AMDGPU)
    throw Error(fmt::format("not an AMDGPU code object: ELF machine {}, expected {} (EM_AMDGPU)", out.elf_machine, int(llvm::ELF::EM_AMDGPU)));
  auto sections = file->sections();
  if (!sections) {
    llvm::consumeError(sections.takeError());
    throw Error("the AMDGPU code object's section table cannot be read");
  }
  bool found = false;
  for (const auto &section : *sections) {
    if (section.sh_type != llvm::ELF::SHT_NOTE) continue;
    llvm::Error err = llvm::Error::success();
    for (const auto &note : file->notes(section, err))
      if (note.getType() == llvm::ELF::NT_AMDGPU_METADATA && note.getName() == "AMDGPU") {
        llvm::ArrayRef<uint8_t> desc = note.getDesc(section.sh_addralign);
        read_note(llvm::StringRef(reinterpret_cast<const char *>(desc.data()), desc.size()), out);
        found = true;
      }
    if (err) llvm::consumeError(std::move(err));
  }
  if (!found) throw Error("the AMDGPU code object has no amdhsa metadata note (NT_AMDGPU_METADATA)");
  return out;
}

}  // namespace kdsl::codegen::amdgpu
