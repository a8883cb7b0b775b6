// The exponential (and DeepSeek-V4's softplus) of the router's gating functions
// (core/moe_routing.h), one definition for the host (route_token, ds4::hash_route) and the GPU
// (gpu/kernels_route.cu), so that both compute the same probabilities bit for bit and therefore
// choose the same experts with the same weights.
//
// route_expf(x) = e^x rounded to F32, from IEEE double operations only (no library call whose
// result differs between glibc and CUDA's libdevice): Cody-Waite reduction
//   x = k ln2 + r,  k = rint(x / ln2),  |r| <= ln2 / 2 (ln2 split in a 32-bit head and a tail,
//   so k * head is exact for |k| < 2^21),
// e^r by its Taylor series to degree 12 in Horner form (truncation below 2^-52 relative for
// |r| <= 0.35), then the power of two by ldexp (exact) and one rounding to F32. Every step is a
// single IEEE operation (+, -, *, rint, ldexp, the final conversion; route_log1p_double also /
// and frexp), so any compiler that
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

// e^x in double for x in [-104, 89] (route_expf's reduction and series, before its rounding).
MOEPACK_HOST_DEVICE static inline double route_exp_double(double xd) {
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
  return ldexp(p, static_cast<int>(k));
}

MOEPACK_HOST_DEVICE static inline float route_expf(float x) {
  if (x != x) return x;
  if (x > 89.0f) return static_cast<float>(HUGE_VAL);
  if (x < -104.0f) return 0.0f;
  return static_cast<float>(route_exp_double(static_cast<double>(x)));
}

// ln(1 + y) in double for y >= 0 (finite), from IEEE operations only: u = 1 + y rounded, its
// rounding error taken back as (y - (u - 1)) / u; u = m 2^e with m in [sqrt(1/2), sqrt(2))
// (frexp, exact); ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.1716, by its series to
// s^23 (truncation below 2^-56 relative); e ln 2 with ln 2 split as in route_exp_double.
MOEPACK_HOST_DEVICE static inline double route_log1p_double(double y) {
  const double u = 1.0 + y;
  const double c = (y - (u - 1.0)) / u;  // u's rounding error, relative (ln(u + d) ~ ln u + d / u)
  int e = 0;
  double m = frexp(u, &e);  // m in [0.5, 1)
  if (m < 0.70710678118654752440) {
    m = m * 2.0;
    e = e - 1;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  // 1 / (2 j + 1) for j = 11 .. 1
  double p = 1.0 / 23.0;
  p = p * s2 + 1.0 / 21.0;
  p = p * s2 + 1.0 / 19.0;
  p = p * s2 + 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  const double ln_m = 2.0 * s + 2.0 * s * (s2 * p);
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double ed = static_cast<double>(e);
  return ed * kLn2Hi + (ed * kLn2Lo + (ln_m + c));
}

// softplus(x) = ln(1 + e^x) rounded to F32 once (x itself above 20, ggml_softplus's cut-off),
// from route_exp_double and route_log1p_double: DeepSeek-V4's gating (sqrt of it) on host and
// GPU alike. NaN gives NaN; below -104, e^x is below F32's range and the result is +0.
MOEPACK_HOST_DEVICE static inline float route_softplusf(float x) {
  if (x != x) return x;
  if (x > 20.0f) return x;
  if (x < -104.0f) return 0.0f;
  return static_cast<float>(route_log1p_double(route_exp_double(static_cast<double>(x))));
}

}  // namespace moepack
