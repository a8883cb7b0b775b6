// A conversation with one model: tokenizer, chat template, sampler and the generation loop
// over a Backend. Used by `moepack run`, `moepack chat`, the studio's engine worker and the
// benchmark runner, so all of them generate the same way.
//
// KV reuse: generate() keeps the longest common prefix of the new prompt and the tokens
// already in the backend's KV cache and evaluates only the rest (a chat turn re-sends the
// whole conversation; only the new turn is prefilled).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.h"
#include "core/engine_settings.h"
#include "core/sampler.h"
#include "core/telemetry.h"
#include "core/tokenizer.h"

namespace moepack {

class ModelSource;

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

struct GenerateOptions {
  int32_t max_tokens = 256;            // completion tokens; generation also stops at n_ctx
  SamplingParams sampling;
  std::vector<std::string> stop;       // stop strings (not included in the returned text)
  bool ignore_eos = false;             // keep generating past end-of-generation tokens
  const std::atomic<bool>* cancel = nullptr;  // checked before every forward()
};

enum class StopReason { Eos, StopString, Length, ContextFull, Cancelled };
const char* stop_reason_name(StopReason r);  // "eos", "stop", "length", "context", "cancelled"

struct GenerateResult {
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> tokens;  // generated ids (the EOS that ended generation is included)
  std::string text;             // detokenized completion, stop string and EOS text removed
  StopReason stop_reason = StopReason::Length;
  uint32_t reused_tokens = 0;   // prompt tokens whose KV entries were kept from before
  double prefill_ms = 0;        // prompt evaluation (the tokens not reused)
  double decode_ms = 0;         // all later forward() calls
  double time_to_first_token_ms = 0;
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;  // (generated - 1) / decode_ms; 0 with fewer than 2 tokens
  BackendStats stats;           // difference over this call
};

// Called for every piece of completion text as soon as it is certain not to belong to a stop
// string; `token` is the id that completed it. Return false to stop (as cancel).
using TextCallback = std::function<bool(std::string_view text, int32_t token)>;

class Session {
 public:
  Session(std::shared_ptr<const ModelSource> model, std::unique_ptr<Backend> backend, Tokenizer tokenizer,
          std::string chat_template, const EngineSettings& settings = {});
  // Opens `path_or_name` (ModelSource::open) and creates the backend `settings.backend` asks
  // for (make_backend in core/backend_factory.h).
  static std::unique_ptr<Session> load(const std::string& path_or_name, const EngineSettings& settings);

  const Tokenizer& tokenizer() const { return tokenizer_; }
  Backend& backend() { return *backend_; }
  const Backend& backend() const { return *backend_; }
  const ModelSource& model() const { return *model_; }
  Telemetry& telemetry() { return *telemetry_; }
  const std::string& chat_template() const { return chat_template_; }

  // The model's chat template applied to `messages` (add_generation_prompt as asked).
  std::string format_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // Tokenizes prompt text the way llama.cpp does (add_special, parse_special).
  std::vector<int32_t> tokenize(std::string_view text) const;

  GenerateResult generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                          const TextCallback& on_text = {});
  GenerateResult generate_text(std::string_view prompt, const GenerateOptions& options,
                               const TextCallback& on_text = {});
  GenerateResult chat(const std::vector<ChatMessage>& messages, const GenerateOptions& options,
                      const TextCallback& on_text = {});
  // Clears the KV cache.
  void reset();

 private:
  std::shared_ptr<const ModelSource> model_;
  std::unique_ptr<Backend> backend_;
  Tokenizer tokenizer_;
  std::string chat_template_;
  std::unique_ptr<Telemetry> telemetry_;
  std::vector<int32_t> kv_tokens_;  // tokens whose KV entries the backend holds
  std::vector<float> logits_;
};

}  // namespace moepack
