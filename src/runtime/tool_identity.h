// tool_identity.h - a tool or library file's identity for cache keys (version or hash), computed once per file and process
#pragma once
#include <functional>
#include <string>

namespace kdsl::detail {

// `compute()` for the file at `path` (its version, its hash), remembered by the file's path,
// size and modification time: a file replaced in place is another file, and each file costs
// one subprocess or read per process. `kind` keeps different questions about one file apart.
std::string remembered_for_file(const std::string &kind, const std::string &path, const std::function<std::string()> &compute);

// The first 16 hex digits of the hash of the file's bytes.
std::string file_hash_hex(const std::string &path);

}  // namespace kdsl::detail
