// tuning_record.h - autotuning winners on disk: one small JSON file per (kernel, key bucket, device), written atomically, checked on read
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kdsl::jit_cache {

// Records live at <cache>/tuning/<16 hex digits>.json, the digits an XXH3-64 of kernel, key and
// device. A record names everything it was measured for, so a read checks each field against
// what is asked for rather than trusting the file name.
inline constexpr int kTuningFormatVersion = 1;

struct TuningRecord {
  std::string kernel;                   // what was tuned: a kernel or a Library dispatch point
  std::string key;                      // the bucketed shape it was tuned for
  std::string device;                   // Device::name() of the device it was timed on
  std::string kdsl_version;             // the build that timed it (its compiler fingerprint too)
  std::vector<std::string> candidates;  // every configuration's label, as the kernel declared them
  std::string winner;                   // one of candidates
  std::vector<double> microseconds;     // each candidate's best time, as candidates
  std::string date;                     // UTC, when it was timed
};

std::filesystem::path tuning_folder(const std::filesystem::path &cache_dir);
std::filesystem::path tuning_record_path(const std::filesystem::path &cache_dir, const std::string &kernel, const std::string &key,
                                         const std::string &device);

// The record in `file`, or nullopt with `problem` saying why it is not one: missing (problem
// empty), not a small regular file of this user's, not JSON, a field missing or of the wrong
// type, another format version, a winner that is not a candidate.
std::optional<TuningRecord> read_tuning_record(const std::filesystem::path &file, std::string &problem);

// Why `record` cannot stand for the winner of (kernel, key, device, candidates) in this build
// (empty `problem` when it can): another kernel, key or device (a digest collision, a copied
// file), or stale (another kdsl build, or the kernel's candidates changed since), which every
// upgrade of kdsl leaves behind and is no fault of anyone's.
struct TuningRecordMismatch {
  std::string problem;
  bool stale = false;
};
TuningRecordMismatch tuning_record_mismatch(const TuningRecord &record, const std::string &kernel, const std::string &key, const std::string &device,
                                            const std::vector<std::string> &candidates, const std::string &kdsl_version);

// Writes under a temporary name and renames into place (folders made 0700, the file 0600), so a
// reader sees no record or a whole one. False (nothing left behind) when it could not.
bool write_tuning_record(const std::filesystem::path &cache_dir, const TuningRecord &record);

// Every *.json file in the tuning folder (none when there is no folder), sorted by path.
struct TuningFileInfo {
  std::filesystem::path path;
  uint64_t bytes = 0;
  std::chrono::system_clock::time_point modified;
};
std::vector<TuningFileInfo> list_tuning_files(const std::filesystem::path &cache_dir);

}  // namespace kdsl::jit_cache
