#include "core/build_stamp.h"

#include <cstdio>
#include <ctime>
#include <random>

namespace moepack {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

std::string bytes_gib(uint64_t bytes) {
  char s[64];
  std::snprintf(s, sizeof s, "%llu bytes (%.2f GiB)", static_cast<unsigned long long>(bytes),
                static_cast<double>(bytes) / (1ull << 30));
  return s;
}

PackBuildId random_build_id() {
  std::random_device rd;
  PackBuildId id{};
  for (size_t k = 0; k < 16; k += 4) {
    const uint32_t v = rd();
    for (size_t b = 0; b < 4; ++b) id[k + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  return id;
}

}  // namespace moepack
