#include "core/model_summary.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "core/expert_pack.h"
#include "core/pack_manifest.h"

namespace moepack {
namespace {

// A float32 as the shortest decimal that reads back to the same float (1e-06, not
// 9.99999997e-07), so printed hyperparameters match what model cards state.
double float32_to_json(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
  double out = v;
  std::from_chars(buf, r.ptr, out);
  return out;
}

// Values larger than this are summarised ({"string_bytes": n} / {"array_of", "count"}) so the
// report stays small whatever the file declares.
constexpr size_t kMaxShownString = 1024;
constexpr uint64_t kMaxShownArray = 256;

nlohmann::json value_to_json(const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::STRING:
      if (v.s.size() > kMaxShownString) return nlohmann::json{{"string_bytes", v.s.size()}};
      return v.s;
    case GgufValueType::BOOL: return v.u != 0;
    case GgufValueType::FLOAT32: return float32_to_json(v.f);
    case GgufValueType::FLOAT64: return v.f;
    case GgufValueType::ARRAY: {
      const GgufArray& a = *v.array;
      if (!a.resident || a.count > kMaxShownArray) {
        return nlohmann::json{{"array_of", std::string(gguf_value_type_name(a.elem_type))},
                              {"count", a.count}};
      }
      nlohmann::json out = nlohmann::json::array();
      const uint32_t es = gguf_scalar_size(a.elem_type);
      for (uint64_t k = 0; k < a.count; ++k) {
        if (a.elem_type == GgufValueType::STRING) {
          if (a.strings[k].size() > kMaxShownString) {
            out.push_back(nlohmann::json{{"string_bytes", a.strings[k].size()}});
          } else {
            out.push_back(a.strings[k]);
          }
        } else if (a.elem_type == GgufValueType::ARRAY) {
          GgufValue sub;
          sub.type = GgufValueType::ARRAY;
          sub.array = std::make_shared<GgufArray>(a.arrays[k]);
          out.push_back(value_to_json(sub));
        } else if (a.elem_type == GgufValueType::FLOAT32) {
          out.push_back(float32_to_json(a.float_at(k)));
        } else if (a.elem_type == GgufValueType::FLOAT64) {
          out.push_back(a.float_at(k));
        } else if (a.elem_type == GgufValueType::BOOL) {
          out.push_back(a.raw[k * es] != 0);
        } else {
          out.push_back(a.int_at(k));
        }
      }
      return out;
    }
    default:
      if (v.type == GgufValueType::INT8 || v.type == GgufValueType::INT16 ||
          v.type == GgufValueType::INT32 || v.type == GgufValueType::INT64) {
        return v.i;
      }
      return v.u;
  }
}

// A block or expert number from a tensor name; FormatError naming the tensor if absurd.
uint32_t block_number(const GgufFile& f, const GgufTensorInfo& t, const std::string& digits) {
  if (digits.size() > 7) {
    throw FormatError(f.path(), "tensor \"" + t.name + "\" name", t.info_offset,
                      "block or expert number " + digits + " is out of range");
  }
  return static_cast<uint32_t>(std::stoul(digits));
}

}  // namespace

ModelSummary summarize(const GgufModel& model) {
  const GgufFile& f = model.primary();
  ModelSummary s;
  s.architecture = f.get_string("general.architecture").value_or("");
  s.name = f.get_string("general.name").value_or("");
  for (const GgufFile& sh : model.shards()) s.files.push_back(sh.path());
  s.file_bytes = model.total_file_bytes();
  s.gguf_version = f.version();
  const std::string prefix = s.architecture + ".";
  for (const GgufKv& kv : f.metadata()) {
    if (s.architecture.empty() || kv.key.rfind(prefix, 0) != 0) continue;
    s.hparams_text[kv.key.substr(prefix.size())] =
        value_to_json(kv.value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  s.tokenizer_model = f.get_string("tokenizer.ggml.model").value_or("");
  s.tokenizer_pre = f.get_string("tokenizer.ggml.pre").value_or("");
  if (const GgufArray* toks = f.get_array("tokenizer.ggml.tokens")) s.vocab_size = toks->count;
  if (auto b = f.get_int("tokenizer.ggml.bos_token_id")) s.bos_id = *b;
  if (auto e = f.get_int("tokenizer.ggml.eos_token_id")) s.eos_id = *e;
  s.has_chat_template = f.find("tokenizer.chat_template") != nullptr;
  if (!s.architecture.empty()) {
    s.expert_count = f.get_uint(prefix + "expert_count");
    s.expert_used_count = f.get_uint(prefix + "expert_used_count");
    s.expert_shared_count = f.get_uint(prefix + "expert_shared_count");
  }

  static const std::regex stacked(R"(^blk\.([0-9]+)\.ffn_([a-z0-9_]+)_exps\.(weight|bias)$)");
  static const std::regex legacy(R"(^blk\.([0-9]+)\.ffn_(gate|up|down)\.([0-9]+)\.weight$)");
  std::map<uint32_t, MoeLayerInfo> layers;
  std::map<std::pair<uint32_t, std::string>, uint32_t> legacy_max;  // (block, role) -> max expert + 1
  for (const GgufTensorRef& r : model.tensors()) {
    const GgufTensorInfo& t = *r.info;
    s.tensor_count++;
    s.tensor_bytes += t.nbytes;
    TypeStats& ts = s.by_type[std::string(ggml_type_name(t.type))];
    ts.tensors++;
    ts.bytes += t.nbytes;
    std::smatch m;
    if (std::regex_match(t.name, m, stacked)) {
      const uint32_t block = block_number(f, t, m[1].str());
      ExpertRole role;
      role.role = m[2].str() + (m[3].str() == "bias" ? ".bias" : "");
      role.tensor = t.name;
      role.type = t.type;
      role.ne = t.ne;
      const uint64_t n_exp = t.ne[t.n_dims - 1];
      if (n_exp == 0 || t.n_dims < 2) {
        throw FormatError(f.path(), "tensor \"" + t.name + "\" ne", t.info_offset,
                          "an expert tensor needs a nonzero last (expert) dimension");
      }
      role.bytes_per_expert = t.nbytes / n_exp;
      MoeLayerInfo& L = layers[block];
      L.block = block;
      if (L.n_experts != 0 && L.n_experts != n_exp) {
        throw FormatError(f.path(), "tensor \"" + t.name + "\" ne", t.info_offset,
                          "has " + std::to_string(n_exp) + " experts, other roles of block " +
                              std::to_string(block) + " have " + std::to_string(L.n_experts));
      }
      L.n_experts = static_cast<uint32_t>(n_exp);
      L.roles.push_back(role);
    } else if (std::regex_match(t.name, m, legacy)) {
      const uint32_t block = block_number(f, t, m[1].str());
      const uint32_t e = block_number(f, t, m[3].str());
      auto& mx = legacy_max[{block, m[2].str()}];
      mx = std::max(mx, e + 1);
      if (e == 0) {
        ExpertRole role;
        role.role = m[2].str();
        role.tensor = t.name;
        role.type = t.type;
        role.ne = t.ne;
        role.bytes_per_expert = t.nbytes;
        role.stacked = false;
        MoeLayerInfo& L = layers[block];
        L.block = block;
        L.roles.push_back(role);
      }
    }
  }
  for (const auto& [key, count] : legacy_max) {
    MoeLayerInfo& L = layers[key.first];
    L.n_experts = std::max(L.n_experts, count);
  }
  for (auto& [block, L] : layers) {
    std::sort(L.roles.begin(), L.roles.end(), [](const ExpertRole& a, const ExpertRole& b) {
      const int ra = expert_role_rank(a.role), rb = expert_role_rank(b.role);
      return ra != rb ? ra < rb : a.role < b.role;
    });
    for (const ExpertRole& r : L.roles) L.expert_bytes += r.bytes_per_expert;
    s.routed_expert_bytes += L.expert_bytes * L.n_experts;
    s.moe_layers.push_back(L);
  }
  return s;
}

nlohmann::json summary_to_json(const ModelSummary& s, const GgufModel& model, bool with_tensors) {
  using nlohmann::json;
  json j;
  j["files"] = s.files;
  j["file_bytes"] = s.file_bytes;
  j["gguf_version"] = s.gguf_version;
  j["origin"] = model.origin();
  j["architecture"] = s.architecture;
  j["name"] = s.name;
  json hp = json::object();
  for (const auto& [k, v] : s.hparams_text) hp[k] = json::parse(v);
  j["hparams"] = hp;
  j["tokenizer"] = {{"model", s.tokenizer_model},
                    {"pre", s.tokenizer_pre},
                    {"vocab_size", s.vocab_size},
                    {"bos_id", s.bos_id ? json(*s.bos_id) : json(nullptr)},
                    {"eos_id", s.eos_id ? json(*s.eos_id) : json(nullptr)},
                    {"has_chat_template", s.has_chat_template}};
  j["tensor_count"] = s.tensor_count;
  j["tensor_bytes"] = s.tensor_bytes;
  json bt = json::object();
  for (const auto& [name, st] : s.by_type) bt[name] = {{"tensors", st.tensors}, {"bytes", st.bytes}};
  j["bytes_by_type"] = bt;
  json moe;
  moe["expert_count"] = s.expert_count ? json(*s.expert_count) : json(nullptr);
  moe["expert_used_count"] = s.expert_used_count ? json(*s.expert_used_count) : json(nullptr);
  moe["expert_shared_count"] = s.expert_shared_count ? json(*s.expert_shared_count) : json(nullptr);
  moe["routed_expert_bytes"] = s.routed_expert_bytes;
  json layers = json::array();
  for (const MoeLayerInfo& L : s.moe_layers) {
    json roles = json::array();
    for (const ExpertRole& r : L.roles) {
      roles.push_back({{"role", r.role},
                       {"tensor", r.tensor},
                       {"type", std::string(ggml_type_name(r.type))},
                       {"ne", r.ne},
                       {"bytes_per_expert", r.bytes_per_expert},
                       {"stacked", r.stacked}});
    }
    layers.push_back({{"block", L.block}, {"n_experts", L.n_experts}, {"expert_bytes", L.expert_bytes}, {"roles", roles}});
  }
  moe["layers"] = layers;
  j["moe"] = moe;
  if (with_tensors) {
    json ts = json::array();
    for (const GgufTensorRef& r : model.tensors()) {
      const GgufTensorInfo& t = *r.info;
      ts.push_back({{"name", t.name},
                    {"type", std::string(ggml_type_name(t.type))},
                    {"ne", std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)},
                    {"nbytes", t.nbytes},
                    {"file_offset", t.file_offset},
                    {"shard", r.shard}});
    }
    j["tensors"] = ts;
  }
  return j;
}

std::string expert_pack_dir(const std::string& path) {
  const std::string pack_dir = pack_dir_of(path);  // "pack/" and "pack/manifest.json" name "pack"
  if (!std::filesystem::exists(pack_dir + "/" + kPackManifestName)) {
    throw Error(pack_dir + ": not an Expert Pack (no " + kPackManifestName + ")");
  }
  return pack_dir;
}

ModelSummary summarize_pack(const std::string& path) {
  const std::string pack_dir = expert_pack_dir(path);
  const GgufModel dense = GgufModel::open(pack_dir + "/" + kPackDenseName);
  return summarize_pack(pack_dir, dense, read_manifest(pack_dir + "/" + kPackManifestName));
}

ModelSummary summarize_pack(const std::string& pack_dir, const GgufModel& dense, const PackManifest& m) {
  ModelSummary s = summarize(dense);
  s.files = {pack_dir + "/" + kPackDenseName, pack_dir + "/" + kPackExpertsName};
  s.file_bytes = m.dense.bytes + m.experts.bytes;
  s.moe_layers.clear();
  s.routed_expert_bytes = 0;
  for (const PackLayer& l : m.layout.layers) {
    MoeLayerInfo info;
    info.block = l.block;
    info.n_experts = l.n_experts;
    for (const PackRole& r : l.roles) {
      ExpertRole role;
      role.role = r.role;
      role.tensor = r.tensor;
      role.type = r.type;
      role.ne = r.ne;  // one expert's slice; the stacked tensor adds the expert index last
      role.ne[std::min<uint32_t>(r.n_dims, 3)] = l.n_experts;
      role.bytes_per_expert = r.bytes;
      info.roles.push_back(role);
      info.expert_bytes += r.bytes;
      const uint64_t bytes = r.bytes * l.n_experts;
      s.tensor_count += 1;
      s.tensor_bytes += bytes;
      TypeStats& t = s.by_type[std::string(ggml_type_name(r.type))];
      t.tensors += 1;
      t.bytes += bytes;
    }
    s.routed_expert_bytes += info.expert_bytes * l.n_experts;
    s.moe_layers.push_back(std::move(info));
  }
  return s;
}

namespace {
std::string human_bytes(uint64_t b) {
  char buf[64];
  if (b >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1ull << 30));
  } else if (b >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1ull << 20));
  } else if (b >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  }
  return buf;
}
}  // namespace

std::string summary_to_text(const ModelSummary& s) {
  std::ostringstream o;
  o << "model:        " << (s.name.empty() ? "(unnamed)" : s.name) << "\n";
  o << "architecture: " << s.architecture << "\n";
  o << "files:        " << s.files.size() << " (" << human_bytes(s.file_bytes) << "), GGUF v" << s.gguf_version << "\n";
  for (const auto& f : s.files) o << "  " << f << "\n";
  o << "hyperparameters:\n";
  for (const auto& [k, v] : s.hparams_text) {
    std::string shown = v.size() > 96 ? v.substr(0, 93) + "..." : v;
    o << "  " << k << " = " << shown << "\n";
  }
  o << "tokenizer:    " << s.tokenizer_model << " (pre " << (s.tokenizer_pre.empty() ? "-" : s.tokenizer_pre)
    << "), vocab " << s.vocab_size;
  if (s.bos_id) o << ", bos " << *s.bos_id;
  if (s.eos_id) o << ", eos " << *s.eos_id;
  o << (s.has_chat_template ? ", chat template" : ", no chat template") << "\n";
  o << "tensors:      " << s.tensor_count << " (" << human_bytes(s.tensor_bytes) << ")\n";
  for (const auto& [name, st] : s.by_type) {
    o << "  " << name << ": " << st.tensors << " tensors, " << human_bytes(st.bytes) << "\n";
  }
  if (s.moe_layers.empty()) {
    o << "MoE:          no routed experts\n";
  } else {
    o << "MoE:          " << s.moe_layers.size() << " layers with routed experts, "
      << (s.expert_count ? std::to_string(*s.expert_count) : "?") << " experts, top-"
      << (s.expert_used_count ? std::to_string(*s.expert_used_count) : "?") << ", "
      << (s.expert_shared_count ? std::to_string(*s.expert_shared_count) : "0") << " shared; routed total "
      << human_bytes(s.routed_expert_bytes) << "\n";
    for (const MoeLayerInfo& L : s.moe_layers) {
      o << "  blk." << L.block << ": " << L.n_experts << " experts x " << human_bytes(L.expert_bytes) << " (";
      for (size_t k = 0; k < L.roles.size(); ++k) {
        const ExpertRole& r = L.roles[k];
        o << (k ? ", " : "") << r.role << " " << ggml_type_name(r.type) << " " << r.bytes_per_expert << " B";
      }
      o << ")\n";
    }
  }
  return o.str();
}

}  // namespace moepack
