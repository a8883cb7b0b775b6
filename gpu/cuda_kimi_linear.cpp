// The CUDA backend of `kimi-linear` (in progress; see gpu/cuda_arch_backends.h).
#include "gpu/cuda_arch_backends.h"
