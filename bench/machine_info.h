// What a benchmark report records about the machine and the model it ran (docs/benchmarks.md,
// "machine" and "model"). Linux only; every probe is best effort: a value that cannot be read
// is null in the JSON, never an error.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace moepack {
class ModelSource;
}

namespace moepack::bench {

// { cpu_model, logical_cores, ram_bytes, os, kernel, hostname, gpus: [{name, driver}],
//   storage: {path, filesystem, device, device_model, rotational} } ; `model_path`'s file
// system and block device are the ones described in "storage". Sources: /proc/cpuinfo,
// sysconf, /proc/meminfo, /etc/os-release, uname(2), /proc/driver/nvidia/, statfs(2),
// /sys/dev/block/MAJ:MIN.
nlohmann::json machine_info(const std::string& model_path);

// { path, format: "gguf" | "expert-pack", architecture, name, n_layer, n_expert, n_expert_used,
//   identity: { kind, sha256 }, file_bytes }. identity.kind is "gguf-header-sha256" (SHA-256 of
//   the primary GGUF file's bytes before its tensor data: header, metadata, tensor infos) or
//   "pack-manifest-sha256" (SHA-256 of manifest.json, which holds every expert's hash).
//   Throws IoError when a file cannot be read.
nlohmann::json model_info(const ModelSource& model);

// { version, git_commit, git_describe, build_type, compiler }; the commit is the source
// tree's at configure time (CMake), "unknown" outside a git checkout.
nlohmann::json build_info();

}  // namespace moepack::bench
