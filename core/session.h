// A conversation with one model: tokenizer, chat template, sampler and the generation loop
// over a Backend. Used by `moepack run`, `moepack chat`, the studio's engine worker and the
// benchmark runner, so all of them generate the same way.
//
// KV reuse: generate() keeps the longest common prefix of the new prompt and the tokens
// already in the backend's KV cache and evaluates only the rest (a chat turn re-sends the
// whole conversation; only the new turn is prefilled). When the whole prompt is already in
// the cache, its last token is evaluated again so that there are logits to sample from.
//
// The loop (generate()): one backend.forward() over the prompt tokens not reused (prefill),
// then one forward() per generated token (decode). It stops, checked in this order after each
// sampled token: end-of-generation token (tokenizer.is_eog, unless ignore_eos) -> stop string
// -> the callback returned false -> max_tokens -> the cancel flag -> the KV cache is full
// (n_ctx). The cancel flag is also checked before the prefill. Text is streamed through the
// tokenizer's StreamDecoder (always whole UTF-8 characters; control tokens are not rendered;
// pieces as llama.cpp's token_to_piece gives them, so a SentencePiece completion may begin
// with the space of its first word);
// text that could be the beginning of a stop string is held back until it cannot be.
//
// Telemetry: after every forward() the BackendStats difference is added to telemetry()'s
// counters, and every generated token records one TokenSample (the forward that produced its
// logits: read bytes, misses, io wait, compute time). EngineSettings' stats_path and
// stats_flush_interval configure the stats file.
//
// Threading: one thread drives a Session; only `cancel` and telemetry() may be touched from
// other threads while generate() runs.
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
class ChatTemplate;
class RoutingRecorder;  // core/routing_recorder.h

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

struct GenerateOptions {
  int32_t max_tokens = 256;  // completion tokens; < 0: until n_ctx; 0: prefill only (no token)
  SamplingParams sampling;
  std::vector<std::string> stop;       // stop strings (not included in the returned text)
  bool ignore_eos = false;             // keep generating past end-of-generation tokens
  const std::atomic<bool>* cancel = nullptr;  // checked before every forward()
  // If not null: receives the logits after the last prompt token (n_vocab floats), i.e. the
  // distribution the first generated token is drawn from (`moepack run --logits-out`).
  std::vector<float>* prompt_logits = nullptr;
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
  // `model` may be null (tests with a scripted backend); `backend` must not be. An empty or
  // uncompilable `chat_template` (Jinja source) selects the ChatML fallback and sets
  // template_warning(). Throws Error for a null backend or a tokenizer whose vocabulary is
  // larger than the backend's n_vocab.
  Session(std::shared_ptr<const ModelSource> model, std::unique_ptr<Backend> backend, Tokenizer tokenizer,
          std::string chat_template, const EngineSettings& settings = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Opens `path_or_name` (ModelSource::open) and creates the backend `settings.backend` asks
  // for (make_backend in core/backend_factory.h); tokenizer and chat template come from the
  // model's metadata. Throws IoError / FormatError / Error naming the path.
  // (Defined in core/session_load.cpp, so that session.cpp links without any backend.)
  static std::unique_ptr<Session> load(const std::string& path_or_name, const EngineSettings& settings);

  const Tokenizer& tokenizer() const { return tokenizer_; }
  Backend& backend() { return *backend_; }
  const Backend& backend() const { return *backend_; }
  // Throws Error if the session was made without a model.
  const ModelSource& model() const;
  bool has_model() const { return model_ != nullptr; }
  Telemetry& telemetry() { return *telemetry_; }
  const std::string& chat_template() const { return chat_template_; }
  // Why the ChatML fallback is used ("" when the model's own template is).
  const std::string& template_warning() const { return template_warning_; }
  // Why `--backend auto` did not take a backend it passed over (load(): make_backend's `passed_over`, e.g.
  // 'backend "cuda": GPU 0 (RTX 4090, compute capability 8.9): … needs compute capability 9.0 or later'), or
  // "" (the backend asked for runs, or none said why).
  const std::string& backend_note() const { return backend_note_; }
  // Tokens whose KV entries the backend holds (the prompt and output of the last calls).
  const std::vector<int32_t>& kv_tokens() const { return kv_tokens_; }

  // The model's chat template applied to `messages` (add_generation_prompt as asked), with
  // bos_token / eos_token from the vocabulary. Throws Error if the template fails to render.
  std::string format_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // Tokenizes prompt text the way llama.cpp does (add_special, parse_special).
  std::vector<int32_t> tokenize(std::string_view text) const;

  // generate*/chat throw Error for an empty prompt or one longer than n_ctx, and whatever
  // backend.forward() throws (the KV cache then holds what it held before that call).
  // generate_text tokenizes with tokenize(); chat renders format_chat(messages, true) and
  // tokenizes it so that the template's markers are special tokens and message text is not.
  GenerateResult generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                          const TextCallback& on_text = {});
  GenerateResult generate_text(std::string_view prompt, const GenerateOptions& options,
                               const TextCallback& on_text = {});
  GenerateResult chat(const std::vector<ChatMessage>& messages, const GenerateOptions& options,
                      const TextCallback& on_text = {});
  // Clears the KV cache.
  void reset();
  // Writes the routing trace's last step and moves it into place (EngineSettings::trace_path; nothing
  // without one). Throws IoError where it cannot be written or renamed (a full disk, a directory of that
  // name), so that a command can fail instead of losing the trace: the destructor closes it too but can
  // only drop such errors (the records then stay in PATH.tmp).
  void close_trace();

 private:
  std::shared_ptr<const ModelSource> model_;
  std::unique_ptr<Backend> backend_;
  Tokenizer tokenizer_;
  std::string chat_template_;
  std::shared_ptr<const ChatTemplate> template_;
  std::string template_warning_;
  std::string backend_note_;
  std::shared_ptr<RoutingRecorder> recorder_;  // trace_path's (also held by the backend's observer)
  std::unique_ptr<Telemetry> telemetry_;
  std::vector<int32_t> kv_tokens_;  // tokens whose KV entries the backend holds
  std::vector<float> logits_;
};

}  // namespace moepack
