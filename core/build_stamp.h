// Small stamps that writers put into their outputs (pack manifests, twin manifests, benchmark
// reports, space refusals): shared so that every output says them the same way.
#pragma once

#include <cstdint>
#include <string>

#include "core/expert_pack.h"

namespace moepack {

// The current time as ISO 8601 UTC to the second: "2026-11-30T18:07:01Z".
std::string utc_now();
// "N bytes (X.XX GiB)", for space messages that give both exact and readable figures.
std::string bytes_gib(uint64_t bytes);
// A fresh random 128-bit pack build id (std::random_device), written into experts.bin's header,
// dense.gguf and the manifest so that the three files of one build are recognised together.
PackBuildId random_build_id();

}  // namespace moepack
