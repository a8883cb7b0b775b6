#include "tests/support/fixture_refs.h"

#include <algorithm>
#include <fstream>
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

}  // namespace moepack::test
