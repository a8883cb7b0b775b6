// Engine settings from text (`--set key=value`), JSON objects and files, and back to JSON.
// One table lists every key with its parser, so apply_setting, settings_to_json and
// setting_keys can never disagree.
#include "core/engine_settings.h"

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/error.h"

namespace moepack {

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

[[noreturn]] void bad(const std::string& key, const std::string& value, const std::string& why) {
  throw Error("setting " + key + ": invalid value \"" + value + "\": " + why);
}

// `expected`: what the error says a value that is no integer should have been.
uint64_t parse_uint(const std::string& key, const std::string& text, uint64_t min, uint64_t max,
                    const char* expected = "a non-negative integer") {
  const std::string v = trim(text);
  uint64_t out = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec == std::errc::invalid_argument || p != v.data() + v.size()) {
    bad(key, text, std::string("expected ") + expected);
  }
  if (ec == std::errc::result_out_of_range || out < min || out > max) {
    bad(key, text, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return out;
}

bool parse_bool(const std::string& key, const std::string& text) {
  const std::string v = trim(text);
  if (v == "true" || v == "1" || v == "on" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "off" || v == "no") return false;
  bad(key, text, "expected true or false");
}

std::string parse_choice(const std::string& key, const std::string& text, std::initializer_list<const char*> choices) {
  const std::string v = trim(text);
  std::string list;
  for (const char* c : choices) {
    if (v == c) return v;
    list += (list.empty() ? "" : " | ") + std::string(c);
  }
  bad(key, text, "expected one of " + list);
}

struct Key {
  const char* name;
  std::function<void(EngineSettings&, const std::string& key, const std::string& value)> set;
  std::function<nlohmann::json(const EngineSettings&)> get;
  std::optional<SettingRange> range = std::nullopt;  // numeric keys only
};

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kMaxContext = uint64_t{1} << 24;  // 16 Mi tokens; the model's own context caps it
constexpr uint64_t kMaxMib = uint64_t{1} << 24;      // 16 TiB

#define MP_UINT(field, min, max)                                                                        \
  Key {                                                                                                 \
#field,                                                                                               \
        [](EngineSettings& s, const std::string& k, const std::string& v) {                               \
          s.field = static_cast<decltype(s.field)>(parse_uint(k, v, min, max));                           \
        },                                                                                                \
        [](const EngineSettings& s) { return nlohmann::json(s.field); }, SettingRange{ \
      min, max                                                                                          \
    }                                                                                                   \
  }
#define MP_BOOL(field)                                                                                    \
  Key {                                                                                                   \
    #field, [](EngineSettings& s, const std::string& k, const std::string& v) { s.field = parse_bool(k, v); }, \
        [](const EngineSettings& s) { return nlohmann::json(s.field); }                                   \
  }
#define MP_STRING(field)                                                                                  \
  Key {                                                                                                   \
    #field, [](EngineSettings& s, const std::string&, const std::string& v) { s.field = v; },             \
        [](const EngineSettings& s) { return nlohmann::json(s.field); }                                   \
  }

const std::vector<Key>& keys() {
  static const std::vector<Key> table = {
      Key{"backend",
          [](EngineSettings& s, const std::string& k, const std::string& v) {
            s.backend = parse_choice(k, v, {"cpu", "cuda", "auto"});
          },
          [](const EngineSettings& s) { return nlohmann::json(s.backend); }},
      // The studio's Settings page takes these ranges too (engine_setting_range).
      MP_UINT(threads, 0, 4096),
      MP_UINT(n_ctx, 64, kMaxContext),
      MP_UINT(cache_vram_mib, 0, kMaxMib),
      MP_UINT(cache_vram_reserve_mib, 0, kMaxMib),
      MP_UINT(cache_bytes, 0, kU64Max),
      Key{"cache_policy",
          [](EngineSettings& s, const std::string& k, const std::string& v) {
            s.cache_policy = parse_choice(k, v, {"hybrid", "lru", "lfu"});
          },
          [](const EngineSettings& s) { return nlohmann::json(s.cache_policy); }},
      Key{"cache_ram_mib",
          [](EngineSettings& s, const std::string& k, const std::string& v) {
            s.cache_ram_mib = trim(v) == "auto"
                                  ? EngineSettings::kCacheRamAuto
                                  : parse_uint(k, v, 0, kMaxMib, "auto or a whole number of MiB");
          },
          [](const EngineSettings& s) {
            return s.cache_ram_mib == EngineSettings::kCacheRamAuto ? nlohmann::json("auto")
                                                                    : nlohmann::json(s.cache_ram_mib);
          },
          SettingRange{0, kMaxMib}},
      Key{"cache_ram_admission",
          [](EngineSettings& s, const std::string& k, const std::string& v) {
            s.cache_ram_admission = parse_choice(k, v, {"frequency", "all"});
          },
          [](const EngineSettings& s) { return nlohmann::json(s.cache_ram_admission); }},
      MP_UINT(stage_slots, 1, 4096),
      MP_UINT(read_splits, 1, 64),
      MP_UINT(queue_depth, 1, 65536),
      MP_BOOL(direct_io),
      MP_BOOL(verify_pack_sha256),
      MP_BOOL(prefetch_experts),
      Key{"tiled_experts",
          [](EngineSettings& s, const std::string& k, const std::string& v) {
            s.tiled_experts = parse_choice(k, v, {"auto", "on", "off"});
          },
          [](const EngineSettings& s) { return nlohmann::json(s.tiled_experts); }},
      MP_STRING(stats_path),
      MP_UINT(stats_flush_interval, 0, kU64Max),
      MP_STRING(trace_path),
      MP_STRING(pack_path),
      MP_STRING(manifest_path),
  };
  return table;
}

#undef MP_UINT
#undef MP_BOOL
#undef MP_STRING

}  // namespace

void apply_setting(EngineSettings& s, const std::string& key, const std::string& value) {
  for (const Key& k : keys()) {
    if (key == k.name) {
      k.set(s, key, value);
      return;
    }
  }
  std::string known;
  for (const Key& k : keys()) known += (known.empty() ? "" : ", ") + std::string(k.name);
  throw Error("unknown setting \"" + key + "\" (known: " + known + ")");
}

void apply_settings_json(EngineSettings& s, const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw Error(origin + ": engine settings must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_boolean()) {
      text = value.get<bool>() ? "true" : "false";
    } else if (value.is_number_unsigned()) {
      text = std::to_string(value.get<uint64_t>());
    } else if (value.is_number_integer()) {
      text = std::to_string(value.get<int64_t>());  // negative: rejected by the parser, naming the key
    } else if (value.is_number_float()) {
      const double d = value.get<double>();
      if (d >= 0 && d <= 1.8e19 && d == static_cast<double>(static_cast<uint64_t>(d))) {
        text = std::to_string(static_cast<uint64_t>(d));
      } else {
        text = value.dump();
      }
    } else {
      throw Error(origin + ": setting " + key + ": expected a string, number or boolean, got " + value.type_name());
    }
    try {
      apply_setting(s, key, text);
    } catch (const Error& e) {
      throw Error(origin + ": " + e.what());
    }
  }
}

void apply_settings_file(EngineSettings& s, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(path + ": is a directory; give a settings JSON file");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError(path, "open", errno);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's text without its "[json.exception.parse_error.101] " prefix.
    const std::string what = e.what();
    const size_t tag = what.rfind("] ", what.find(' '));
    throw FormatError(path, "settings JSON", e.byte > 0 ? e.byte - 1 : 0,
                      tag == std::string::npos ? what : what.substr(tag + 2));
  }
  apply_settings_json(s, j, path);
}

nlohmann::json settings_to_json(const EngineSettings& s) {
  nlohmann::json j = nlohmann::json::object();
  for (const Key& k : keys()) j[k.name] = k.get(s);
  return j;
}

const std::vector<std::string>& setting_keys() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Key& k : keys()) v.emplace_back(k.name);
    return v;
  }();
  return names;
}

std::optional<SettingRange> engine_setting_range(const std::string& key) {
  for (const Key& k : keys()) {
    if (key == k.name) return k.range;
  }
  return std::nullopt;
}

}  // namespace moepack
