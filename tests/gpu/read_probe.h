// bench_cuda_backend only: the read bandwidth a plain streaming kernel reaches over the same
// bytes a GEMV launch reads (the ceiling a decode GEMV of that size can approach).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace moepack::gpu::bench {

// Reads `bytes` (a multiple of 64) at p (16-aligned) with 16-byte streaming loads, four
// independent loads in flight per thread, one grid-stride sweep of 4 blocks of 256 threads per
// SM; XOR-folds them into *sink (so no load is dropped). Asynchronous on s; errors via
// cudaGetLastError.
void read_probe(const void* p, size_t bytes, uint32_t* sink, int sm_count, cudaStream_t s);

}  // namespace moepack::gpu::bench
