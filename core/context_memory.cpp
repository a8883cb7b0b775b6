#include "core/context_memory.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace moepack {

ContextMemory context_memory(const ModelConfig& c) {
  ContextMemory m;
  const uint32_t L = c.n_layer_run();
  std::ostringstream f;
  if (c.arch == "llama" || c.arch == "qwen3moe") {
    m.bytes_per_token = 2.0 * L * c.n_head_kv * (c.n_embd_head_k + c.n_embd_head_v);
    f << L << " layers x " << c.n_head_kv << " KV heads x (" << c.n_embd_head_k << " + " << c.n_embd_head_v
      << ") values x 2 B per token";
  } else if (c.arch == "deepseek2") {
    m.bytes_per_token = 2.0 * L * (c.kv_lora_rank + c.n_rot);
    f << L << " MLA layers x (" << c.kv_lora_rank << " latent + " << c.n_rot << " rope) values x 2 B per token";
  } else if (c.arch == "deepseek4") {
    const double D = c.n_embd_head_k, DI = c.indexer_head_dim;
    uint32_t csa = 0, hca = 0;
    for (uint32_t il = 0; il < L && il < c.compress_ratios.size(); ++il) {
      csa += c.compress_ratios[il] == 4;
      hca += c.compress_ratios[il] == 128;
    }
    m.bytes_per_token = csa * (D + DI) * 2.0 / 4.0 + hca * D * 2.0 / 128.0;
    const double window = static_cast<double>(L) * c.n_swa * D * 2.0;
    const double states = csa * (8 * 2 * D + 8 * 2 * DI) * 2 * 4 + hca * 128 * D * 2 * 4;
    m.fixed_bytes = static_cast<uint64_t>(window + states);
    f << csa << " CSA blocks x (" << D << " + " << DI << ") x 2 B / 4 tokens + " << hca << " HCA blocks x " << D
      << " x 2 B / 128 tokens per token; fixed: " << L << " x " << c.n_swa << "-token raw window + compressor states";
  } else if (c.arch == "kimi-linear") {
    uint32_t mla = 0, kda = 0;
    for (uint32_t il = 0; il < L; ++il) (c.is_kda_layer(il) ? kda : mla) += 1;
    const double d_in = static_cast<double>(c.n_head) * c.kda_head_dim;
    m.bytes_per_token = 2.0 * mla * (c.kv_lora_rank + c.n_rot);
    const double per_kda = (3.0 * (c.ssm_conv_kernel - 1) * d_in + c.n_head * double(c.kda_head_dim) * c.kda_head_dim) * 4;
    m.fixed_bytes = static_cast<uint64_t>(kda * per_kda);
    f << mla << " MLA layers x (" << c.kv_lora_rank << " + " << c.n_rot << ") values x 2 B per token; fixed: " << kda
      << " KDA layers x (conv history + " << c.n_head << " x " << c.kda_head_dim << "^2 state) F32";
  } else {
    throw Error("context memory: architecture '" + c.arch + "' is unknown");
  }
  m.formula = f.str();
  return m;
}

nlohmann::json context_memory_json(const ModelConfig& cfg, const ContextMemory& m) {
  nlohmann::json at = nlohmann::json::object();
  for (uint64_t n : {4096ull, 32768ull, 131072ull, static_cast<unsigned long long>(cfg.n_ctx_train)}) {
    at[std::to_string(n)] = m.bytes_for(n);
  }
  return {{"bytes_per_token", m.bytes_per_token}, {"fixed_bytes", m.fixed_bytes}, {"formula", m.formula},
          {"bytes_at", at}, {"cache_types", "rows F16, states F32 (llama.cpp defaults)"}};
}

std::string context_memory_text(const ModelConfig& cfg, const ContextMemory& m) {
  char buf[256];
  std::ostringstream o;
  std::snprintf(buf, sizeof buf, "context:      %.1f B/token + %.2f MiB fixed per sequence (F16 rows, F32 states)\n",
                m.bytes_per_token, static_cast<double>(m.fixed_bytes) / (1 << 20));
  o << buf << "  " << m.formula << "\n";
  // Ascending, the trained context marked; sizes above it are listed only when it is unknown
  // (0): a model cannot use them.
  std::vector<uint64_t> sizes = {4096, 32768, cfg.n_ctx_train};
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (const uint64_t n : sizes) {
    if (n == 0 || (cfg.n_ctx_train != 0 && n > cfg.n_ctx_train)) continue;
    std::snprintf(buf, sizeof buf, "  at %llu tokens%s: %.2f MiB\n", static_cast<unsigned long long>(n),
                  n == cfg.n_ctx_train ? " (trained context)" : "",
                  static_cast<double>(m.bytes_for(n)) / (1 << 20));
    o << buf;
  }
  return o.str();
}

}  // namespace moepack
