// The `deepseek4` block's own per-token operations as pure functions: the CPU reference
// (arch_deepseek4.cpp) calls them, and the CUDA kernels of gpu/kernels_deepseek4.h are tested
// against them. Formulas: ../shared/docs/ARCH_DEEPSEEK4.md (sections cited per function).
// All arrays are F32, row-major, caller-allocated; nothing here throws or allocates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moepack {
class GgufModel;
struct ModelConfig;
}  // namespace moepack

namespace moepack::ds4 {

// §4.8 hash routing table blk.N.ffn_gate_tid2eid.weight: I32 [n_vocab][k] (k = n_expert_used),
// every id < n_expert. Throws FormatError naming the file (`file` when the tensor is missing,
// else its shard), the tensor and its info offset.
std::vector<int32_t> read_tid2eid(const GgufModel& g, const ModelConfig& cfg, const std::string& name,
                                  const std::string& file);

// §4.8 weights of a hash-routed token: ids = the table row (in its order), w[j] =
// sqrt_softplus_gate(logits[ids[j]]) (core/moe_routing.h), divided by max(Σ, 2^-14) when
// cfg.expert_weights_norm, times cfg.expert_weights_scale. logits [n_expert]; row, ids, w [K].
void hash_route(const ModelConfig& cfg, const float* logits, const int32_t* row, int32_t* ids, float* w);

// §4.2 hyper-connection weights of one token from its mixing logits
// mix [(2+HC)*HC] (= fn · rmsnorm(S), S the HC streams), base [(2+HC)*HC], scale [3]:
//   pre[s]  = sigmoid(mix[s]·scale0 + base[s]) + eps                           [HC]
//   post[s] = 2·sigmoid(mix[HC+s]·scale1 + base[HC+s])                           [HC]
//   M[dst*HC + src] = Sinkhorn(softmax_dst(mix[2HC + HC·src + dst]·scale2 + base) + eps),
//                     `iters` alternations (rows first), each normalisation dividing by sum + eps.
// HC <= 8.
void hc_weights(const float* mix, const float* base, const float* scale, int64_t HC, uint32_t iters,
                float eps, float* pre, float* post, float* M);

// §4.2: h[c] = Σ_s pre[s]·S[s*E + c], c < E, summed in s order. S [HC][E].
void hc_collapse(const float* S, const float* pre, int64_t HC, int64_t E, float* h);

// §4.3: S'[dst] = post[dst]·y + Σ_src M[dst*HC + src]·S[src] (src order), S [HC][E] in place.
// scratch: HC*E floats.
void hc_expand(float* S, const float* y, const float* post, const float* M, int64_t HC, int64_t E,
               float* scratch);

// §4.6 pooling of compressed row b (block start s = b·m) before its RMSNorm and RoPE:
// kappa[ch] = Σ_e softmax_e(g_e[ch])·a_e[ch], ch < d, over the entries e in this order:
// overlapping (c = 2, needs s >= m): positions s-m .. s-1 at channel offset 0 (first halves);
// then positions s .. s+m-1 at channel offset d when c = 2, else 0. a, g: rings of `ring` slots
// of c·d floats (position j in slot j mod ring).
void compress_pool(const float* a, const float* g, int64_t ring, int64_t d, int64_t c, int64_t m, int64_t s,
                   float* kappa);

// §4.7 lightning-indexer score of one query against compressed row `row` [DI]:
// Σ_h w[h]·wscale·max(0, q[h]·row), h < HI in order (q [HI][DI], dot products as dot_f32).
float indexer_score(const float* q, const float* w, const float* row, int64_t HI, int64_t DI, float wscale);

// §4.5 attention of one query head over n keys (values = keys) with an attention sink:
//   s_j = (q·k_j)·kq_scale (dot_f32), p = softmax over [sink, s_0 .. s_{n-1}],
//   out[c] = Σ_j p_j·k_j[c] (j order; the sink contributes no value). scores: n floats.
// out [D] is not de-roped here.
void attend_sink(const float* q, const float* const* keys, int64_t n, float sink, int64_t D, float kq_scale,
                 float* scores, float* out);

}  // namespace moepack::ds4
