// logprob_file.cpp - writing and reading saved base-model log-probabilities
#include "models/eval/logprob_file.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <cstring>

namespace kdsl::models {
namespace {

constexpr char kMagic[8] = {'K', 'D', 'S', 'L', 'L', 'O', 'G', 'P'};
constexpr uint32_t kVersion = 1;

}  // namespace

LogProbWriter::LogProbWriter(const std::string &path, LogProbHeader header, std::span<const int> tokens) : file_(path), header_(header) {
  if (tokens.size() != size_t(header.chunks) * header.context)
    throw Error(fmt::format("{}: {} tokens for {} chunks of {}", path, tokens.size(), header.chunks, header.context));
  file_.write(kMagic, sizeof kMagic);
  for (uint32_t v : {kVersion, header.vocab, header.context, header.chunks, header.rows}) file_.write(&v, sizeof v);
  std::vector<int32_t> ids(tokens.begin(), tokens.end());
  file_.write(ids.data(), ids.size() * sizeof(int32_t));
}

void LogProbWriter::add_chunk(std::span<const float> log_probs) {
  if (log_probs.size() != size_t(header_.rows) * header_.vocab || written_ == header_.chunks)
    throw Error(fmt::format("{}: chunk {} of {} with {} values, expected {}", file_.path(), written_, header_.chunks, log_probs.size(),
                            size_t(header_.rows) * header_.vocab));
  file_.write(log_probs.data(), log_probs.size_bytes());
  ++written_;
}

void LogProbWriter::finish() {
  if (written_ != header_.chunks) throw Error(fmt::format("{}: {} of {} chunks written", file_.path(), written_, header_.chunks));
  file_.commit();
}

LogProbFile::LogProbFile(const std::string &path) : file_(path) {
  ByteReader r(file_.bytes(), path);
  std::string_view magic = r.read_bytes(sizeof kMagic, "magic");
  if (magic != std::string_view(kMagic, sizeof kMagic))
    throw Error(fmt::format("{}: not a kdsl log-probability file (expected magic KDSLLOGP, written by kdsl-perplexity --kl-divergence-base)", path));
  uint32_t version = r.read<uint32_t>("version");
  if (version != kVersion) throw Error(fmt::format("{}: version {}, expected {}", path, version, kVersion));
  header_.vocab = r.read<uint32_t>("vocab");
  header_.context = r.read<uint32_t>("context");
  header_.chunks = r.read<uint32_t>("chunks");
  header_.rows = r.read<uint32_t>("rows");
  if (header_.vocab == 0 || header_.context < 2 || header_.rows == 0 || header_.rows >= header_.context)
    throw Error(fmt::format("{}: header: vocab {}, context {}, rows {}: expected vocab > 0 and 0 < rows < context", path, header_.vocab,
                            header_.context, header_.rows));
  // 64-bit products of 32-bit fields cannot overflow; the reader checks them against the file.
  uint64_t n_tokens = uint64_t(header_.chunks) * header_.context;
  uint64_t n_values = uint64_t(header_.chunks) * header_.rows * header_.vocab;
  std::string_view ids = r.read_bytes(n_tokens * sizeof(int32_t), "tokens");
  tokens_.resize(n_tokens);
  std::memcpy(tokens_.data(), ids.data(), ids.size());
  log_probs_ = reinterpret_cast<const std::byte *>(r.read_bytes(n_values * sizeof(float), "log_probs").data());
  if (r.remaining() != 0) throw Error(fmt::format("{}: {} bytes past the log-probabilities", path, r.remaining()));
}

std::span<const float> LogProbFile::row(uint32_t chunk, uint32_t row) const {
  // The file is mapped at a page boundary and every field before the values is 4 bytes wide,
  // so the floats are aligned.
  const float *base = reinterpret_cast<const float *>(log_probs_);
  return {base + (size_t(chunk) * header_.rows + row) * header_.vocab, header_.vocab};
}

}  // namespace kdsl::models
