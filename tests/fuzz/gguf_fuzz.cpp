// libFuzzer target over the GGUF reader (core/gguf.h, core/gguf_model.h).
//
// Each input is parsed as a GGUF file from memory; if it parses, every getter, every array
// (resident or loaded with load_array), every tensor's data and a summary-like walk over the
// tensors (MoE experts by name, bytes per expert with checked arithmetic) are exercised. The
// same bytes are then opened as a file through GgufModel::open_files (via a memfd). The only
// acceptable failure is a moepack::Error; anything else (another exception, a crash, a sanitizer
// report, a leak, a timeout) is a finding.
//
// Build: packaging/build-fuzzer.sh (clang, -fsanitize=fuzzer,address,undefined).
// Run:   build-fuzz/tests/fuzz/gguf_fuzz -max_total_time=60 CORPUS_DIR
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/checked.h"
#include "core/error.h"
#include "core/gguf.h"
#include "core/gguf_model.h"

namespace {

using namespace moepack;

volatile uint64_t g_sink = 0;  // keeps the walks from being optimised away

void walk_array(const GgufArray& a, int depth) {
  if (!a.resident) return;
  g_sink = g_sink + a.count + static_cast<uint64_t>(depth);
  for (uint64_t k = 0; k < a.count && k < 64; ++k) {
    try {
      g_sink = g_sink + static_cast<uint64_t>(a.int_at(k));
    } catch (const Error&) {
    }
    try {
      g_sink = g_sink + static_cast<uint64_t>(a.float_at(k) != 0.0);
    } catch (const Error&) {
    }
  }
  for (const std::string& s : a.strings) g_sink = g_sink + s.size();
  for (const GgufArray& sub : a.arrays) walk_array(sub, depth + 1);
}

void walk_file(const GgufFile& f) {
  g_sink = g_sink + f.version() + f.alignment() + f.data_start() + f.metadata_bytes();
  for (const GgufKv& kv : f.metadata()) {
    try {
      g_sink = g_sink + f.get_uint(kv.key).value_or(0);
    } catch (const Error&) {
    }
    try {
      g_sink = g_sink + static_cast<uint64_t>(f.get_int(kv.key).value_or(0));
    } catch (const Error&) {
    }
    try {
      g_sink = g_sink + static_cast<uint64_t>(f.get_float(kv.key).value_or(0) > 0);
    } catch (const Error&) {
    }
    try {
      g_sink = g_sink + f.get_bool(kv.key).value_or(false);
    } catch (const Error&) {
    }
    try {
      g_sink = g_sink + f.get_string(kv.key).value_or("").size();
    } catch (const Error&) {
    }
    try {
      if (const GgufArray* a = f.get_array(kv.key)) {
        walk_array(*a, 0);
        if (!a->resident) walk_array(f.load_array(*a, 1u << 20), 0);
      }
    } catch (const Error&) {
    }
  }
  // Summary-like walk: every tensor found by name, a few bytes of its data read, and the MoE
  // bookkeeping inspect does (bytes of one expert = nbytes / last dimension).
  uint64_t total = 0;
  for (const GgufTensorInfo& t : f.tensors()) {
    const GgufTensorInfo* found = f.find_tensor(t.name);
    if (found != &t) __builtin_trap();  // names are unique, so find_tensor finds this one
    if (t.n_dims < 1 || t.n_dims > 4) __builtin_trap();
    if (t.file_offset < f.data_start() || !range_inside(t.file_offset, t.nbytes, f.file_size())) {
      __builtin_trap();  // the reader promised the data lies inside the file
    }
    total = checked_add(total, t.nbytes).value_or(0);
    const uint64_t n_exp = t.ne[t.n_dims - 1];
    if (n_exp != 0) g_sink = g_sink + t.nbytes / n_exp;
    uint8_t buf[64];
    const size_t n = static_cast<size_t>(t.nbytes < sizeof buf ? t.nbytes : sizeof buf);
    try {
      f.read_tensor_data(t, 0, buf, n);
      if (n > 0) g_sink = g_sink + buf[0];
      f.read_tensor_data(t, t.nbytes, buf, 0);
    } catch (const Error&) {
    }
  }
  g_sink = g_sink + total;
}

// The same bytes as a file, through the path the CLI takes.
void open_as_file(const uint8_t* data, size_t size) {
  const int fd = ::memfd_create("gguf_fuzz", MFD_CLOEXEC);
  if (fd < 0) return;
  size_t done = 0;
  while (done < size) {
    const ssize_t w = ::write(fd, data + done, size - done);
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  if (done == size) {
    try {
      const GgufModel m = GgufModel::open_files({"/proc/self/fd/" + std::to_string(fd)});
      g_sink = g_sink + m.tensors().size() + m.total_file_bytes();
      for (const GgufTensorRef& r : m.tensors()) {
        if (m.find_tensor(r.info->name) == nullptr) __builtin_trap();
      }
    } catch (const Error&) {
    }
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  GgufLimits limits;
  limits.max_inline_array_bytes = 4096;  // exercise lazy arrays and load_array on small inputs
  try {
    const GgufFile f = GgufFile::parse(make_memory_source("fuzz.gguf", std::vector<uint8_t>(data, data + size)), limits);
    walk_file(f);
  } catch (const Error&) {
  }
  try {
    const GgufFile f = GgufFile::parse(make_memory_source("fuzz.gguf", std::vector<uint8_t>(data, data + size)));
    walk_file(f);
  } catch (const Error&) {
  }
  open_as_file(data, size);
  return 0;
}
