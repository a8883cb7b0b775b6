// gpu/cuda_arch.h: which devices a build's CUDA architectures run on, against the CUDA C++ Programming
// Guide's compatibility rules (real code within a major version at an equal or higher minor; PTX on any
// equal or higher compute capability), worked by hand per case. Host arithmetic: runs everywhere.
#include "gpu/cuda_arch.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "core/error.h"

namespace moepack::gpu {
namespace {

TEST(CudaArch, ParsesCMakeEntries) {
  const auto e = parse_cuda_architectures("90;120-real,100-virtual;;90a;100f-real;");
  ASSERT_EQ(e.size(), 5u);  // (the empty entries skipped)
  EXPECT_EQ(e[0].arch, 90);
  EXPECT_TRUE(e[0].real);
  EXPECT_TRUE(e[0].ptx);
  EXPECT_EQ(e[0].variant, '\0');
  EXPECT_EQ(e[1].arch, 120);
  EXPECT_TRUE(e[1].real);
  EXPECT_FALSE(e[1].ptx);
  EXPECT_EQ(e[2].arch, 100);
  EXPECT_FALSE(e[2].real);
  EXPECT_TRUE(e[2].ptx);
  EXPECT_EQ(e[3].arch, 90);
  EXPECT_EQ(e[3].variant, 'a');
  EXPECT_TRUE(e[3].real && e[3].ptx);
  EXPECT_EQ(e[4].arch, 100);
  EXPECT_EQ(e[4].variant, 'f');
  EXPECT_TRUE(e[4].real);
  EXPECT_FALSE(e[4].ptx);
}

TEST(CudaArch, BadEntriesNameThemselvesAndTheirPosition) {
  for (const auto& [list, entry, at] :
       {std::tuple{"90;sm_120", "\"sm_120\"", "character 3"}, std::tuple{"90x", "\"90x\"", "character 0"},
        std::tuple{"90-fake", "\"90-fake\"", "character 0"},
        std::tuple{"120,90af", "\"90af\"", "character 4"}}) {
    SCOPED_TRACE(list);
    try {
      parse_cuda_architectures(list);
      ADD_FAILURE() << "no Error";
    } catch (const Error& err) {
      const std::string what = err.what();
      EXPECT_NE(what.find(std::string("entry ") + entry), std::string::npos) << what;
      EXPECT_NE(what.find(at), std::string::npos) << what;
    }
  }
  EXPECT_THROW(parse_cuda_architectures(""), Error);
  EXPECT_THROW(parse_cuda_architectures(";,"), Error);
}

TEST(CudaArch, CodeFitFollowsTheCompatibilityRules) {
  const auto b90 = parse_cuda_architectures("90");
  const auto b90_120 = parse_cuda_architectures("90;120");
  const auto b120_real = parse_cuda_architectures("120-real");
  const auto b90_real = parse_cuda_architectures("90-real");
  // H100 / H200 (9.0).
  EXPECT_EQ(cuda_code_fit(90, b90), CudaCodeFit::kReal);
  EXPECT_EQ(cuda_code_fit(90, b90_120), CudaCodeFit::kReal);
  EXPECT_EQ(cuda_code_fit(90, b120_real), CudaCodeFit::kNone);  // newer code does not run on older cards
  // RTX 50xx (12.0): sm_90's real code does not run across majors, its PTX does.
  EXPECT_EQ(cuda_code_fit(120, b90), CudaCodeFit::kPtx);
  EXPECT_EQ(cuda_code_fit(120, b90_120), CudaCodeFit::kReal);
  EXPECT_EQ(cuda_code_fit(120, b90_real), CudaCodeFit::kNone);
  // 12.1 runs sm_120's real code (same major, higher minor).
  EXPECT_EQ(cuda_code_fit(121, b120_real), CudaCodeFit::kReal);
  // B200 (10.0) with the default build: PTX.
  EXPECT_EQ(cuda_code_fit(100, b90), CudaCodeFit::kPtx);
  // RTX 4090 (8.9): nothing of sm_90 runs there.
  EXPECT_EQ(cuda_code_fit(89, b90), CudaCodeFit::kNone);
  // Architecture-specific code runs on its own compute capability alone, PTX included.
  const auto b90a = parse_cuda_architectures("90a");
  EXPECT_EQ(cuda_code_fit(90, b90a), CudaCodeFit::kReal);
  EXPECT_EQ(cuda_code_fit(120, b90a), CudaCodeFit::kNone);
  EXPECT_EQ(cuda_code_fit(120, parse_cuda_architectures("120a-virtual")), CudaCodeFit::kPtx);
  EXPECT_EQ(cuda_code_fit(121, parse_cuda_architectures("120a")), CudaCodeFit::kNone);
  // Family code: its major version, equal or higher minor.
  EXPECT_EQ(cuda_code_fit(103, parse_cuda_architectures("100f")), CudaCodeFit::kReal);
  EXPECT_EQ(cuda_code_fit(120, parse_cuda_architectures("100f")), CudaCodeFit::kNone);
  EXPECT_EQ(cuda_code_fit(121, parse_cuda_architectures("120f-virtual")), CudaCodeFit::kPtx);
}

TEST(CudaArch, UnsupportedDevicesAreNamedWithTheirNumbers) {
  EXPECT_EQ(cuda_device_unsupported(0, "NVIDIA H100", 90, "90"), "");
  EXPECT_EQ(cuda_device_unsupported(0, "RTX 5090", 120, "90"), "");  // (PTX: runs, slowly at first)
  EXPECT_EQ(cuda_device_unsupported(0, "RTX 5090", 120, "native"), "");
  const std::string old = cuda_device_unsupported(1, "RTX 4090", 89, "90;120");
  EXPECT_NE(old.find("GPU 1 (RTX 4090, compute capability 8.9)"), std::string::npos) << old;
  EXPECT_NE(old.find("needs compute capability 9.0 or later"), std::string::npos) << old;
  EXPECT_EQ(old.find("--backend"), std::string::npos) << old;  // (the caller's advice: auto takes the CPU)
  // Below 9.0 even where CMake chose the architectures.
  EXPECT_NE(cuda_device_unsupported(0, "RTX 4090", 89, "all-major"), "");
  const std::string none = cuda_device_unsupported(0, "NVIDIA H200", 90, "120-real");
  EXPECT_NE(none.find("GPU 0 (NVIDIA H200, compute capability 9.0)"), std::string::npos) << none;
  EXPECT_NE(none.find("\"120-real\""), std::string::npos) << none;
  EXPECT_NE(none.find("-DCMAKE_CUDA_ARCHITECTURES=90"), std::string::npos) << none;
  EXPECT_NE(none.find("cmake -U CMAKE_CUDA_ARCHITECTURES"), std::string::npos) << none;
  // CMake's keywords and false values, and a list that does not parse: not checked, never thrown.
  EXPECT_EQ(cuda_device_unsupported(0, "NVIDIA H200", 90, "OFF"), "");
  EXPECT_EQ(cuda_device_unsupported(0, "NVIDIA H200", 90, "sm_90"), "");
  EXPECT_NE(cuda_device_unsupported(0, "RTX 5090", 120, "90a"), "");
}

TEST(CudaArch, GpuUuidAsNvidiaSmiPrintsIt) {
  // Hand-written: the bytes 00 11 22 ... ff in order.
  unsigned char bytes[16];
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<unsigned char>(i * 0x11);
  EXPECT_EQ(format_gpu_uuid(bytes), "GPU-00112233-4455-6677-8899-aabbccddeeff");
}

TEST(CudaArch, TheFirstDeviceDecidesAndALaterSupportedOneIsNamed) {
  const std::vector<CudaDeviceSeen> none;
  EXPECT_EQ(cuda_first_device_unsupported(none, "120"), "");
  const CudaDeviceSeen ada{0, "RTX 4090", 89, "GPU-00112233-4455-6677-8899-aabbccddeeff"};
  const CudaDeviceSeen blackwell{1, "RTX 5090", 120, "GPU-ffeeddcc-bbaa-9988-7766-554433221100"};
  const CudaDeviceSeen hopper{2, "NVIDIA H100", 90, ""};
  // The first is supported: nothing to say, whatever follows.
  EXPECT_EQ(cuda_first_device_unsupported({blackwell, ada}, "120"), "");
  // The first is not, the second is: its UUID for CUDA_VISIBLE_DEVICES.
  const std::string two = cuda_first_device_unsupported({ada, blackwell, hopper}, "120");
  EXPECT_NE(two.find("GPU 0 (RTX 4090, compute capability 8.9)"), std::string::npos) << two;
  EXPECT_NE(two.find("GPU 1 (RTX 5090) is one it runs on: start MoePack with "
                     "CUDA_VISIBLE_DEVICES=GPU-ffeeddcc-bbaa-9988-7766-554433221100"),
            std::string::npos)
      << two;
  // Built for sm_90 alone: the RTX 5090 runs its PTX (supported), so it is named, not the H100 after it.
  EXPECT_NE(cuda_first_device_unsupported({ada, blackwell, hopper}, "90").find("GPU 1 (RTX 5090)"),
            std::string::npos);
  // Built for sm_120 real code only: the H100 cannot run it, the RTX 5090 after it is named.
  const std::string real = cuda_first_device_unsupported({ada, hopper, blackwell}, "120-real");
  EXPECT_NE(real.find("GPU 1 (RTX 5090) is one it runs on"), std::string::npos) << real;
  EXPECT_EQ(real.find("NVIDIA H100"), std::string::npos) << real;
  // No UUID known: the index.
  const std::string idx = cuda_first_device_unsupported({ada, hopper}, "90");
  EXPECT_NE(idx.find("CUDA_VISIBLE_DEVICES=2 to use it"), std::string::npos) << idx;
  // None of the others runs it either: the first's reason alone.
  EXPECT_EQ(cuda_first_device_unsupported({ada, hopper}, "120-real"),
            cuda_device_unsupported(0, "RTX 4090", 89, "120-real"));
}

}  // namespace
}  // namespace moepack::gpu
