// An opened model in any form MoePack accepts: a GGUF file, any shard of a split set, an
// Ollama model name / manifest, or an Expert Pack (its directory or its manifest.json). For a
// pack, metadata and dense tensors come from its dense.gguf and routed experts from
// experts.bin (through the expert cache); for GGUF, everything comes from the GGUF.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/model_config.h"

namespace moepack {

class ModelSource {
 public:
  // Throws IoError / FormatError / Error naming the path. A pack is recognised by a directory
  // or a file named manifest.json; anything else is opened with GgufModel::open.
  static std::shared_ptr<const ModelSource> open(const std::string& path_or_name);

  bool is_pack() const { return pack_.has_value(); }
  const std::string& path() const { return path_; }
  const GgufModel& gguf() const { return gguf_; }        // for a pack: its dense.gguf
  const GgufFile& metadata() const { return gguf_.primary(); }
  const ExpertPack* pack() const { return pack_ ? &*pack_ : nullptr; }
  const ModelConfig& config() const { return config_; }

 private:
  std::string path_;
  GgufModel gguf_;
  std::optional<ExpertPack> pack_;
  ModelConfig config_;
};

}  // namespace moepack
