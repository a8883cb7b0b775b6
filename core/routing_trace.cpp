#include "core/routing_trace.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/byte_source.h"
#include "core/durable_io.h"
#include "core/error.h"

namespace moepack {
namespace {

constexpr char kMagic[8] = {'M', 'P', 'T', 'R', 'A', 'C', 'E', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxName = 4096;
// A cache slot holds one expert's whole block; 1 GiB is far above any model's (DeepSeek-V4-Flash:
// a few MiB, docs/twins.md) and keeps slots × bytes and misses × bytes inside 64 bits.
constexpr uint64_t kMaxExpertBytes = uint64_t{1} << 30;

template <typename T>
T get(const ByteSource& src, uint64_t& pos, const char* field) {
  T v;
  src.read(pos, &v, sizeof v, field);
  pos += sizeof v;
  return v;
}

void put(std::FILE* f, const void* p, size_t n, const std::string& path) {
  if (std::fwrite(p, 1, n, f) != n) throw IoError(path, "write", errno);
}

}  // namespace

RoutingTrace read_routing_trace(const std::string& path) {
  const auto src = open_file_source(path);
  RoutingTrace t;
  uint64_t pos = 0;
  char magic[8];
  src->read(0, magic, 8, "magic");
  if (std::memcmp(magic, kMagic, 8) != 0) throw FormatError(path, "magic", 0, "not a MoePack routing trace");
  pos = 8;
  const uint32_t version = get<uint32_t>(*src, pos, "version");
  if (version != kVersion) throw FormatError(path, "version", 8, "unsupported version " + std::to_string(version));
  t.header.n_layers = get<uint32_t>(*src, pos, "n_layers");
  t.header.n_experts = get<uint32_t>(*src, pos, "n_experts");
  t.header.top_k = get<uint32_t>(*src, pos, "top_k");
  t.header.expert_bytes = get<uint64_t>(*src, pos, "expert_bytes");
  if (t.header.n_layers == 0 || t.header.n_layers > 65536) throw FormatError(path, "n_layers", 12, "must be 1..65536");
  if (t.header.n_experts == 0 || t.header.n_experts > 65536) throw FormatError(path, "n_experts", 16, "must be 1..65536");
  if (t.header.top_k == 0 || t.header.top_k > t.header.n_experts) throw FormatError(path, "top_k", 20, "must be 1..n_experts");
  if (t.header.expert_bytes == 0 || t.header.expert_bytes > kMaxExpertBytes)
    throw FormatError(path, "expert_bytes", 24,
                      "must be 1.." + std::to_string(kMaxExpertBytes) + " (1 GiB), found " +
                          std::to_string(t.header.expert_bytes));
  const uint32_t name_len = get<uint32_t>(*src, pos, "name_len");
  if (name_len > kMaxName) throw FormatError(path, "name_len", 32, "longer than 4096 bytes");
  t.header.model_name.resize(name_len);
  src->read(pos, t.header.model_name.data(), name_len, "model name");
  pos += name_len;
  uint32_t last_step = 0;
  std::vector<size_t> seen_in(t.header.n_experts, 0);  // expert -> 1 + the record it was last seen in
  while (pos < src->size()) {
    const uint64_t at = pos;
    TraceRecord r;
    r.step = get<uint32_t>(*src, pos, "record step");
    r.layer = get<uint16_t>(*src, pos, "record layer");
    const uint16_t count = get<uint16_t>(*src, pos, "record count");
    if (r.step < last_step) throw FormatError(path, "record step", at, "step decreases");
    if (r.layer >= t.header.n_layers) throw FormatError(path, "record layer", at + 4, "layer out of range");
    if (count == 0 || count > t.header.n_experts) throw FormatError(path, "record count", at + 6, "count out of range");
    r.experts.resize(count);
    src->read(pos, r.experts.data(), 2u * count, "record experts");
    for (uint16_t k = 0; k < count; ++k) {
      if (r.experts[k] >= t.header.n_experts) {
        throw FormatError(path, "record expert", pos + 2u * k, "expert id " + std::to_string(r.experts[k]) + " out of range");
      }
      // A step's experts of one layer are distinct (the router picks each once).
      if (seen_in[r.experts[k]] == t.records.size() + 1) {
        throw FormatError(path, "record expert", pos + 2u * k,
                          "expert id " + std::to_string(r.experts[k]) + " appears twice in one record");
      }
      seen_in[r.experts[k]] = t.records.size() + 1;
    }
    pos += 2u * count;
    last_step = r.step;
    t.records.push_back(std::move(r));
  }
  return t;
}

RoutingTraceWriter::RoutingTraceWriter(const std::string& path, const TraceHeader& header)
    : path_(path), temp_(atomic_temp_name(path)), header_(header) {
  if (header.n_layers == 0 || header.n_layers > 65536 || header.n_experts == 0 || header.n_experts > 65536 ||
      header.top_k == 0 || header.top_k > header.n_experts || header.expert_bytes == 0 ||
      header.expert_bytes > kMaxExpertBytes ||
      header.model_name.size() > kMaxName) {
    throw Error(path + ": invalid routing trace header");
  }
  // A directory (or a FIFO, a device) of that name would only fail the rename at the end, after the run.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw Error(path + ": exists and is not a regular file (" + file_kind(st.st_mode) +
                "); a routing trace is written as a file of that name");
  }
  f_ = std::fopen(temp_.c_str(), "wb");
  if (f_ == nullptr) throw IoError(temp_, "create", errno);
  put(f_, kMagic, 8, path_);
  const uint32_t name_len = static_cast<uint32_t>(header.model_name.size());
  put(f_, &kVersion, 4, path_);
  put(f_, &header.n_layers, 4, path_);
  put(f_, &header.n_experts, 4, path_);
  put(f_, &header.top_k, 4, path_);
  put(f_, &header.expert_bytes, 8, path_);
  put(f_, &name_len, 4, path_);
  put(f_, header.model_name.data(), name_len, path_);
}

RoutingTraceWriter::~RoutingTraceWriter() {
  if (f_ == nullptr) return;
  try {
    close();  // (unwinding or not: every record written is whole)
  } catch (const std::exception&) {
    // the records stay in the temporary file; the path keeps what it had
  }
}

void RoutingTraceWriter::append(uint32_t step, uint32_t layer, const std::vector<uint32_t>& experts) {
  if (f_ == nullptr) throw Error(path_ + ": trace is closed");
  if (step < last_step_) throw Error(path_ + ": trace steps must not decrease");
  if (layer >= header_.n_layers) throw Error(path_ + ": layer " + std::to_string(layer) + " out of range");
  if (experts.empty() || experts.size() > header_.n_experts) throw Error(path_ + ": bad expert count");
  for (size_t k = 0; k < experts.size(); ++k) {  // validate before writing anything: no partial records
    if (experts[k] >= header_.n_experts) throw Error(path_ + ": expert " + std::to_string(experts[k]) + " out of range");
    if (std::find(experts.begin(), experts.begin() + static_cast<ptrdiff_t>(k), experts[k]) != experts.begin() + static_cast<ptrdiff_t>(k))
      throw Error(path_ + ": expert " + std::to_string(experts[k]) + " twice in one record");
  }
  const uint16_t l16 = static_cast<uint16_t>(layer);
  const uint16_t c16 = static_cast<uint16_t>(experts.size());
  put(f_, &step, 4, path_);
  put(f_, &l16, 2, path_);
  put(f_, &c16, 2, path_);
  for (uint32_t e : experts) {
    const uint16_t e16 = static_cast<uint16_t>(e);
    put(f_, &e16, 2, path_);
  }
  last_step_ = step;
}

void RoutingTraceWriter::close() {
  if (f_ == nullptr) return;
  std::FILE* f = f_;
  f_ = nullptr;
  const bool ok = std::fflush(f) == 0;
  const int e = errno;
  if (!ok) {
    std::fclose(f);
    throw IoError(temp_, "flush", e);
  }
  try {
    fsync_fd(fileno(f), temp_);
  } catch (...) {
    std::fclose(f);
    throw;
  }
  if (std::fclose(f) != 0) throw IoError(temp_, "close", errno);
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) throw IoError(path_, "rename", errno);
  const std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  fsync_dir(dir.empty() ? std::string(".") : dir.string());
}

}  // namespace moepack
