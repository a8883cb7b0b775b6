// built_cuda_architectures (gpu/device_info.h): the one file compiled with MOEPACK_CUDA_ARCHITECTURES
// (gpu/CMakeLists.txt: CMAKE_CUDA_ARCHITECTURES with CMake's keywords resolved, ',' between entries), by the
// host compiler.
#include <string>

#include "gpu/device_info.h"

#ifndef MOEPACK_CUDA_ARCHITECTURES
#error "gpu/CMakeLists.txt defines MOEPACK_CUDA_ARCHITECTURES"
#endif

namespace moepack::gpu {

std::string built_cuda_architectures() {
  std::string s = MOEPACK_CUDA_ARCHITECTURES;
  for (char& c : s) {
    if (c == ',') c = ';';
  }
  return s;
}

}  // namespace moepack::gpu
