#include "core/pack_layout.h"

#include <regex>

#include "core/checked.h"
#include "core/error.h"

namespace moepack {
namespace {

uint64_t need(std::optional<uint64_t> v, const char* what) {
  if (!v) throw Error(std::string("Expert Pack layout: ") + what + " overflows 64 bits");
  return *v;
}

}  // namespace

uint64_t PackLayout::expert_count() const {
  uint64_t n = 0;
  for (const PackLayer& L : layers) n += L.n_experts;
  return n;
}

uint64_t PackLayout::offset(uint32_t l, uint32_t e) const {
  if (l >= layers.size()) {
    throw Error("Expert Pack: layer " + std::to_string(l) + " out of range (" +
                std::to_string(layers.size()) + " layers)");
  }
  const PackLayer& L = layers[l];
  if (e >= L.n_experts) {
    throw Error("Expert Pack: expert " + std::to_string(e) + " out of range (layer " + std::to_string(l) +
                " has " + std::to_string(L.n_experts) + ")");
  }
  return L.base + static_cast<uint64_t>(e) * L.stride;  // cannot overflow: checked by compute_pack_layout
}

uint64_t pack_header_bytes(uint64_t n_layers) {
  const uint64_t raw = need(checked_add(96, need(checked_mul(n_layers, 32), "header")), "header");
  return need(checked_align_up(raw, kPackAlignment), "header");
}

void compute_pack_layout(PackLayout& layout) {
  if (layout.layers.empty()) throw Error("Expert Pack layout: no layers with routed experts");
  layout.data_start = pack_header_bytes(layout.layers.size());
  uint64_t base = layout.data_start;
  layout.max_stride = 0;
  for (size_t l = 0; l < layout.layers.size(); ++l) {
    PackLayer& L = layout.layers[l];
    const std::string where = "layer " + std::to_string(l) + " (blk." + std::to_string(L.block) + ")";
    if (L.n_experts == 0) throw Error("Expert Pack layout: " + where + " has no experts");
    if (L.roles.empty()) throw Error("Expert Pack layout: " + where + " has no roles");
    uint64_t at = 0;
    for (PackRole& r : L.roles) {
      if (r.bytes == 0) throw Error("Expert Pack layout: " + where + " role " + r.role + " has 0 bytes");
      r.offset = need(checked_align_up(at, kPackRoleAlignment), "role offset");
      at = need(checked_add(r.offset, r.bytes), "block size");
    }
    L.block_bytes = at;
    L.stride = need(checked_align_up(at, kPackAlignment), "stride");
    L.base = base;
    base = need(checked_add(base, need(checked_mul(L.n_experts, L.stride), "layer size")), "layer base");
    if (L.stride > layout.max_stride) layout.max_stride = L.stride;
  }
  layout.data_end = base;
}

int expert_role_rank(const std::string& role) {
  if (role == "gate") return 0;
  if (role == "up") return 1;
  if (role == "down") return 2;
  if (role == "gate_up") return 3;
  return 4;
}

bool expert_role_of_tensor(const std::string& tensor, std::string& role, uint32_t& block) {
  static const std::regex stacked(R"(^blk\.([0-9]{1,9})\.ffn_([a-z0-9_]+)_exps\.(weight|bias)$)");
  static const std::regex legacy(R"(^blk\.([0-9]{1,9})\.ffn_(gate|up|down)\.[0-9]+\.weight$)");
  std::smatch m;
  if (std::regex_match(tensor, m, stacked)) {
    role = m[2].str() + (m[3].str() == "bias" ? ".bias" : "");
  } else if (std::regex_match(tensor, m, legacy)) {
    role = m[2].str();
  } else {
    return false;
  }
  block = static_cast<uint32_t>(std::stoul(m[1].str()));
  return true;
}

}  // namespace moepack
