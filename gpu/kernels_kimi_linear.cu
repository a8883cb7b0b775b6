// CUDA kernels of the `kimi-linear` architecture's own operations (in progress).
#include "gpu/cuda_check.h"
