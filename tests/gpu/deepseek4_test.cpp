// GPU parity tests of the `deepseek4` CUDA backend (in progress).
#include "tests/gpu/gpu_test_main.h"

MOEPACK_GPU_TEST_MAIN()
