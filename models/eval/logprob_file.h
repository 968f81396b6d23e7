// logprob_file.h - a base model's next-token log-probabilities over a scored text, saved for KL-divergence runs of its quantized copies
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/common/atomic_file.h"
#include "models/common/mapped_file.h"

namespace kdsl::models {

// Layout (little-endian): "KDSLLOGP", u32 version (1), u32 vocab, u32 context, u32 chunks,
// u32 rows (scored rows per chunk), i32 tokens[chunks * context] (the text as scored, so a
// comparison run checks it tokenized the same), then f32 log_probs[chunks][rows][vocab].
// Full f32 rows: a mean KLD of 5e-4 nats (Q8_0's target) is finer than 16-bit log-probs keep.
struct LogProbHeader {
  uint32_t vocab = 0, context = 0, chunks = 0, rows = 0;
};

// Streams a file chunk by chunk; it appears at `path` only once finish() succeeds.
class LogProbWriter {
 public:
  LogProbWriter(const std::string &path, LogProbHeader header, std::span<const int> tokens);
  void add_chunk(std::span<const float> log_probs);  // rows * vocab values
  void finish();

 private:
  AtomicFile file_;
  LogProbHeader header_;
  uint32_t written_ = 0;
};

// A saved file, mapped and checked: sizes agree with the header and the file's length.
class LogProbFile {
 public:
  explicit LogProbFile(const std::string &path);
  const LogProbHeader &header() const { return header_; }
  std::span<const int32_t> tokens() const { return tokens_; }
  // Row `row` of chunk `chunk`: vocab log-probabilities.
  std::span<const float> row(uint32_t chunk, uint32_t row) const;
  const std::string &path() const { return file_.path(); }

 private:
  MappedFile file_;
  LogProbHeader header_;
  std::vector<int32_t> tokens_;
  const std::byte *log_probs_ = nullptr;
};

}  // namespace kdsl::models
