// Every CUDA call is checked; a failure throws moepack::Error naming the call, file and line,
// or moepack::DeviceLostError when the error is sticky (the CUDA context is unusable until the
// process exits; see is_sticky_cuda_error).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/error.h"

namespace moepack::gpu {

// The errors after which "the process must be terminated and relaunched to continue using
// CUDA" (CUDA Runtime API reference, cudaError enum: cudaErrorIllegalAddress,
// cudaErrorLaunchFailure, cudaErrorHardwareStackError, cudaErrorIllegalInstruction,
// cudaErrorMisalignedAddress, cudaErrorInvalidAddressSpace, cudaErrorInvalidPc, cudaErrorAssert,
// cudaErrorECCUncorrectable, cudaErrorLaunchTimeout, cudaErrorContextIsDestroyed... ).
inline bool is_sticky_cuda_error(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

// Throws DeviceLostError for a sticky error, Error otherwise.
[[noreturn]] inline void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  std::string m = std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + cudaGetErrorString(e);
  if (is_sticky_cuda_error(e)) {
    throw DeviceLostError(m + " (the GPU context is lost until MoePack is restarted)");
  }
  throw Error(m);
}

}  // namespace moepack::gpu

#define MOEPACK_CUDA_CHECK(call)                                                       \
  do {                                                                                 \
    const cudaError_t moepack_err_ = (call);                                           \
    if (moepack_err_ != cudaSuccess) {                                                 \
      ::moepack::gpu::throw_cuda_error(moepack_err_, #call, __FILE__, __LINE__);       \
    }                                                                                  \
  } while (0)
