// CUDA kernels of the `deepseek4` architecture's own operations (in progress).
#include "gpu/cuda_check.h"
