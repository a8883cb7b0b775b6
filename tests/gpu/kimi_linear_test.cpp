// GPU parity tests of the `kimi-linear` CUDA backend (in progress).
#include "tests/gpu/gpu_test_main.h"

MOEPACK_GPU_TEST_MAIN()
