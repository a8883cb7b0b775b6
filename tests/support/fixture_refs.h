// Reading the oracle fixtures' reference files (../shared/fixtures): JSON, raw little-endian
// float32 logits, prompt text; the fixtures' greedy rule; comparing two logit vectors. Shared by the engine
// tests (CPU, CUDA, every architecture). Errors throw std::runtime_error naming the file, which gtest reports
// as a test failure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace moepack::test {

nlohmann::json read_json(const std::string& path);
// The whole file as float32 values (size / 4 of them).
std::vector<float> read_f32(const std::string& path);
std::string read_text(const std::string& path);
// Index of the largest value; ties go to the lowest index (the fixtures' greedy argmax).
int32_t argmax(std::span<const float> v);
// Largest |a[i] - b[i]| over the common length (+inf when the lengths differ); *at (if given)
// gets the index of the first largest difference.
float max_abs_diff(std::span<const float> a, std::span<const float> b, size_t* at = nullptr);
// "id:value " for the n largest values (ties to the lowest id), for failure messages.
std::string top_text(std::span<const float> v, size_t n = 5);

}  // namespace moepack::test
