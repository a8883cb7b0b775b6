#include "tests/support/fixture_refs.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace moepack::test {

namespace {
std::ifstream open_or_throw(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open reference file " + path);
  return f;
}
}  // namespace

nlohmann::json read_json(const std::string& path) {
  std::ifstream f = open_or_throw(path);
  return nlohmann::json::parse(f);
}

std::vector<float> read_f32(const std::string& path) {
  const std::string bytes = read_text(path);
  std::vector<float> v(bytes.size() / 4);
  std::copy_n(bytes.data(), v.size() * 4, reinterpret_cast<char*>(v.data()));
  return v;
}

std::string read_text(const std::string& path) {
  std::ifstream f = open_or_throw(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

float max_abs_diff(std::span<const float> a, std::span<const float> b, size_t* at) {
  float d = a.size() == b.size() ? 0.0f : std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const float x = std::fabs(a[i] - b[i]);
    if (!(x <= d)) {
      d = x;
      if (at) *at = i;
    }
  }
  return d;
}

std::string top_text(std::span<const float> v, size_t n) {
  n = std::min(n, v.size());
  std::vector<int32_t> o(v.size());
  std::iota(o.begin(), o.end(), 0);
  std::partial_sort(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(n), o.end(),
                    [&](int32_t a, int32_t b) {
                      return v[static_cast<size_t>(a)] > v[static_cast<size_t>(b)] ||
                             (v[static_cast<size_t>(a)] == v[static_cast<size_t>(b)] && a < b);
                    });
  std::ostringstream s;
  for (size_t i = 0; i < n; ++i) s << o[i] << ":" << v[static_cast<size_t>(o[i])] << " ";
  return s.str();
}

}  // namespace moepack::test
