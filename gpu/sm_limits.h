// A multiprocessor's limits of another compute capability, emulated on the device at hand
// (fifty-sixth session): the product's target card, an RTX 50xx (sm_120), has 100 KiB of shared
// memory an SM where an H100 / H200 (sm_90) has 228 KiB, a block's opt-in maximum of 99 KiB
// (227 KiB), 1536 threads an SM (2048) and 24 blocks an SM (32). The launch choices the CUDA backend
// reads from the device (ring depths and x's fragments staged or not, the blocks-per-SM cap's
// padding, the dense K split's occupancy on rows of 4096 elements or more, the one-launch FFN's
// grid) can then be run and checked against the CPU reference on an sm_90 card, with
// `MOEPACK_GPU_LIMITS=sm_120` in the environment (kernels_gemv_mma.cu, emulated_sm_limits). Not
// emulated: the SM count (it stays the device's own: the one-launch FFN's grid must be resident at
// once, and an RTX 5090's 170 SMs are more than an H100's 132); the sm_120 code itself (its
// registers, its speed). The blocks an SM that gpu/gemm_mma_layout.h's prefill rules take as constants
// (measured on an H100: the half-unit x rule, the K split of rows under 4096 elements) are capped by the
// device's shared memory an SM (fifty-seventh session: kernels_gemv.cu prefill_rule_blocks_per_sm, with
// smem_blocks_per_sm below), which the emulation and a real sm_120 card give alike.
//
// Arithmetic only, no CUDA runtime, so the CPU tests cover it (tests/gpu/gemv_launch_cap_test.cpp).
#pragma once

#include <algorithm>
#include <cstdint>

namespace moepack::gpu::detail {

// A compute capability's per-SM limits. Source: NVIDIA's CUDA C++ Programming Guide, "Technical
// Specifications per Compute Capability" (12.0: 100 KB of shared memory an SM, 99 KB a block, 1 KB
// reserved a block, 1536 threads and 24 blocks an SM; the same values in CCCL's
// cuda/__device/arch_traits.h). Registers (64 K 32-bit an SM, 255 a thread) are the same on sm_90 and
// sm_120, so the device's own occupancy calculator already counts them.
struct SmLimits {
  const char* name;
  int64_t smem_per_sm;         // bytes of shared memory an SM gives its blocks
  int64_t reserved_per_block;  // bytes the system keeps per block
  int64_t optin_per_block;     // a block's largest static + dynamic shared memory, opted in
  int64_t max_threads_per_sm;
  int64_t max_blocks_per_sm;
};
inline constexpr SmLimits kSm120Limits{"sm_120", 100 * 1024, 1024, 99 * 1024, 1536, 24};

// Shared memory is given to blocks in units of 128 bytes (the CUDA Occupancy Calculator's
// "shared memory allocation unit size" for compute capabilities 8.0 and later).
inline constexpr int64_t kSmemAllocationUnit = 128;

// Blocks of `smem` bytes of shared memory (a kernel's static plus a launch's dynamic bytes) an SM of
// smem_per_sm bytes holds, each taking reserved_per_block more, rounded up to kSmemAllocationUnit:
// smem_per_sm / ceil((smem + reserved_per_block) / 128) / 128 (the CUDA Occupancy Calculator's shared
// memory limit). 0 for smem < 0; a block of no bytes at all (no reserved bytes: devices before sm_80)
// counts as one unit.
constexpr int64_t smem_blocks_per_sm(int64_t smem_per_sm, int64_t reserved_per_block, int64_t smem) {
  if (smem < 0) return 0;
  const int64_t per_block =
      std::max(kSmemAllocationUnit, (smem + reserved_per_block + kSmemAllocationUnit - 1) /
                                        kSmemAllocationUnit * kSmemAllocationUnit);
  return smem_per_sm / per_block;
}

// Blocks of `threads` threads and `smem` bytes of shared memory (the kernel's static plus the
// launch's dynamic bytes) an SM holds under `lim`, given `device_blocks` (what the device's own
// occupancy calculator says for the kernel: its registers): the least of device_blocks, the SM's
// warps over a block's (max_threads_per_sm / 32 over ceil(threads / 32): warps are allocated
// whole), max_blocks_per_sm and smem_per_sm / (smem + reserved_per_block rounded up to
// kSmemAllocationUnit). 0 for threads <= 0 or smem < 0; 0 where smem passes optin_per_block (the
// launch would fail on such a card).
constexpr int64_t emulated_blocks_per_sm(const SmLimits& lim, int64_t device_blocks, int64_t threads,
                                         int64_t smem) {
  if (threads <= 0 || smem < 0 || smem > lim.optin_per_block || device_blocks <= 0) return 0;
  return std::min({device_blocks, lim.max_threads_per_sm / 32 / ((threads + 31) / 32), lim.max_blocks_per_sm,
                   smem_blocks_per_sm(lim.smem_per_sm, lim.reserved_per_block, smem)});
}

}  // namespace moepack::gpu::detail
