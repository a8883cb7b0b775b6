// What the studio's engine worker needs from a loaded model, as a narrow interface: the real
// implementation wraps moepack::Session (ui/session_engine.h); view-model tests plug in a
// scripted engine. Everything here runs on the engine worker thread, except telemetry(),
// which is lock-free and may be read from any thread (core/telemetry.h).
#pragma once

#include <QString>
#include <functional>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "core/session.h"
#include "core/telemetry.h"

namespace moepack::ui {

// Facts about a loaded model, fixed for its lifetime.
struct EngineInfo {
  QString path;          // what was opened (a pack directory after a conversion)
  QString modelName;     // general.name, else the file name
  QString architecture;  // general.architecture
  QString backend;       // "cpu", "cuda"
  QString backendNote;   // why `auto` did not take a backend (Session::backend_note), or empty
  bool isPack = false;
  uint32_t nCtx = 0;              // KV cache length, tokens
  uint32_t threads = 0;           // engine threads
  uint32_t moeLayers = 0;         // layers with routed experts
  uint32_t expertsPerLayer = 0;
  uint32_t topK = 0;              // experts selected per token and MoE layer
  uint32_t cacheSlots = 0;        // expert cache slots (0: experts resident, GGUF path)
  uint64_t cacheSlotBytes = 0;    // bytes per slot
  uint32_t ramTierSlots = 0;      // host-RAM tier slots behind the cache (CUDA pack path, cache_ram_mib)
  QString templateWarning;        // non-empty when the ChatML fallback is used
};

class ChatEngine {
 public:
  virtual ~ChatEngine() = default;
  virtual EngineInfo info() const = 0;
  // As Session::chat (core/session.h): throws Error on failure.
  virtual GenerateResult chat(const std::vector<ChatMessage>& messages, const GenerateOptions& options,
                              const TextCallback& on_text) = 0;
  virtual Telemetry& telemetry() = 0;
};

// Opens a model for the worker; throws Error (with the path) on failure. Runs on the worker
// thread.
using ChatEngineFactory = std::function<std::unique_ptr<ChatEngine>(const QString& path, const EngineSettings& settings)>;

}  // namespace moepack::ui
