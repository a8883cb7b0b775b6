#include "core/model_source.h"

#include <filesystem>

#include "core/error.h"

namespace moepack {

std::shared_ptr<const ModelSource> ModelSource::open(const std::string& path_or_name) {
  namespace fs = std::filesystem;
  auto src = std::make_shared<ModelSource>();
  src->path_ = path_or_name;
  std::error_code ec;
  const fs::path p(path_or_name);
  const bool is_dir = fs::is_directory(p, ec);
  if (is_dir || p.filename() == kPackManifestName) {
    src->pack_.emplace(ExpertPack::open(path_or_name));
    src->gguf_ = GgufModel::open(src->pack_->dense_path());
    // dense.gguf must come from the same build as the manifest (a half-replaced pack never loads).
    const GgufFile& dense = src->gguf_.primary();
    const auto id = dense.get_string(kPackDenseBuildIdKey);
    if (!id || *id != src->pack_->manifest().build_id) {
      const GgufKv* kv = dense.find(kPackDenseBuildIdKey);
      throw FormatError(dense.path(), kPackDenseBuildIdKey, kv ? kv->value_offset : 0,
                        "belongs to build " + (id ? *id : std::string("(none)")) + ", the manifest is of build " +
                            src->pack_->manifest().build_id);
    }
  } else {
    src->gguf_ = GgufModel::open(path_or_name);
  }
  src->config_ = read_model_config(src->gguf_.primary());
  return src;
}

}  // namespace moepack
