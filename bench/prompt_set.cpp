// Prompt set loading and the default set's lookup (prompt_set.h).
#include "bench/prompt_set.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"

namespace moepack::bench {

namespace {

using nlohmann::json;

const std::string& required_string(const json& obj, const std::string& key, const std::string& where,
                                   const std::string& origin) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) {
    throw FormatError(origin, where.empty() ? key : where + "." + key, FormatError::InDocument{},
                      "missing or not a string");
  }
  return it->get_ref<const std::string&>();
}

}  // namespace

std::vector<std::string> PromptSet::datasets() const {
  std::vector<std::string> out;
  for (const BenchRequest& r : requests) {
    bool seen = false;
    for (const std::string& d : out) seen = seen || d == r.dataset;
    if (!seen) out.push_back(r.dataset);
  }
  return out;
}

PromptSet parse_prompt_set(const json& j, const std::string& origin) {
  if (!j.is_object())
    throw FormatError(origin, "(root)", FormatError::InDocument{}, "a prompt set is a JSON object");
  PromptSet s;
  s.name = required_string(j, "name", "", origin);
  if (j.contains("description")) s.description = required_string(j, "description", "", origin);
  if (j.contains("settings")) {
    if (!j["settings"].is_object())
      throw FormatError(origin, "settings", FormatError::InDocument{}, "not an object");
    s.settings = j["settings"];
  }
  if (j.contains("published_results")) {
    if (!j["published_results"].is_object())
      throw FormatError(origin, "published_results", FormatError::InDocument{}, "not an object");
    s.published_results = j["published_results"];
  }
  const auto reqs = j.find("requests");
  if (reqs == j.end() || !reqs->is_array() || reqs->empty()) {
    throw FormatError(origin, "requests", FormatError::InDocument{}, "missing, not an array, or empty");
  }
  std::set<std::string> ids;
  for (size_t i = 0; i < reqs->size(); ++i) {
    const json& r = (*reqs)[i];
    const std::string where = "requests[" + std::to_string(i) + "]";
    if (!r.is_object()) throw FormatError(origin, where, FormatError::InDocument{}, "not an object");
    BenchRequest b;
    b.id = required_string(r, "id", where, origin);
    b.dataset = required_string(r, "dataset", where, origin);
    b.prompt = required_string(r, "prompt", where, origin);
    if (b.prompt.empty())
      throw FormatError(origin, where + ".prompt", FormatError::InDocument{}, "empty prompt");
    if (!ids.insert(b.id).second)
      throw FormatError(origin, where + ".id", FormatError::InDocument{}, "duplicate id " + b.id);
    s.requests.push_back(std::move(b));
  }
  return s;
}

PromptSet load_prompt_set(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError(path, "open", errno);
  std::stringstream ss;
  ss << f.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    throw FormatError(path, "(json)", e.byte, e.what());
  }
  PromptSet s = parse_prompt_set(j, path);
  s.path = path;
  return s;
}

std::string default_prompt_set_path() {
  namespace fs = std::filesystem;
  const std::string file = "published-10.json";
  std::vector<fs::path> tried;
  if (const char* dir = std::getenv("MOEPACK_BENCHMARKS_DIR"); dir && *dir) tried.push_back(fs::path(dir) / file);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) tried.push_back(exe.parent_path().parent_path() / "share/moepack/benchmarks" / file);
  tried.push_back(fs::path(MOEPACK_SOURCE_DIR) / "resources/benchmarks" / file);
  std::string list;
  for (const fs::path& p : tried) {
    if (fs::is_regular_file(p, ec)) return p.string();
    list += (list.empty() ? "" : ", ") + p.string();
  }
  throw Error("the default prompt set " + file + " was not found (tried " + list + "); pass --prompts FILE");
}

}  // namespace moepack::bench
