#include "packbuilder/pack_plan.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "core/checked.h"
#include "core/error.h"
#include "packbuilder/dense_gguf.h"

namespace moepack {
namespace {

std::string shape_str(const std::array<uint64_t, 4>& ne, uint32_t n) {
  std::string s = "[";
  for (uint32_t d = 0; d < n; ++d) s += (d ? ", " : "") + std::to_string(ne[d]);
  return s + "]";
}

[[noreturn]] void refuse(const GgufModel& model, uint32_t shard, const GgufTensorInfo* t,
                         const std::string& what) {
  const std::string& file = model.shards()[shard].path();
  if (t != nullptr) throw FormatError(file, "tensor \"" + t->name + "\"", t->info_offset, what);
  throw Error(file + ": " + what);
}

std::string legacy_name(uint32_t block, const std::string& role, uint32_t e) {
  return "blk." + std::to_string(block) + ".ffn_" + role + "." + std::to_string(e) + ".weight";
}

}  // namespace

PackPlan plan_pack(const GgufModel& model) {
  PackPlan plan;
  plan.summary = summarize(model);
  const ModelSummary& s = plan.summary;
  if (s.moe_layers.empty()) {
    refuse(model, 0, nullptr, "has no routed-expert tensors (blk.N.ffn_*_exps); there is nothing to pack");
  }
  const GgufFile& meta = model.primary();
  const std::string arch = s.architecture;
  const std::optional<uint64_t> n_embd =
      arch.empty() ? std::nullopt : meta.get_uint(arch + ".embedding_length");
  const std::optional<uint64_t> n_ff_exp =
      arch.empty() ? std::nullopt : meta.get_uint(arch + ".expert_feed_forward_length");
  // Every tensor must belong to this model: a shard of another model shows up as blocks past
  // block_count or as experts whose width is not this model's embedding length (below).
  if (const auto n_blocks = arch.empty() ? std::nullopt : meta.get_uint(arch + ".block_count")) {
    for (const GgufTensorRef& r : model.tensors()) {
      const std::string& n = r.info->name;
      if (n.rfind("blk.", 0) != 0) continue;
      const uint64_t blk = std::strtoull(n.c_str() + 4, nullptr, 10);
      if (blk >= *n_blocks) {
        refuse(model, r.shard, r.info,
               "belongs to block " + std::to_string(blk) + " but " + arch + ".block_count is " +
                   std::to_string(*n_blocks) + " (a shard of another model?)");
      }
    }
  }
  std::set<std::string> expert_tensors;
  // Roles every MoE layer must have: the union over layers.
  std::set<std::string> all_roles;
  for (const MoeLayerInfo& L : s.moe_layers) {
    for (const ExpertRole& r : L.roles) all_roles.insert(r.role);
  }
  for (const MoeLayerInfo& L : s.moe_layers) {
    const std::string blk = "blk." + std::to_string(L.block);
    std::set<std::string> have;
    for (const ExpertRole& r : L.roles) have.insert(r.role);
    for (const std::string& want : all_roles) {
      if (!have.count(want)) {
        const GgufTensorRef* any = model.find_tensor(L.roles.front().tensor);
        refuse(model, any->shard, nullptr,
               blk + " is missing its routed-expert role \"" + want + "\" (blk." + std::to_string(L.block) +
                   ".ffn_" + want +
                   "_exps), which the other MoE layers have; the model is incomplete (missing tensor or "
                   "shard?)");
      }
    }
    if (s.expert_count && *s.expert_count != L.n_experts) {
      const GgufTensorRef* t0 = model.find_tensor(L.roles.front().tensor);
      refuse(model, t0->shard, t0->info,
             blk + " has " + std::to_string(L.n_experts) + " experts but " + s.architecture +
                 ".expert_count is " + std::to_string(*s.expert_count));
    }
    PackLayer layer;
    layer.block = L.block;
    layer.n_experts = L.n_experts;
    std::vector<std::vector<SourceSlice>> lslices;
    const ExpertRole* gate = nullptr;
    const ExpertRole* up = nullptr;
    const ExpertRole* down = nullptr;
    for (const ExpertRole& r : L.roles) {
      const GgufTensorRef* ref = model.find_tensor(r.tensor);
      const GgufTensorInfo& t = *ref->info;
      PackRole pr;
      pr.role = r.role;
      pr.tensor = r.tensor;
      pr.type = r.type;
      std::vector<SourceSlice> sl(L.n_experts);
      if (r.stacked) {
        pr.n_dims = t.n_dims - 1;
        for (uint32_t d = 0; d < pr.n_dims; ++d) pr.ne[d] = t.ne[d];
        if (t.ne[t.n_dims - 1] != L.n_experts) {
          refuse(model, ref->shard, &t,
                 "has " + std::to_string(t.ne[t.n_dims - 1]) + " experts, other roles of " + blk + " have " +
                     std::to_string(L.n_experts));
        }
        if (t.nbytes % L.n_experts != 0)
          refuse(model, ref->shard, &t, "bytes do not divide into equal experts");
        pr.bytes = t.nbytes / L.n_experts;
        for (uint32_t e = 0; e < L.n_experts; ++e) sl[e] = {ref->shard, t.file_offset + e * pr.bytes};
        expert_tensors.insert(t.name);
      } else {
        pr.n_dims = t.n_dims;
        pr.ne = t.ne;
        pr.bytes = t.nbytes;
        for (uint32_t e = 0; e < L.n_experts; ++e) {
          const std::string name = legacy_name(L.block, r.role, e);
          const GgufTensorRef* te = model.find_tensor(name);
          if (te == nullptr)
            refuse(model, ref->shard, nullptr,
                   "tensor \"" + name + "\" (expert " + std::to_string(e) + " of " + blk + ") is missing");
          if (te->info->type != t.type || te->info->ne != t.ne) {
            refuse(model, te->shard, te->info,
                   "expert " + std::to_string(e) + " of " + blk + " has type " +
                       std::string(ggml_type_name(te->info->type)) + " shape " +
                       shape_str(te->info->ne, te->info->n_dims) + ", expert 0 has " +
                       std::string(ggml_type_name(t.type)) + " " + shape_str(t.ne, t.n_dims) +
                       "; experts of one layer must have the same shape");
          }
          sl[e] = {te->shard, te->info->file_offset};
          expert_tensors.insert(name);
        }
      }
      // One slice must be exactly ggml's size of (type, ne).
      uint64_t rows = 1;
      for (uint32_t d = 1; d < pr.n_dims; ++d) rows *= pr.ne[d];
      const auto row = ggml_row_bytes(pr.type, pr.ne[0]);
      const auto want = row ? checked_mul(*row, rows) : std::nullopt;
      if (!want || *want != pr.bytes) {
        refuse(model, ref->shard, &t,
               "one expert's slice is " + std::to_string(pr.bytes) + " bytes, but type " +
                   std::string(ggml_type_name(pr.type)) + " with shape " + shape_str(pr.ne, pr.n_dims) +
                   " needs " + (want ? std::to_string(*want) : std::string("(invalid)")));
      }
      if (r.role == "gate") gate = &r;
      if (r.role == "up") up = &r;
      if (r.role == "down") down = &r;
      layer.roles.push_back(pr);
      lslices.push_back(std::move(sl));
    }
    // FFN shape consistency: gate and up are [n_embd, n_ff], down is [n_ff, n_embd].
    auto slice_ne = [](const ExpertRole* r, int d) { return r->ne[static_cast<size_t>(d)]; };
    auto check_dim = [&](const ExpertRole* r, int d, std::optional<uint64_t> want, const char* key) {
      if (r == nullptr || !want || slice_ne(r, d) == *want) return;
      const GgufTensorRef* t = model.find_tensor(r->tensor);
      refuse(model, t->shard, t->info,
             "ne[" + std::to_string(d) + "] is " + std::to_string(slice_ne(r, d)) + " but " + arch + "." +
                 key + " is " + std::to_string(*want) + " (a tensor or shard of another model?)");
    };
    check_dim(gate, 0, n_embd, "embedding_length");
    check_dim(up, 0, n_embd, "embedding_length");
    check_dim(down, 1, n_embd, "embedding_length");
    check_dim(gate, 1, n_ff_exp, "expert_feed_forward_length");
    check_dim(up, 1, n_ff_exp, "expert_feed_forward_length");
    check_dim(down, 0, n_ff_exp, "expert_feed_forward_length");
    if (gate && up && (slice_ne(gate, 0) != slice_ne(up, 0) || slice_ne(gate, 1) != slice_ne(up, 1))) {
      const GgufTensorRef* t = model.find_tensor(up->tensor);
      refuse(model, t->shard, t->info,
             "shape " + shape_str(up->ne, 2) + " differs from " + gate->tensor + " " +
                 shape_str(gate->ne, 2) + " (experts of " + blk + " must agree)");
    }
    if (gate && down && (slice_ne(down, 0) != slice_ne(gate, 1) || slice_ne(down, 1) != slice_ne(gate, 0))) {
      const GgufTensorRef* t = model.find_tensor(down->tensor);
      refuse(model, t->shard, t->info,
             "shape " + shape_str(down->ne, 2) + " is not the transpose of " + gate->tensor + " " +
                 shape_str(gate->ne, 2) + " (experts of " + blk + " must agree)");
    }
    plan.layout.layers.push_back(std::move(layer));
    plan.slices.push_back(std::move(lslices));
  }
  compute_pack_layout(plan.layout);
  for (const PackLayer& L : plan.layout.layers) {
    for (const PackRole& r : L.roles) plan.expert_source_bytes += r.bytes * L.n_experts;
  }
  for (const GgufTensorRef& r : model.tensors()) {
    if (expert_tensors.count(r.info->name)) continue;
    plan.dense_tensors.push_back(r);
    plan.dense_data_bytes += r.info->nbytes;
  }
  return plan;
}

nlohmann::json pack_plan_summary(const GgufModel& model) {
  using nlohmann::json;
  try {
    const PackPlan plan = plan_pack(model);
    const PackLayout& L = plan.layout;
    const uint64_t dense = plan_dense_gguf(model, plan.dense_tensors, std::string(32, '0')).file_bytes;
    json layers = json::array();
    for (const PackLayer& ly : L.layers) {
      layers.push_back({{"block", ly.block},
                        {"n_experts", ly.n_experts},
                        {"block_bytes", ly.block_bytes},
                        {"stride", ly.stride}});
    }
    return {{"data_start", L.data_start},
            {"max_stride", L.max_stride},
            {"experts_bytes", L.data_end},
            {"padding_bytes", L.data_end - L.data_start - plan.expert_source_bytes},
            {"dense_bytes", dense},
            {"total_bytes", L.data_end + dense},
            {"layers", layers}};
  } catch (const Error& e) {
    return {{"error", e.what()}};
  }
}

std::string pack_plan_summary_text(const nlohmann::json& j) {
  if (j.contains("error")) return "Expert Pack:  cannot be built: " + j["error"].get<std::string>() + "\n";
  auto mib = [](uint64_t b) {
    char s[32];
    std::snprintf(s, sizeof s, "%.2f MiB", static_cast<double>(b) / (1 << 20));
    return std::string(s);
  };
  std::string o = "Expert Pack:  " + mib(j["total_bytes"].get<uint64_t>()) + " on disk = experts.bin " +
                  mib(j["experts_bytes"].get<uint64_t>()) + " (" + mib(j["padding_bytes"].get<uint64_t>()) +
                  " alignment padding) + dense.gguf " + mib(j["dense_bytes"].get<uint64_t>()) +
                  "; slot size " + std::to_string(j["max_stride"].get<uint64_t>()) + " B\n";
  for (const auto& ly : j["layers"]) {
    o += "  blk." + std::to_string(ly["block"].get<uint32_t>()) + ": " +
         std::to_string(ly["n_experts"].get<uint32_t>()) + " x stride " +
         std::to_string(ly["stride"].get<uint64_t>()) + " B (block " +
         std::to_string(ly["block_bytes"].get<uint64_t>()) + " B)\n";
  }
  return o;
}

}  // namespace moepack
