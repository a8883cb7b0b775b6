#include "core/pack_manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/byte_source.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/sha256.h"

namespace moepack {

using nlohmann::json;

json manifest_to_json(const PackManifest& m) {
  json j;
  j["format"] = "moepack-expert-pack";
  j["format_version"] = m.format_version;
  j["build_id"] = m.build_id;
  j["tool"] = m.tool;
  j["model"] = m.model;
  json src = json::array();
  for (const PackSourceFile& s : m.sources)
    src.push_back({{"path", s.path}, {"bytes", s.bytes}, {"sha256", s.sha256}});
  j["sources"] = src;
  j["files"] = {
      {"dense",
       {{"file", m.dense.file},
        {"bytes", m.dense.bytes},
        {"sha256", m.dense.sha256},
        {"tensors", m.dense_tensors}}},
      {"experts", {{"file", m.experts.file}, {"bytes", m.experts.bytes}, {"sha256", m.experts.sha256}}}};
  const PackLayout& L = m.layout;
  json layers = json::array();
  for (size_t l = 0; l < L.layers.size(); ++l) {
    const PackLayer& ly = L.layers[l];
    json roles = json::array();
    for (const PackRole& r : ly.roles) {
      roles.push_back({{"role", r.role},
                       {"tensor", r.tensor},
                       {"type", std::string(ggml_type_name(r.type))},
                       {"ne", std::vector<uint64_t>(r.ne.begin(), r.ne.begin() + r.n_dims)},
                       {"bytes", r.bytes},
                       {"offset", r.offset}});
    }
    json hashes = l < m.expert_sha256.size() ? json(m.expert_sha256[l]) : json::array();
    layers.push_back({{"index", l},
                      {"block", ly.block},
                      {"n_experts", ly.n_experts},
                      {"block_bytes", ly.block_bytes},
                      {"stride", ly.stride},
                      {"base", ly.base},
                      {"roles", roles},
                      {"expert_sha256", hashes}});
  }
  j["layout"] = {{"alignment", kPackAlignment},
                 {"role_alignment", kPackRoleAlignment},
                 {"data_start", L.data_start},
                 {"data_end", L.data_end},
                 {"max_stride", L.max_stride},
                 {"expert_count", L.expert_count()},
                 {"layers", layers}};
  j["build"] = m.build;
  return j;
}

namespace {

class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw FormatError(file_, path.empty() ? "(root)" : path, FormatError::InDocument{}, what);
  }
  const json& at(const json& o, const std::string& path, const char* key) const {
    if (!o.is_object()) fail(path, "is not an object");
    auto it = o.find(key);
    if (it == o.end()) fail(path + "/" + key, "is missing");
    return *it;
  }
  uint64_t u64(const json& o, const std::string& path, const char* key) const {
    const json& v = at(o, path, key);
    if (!v.is_number_unsigned()) fail(path + "/" + key, "must be a non-negative integer");
    return v.get<uint64_t>();
  }
  uint32_t u32(const json& o, const std::string& path, const char* key) const {
    const uint64_t v = u64(o, path, key);
    if (v > 0xffffffffu) fail(path + "/" + key, "exceeds 32 bits");
    return static_cast<uint32_t>(v);
  }
  std::string str(const json& o, const std::string& path, const char* key) const {
    const json& v = at(o, path, key);
    if (!v.is_string()) fail(path + "/" + key, "must be a string");
    return v.get<std::string>();
  }
  std::string sha(const json& v, const std::string& path) const {
    Sha256Digest d;
    if (!v.is_string() || !from_hex(v.get<std::string>(), d)) fail(path, "must be 64 hex digits (SHA-256)");
    return v.get<std::string>();
  }
  std::string file_name(const json& o, const std::string& path) const {
    std::string f = str(o, path, "file");
    if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..") {
      fail(path + "/file", "must be a plain file name inside the pack directory");
    }
    return f;
  }

 private:
  std::string file_;
};

}  // namespace

PackManifest manifest_from_json(const json& j, const std::string& file) {
  Reader r(file);
  PackManifest m;
  if (!j.is_object()) r.fail("", "the manifest is not a JSON object");
  if (r.str(j, "", "format") != "moepack-expert-pack") r.fail("/format", "is not \"moepack-expert-pack\"");
  m.format_version = r.u32(j, "", "format_version");
  if (m.format_version != kPackFormatVersion) {
    r.fail("/format_version", "version " + std::to_string(m.format_version) +
                                  " is not supported (this build reads " +
                                  std::to_string(kPackFormatVersion) + ")");
  }
  m.build_id = r.str(j, "", "build_id");
  if (m.build_id.size() != 32 || m.build_id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    r.fail("/build_id", "must be 32 lowercase hex digits");
  }
  m.tool = r.str(j, "", "tool");
  m.model = r.at(j, "", "model");
  if (!m.model.is_object()) r.fail("/model", "is not an object");
  const json& src = r.at(j, "", "sources");
  if (!src.is_array() || src.empty()) r.fail("/sources", "must be a non-empty array");
  for (size_t k = 0; k < src.size(); ++k) {
    const std::string p = "/sources/" + std::to_string(k);
    PackSourceFile s;
    s.path = r.str(src[k], p, "path");
    s.bytes = r.u64(src[k], p, "bytes");
    s.sha256 = r.sha(r.at(src[k], p, "sha256"), p + "/sha256");
    m.sources.push_back(s);
  }
  const json& files = r.at(j, "", "files");
  const json& dense = r.at(files, "/files", "dense");
  m.dense.file = r.file_name(dense, "/files/dense");
  m.dense.bytes = r.u64(dense, "/files/dense", "bytes");
  m.dense.sha256 = r.sha(r.at(dense, "/files/dense", "sha256"), "/files/dense/sha256");
  m.dense_tensors = r.u64(dense, "/files/dense", "tensors");
  const json& ex = r.at(files, "/files", "experts");
  m.experts.file = r.file_name(ex, "/files/experts");
  m.experts.bytes = r.u64(ex, "/files/experts", "bytes");
  m.experts.sha256 = r.sha(r.at(ex, "/files/experts", "sha256"), "/files/experts/sha256");
  if (m.experts.file == m.dense.file || m.experts.file == "manifest.json" ||
      m.dense.file == "manifest.json") {
    r.fail("/files", "file names must be distinct and not manifest.json");
  }

  const json& lay = r.at(j, "", "layout");
  if (r.u64(lay, "/layout", "alignment") != kPackAlignment) r.fail("/layout/alignment", "must be 4096");
  if (r.u64(lay, "/layout", "role_alignment") != kPackRoleAlignment)
    r.fail("/layout/role_alignment", "must be 256");
  const json& layers = r.at(lay, "/layout", "layers");
  if (!layers.is_array() || layers.empty()) r.fail("/layout/layers", "must be a non-empty array");
  if (layers.size() > 65536) r.fail("/layout/layers", "more than 65536 layers");
  PackLayout recorded;
  recorded.data_start = r.u64(lay, "/layout", "data_start");
  recorded.data_end = r.u64(lay, "/layout", "data_end");
  recorded.max_stride = r.u64(lay, "/layout", "max_stride");
  for (size_t l = 0; l < layers.size(); ++l) {
    const std::string p = "/layout/layers/" + std::to_string(l);
    const json& lj = layers[l];
    if (r.u64(lj, p, "index") != l) r.fail(p + "/index", "must be " + std::to_string(l));
    PackLayer L;
    L.block = r.u32(lj, p, "block");
    L.n_experts = r.u32(lj, p, "n_experts");
    if (L.n_experts == 0 || L.n_experts > (1u << 20)) r.fail(p + "/n_experts", "must be 1..1048576");
    if (l > 0 && L.block <= recorded.layers.back().block) r.fail(p + "/block", "blocks must increase");
    L.block_bytes = r.u64(lj, p, "block_bytes");
    L.stride = r.u64(lj, p, "stride");
    L.base = r.u64(lj, p, "base");
    const json& roles = r.at(lj, p, "roles");
    if (!roles.is_array() || roles.empty() || roles.size() > 64)
      r.fail(p + "/roles", "must be an array of 1..64 roles");
    for (size_t k = 0; k < roles.size(); ++k) {
      const std::string rp = p + "/roles/" + std::to_string(k);
      PackRole ro;
      ro.role = r.str(roles[k], rp, "role");
      ro.tensor = r.str(roles[k], rp, "tensor");
      const auto t = ggml_type_from_name(r.str(roles[k], rp, "type"));
      if (!t) r.fail(rp + "/type", "unknown ggml type");
      ro.type = *t;
      const json& ne = r.at(roles[k], rp, "ne");
      if (!ne.is_array() || ne.empty() || ne.size() > 3) r.fail(rp + "/ne", "must hold 1..3 dimensions");
      ro.n_dims = static_cast<uint32_t>(ne.size());
      std::optional<uint64_t> elems = 1;
      for (size_t d = 0; d < ne.size(); ++d) {
        if (!ne[d].is_number_unsigned() || ne[d].get<uint64_t>() == 0)
          r.fail(rp + "/ne", "dimensions must be positive integers");
        ro.ne[d] = ne[d].get<uint64_t>();
        if (elems) elems = checked_mul(*elems, ro.ne[d]);
      }
      ro.bytes = r.u64(roles[k], rp, "bytes");
      ro.offset = r.u64(roles[k], rp, "offset");
      // Bytes of one slice: rows of ne[0] elements.
      const auto row = ggml_row_bytes(ro.type, ro.ne[0]);
      const auto want = row && elems ? checked_mul(*row, *elems / ro.ne[0]) : std::nullopt;
      if (!want || *want != ro.bytes) {
        r.fail(rp + "/bytes", std::to_string(ro.bytes) + " bytes do not match type " +
                                  std::string(ggml_type_name(ro.type)) + " and ne (" +
                                  (want ? std::to_string(*want) : std::string("invalid shape")) + ")");
      }
      // The role follows from the tensor's name and the layers' canonical order (expert_role_rank): a
      // manifest whose role names or order were changed would otherwise make the engine read one role's
      // bytes as another's (the offsets are derived from the order), a wrong answer no SHA-256 catches.
      std::string named_role;
      uint32_t named_block = 0;
      if (!expert_role_of_tensor(ro.tensor, named_role, named_block)) {
        r.fail(rp + "/tensor", "\"" + ro.tensor + "\" is not a routed-expert tensor name (blk.N.ffn_ROLE_exps.weight)");
      }
      if (named_role != ro.role || named_block != L.block) {
        r.fail(rp + "/role", "is \"" + ro.role + "\" of blk." + std::to_string(L.block) + ", but its tensor \"" +
                                  ro.tensor + "\" is role \"" + named_role + "\" of blk." + std::to_string(named_block));
      }
      if (!L.roles.empty()) {
        const PackRole& prev = L.roles.back();
        const int a = expert_role_rank(prev.role), b = expert_role_rank(ro.role);
        if (a > b || (a == b && prev.role >= ro.role)) {
          r.fail(rp + "/role", "\"" + ro.role + "\" after \"" + prev.role +
                                   "\": a layer's roles must be distinct, in the order gate, up, down, gate_up, then "
                                   "the others by name");
        }
      }
      L.roles.push_back(ro);
    }
    const json& hs = r.at(lj, p, "expert_sha256");
    if (!hs.is_array() || hs.size() != L.n_experts) {
      r.fail(p + "/expert_sha256", "must hold one digest per expert (" + std::to_string(L.n_experts) + ")");
    }
    std::vector<std::string> hv;
    hv.reserve(hs.size());
    for (size_t e = 0; e < hs.size(); ++e)
      hv.push_back(r.sha(hs[e], p + "/expert_sha256/" + std::to_string(e)));
    m.expert_sha256.push_back(std::move(hv));
    recorded.layers.push_back(std::move(L));
  }
  // Re-derive every layout number and compare with what the file says.
  PackLayout derived = recorded;
  try {
    compute_pack_layout(derived);
  } catch (const Error& e) {
    r.fail("/layout", e.what());
  }
  auto eq = [&](uint64_t a, uint64_t b, const std::string& p) {
    if (a != b) r.fail(p, "is " + std::to_string(a) + " but the layout formula gives " + std::to_string(b));
  };
  eq(recorded.data_start, derived.data_start, "/layout/data_start");
  eq(recorded.data_end, derived.data_end, "/layout/data_end");
  eq(recorded.max_stride, derived.max_stride, "/layout/max_stride");
  for (size_t l = 0; l < derived.layers.size(); ++l) {
    const std::string p = "/layout/layers/" + std::to_string(l);
    const PackLayer& a = recorded.layers[l];
    const PackLayer& b = derived.layers[l];
    eq(a.block_bytes, b.block_bytes, p + "/block_bytes");
    eq(a.stride, b.stride, p + "/stride");
    eq(a.base, b.base, p + "/base");
    for (size_t k = 0; k < a.roles.size(); ++k)
      eq(a.roles[k].offset, b.roles[k].offset, p + "/roles/" + std::to_string(k) + "/offset");
  }
  if (r.u64(lay, "/layout", "expert_count") != derived.expert_count())
    r.fail("/layout/expert_count", "does not match the layers");
  if (m.experts.bytes != derived.data_end) r.fail("/files/experts/bytes", "must equal /layout/data_end");
  m.layout = std::move(derived);
  if (auto it = j.find("build"); it != j.end()) m.build = *it;
  return m;
}

PackManifest read_manifest(const std::string& path) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, &size);
  if (size > (uint64_t{256} << 20)) {
    ::close(fd);
    throw FormatError(path, "file size", 0, "a manifest larger than 256 MiB is not accepted");
  }
  std::string text(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      ::close(fd);
      throw IoError(path, "pread", e);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw FormatError(path, "JSON", e.byte > 0 ? e.byte - 1 : 0, e.what());
  }
  return manifest_from_json(j, path);
}

}  // namespace moepack
