#include "gpu/cuda_device_router.h"

#include <cstdio>
#include <span>
#include <string>

#include "core/error.h"
#include "gpu/cuda_check.h"

namespace moepack::gpu {

void DeviceRouter::bind(const ModelConfig& cfg, const CudaRoutedExperts& experts,
                        const std::vector<std::vector<float>>& biases,
                        const std::vector<std::vector<int32_t>>& hash) {
  on_ = false;
  if (cfg.n_expert == 0 || !experts.resident() || !device_routing_supports(cfg)) return;
  // Hash tables: a row per token id, each k distinct ids in range (the kernel reads the row of
  // any valid token id, and its tables rank the chosen ids).
  const int64_t K = cfg.n_expert_used;
  const size_t blocks = biases.size(), rows = static_cast<size_t>(cfg.n_vocab) * static_cast<size_t>(K);
  size_t hash_ints = 0;
  for (size_t il = 0; il < hash.size() && il < blocks; ++il) {
    const std::vector<int32_t>& t = hash[il];
    const auto unusable = [&](const char* why) {
      std::fprintf(stderr, "moepack: blk.%zu's hash-routing table %s; experts are chosen on the host\n", il,
                   why);
    };
    if (t.empty()) continue;
    // ds4::hash_route (the host's) gates a hashed row with sqrt(softplus) whatever the model's
    // gating says; the kernel follows the gating, so any other gating stays on the host.
    if (cfg.gating != ExpertGating::SqrtSoftplus)
      return unusable("comes with a gating other than sqrt(softplus)");
    if (t.size() != rows) return unusable("is not one row per token id");
    for (size_t r = 0; r < t.size(); r += static_cast<size_t>(K)) {
      for (int64_t a = 0; a < K; ++a) {
        const int32_t e = t[r + static_cast<size_t>(a)];
        if (e < 0 || static_cast<uint32_t>(e) >= cfg.n_expert)
          return unusable("names an expert out of range");
        for (int64_t b = 0; b < a; ++b) {
          if (t[r + static_cast<size_t>(b)] == e) return unusable("names an expert twice in a row");
        }
      }
    }
    hash_ints += t.size();
  }
  spec_ = device_route_spec(cfg);
  const int64_t X = cfg.n_expert;
  choice_bytes_ = device_choice_bytes(spec_.k);
  choices_.allocate(static_cast<size_t>(choice_bytes_) * blocks, "routing choices");
  choices_host_.allocate(static_cast<size_t>(choice_bytes_) * blocks, "routing choices");
  biases_.allocate(static_cast<size_t>(X) * blocks * sizeof(float), "routing biases");
  bias_of_.assign(blocks, nullptr);
  for (size_t il = 0; il < blocks; ++il) {
    if (biases[il].empty()) continue;
    if (static_cast<int64_t>(biases[il].size()) != X) {
      throw Error("internal: blk." + std::to_string(il) + " has " + std::to_string(biases[il].size()) +
                  " routing biases for " + std::to_string(X) + " experts");
    }
    float* d = biases_.as<float>() + static_cast<int64_t>(il) * X;
    MOEPACK_CUDA_CHECK(
        cudaMemcpy(d, biases[il].data(), static_cast<size_t>(X) * sizeof(float), cudaMemcpyHostToDevice));
    bias_of_[il] = d;
  }
  hash_of_.assign(blocks, nullptr);
  if (hash_ints) {
    hash_.allocate(hash_ints * sizeof(int32_t), "hash-routing tables");
    size_t at = 0;
    for (size_t il = 0; il < hash.size() && il < blocks; ++il) {
      if (hash[il].empty()) continue;
      int32_t* d = hash_.as<int32_t>() + at;
      MOEPACK_CUDA_CHECK(
          cudaMemcpy(d, hash[il].data(), hash[il].size() * sizeof(int32_t), cudaMemcpyHostToDevice));
      hash_of_[il] = d;
      at += hash[il].size();
    }
  }
  on_ = true;
}

uint64_t DeviceRouter::run_block(uint32_t il, const DevMatrix& router, const float* x, float* scores,
                                 CudaRoutedExperts& experts, const std::function<void()>& beside, float* out,
                                 cudaStream_t st, const int32_t* token, float limit) {
  if (!on_ || il >= bias_of_.size() || (hash_of_[il] && !token))
    throw Error("internal: blk." + std::to_string(il) + " cannot route on the GPU");
  dev_matmul(router, x, router.ne0, 1, scores, spec_.n_expert, st);
  const DeviceChoice c = choice_of(choices_.as<uint8_t>(), il);
  route_on_device(spec_, scores, 1, bias_of_[il], c, experts.bases(il), st, hash_of_[il], token);
  if (beside) beside();
  const uint64_t computed = experts.run_decode_on_device(il, x, c, limit, out, st);
  routed_.push_back(il);
  return computed;
}

void DeviceRouter::copy_back(const RoutingObserver& observer, cudaStream_t st, bool always) {
  copied_ = (observer || always) && !routed_.empty();
  if (!copied_) return;
  MOEPACK_CUDA_CHECK(cudaMemcpyAsync(choices_host_.as<void>(), choices_.as<void>(), choices_host_.size(),
                                     cudaMemcpyDeviceToHost, st));
}

void DeviceRouter::report(const RoutingObserver& observer, uint32_t pos) {
  if (!copied_ || !observer) return;
  copied_ = false;
  const size_t K = static_cast<size_t>(spec_.k);
  for (const uint32_t il : routed_) {
    const DeviceChoice c = choice_of(choices_host_.as<uint8_t>(), il);
    observer(il, pos, std::span<const int32_t>(c.ids, K), std::span<const float>(c.weights, K));
  }
}

}  // namespace moepack::gpu
