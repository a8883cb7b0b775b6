#include "core/ollama_store.h"

#include <sys/stat.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace moepack {
namespace {

constexpr const char* kModelMediaType = "application/vnd.ollama.image.model";
constexpr uint64_t kMaxManifestBytes = 1u << 20;

// One path component of a name: letters, digits, '_', '-', '.', not starting with '.'.
bool valid_part(const std::string& s, bool allow_colon_port = false) {
  static const std::regex part(R"(^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$)");
  static const std::regex host(R"(^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}(:[0-9]{1,5})?$)");
  if (s == "." || s == "..") return false;
  return std::regex_match(s, allow_colon_port ? host : part);
}

std::vector<std::string> split(const std::string& s, char c) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == c) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

bool is_regular(const std::string& p, uint64_t* size = nullptr) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (size != nullptr) *size = static_cast<uint64_t>(st.st_size);
  return true;
}

}  // namespace

std::string ollama_models_dir() {
  if (const char* env = std::getenv("OLLAMA_MODELS"); env != nullptr && *env != '\0') return env;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "") + "/.ollama/models";
}

bool ollama_valid_digest(const std::string& digest) {
  static const std::regex re(R"(^sha256:[0-9a-f]{64}$)");
  return std::regex_match(digest, re);
}

bool ollama_looks_like_name(const std::string& s) {
  if (s.empty() || s.size() > 512) return false;
  std::string lower = s;  // "Model.GGUF" names a file too
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find(".gguf") != std::string::npos) return false;
  if (s.front() == '/' || s.front() == '.') return false;
  std::string base = s;
  std::string tag;
  const auto slash = s.rfind('/');
  const auto colon = s.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    base = s.substr(0, colon);
    tag = s.substr(colon + 1);
    if (!valid_part(tag)) return false;
  }
  const auto parts = split(base, '/');
  if (parts.size() > 3) return false;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (!valid_part(parts[k], k == 0 && parts.size() == 3)) return false;
  }
  return true;
}

bool ollama_is_manifest_path(const std::string& path) {
  return path.find("/manifests/") != std::string::npos && is_regular(path);
}

OllamaName ollama_parse_name(const std::string& name_or_manifest) {
  OllamaName n;
  const auto at = name_or_manifest.rfind("/manifests/");
  if (at != std::string::npos && ollama_is_manifest_path(name_or_manifest)) {
    const auto parts = split(name_or_manifest.substr(at + 11), '/');
    if (parts.size() < 4) {
      throw Error(name_or_manifest +
                  ": not an Ollama manifest path (manifests/<host>/<namespace>/<model>/<tag>)");
    }
    const size_t k = parts.size() - 4;
    n = {parts[k], parts[k + 1], parts[k + 2], parts[k + 3]};
    return n;
  }
  if (!ollama_looks_like_name(name_or_manifest)) {
    throw Error(name_or_manifest + ": not a valid Ollama model name ([host/][namespace/]model[:tag])");
  }
  std::string base = name_or_manifest;
  const auto slash = base.rfind('/');
  const auto colon = base.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    n.tag = base.substr(colon + 1);
    base.resize(colon);
  }
  auto parts = split(base, '/');
  n.model = parts.back();
  if (parts.size() >= 2) n.ns = parts[parts.size() - 2];
  if (parts.size() == 3) n.host = parts[0];
  return n;
}

OllamaModel ollama_resolve(const std::string& name_or_manifest, const std::string& models_dir) {
  OllamaModel m;
  std::string root;
  if (ollama_is_manifest_path(name_or_manifest)) {
    m.manifest_path = name_or_manifest;
    root = name_or_manifest.substr(0, name_or_manifest.rfind("/manifests/"));
    m.name = name_or_manifest.substr(name_or_manifest.rfind("/manifests/") + 11);
  } else {
    root = models_dir.empty() ? ollama_models_dir() : models_dir;
    const OllamaName n = ollama_parse_name(name_or_manifest);
    m.name = n.host + "/" + n.ns + "/" + n.model + ":" + n.tag;
    m.manifest_path = root + "/manifests/" + n.host + "/" + n.ns + "/" + n.model + "/" + n.tag;
    if (!is_regular(m.manifest_path)) {
      throw Error(name_or_manifest + ": no such Ollama model (looked for " + m.manifest_path + ")");
    }
  }

  uint64_t manifest_size = 0;
  is_regular(m.manifest_path, &manifest_size);
  if (manifest_size > kMaxManifestBytes) {
    throw FormatError(m.manifest_path, "manifest", 0, "manifest of " + std::to_string(manifest_size) +
                                                          " bytes is larger than 1 MiB");
  }
  std::ifstream in(m.manifest_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw FormatError(m.manifest_path, "manifest", e.byte, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("layers") || !j["layers"].is_array()) {
    throw FormatError(m.manifest_path, "layers", 0, "manifest has no \"layers\" array");
  }
  const auto& layers = j["layers"];
  bool found = false;
  for (size_t k = 0; k < layers.size(); ++k) {
    const auto& l = layers[k];
    const std::string field = "layers[" + std::to_string(k) + "]";
    if (!l.is_object() || !l.contains("mediaType") || !l["mediaType"].is_string()) {
      throw FormatError(m.manifest_path, field + ".mediaType", 0, "missing or not a string");
    }
    if (l["mediaType"].get<std::string>() != kModelMediaType) continue;
    if (found) throw FormatError(m.manifest_path, field, 0, "more than one model layer");
    if (!l.contains("digest") || !l["digest"].is_string() ||
        !ollama_valid_digest(l["digest"].get<std::string>())) {
      throw FormatError(m.manifest_path, field + ".digest", 0,
                        "must be \"sha256:\" followed by 64 lowercase hex digits");
    }
    if (!l.contains("size") || !l["size"].is_number_unsigned()) {
      throw FormatError(m.manifest_path, field + ".size", 0, "missing or not an unsigned integer");
    }
    m.digest = l["digest"].get<std::string>();
    m.size = l["size"].get<uint64_t>();
    found = true;
  }
  if (!found) {
    throw FormatError(m.manifest_path, "layers", 0, std::string("no layer with mediaType ") + kModelMediaType);
  }
  m.blob_path = root + "/blobs/sha256-" + m.digest.substr(7);
  uint64_t blob_size = 0;
  if (!is_regular(m.blob_path, &blob_size)) {
    throw Error(m.manifest_path + ": model blob " + m.blob_path + " is missing");
  }
  if (blob_size != m.size) {
    throw FormatError(m.manifest_path, "layers.size", 0,
                      "manifest says " + std::to_string(m.size) + " bytes but " + m.blob_path +
                          " has " + std::to_string(blob_size));
  }
  return m;
}

}  // namespace moepack
