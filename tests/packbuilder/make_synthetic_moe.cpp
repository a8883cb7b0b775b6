// make_synthetic_moe PATH GIB: writes the synthetic MoE GGUF of the slow tests and benchmarks
// (tests/packbuilder/synthetic_moe.h; q8_0 experts of 5.0 MB) of at least GIB GiB, so large
// packs can be built and measured where no real large model is available (the GPU machine).
#include <cstdio>
#include <cstdlib>

#include "tests/packbuilder/synthetic_moe.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_synthetic_moe PATH GIB\n");
    return 2;
  }
  const double gib = std::atof(argv[2]);
  if (!(gib > 0)) {
    std::fprintf(stderr, "make_synthetic_moe: GIB must be positive\n");
    return 2;
  }
  try {
    const uint64_t bytes = moepack::test::write_synthetic_moe(argv[1], static_cast<uint64_t>(gib * (1ull << 30)), 11);
    std::printf("{\"path\": \"%s\", \"bytes\": %llu}\n", argv[1], static_cast<unsigned long long>(bytes));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_synthetic_moe: %s\n", e.what());
    return 1;
  }
  return 0;
}
