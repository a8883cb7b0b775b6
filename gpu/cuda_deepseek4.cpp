// The CUDA backend of `deepseek4` (in progress; see gpu/cuda_arch_backends.h).
#include "gpu/cuda_arch_backends.h"
