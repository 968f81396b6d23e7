// importance_matrix.h - llama.cpp's importance matrix: per weight column, the mean square of the activations it meets over a calibration text, in llama-imatrix's files
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kdsl::models {

// One weight matrix's statistics: per input column the sum of the squared activations it
// multiplied, and how many activation rows went into the sums.
struct ImportanceEntry {
  std::vector<double> sum_squares;  // one per column
  int64_t rows = 0;
  // What the quantizers weigh each column by: sum / rows (all 1 while there are no rows, as
  // llama-quantize reads an entry without data).
  std::vector<float> mean_squares() const;
};

// The statistics of every weight a text's forward passes multiply, keyed by the weight's GGUF
// name ("blk.0.attn_q.weight"; collect_importance.h fills them). Files are llama.cpp's:
// save writes the GGUF form llama-imatrix writes (general.type "imatrix", tensors
// "<weight>.in_sum2" and "<weight>.counts", imatrix.datasets / chunk_count / chunk_size), which
// llama-quantize --imatrix reads; load reads that and the older .dat form.
class ImportanceMatrix {
 public:
  std::map<std::string, ImportanceEntry> entries;
  std::vector<std::string> datasets;  // the calibration texts' names
  int chunk_count = 0, chunk_size = 0;

  // Adds rows.size() / cols activation rows of `cols` floats to the entry of weight `tensor`.
  void add(const std::string &tensor, std::span<const float> rows, int cols);
  // The entry of weight `tensor`, or null.
  const ImportanceEntry *find(std::string_view tensor) const;
  // What a quantizer weighs the `cols` columns of matrix `tensor` by (quantize_row): its
  // entry's mean squares, or empty where it has no entry. An entry of another column count is
  // an importance matrix of another model: kdsl::Error "<source>: entry '<tensor>' has N
  // columns, but <matrix> has rows of <cols>".
  std::vector<float> column_weights(const std::string &tensor, int64_t cols, std::string_view source, std::string_view matrix) const;

  // Writes `path` atomically (a temporary file renamed into place).
  void save(const std::string &path) const;
  // Reads a GGUF or .dat importance matrix; a malformed file throws kdsl::Error naming the
  // file, the entry and what was expected and found.
  static ImportanceMatrix load(const std::string &path);
};

}  // namespace kdsl::models
