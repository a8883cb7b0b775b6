// Machine, model and build description for benchmark reports (machine_info.h).
#include "bench/machine_info.h"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/build_info.h"
#include "core/model_source.h"
#include "core/sha256.h"

namespace moepack::bench {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  const size_t b = s.find_first_not_of(" \t\r\n\"");
  const size_t e = s.find_last_not_of(" \t\r\n\"");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The value after "key<sep>" on the first line starting with key, trimmed; "" if none.
std::string field(const std::string& text, const std::string& key, char sep) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t p = line.find(sep, key.size());
    if (p == std::string::npos) continue;
    if (trim(line.substr(key.size(), p - key.size())).empty()) return trim(line.substr(p + 1));
  }
  return {};
}

json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

const char* fs_name(long type) {
  switch (static_cast<unsigned long>(type)) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs";
    case 0x858458F6: return "ramfs";
    case 0x794C7630: return "overlayfs";
    case 0x2FC12FC1: return "zfs";
    case 0xF2F52010: return "f2fs";
    case 0x6969: return "nfs";
    case 0x65735546: return "fuse";
    default: return nullptr;
  }
}

json storage_info(const std::string& path) {
  json s = {{"path", path}, {"filesystem", nullptr}, {"device", nullptr}, {"device_model", nullptr},
            {"rotational", nullptr}};
  struct statfs sf {};
  if (::statfs(path.c_str(), &sf) == 0) {
    const char* n = fs_name(static_cast<long>(sf.f_type));
    if (n) {
      s["filesystem"] = n;
    } else {
      std::ostringstream h;
      h << "0x" << std::hex << static_cast<unsigned long>(sf.f_type);
      s["filesystem"] = h.str();
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return s;
  const fs::path sys = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  std::error_code ec;
  fs::path dev = fs::canonical(sys, ec);
  if (ec) return s;
  if (fs::exists(dev / "partition")) dev = dev.parent_path();  // a partition: its disk holds the model
  s["device"] = dev.filename().string();
  s["device_model"] = or_null(trim(read_text(dev / "device/model")));
  const std::string rot = trim(read_text(dev / "queue/rotational"));
  if (!rot.empty()) s["rotational"] = rot == "1";
  return s;
}

json gpu_info() {
  json gpus = json::array();
  std::error_code ec;
  const std::string driver = trim(read_text("/proc/driver/nvidia/version"));
  std::string driver_line = driver.substr(0, driver.find('\n'));
  for (const auto& e : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    const std::string info = read_text(e.path() / "information");
    gpus.push_back({{"name", or_null(field(info, "Model", ':'))},
                    {"bus", e.path().filename().string()},
                    {"driver", or_null(driver_line)}});
  }
  return gpus;
}

}  // namespace

json machine_info(const std::string& model_path) {
  json m;
  m["cpu_model"] = or_null(field(read_text("/proc/cpuinfo"), "model name", ':'));
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  m["logical_cores"] = cores > 0 ? json(cores) : json(nullptr);
  const std::string mem = field(read_text("/proc/meminfo"), "MemTotal", ':');  // "131072 kB"
  m["ram_bytes"] = nullptr;
  if (const size_t digits = mem.find_first_not_of("0123456789"); digits != 0 && !mem.empty()) {
    m["ram_bytes"] = std::strtoull(mem.c_str(), nullptr, 10) * 1024ull;
  }
  m["os"] = or_null(field(read_text("/etc/os-release"), "PRETTY_NAME", '='));
  struct utsname u {};
  if (::uname(&u) == 0) {
    m["kernel"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
    m["hostname"] = u.nodename;
  } else {
    m["kernel"] = nullptr;
    m["hostname"] = nullptr;
  }
  m["gpus"] = gpu_info();
  m["storage"] = storage_info(model_path);
  return m;
}

json model_info(const ModelSource& model) {
  json j;
  j["path"] = model.path();
  j["format"] = model.is_pack() ? "expert-pack" : "gguf";
  const ModelConfig& c = model.config();
  j["architecture"] = c.arch;
  j["name"] = c.name;
  j["n_layer"] = c.n_layer;
  j["n_expert"] = c.n_expert;
  j["n_expert_used"] = c.n_expert_used;
  std::error_code ec;
  if (model.is_pack()) {
    const std::string manifest = model.pack()->manifest_path();
    j["identity"] = {{"kind", "pack-manifest-sha256"}, {"file", manifest}, {"sha256", to_hex(sha256_file(manifest))}};
    const auto experts = fs::file_size(model.pack()->experts_path(), ec);
    const auto dense = fs::file_size(model.pack()->dense_path(), ec);
    j["file_bytes"] = ec ? json(nullptr) : json(experts + dense);
  } else {
    const GgufFile& g = model.gguf().primary();
    j["identity"] = {{"kind", "gguf-header-sha256"},
                     {"file", g.path()},
                     {"bytes", g.data_start()},
                     {"sha256", to_hex(sha256_file_range(g.path(), 0, g.data_start()))}};
    uint64_t total = 0;
    for (const GgufFile& s : model.gguf().shards()) total += fs::file_size(s.path(), ec);
    j["file_bytes"] = ec ? json(nullptr) : json(total);
  }
  return j;
}

json build_info() {
  return {{"version", kMoepackVersion},
          {"git_commit", kGitCommit},
          {"git_describe", kGitDescribe},
          {"build_type", kBuildType},
          {"compiler", kCompiler}};
}

}  // namespace moepack::bench
