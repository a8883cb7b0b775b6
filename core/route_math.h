// The exponential of the router's gating functions (core/moe_routing.h), one definition for the
// host (route_token) and the GPU (gpu/kernels_route.cu), so that both compute the same
// probabilities bit for bit and therefore choose the same experts with the same weights.
//
// route_expf(x) = e^x rounded to F32, from IEEE double operations only (no library call whose
// result differs between glibc and CUDA's libdevice): Cody-Waite reduction
//   x = k ln2 + r,  k = rint(x / ln2),  |r| <= ln2 / 2 (ln2 split in a 32-bit head and a tail,
//   so k * head is exact for |k| < 2^21),
// e^r by its Taylor series to degree 12 in Horner form (truncation below 2^-52 relative for
// |r| <= 0.35), then the power of two by ldexp (exact) and one rounding to F32. Every step is a
// single IEEE operation (+, -, *, rint, ldexp, the final conversion), so any compiler that
// does not contract a * b + c into a fused multiply-add gives the same bits: core builds
// moe_routing.cpp with -ffp-contract=off, gpu/ builds with --fmad=false. The function is static
// (each translation unit its own copy), so a file built with contraction (a test, say) cannot
// lend route_token its differently rounded copy at link time. Against e^x in double,
// the result is within 0.5 ULP of F32 plus at most one ULP of double before the last rounding
// (tests/core/moe_routing_test.cpp checks it over a sweep against std::exp in double).
// Inputs above 89 give +inf, below -104 give +0 (both out of F32's range after rounding), NaN
// gives NaN.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define MOEPACK_HOST_DEVICE __host__ __device__
#else
#define MOEPACK_HOST_DEVICE
#endif

namespace moepack {

MOEPACK_HOST_DEVICE static inline float route_expf(float x) {
  if (x != x) return x;
  if (x > 89.0f) return static_cast<float>(HUGE_VAL);
  if (x < -104.0f) return 0.0f;
  const double xd = static_cast<double>(x);
  constexpr double kLog2e = 1.4426950408889634074;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // ln 2, its first 32 significant bits
  constexpr double kLn2Lo = 1.90821492927058770002e-10;  // ln 2 - kLn2Hi
  const double k = rint(xd * kLog2e);
  double r = xd - k * kLn2Hi;  // exact: k * kLn2Hi has at most 32 + 8 significant bits
  r = r - k * kLn2Lo;
  // 1/n! for n = 12 .. 0
  double p = 2.08767569878680989792e-09;
  p = p * r + 2.50521083854417187751e-08;
  p = p * r + 2.75573192239858906526e-07;
  p = p * r + 2.75573192239858906526e-06;
  p = p * r + 2.48015873015873015873e-05;
  p = p * r + 1.98412698412698412698e-04;
  p = p * r + 1.38888888888888888889e-03;
  p = p * r + 8.33333333333333333333e-03;
  p = p * r + 4.16666666666666666667e-02;
  p = p * r + 1.66666666666666666667e-01;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  return static_cast<float>(ldexp(p, static_cast<int>(k)));
}

}  // namespace moepack
