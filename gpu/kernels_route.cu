// The router's choice on the GPU: gpu/device_routing.h says what is computed and why it equals
// core's route_token bit for bit. One warp per token; lane j owns experts i = j mod 32.
#include <atomic>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/route_math.h"
#include "gpu/cuda_check.h"
#include "gpu/device_routing.h"

namespace moepack::gpu {
namespace {

constexpr unsigned kFull = 0xFFFFFFFFu;
std::atomic<bool> g_on_device{true};
std::atomic<uint64_t> g_routed_blocks{0};

// route_token's comparison: a before b when sel[a] > sel[b], ties to the lower id. i < 0: none.
// The values are keys (key()): NaN compares as -inf, so the order is total and every lane of
// the butterfly agrees on the winner even for NaN scores (route_token's own order is then
// unspecified; the ids stay distinct and in range).
__device__ __forceinline__ float key(float v) { return v != v ? -INFINITY : v; }
__device__ __forceinline__ bool before(float va, int ia, float vb, int ib) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  return va > vb || (va == vb && ia < ib);
}

// route_token's per-expert gate of a score (not softmax, which needs every score).
__device__ __forceinline__ float gate(const DeviceRouteSpec& p, float s) {
  return p.sqrt_softplus ? sqrtf(route_softplusf(s)) : 1.0f / (1.0f + route_expf(-s));
}

__global__ void __launch_bounds__(32)
    route_kernel(DeviceRouteSpec p, const float* __restrict__ scores, const float* __restrict__ bias,
                 DeviceChoice out, ExpertBases bases, const int32_t* __restrict__ hash,
                 const int32_t* __restrict__ tokens) {
  extern __shared__ float sh[];
  __shared__ int32_t sid[kDeviceRouteMaxK];
  __shared__ float sw[kDeviceRouteMaxK];
  const int X = p.n_expert, K = p.k;
  const int lane = static_cast<int>(threadIdx.x);
  const int64_t tok = blockIdx.x;
  float* probs = sh;
  float* sel = sh + X;
  const float* s = scores + tok * X;

  // Probabilities (route_token: softmax_gate / sigmoid), then the selection values.
  if (p.softmax) {
    float mx = -INFINITY;
    for (int i = lane; i < X; i += 32) mx = mx < s[i] ? s[i] : mx;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float v = __shfl_xor_sync(kFull, mx, o);
      mx = mx < v ? v : mx;
    }
    double part = 0.0;
    for (int i = lane; i < X; i += 32) {
      const float e = s[i] == -INFINITY ? 0.0f : route_expf(s[i] - mx);
      probs[i] = e;
      part += static_cast<double>(e);
    }
    double sum = 0.0;
    for (int j = 0; j < 32; ++j) sum += __shfl_sync(kFull, part, j);
    const float inv = static_cast<float>(1.0 / sum);
    for (int i = lane; i < X; i += 32) probs[i] *= inv;
  } else if (!hash) {
    // (A hash-routed block needs only its k experts' gates: taken below, one lane each, so the
    // double arithmetic of route_softplusf runs k times instead of X.)
    for (int i = lane; i < X; i += 32) probs[i] = gate(p, s[i]);
  }
  if (hash) {  // ds4::hash_route: the token's row, in its order (k distinct ids: DeviceRouter::bind)
    __syncwarp();
    if (lane < K) {
      const int32_t e = hash[static_cast<int64_t>(tokens[tok]) * K + lane];
      sid[lane] = e;
      if (!p.softmax) probs[e] = gate(p, s[e]);
    }
  } else {
    for (int i = lane; i < X; i += 32) sel[i] = bias ? probs[i] + bias[i] : probs[i];
    __syncwarp();

    // Group-limited routing: keep the n_group_used groups of the best scores.
    if (p.n_groups > 1) {
      const int groups = p.n_groups, per = X / groups;
      float gs = -INFINITY;
      if (lane < groups) {
        float a = -INFINITY, b = -INFINITY;
        for (int j = 0; j < per; ++j) {
          const float v = sel[lane * per + j];
          if (v > a) {
            b = a;
            a = v;
          } else if (v > b) {
            b = v;
          }
        }
        gs = per >= 2 ? a + b : a;
      }
      int rank = 0;
      for (int h = 0; h < groups; ++h) {
        const float v = __shfl_sync(kFull, gs, h);
        rank += (v > gs || (v == gs && h < lane)) ? 1 : 0;
      }
      const unsigned keep = __ballot_sync(kFull, lane < groups && rank < p.n_group_used);
      for (int i = lane; i < groups * per; i += 32) {
        if (!((keep >> (i / per)) & 1u)) sel[i] = -INFINITY;
      }
      __syncwarp();
    }

    // Top-k: K rounds of the warp's first expert under route_token's comparison.
    uint32_t taken = 0;  // bit j: expert lane + 32 j
    for (int kk = 0; kk < K; ++kk) {
      float bv = 0.0f;
      int bi = -1;
      for (int j = 0, i = lane; i < X; ++j, i += 32) {
        if ((taken >> j) & 1u) continue;
        const float v = key(sel[i]);
        if (bi < 0 || v > bv) bv = v, bi = i;  // increasing i: a tie keeps the lower id
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const float v = __shfl_xor_sync(kFull, bv, o);
        const int i = __shfl_xor_sync(kFull, bi, o);
        if (before(v, i, bv, bi)) bv = v, bi = i;
      }
      if (bi >= 0 && (bi & 31) == lane) taken |= 1u << (bi >> 5);
      if (lane == 0) sid[kk] = bi;
    }
  }
  __syncwarp();

  // Weights, in k order on one lane (route_token's and hash_route's sums).
  if (lane == 0) {
    float sum = 0.0f;
    for (int kk = 0; kk < K; ++kk) {
      sw[kk] = probs[sid[kk]];
      sum += sw[kk];
    }
    if (p.norm) {
      const float denom = sum < 6.103515625e-5f ? 6.103515625e-5f : sum;  // std::max(sum, 2^-14)
      for (int kk = 0; kk < K; ++kk) sw[kk] /= denom;
    }
    if (p.scale != 1.0f) {
      for (int kk = 0; kk < K; ++kk) sw[kk] *= p.scale;
    }
  }
  __syncwarp();
  if (lane < K) {
    const int32_t e = sid[lane];
    out.ids[tok * K + lane] = e;
    out.weights[tok * K + lane] = sw[lane];
    if (out.table) {
      // The host path's groups: the chosen experts in increasing id (distinct: top-k).
      int rank = 0;
      for (int j = 0; j < K; ++j) rank += sid[j] < e ? 1 : 0;
      out.pair_of[lane] = rank;
      const uint64_t eu = static_cast<uint64_t>(e);
      if (bases.table) {
        const int64_t X = p.n_expert;
        out.table[rank] = bases.table[eu];
        out.table[K + rank] = bases.table[X + eu];
        out.table[2 * K + rank] = bases.table[2 * X + eu];
      } else {
        out.table[rank] = bases.gate + eu * bases.gate_stride;
        out.table[K + rank] = bases.up + eu * bases.up_stride;
        out.table[2 * K + rank] = bases.down + eu * bases.down_stride;
      }
    }
  }
}

}  // namespace

void set_router_on_device(bool on) { g_on_device.store(on, std::memory_order_relaxed); }
bool router_on_device() { return g_on_device.load(std::memory_order_relaxed); }
uint64_t device_routed_blocks() { return g_routed_blocks.load(std::memory_order_relaxed); }

bool device_routing_supports(const ModelConfig& cfg) {
  const bool gating = cfg.gating == ExpertGating::Softmax || cfg.gating == ExpertGating::Sigmoid ||
                      cfg.gating == ExpertGating::SqrtSoftplus;
  const int64_t X = cfg.n_expert, K = cfg.n_expert_used;
  return gating && X >= 1 && X <= kDeviceRouteMaxExperts && K >= 1 && K <= kDeviceRouteMaxK && K <= X &&
         cfg.n_expert_groups <= static_cast<uint32_t>(kDeviceRouteMaxGroups) &&
         (cfg.n_expert_groups <= 1 || cfg.n_group_used >= 1);
}

DeviceRouteSpec device_route_spec(const ModelConfig& cfg) {
  if (!device_routing_supports(cfg)) {
    throw Error("routing on the GPU: " + cfg.arch + " (" + std::to_string(cfg.n_expert) + " experts, top-" +
                std::to_string(cfg.n_expert_used) + ", " + std::to_string(cfg.n_expert_groups) +
                " groups) is outside what the kernel computes");
  }
  DeviceRouteSpec p;
  p.n_expert = static_cast<int32_t>(cfg.n_expert);
  p.k = static_cast<int32_t>(cfg.n_expert_used);
  p.softmax = cfg.gating == ExpertGating::Softmax;
  p.sqrt_softplus = cfg.gating == ExpertGating::SqrtSoftplus;
  p.n_groups = cfg.n_expert_groups > 1 ? static_cast<int32_t>(cfg.n_expert_groups) : 1;
  p.n_group_used = static_cast<int32_t>(cfg.n_group_used);
  p.norm = cfg.expert_weights_norm;
  p.scale = cfg.expert_weights_scale;
  return p;
}

int64_t device_choice_bytes(int32_t k) {
  const int64_t ints = 3 * static_cast<int64_t>(k) * 4;  // ids, weights, pair_of
  return (ints + 7) / 8 * 8 + 3 * static_cast<int64_t>(k) * 8;
}

DeviceChoice device_choice_at(void* base, int32_t k) {
  auto* b = static_cast<uint8_t*>(base);
  DeviceChoice c;
  c.ids = reinterpret_cast<int32_t*>(b);
  c.weights = reinterpret_cast<float*>(b + 4 * k);
  c.pair_of = reinterpret_cast<int32_t*>(b + 8 * k);
  c.table = reinterpret_cast<const uint8_t**>(b + (12 * static_cast<int64_t>(k) + 7) / 8 * 8);
  return c;
}

void route_on_device(const DeviceRouteSpec& p, const float* scores, int32_t n_tok, const float* bias,
                     const DeviceChoice& out, const ExpertBases& bases, cudaStream_t s, const int32_t* hash,
                     const int32_t* tokens) {
  if (p.n_expert < 1 || p.n_expert > kDeviceRouteMaxExperts || p.k < 1 || p.k > kDeviceRouteMaxK ||
      p.k > p.n_expert || p.n_groups > kDeviceRouteMaxGroups || (p.n_groups > 1 && p.n_group_used < 1)) {
    throw Error("route_on_device: " + std::to_string(p.n_expert) + " experts, top-" + std::to_string(p.k) +
                ", " + std::to_string(p.n_groups) + " groups (" + std::to_string(p.n_group_used) +
                " used) is outside the kernel's limits");
  }
  if (n_tok < 1 || n_tok > 65535) throw Error("route_on_device: " + std::to_string(n_tok) + " tokens");
  if (!out.ids || !out.weights) throw Error("route_on_device: no output for the ids or weights");
  if ((out.table == nullptr) != (out.pair_of == nullptr) || (out.table && n_tok != 1)) {
    throw Error("route_on_device: the decode tables need one token and both table and pair_of");
  }
  if (hash && !tokens) throw Error("route_on_device: hash routing without the token ids");
  const size_t smem = 2 * static_cast<size_t>(p.n_expert) * sizeof(float);
  route_kernel<<<static_cast<unsigned>(n_tok), 32, smem, s>>>(p, scores, bias, out, bases, hash, tokens);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
  if (out.table) g_routed_blocks.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace moepack::gpu
