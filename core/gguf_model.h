// A GGUF model as the user names it: one file, a multi-shard set, or an Ollama store model.
//
// Shards follow llama.cpp's `llama-gguf-split` convention: files `PREFIX-0000K-of-0000N.gguf`
// (K = 1..N, five digits), each carrying `split.no` (u16, K-1), `split.count` (u16, N) and
// `split.tensors.count` (i32, the total over all shards). Shard 1 holds the model metadata.
// Given any shard, every shard is located and checked before anything else happens: a
// missing, duplicated or disagreeing shard is an error that names it. Tensor names are unique
// across the whole set.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/gguf.h"

namespace moepack {

struct GgufTensorRef {
  const GgufTensorInfo* info;  // owned by the shard's GgufFile
  uint32_t shard;              // index into GgufModel::shards()
};

class GgufModel {
 public:
  GgufModel() = default;
  // Move-only: tensors() points into the shards, which a move keeps in place.
  GgufModel(GgufModel&&) = default;
  GgufModel& operator=(GgufModel&&) = default;
  GgufModel(const GgufModel&) = delete;
  GgufModel& operator=(const GgufModel&) = delete;

  // Opens `path_or_name`: a GGUF file, any shard of a split set, an Ollama model name
  // (`[host/][namespace/]model[:tag]`) or an Ollama manifest path. Throws IoError,
  // FormatError or Error (with the offending path) on any problem.
  static GgufModel open(const std::string& path_or_name, const GgufLimits& limits = {});

  // Opens exactly these files as one model (shard order is taken from `split.no`).
  static GgufModel open_files(const std::vector<std::string>& paths, const GgufLimits& limits = {});

  const std::vector<GgufFile>& shards() const { return shards_; }
  const GgufFile& primary() const { return shards_.front(); }  // holds the metadata
  const std::vector<GgufTensorRef>& tensors() const { return tensors_; }
  const GgufTensorRef* find_tensor(std::string_view name) const;
  // Sum of the sizes of all shard files, in bytes.
  uint64_t total_file_bytes() const;
  // How the model was found, e.g. "ollama library/qwen3:30b -> /root/.ollama/models/blobs/...".
  const std::string& origin() const { return origin_; }

 private:
  void index_tensors();
  std::vector<GgufFile> shards_;
  std::vector<GgufTensorRef> tensors_;
  std::string origin_;
};

// Parses "PREFIX-0000K-of-0000N.gguf"; returns false if `path` does not follow the pattern.
bool parse_split_path(const std::string& path, std::string& prefix, int& shard_no, int& shard_count);
// Builds the path of shard `no` (1-based) of `count`.
std::string split_path(const std::string& prefix, int no, int count);

// True when GgufModel::open reads `path_or_name` as a GGUF model: a regular file that starts
// with the "GGUF" magic (whatever its name: Ollama's blobs have no suffix), an Ollama manifest,
// or an Ollama model name that is no existing path. A file named *.gguf without the magic is
// not one. Never throws; an unreadable file is not one.
bool is_gguf_source(const std::string& path_or_name);

// The name of what is made from a GGUF model (the default Expert Pack folder): a file's name
// without ".gguf" and without a split set's "-0000K-of-0000N" ("m-00001-of-00003.gguf" -> "m");
// for an Ollama manifest (.../manifests/HOST/NS/MODEL/TAG) or name (`[host/][ns/]model[:tag]`)
// "MODEL-TAG" ("qwen3:0.6b" -> "qwen3-0.6b", "tiny" -> "tiny-latest"), "NAMESPACE-MODEL-TAG"
// for a namespace other than "library" ("myns/tiny" -> "myns-tiny-latest"). "model" when nothing is
// left. Looks at the file only to tell a GGUF from an Ollama manifest; never throws.
std::string model_source_stem(const std::string& path_or_name);

}  // namespace moepack
