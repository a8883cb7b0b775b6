// Every CUDA call is checked; a failure throws moepack::Error naming the call, file and line.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/error.h"

#define MOEPACK_CUDA_CHECK(call)                                                                 \
  do {                                                                                           \
    const cudaError_t moepack_err_ = (call);                                                     \
    if (moepack_err_ != cudaSuccess) {                                                           \
      throw ::moepack::Error(std::string(#call) + " failed at " + __FILE__ + ":" +               \
                             std::to_string(__LINE__) + ": " + cudaGetErrorString(moepack_err_)); \
    }                                                                                            \
  } while (0)
