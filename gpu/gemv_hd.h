// MOEPACK_GEMV_HD: __host__ __device__ under nvcc, nothing for the host compiler, for the GEMV's
// arithmetic headers that the CPU tests compile too (gpu/gemv_launch_cap.h, gpu/gemv_quant_words.h).
#pragma once

#if defined(__CUDACC__)
#define MOEPACK_GEMV_HD __host__ __device__
#else
#define MOEPACK_GEMV_HD
#endif
