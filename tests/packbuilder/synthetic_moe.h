// A large synthetic MoE GGUF for the slow tests and the benchmark: qwen3moe-shaped, q8_0
// experts (n_embd 2048, expert width 768, 32 experts; 5.0 MB per expert, 160 MB per layer),
// pseudo-random tensor bytes (xorshift64*, so every expert hashes differently), enough layers
// to reach `min_bytes`. The header comes from the test GGUF writer; data is streamed to disk.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/gguf_writer.h"

namespace moepack::test {

inline uint64_t write_synthetic_moe(const std::string& path, uint64_t min_bytes, uint64_t seed = 1) {
  const uint64_t n_embd = 2048, n_ff = 768, n_exp = 32;
  const uint64_t layer_bytes = 3 * n_exp * (n_embd / 32 * 34) * n_ff;
  const uint64_t n_layers = (min_bytes + layer_bytes - 1) / layer_bytes;
  GgufWriter w;
  w.write_data = false;
  w.kv("general.architecture", TV::str("qwen3moe"));
  w.kv("general.name", TV::str("synthetic-moe"));
  w.kv("qwen3moe.block_count", TV::u32(static_cast<uint32_t>(n_layers)));
  w.kv("qwen3moe.embedding_length", TV::u32(static_cast<uint32_t>(n_embd)));
  w.kv("qwen3moe.expert_feed_forward_length", TV::u32(static_cast<uint32_t>(n_ff)));
  w.kv("qwen3moe.expert_count", TV::u32(static_cast<uint32_t>(n_exp)));
  w.kv("qwen3moe.expert_used_count", TV::u32(8));
  w.tensor("token_embd.weight", kQ8_0, {n_embd, 1000});
  for (uint64_t b = 0; b < n_layers; ++b) {
    const std::string p = "blk." + std::to_string(b) + ".";
    w.tensor(p + "ffn_gate_inp.weight", kF32, {n_embd, n_exp});
    w.tensor(p + "ffn_gate_exps.weight", kQ8_0, {n_embd, n_ff, n_exp});
    w.tensor(p + "ffn_up_exps.weight", kQ8_0, {n_embd, n_ff, n_exp});
    w.tensor(p + "ffn_down_exps.weight", kQ8_0, {n_ff, n_embd, n_exp});
  }
  GgufLayout lay;
  const std::vector<uint8_t> head = w.build(&lay);
  uint64_t end = 0;
  for (size_t k = 0; k < lay.tensor_offset.size(); ++k)
    end = std::max(end, lay.tensor_offset[k] + lay.tensor_bytes[k]);
  const uint64_t total = lay.data_start + end;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": cannot create");
  auto put = [&](const void* p, size_t n, uint64_t off) {
    const auto* c = static_cast<const uint8_t*>(p);
    while (n > 0) {
      const ssize_t r = ::pwrite(fd, c, n, static_cast<off_t>(off));
      if (r <= 0) {
        ::close(fd);
        throw std::runtime_error(path + ": write failed");
      }
      c += r;
      off += static_cast<uint64_t>(r);
      n -= static_cast<size_t>(r);
    }
  };
  put(head.data(), head.size(), 0);
  std::vector<uint64_t> buf(1u << 20);  // 8 MiB
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t off = lay.data_start; off < total;) {
    for (uint64_t& v : buf) {
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      v = x * 2685821657736338717ull;
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size() * 8, total - off));
    put(buf.data(), n, off);
    off += n;
  }
  ::close(fd);
  return total;
}

}  // namespace moepack::test
