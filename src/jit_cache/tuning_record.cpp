// tuning_record.cpp - reads, checks and atomically writes <cache>/tuning/<digest>.json, trusting only this user's regular files
#include "jit_cache/tuning_record.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <nlohmann/json.hpp>
#include <system_error>

namespace kdsl::jit_cache {
namespace {

namespace fs = std::filesystem;

// A record is a few hundred bytes; anything much larger was not written by kdsl.
constexpr size_t kMaxRecordBytes = 64 * 1024;

std::optional<std::string> read_small_file(const fs::path &file, std::string &problem) {
  int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) problem = errno == ELOOP ? "a symbolic link" : fmt::format("cannot be opened ({})", std::strerror(errno));
    return std::nullopt;
  }
  struct stat st = {};
  std::string text;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) problem = "not a regular file";
  else if (st.st_uid != ::geteuid()) problem = "another user's file";
  else if (uint64_t(st.st_size) > kMaxRecordBytes) problem = fmt::format("{} bytes, more than a record holds", st.st_size);
  else {
    text.resize(size_t(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n <= 0) break;
      got += size_t(n);
    }
    if (got != text.size()) problem = "could not be read whole";
  }
  ::close(fd);
  if (!problem.empty()) return std::nullopt;
  return text;
}

bool is_string_array(const nlohmann::json &j) {
  return j.is_array() && std::all_of(j.begin(), j.end(), [](const nlohmann::json &e) { return e.is_string(); });
}

}  // namespace

fs::path tuning_folder(const fs::path &cache_dir) { return cache_dir / "tuning"; }

fs::path tuning_record_path(const fs::path &cache_dir, const std::string &kernel, const std::string &key, const std::string &device) {
  // Lengths first, so moving text between the fields cannot give the same digest.
  std::string text = fmt::format("{}:{}{}:{}{}:{}", kernel.size(), kernel, key.size(), key, device.size(), device);
  return tuning_folder(cache_dir) / fmt::format("{:016x}.json", XXH3_64bits(text.data(), text.size()));
}

std::optional<TuningRecord> read_tuning_record(const fs::path &file, std::string &problem) {
  problem.clear();
  std::optional<std::string> text = read_small_file(file, problem);
  if (!text) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    problem = text->empty() ? "empty" : "not JSON (truncated or damaged)";
    return std::nullopt;
  }
  if (!j.contains("format") || !j["format"].is_number_integer() || j["format"].get<int>() != kTuningFormatVersion) {
    problem = fmt::format("not a tuning record of format {}", kTuningFormatVersion);
    return std::nullopt;
  }
  TuningRecord r;
  for (auto [field, out] : {std::pair{"kernel", &r.kernel}, {"key", &r.key}, {"device", &r.device}, {"kdsl", &r.kdsl_version},
                            {"winner", &r.winner}, {"date", &r.date}}) {
    if (!j.contains(field) || !j[field].is_string()) {
      problem = fmt::format("field '{}' missing or not text", field);
      return std::nullopt;
    }
    *out = j[field].get<std::string>();
  }
  if (!j.contains("candidates") || !is_string_array(j["candidates"]) || j["candidates"].empty()) {
    problem = "field 'candidates' missing or not a list of labels";
    return std::nullopt;
  }
  r.candidates = j["candidates"].get<std::vector<std::string>>();
  if (j.contains("microseconds") && j["microseconds"].is_array())
    for (const auto &t : j["microseconds"]) r.microseconds.push_back(t.is_number() ? t.get<double>() : -1);
  if (std::find(r.candidates.begin(), r.candidates.end(), r.winner) == r.candidates.end()) {
    problem = fmt::format("its winner '{}' is not one of its candidates", r.winner);
    return std::nullopt;
  }
  return r;
}

TuningRecordMismatch tuning_record_mismatch(const TuningRecord &r, const std::string &kernel, const std::string &key, const std::string &device,
                                            const std::vector<std::string> &candidates, const std::string &kdsl_version) {
  if (r.kernel != kernel || r.key != key) return {fmt::format("it is for {} [{}]", r.kernel, r.key)};
  if (r.device != device) return {fmt::format("it was timed on {}", r.device)};
  if (r.kdsl_version != kdsl_version) return {fmt::format("stale: timed by kdsl {}, this is {}", r.kdsl_version, kdsl_version), true};
  if (r.candidates != candidates) return {"stale: the kernel's candidates changed since it was timed", true};
  return {};
}

bool write_tuning_record(const fs::path &cache_dir, const TuningRecord &r) {
  fs::path path = tuning_record_path(cache_dir, r.kernel, r.key, r.device);
  std::error_code ec;
  for (const fs::path &dir : {cache_dir, tuning_folder(cache_dir)}) {
    if (fs::create_directory(dir, ec)) fs::permissions(dir, fs::perms::owner_all, ec);
    if (ec) return false;
  }
  nlohmann::json j = {{"format", kTuningFormatVersion}, {"kernel", r.kernel},         {"key", r.key},
                      {"device", r.device},             {"kdsl", r.kdsl_version},     {"candidates", r.candidates},
                      {"winner", r.winner},             {"microseconds", r.microseconds}, {"date", r.date}};
  std::string text = j.dump(1) + "\n";
  static std::atomic<uint64_t> serial{0};
  fs::path tmp = path;
  tmp += fmt::format(".{}.{}.tmp", ::getpid(), serial.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ok = ::close(fd) == 0 && ok;
  if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  ::unlink(tmp.c_str());
  return false;
}

std::vector<TuningFileInfo> list_tuning_files(const fs::path &cache_dir) {
  std::vector<TuningFileInfo> out;
  std::error_code ec;
  fs::path folder = tuning_folder(cache_dir);
  if (fs::is_symlink(fs::symlink_status(folder, ec))) return out;  // kdsl follows no link in its cache
  for (const fs::directory_entry &file : fs::directory_iterator(folder, ec)) {
    if (file.path().extension() != ".json") continue;  // a writer's temporary file ends .tmp
    struct stat st;
    if (::lstat(file.path().c_str(), &st) != 0) continue;
    out.push_back({file.path(), uint64_t(st.st_size), std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec))});
  }
  std::sort(out.begin(), out.end(), [](const TuningFileInfo &a, const TuningFileInfo &b) { return a.path < b.path; });
  return out;
}

}  // namespace kdsl::jit_cache
