#include "core/gguf_model.h"

#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <regex>
#include <unordered_map>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/ollama_store.h"

namespace moepack {

bool parse_split_path(const std::string& path, std::string& prefix, int& shard_no, int& shard_count) {
  static const std::regex re(R"(^(.*)-([0-9]{5})-of-([0-9]{5})\.gguf$)");
  std::smatch m;
  if (!std::regex_match(path, m, re)) return false;
  prefix = m[1].str();
  shard_no = std::stoi(m[2].str());
  shard_count = std::stoi(m[3].str());
  return true;
}

std::string split_path(const std::string& prefix, int no, int count) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "-%05d-of-%05d.gguf", no, count);
  return prefix + buf;
}

namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// True if the file starts with the GGUF magic (a GGUF that happens to live under a directory
// named "manifests" is still opened as a GGUF, not as an Ollama manifest).
bool has_gguf_magic(const std::string& p) {
  char magic[4] = {};
  if (!is_regular_file(p)) return false;  // (a FIFO would block the fopen; open_file_source names it)
  FILE* f = std::fopen(p.c_str(), "rbe");
  if (f == nullptr) return false;
  const size_t n = std::fread(magic, 1, 4, f);
  std::fclose(f);
  return n == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

// An Ollama manifest: a file under ".../manifests/" that is not itself a GGUF.
bool is_ollama_manifest(const std::string& p) { return ollama_is_manifest_path(p) && !has_gguf_magic(p); }

uint64_t split_key(const GgufFile& f, const char* key, bool required) {
  const GgufKv* kv = f.find(key);
  if (kv == nullptr) {
    if (required) throw FormatError(f.path(), std::string("key \"") + key + "\"", 0, "missing in a split shard");
    return 0;
  }
  auto v = f.get_uint(key);
  return *v;
}

}  // namespace

bool is_gguf_source(const std::string& path_or_name) {
  struct stat st {};
  if (::stat(path_or_name.c_str(), &st) != 0) return ollama_looks_like_name(path_or_name);
  if (!S_ISREG(st.st_mode)) return false;
  return has_gguf_magic(path_or_name) || ollama_is_manifest_path(path_or_name);
}

std::string model_source_stem(const std::string& path_or_name) {
  const auto base_of = [](const std::string& p) {
    const auto slash = p.rfind('/');
    return slash == std::string::npos ? p : p.substr(slash + 1);
  };
  std::string stem;
  const bool manifest = is_ollama_manifest(path_or_name);
  if (manifest || (!exists(path_or_name) && ollama_looks_like_name(path_or_name))) {
    try {
      // "MODEL-TAG"; a namespace other than Ollama's own "library" leads ("myns-tiny-q4"), so
      // two namespaces' models of one name get two packs.
      const OllamaName n = ollama_parse_name(path_or_name);
      stem = (n.ns == "library" ? "" : n.ns + "-") + (n.model.empty() ? n.tag : n.model + "-" + n.tag);
    } catch (const Error&) {  // a manifest path too short for host/namespace/model/tag
      const std::string dir = path_or_name.substr(0, path_or_name.rfind('/') + 1);
      const std::string model = base_of(dir.empty() ? std::string() : dir.substr(0, dir.size() - 1));
      stem = model.empty() ? base_of(path_or_name) : model + "-" + base_of(path_or_name);
    }
  } else {
    std::string prefix;
    int no = 0, count = 0;
    stem = base_of(parse_split_path(path_or_name, prefix, no, count) ? prefix : path_or_name);
    if (stem.size() > 5) {
      std::string suffix = stem.substr(stem.size() - 5);
      for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (suffix == ".gguf") stem.resize(stem.size() - 5);
    }
  }
  return stem.empty() || stem == "." || stem == ".." ? "model" : stem;
}

GgufModel GgufModel::open(const std::string& path_or_name, const GgufLimits& limits) {
  const bool manifest = is_ollama_manifest(path_or_name);
  if (!exists(path_or_name) || manifest) {
    if (manifest || ollama_looks_like_name(path_or_name)) {
      const OllamaModel om = ollama_resolve(path_or_name);
      GgufModel m = open_files({om.blob_path}, limits);
      m.origin_ = "ollama " + om.name + " -> " + om.blob_path;
      return m;
    }
    throw Error(path_or_name + ": no such file (and not an Ollama model name)");
  }
  std::string prefix;
  int no = 0;
  int count = 0;
  if (parse_split_path(path_or_name, prefix, no, count)) {
    if (count < 1 || no < 1 || no > count) {
      throw Error(path_or_name + ": shard number " + std::to_string(no) + " of " +
                  std::to_string(count) + " is out of range");
    }
    std::vector<std::string> paths;
    for (int k = 1; k <= count; ++k) {
      const std::string p = split_path(prefix, k, count);
      if (!exists(p)) {
        throw Error(p + ": shard " + std::to_string(k) + " of " + std::to_string(count) +
                    " is missing (needed by " + path_or_name + ")");
      }
      paths.push_back(p);
    }
    GgufModel m = open_files(paths, limits);
    m.origin_ = std::to_string(count) + " shards " + split_path(prefix, 1, count) + " ...";
    return m;
  }
  GgufModel m = open_files({path_or_name}, limits);
  m.origin_ = path_or_name;
  return m;
}

GgufModel GgufModel::open_files(const std::vector<std::string>& paths, const GgufLimits& limits) {
  if (paths.empty()) throw Error("no GGUF files given");
  std::vector<GgufFile> files;
  files.reserve(paths.size());
  for (const std::string& p : paths) files.push_back(GgufFile::open(p, limits));

  GgufModel m;
  if (files.size() == 1) {
    const GgufFile& f = files.front();
    const uint64_t count = split_key(f, "split.count", false);
    if (count > 1) {
      throw FormatError(f.path(), "key \"split.count\"", f.find("split.count")->value_offset,
                        "this file is shard " + std::to_string(split_key(f, "split.no", false) + 1) +
                            " of " + std::to_string(count) +
                            "; open the set by its NAME-0000K-of-0000N.gguf file names");
    }
    m.shards_ = std::move(files);
    m.index_tensors();
    return m;
  }

  const uint64_t n = files.size();
  std::vector<int> slot(n, -1);
  uint64_t tensors_total = 0;
  uint64_t declared_total = 0;
  for (uint64_t k = 0; k < n; ++k) {
    const GgufFile& f = files[k];
    const uint64_t no = split_key(f, "split.no", true);
    const uint64_t count = split_key(f, "split.count", true);
    const uint64_t tcount = split_key(f, "split.tensors.count", true);
    if (count != n) {
      throw FormatError(f.path(), "key \"split.count\"", f.find("split.count")->value_offset,
                        "says " + std::to_string(count) + " shards but the set has " + std::to_string(n));
    }
    if (no >= n) {
      throw FormatError(f.path(), "key \"split.no\"", f.find("split.no")->value_offset,
                        "shard index " + std::to_string(no) + " is out of range 0.." + std::to_string(n - 1));
    }
    if (slot[no] != -1) {
      throw FormatError(f.path(), "key \"split.no\"", f.find("split.no")->value_offset,
                        "duplicated shard: " + files[static_cast<size_t>(slot[no])].path() +
                            " already has split.no " + std::to_string(no));
    }
    if (k == 0) {
      declared_total = tcount;
    } else if (tcount != declared_total) {
      throw FormatError(f.path(), "key \"split.tensors.count\"", f.find("split.tensors.count")->value_offset,
                        "says " + std::to_string(tcount) + " tensors, " + files[0].path() + " says " +
                            std::to_string(declared_total));
    }
    slot[no] = static_cast<int>(k);
    tensors_total += f.tensors().size();
  }
  if (tensors_total != declared_total) {
    throw FormatError(files[0].path(), "key \"split.tensors.count\"",
                      files[0].find("split.tensors.count")->value_offset,
                      "says " + std::to_string(declared_total) + " tensors but the shards hold " +
                          std::to_string(tensors_total));
  }
  for (uint64_t no = 0; no < n; ++no) m.shards_.push_back(std::move(files[static_cast<size_t>(slot[no])]));
  // The shard file names must agree with split.no (e.g. a renamed copy of shard 1 as shard 2).
  for (uint64_t no = 0; no < n; ++no) {
    std::string prefix;
    int fno = 0;
    int fcount = 0;
    if (parse_split_path(m.shards_[no].path(), prefix, fno, fcount) &&
        static_cast<uint64_t>(fno) != no + 1) {
      throw FormatError(m.shards_[no].path(), "key \"split.no\"",
                        m.shards_[no].find("split.no")->value_offset,
                        "file name says shard " + std::to_string(fno) + " but split.no says shard " +
                            std::to_string(no + 1));
    }
  }
  m.index_tensors();
  return m;
}

void GgufModel::index_tensors() {
  std::unordered_map<std::string_view, uint32_t> seen;
  tensors_.clear();
  for (uint32_t s = 0; s < shards_.size(); ++s) {
    for (const GgufTensorInfo& t : shards_[s].tensors()) {
      auto [it, inserted] = seen.emplace(t.name, s);
      if (!inserted) {
        throw FormatError(shards_[s].path(), "tensor \"" + t.name + "\" name", t.info_offset,
                          "duplicate tensor name across shards (also in " + shards_[it->second].path() + ")");
      }
      tensors_.push_back({&t, s});
    }
  }
}

const GgufTensorRef* GgufModel::find_tensor(std::string_view name) const {
  for (const GgufTensorRef& r : tensors_) {
    if (r.info->name == name) return &r;
  }
  return nullptr;
}

uint64_t GgufModel::total_file_bytes() const {
  uint64_t s = 0;
  for (const GgufFile& f : shards_) s += f.file_size();
  return s;
}

}  // namespace moepack
