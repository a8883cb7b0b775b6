// The generation loop shared by the CLI, the studio and the benchmark runner (core/session.h):
// KV prefix reuse, prefill, decode, stop conditions, UTF-8-safe streaming with stop-string
// hold-back, timings and telemetry. Session::load lives in session_load.cpp (it needs the
// backends and the model loader; this file needs neither).
#include "core/session.h"

#include "core/routing_recorder.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "core/chat_template.h"
#include "core/error.h"

namespace moepack {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// b - a for the cumulative counters; gauges (slot count and size) as in b.
BackendStats stats_delta(const BackendStats& a, const BackendStats& b) {
  BackendStats d = b;
  d.forward_calls -= a.forward_calls;
  d.tokens_evaluated -= a.tokens_evaluated;
  d.expert_selections -= a.expert_selections;
  d.experts_computed -= a.experts_computed;
  d.compute_ms -= a.compute_ms;
  d.io_wait_ms -= a.io_wait_ms;
  d.cache_hits -= a.cache_hits;
  d.cache_misses -= a.cache_misses;
  d.cache_evictions -= a.cache_evictions;
  d.prefetch_reads -= a.prefetch_reads;
  d.prefetch_hits -= a.prefetch_hits;
  d.pack_read_bytes -= a.pack_read_bytes;
  d.h2d_bytes -= a.h2d_bytes;
  d.ram_tier_hits -= a.ram_tier_hits;
  d.ram_tier_demotions -= a.ram_tier_demotions;
  d.d2h_bytes -= a.d2h_bytes;
  d.fallback_count -= a.fallback_count;
  d.io_errors -= a.io_errors;
  return d;
}

void add_to_counters(TelemetryCounters& c, const BackendStats& d) {
  c.cache_hits.fetch_add(d.cache_hits, std::memory_order_relaxed);
  c.cache_misses.fetch_add(d.cache_misses, std::memory_order_relaxed);
  c.cache_evictions.fetch_add(d.cache_evictions, std::memory_order_relaxed);
  c.prefetch_reads.fetch_add(d.prefetch_reads, std::memory_order_relaxed);
  c.prefetch_hits.fetch_add(d.prefetch_hits, std::memory_order_relaxed);
  c.pack_read_bytes.fetch_add(d.pack_read_bytes, std::memory_order_relaxed);
  c.h2d_bytes.fetch_add(d.h2d_bytes, std::memory_order_relaxed);
  c.ram_tier_hits.fetch_add(d.ram_tier_hits, std::memory_order_relaxed);
  c.d2h_bytes.fetch_add(d.d2h_bytes, std::memory_order_relaxed);
  c.fallback_count.fetch_add(d.fallback_count, std::memory_order_relaxed);
  c.io_errors.fetch_add(d.io_errors, std::memory_order_relaxed);
}

// Length of the longest suffix of `text` that is a proper prefix of some stop string: those
// bytes must be held back, as the next token may complete the stop string.
size_t stop_prefix_tail(std::string_view text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const std::string& s : stops) {
    const size_t max_k = std::min(s.size() - 1, text.size());
    for (size_t k = max_k; k > hold; --k) {
      if (text.substr(text.size() - k) == std::string_view(s).substr(0, k)) {
        hold = k;
        break;
      }
    }
  }
  return hold;
}

// Earliest occurrence of any stop string in `text` (npos if none).
size_t find_stop(std::string_view text, const std::vector<std::string>& stops) {
  size_t best = std::string_view::npos;
  for (const std::string& s : stops) best = std::min(best, text.find(s));
  return best;
}

}  // namespace

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::Eos: return "eos";
    case StopReason::StopString: return "stop";
    case StopReason::Length: return "length";
    case StopReason::ContextFull: return "context";
    case StopReason::Cancelled: return "cancelled";
  }
  return "unknown";
}

Session::Session(std::shared_ptr<const ModelSource> model, std::unique_ptr<Backend> backend, Tokenizer tokenizer,
                 std::string chat_template, const EngineSettings& settings)
    : model_(std::move(model)),
      backend_(std::move(backend)),
      tokenizer_(std::move(tokenizer)),
      chat_template_(std::move(chat_template)) {
  if (!backend_) throw Error("session: no backend");
  const uint32_t n_vocab = backend_->config().n_vocab;
  if (tokenizer_.n_tokens() > n_vocab) {
    throw Error("session: the tokenizer has " + std::to_string(tokenizer_.n_tokens()) +
                " tokens but the model's output has only " + std::to_string(n_vocab));
  }
  if (chat_template_.empty()) {
    template_ = std::make_shared<const ChatTemplate>(ChatTemplate::chatml());
    template_warning_ = "the model has no chat template; using the ChatML fallback";
  } else {
    try {
      template_ = std::make_shared<const ChatTemplate>(ChatTemplate::from_source(chat_template_));
    } catch (const jinja::TemplateError& e) {
      template_ = std::make_shared<const ChatTemplate>(ChatTemplate::chatml());
      template_warning_ = std::string("the model's chat template does not compile (") + e.what() +
                          "); using the ChatML fallback";
    }
  }
  TelemetrySettings ts;
  ts.stats_path = settings.stats_path;
  ts.stats_flush_interval = settings.stats_flush_interval;
  telemetry_ = std::make_unique<Telemetry>(ts);
  {
    const ResidencyMap m = backend_->residency();
    if (m.n_layers > 0) telemetry_->init_residency(m.n_layers, m.n_experts);
  }
  kv_tokens_.reserve(backend_->n_ctx());
}

Session::~Session() = default;

const ModelSource& Session::model() const {
  if (!model_) throw Error("session: no model (this session was created without a ModelSource)");
  return *model_;
}

std::string Session::format_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  nlohmann::json arr = nlohmann::json::array();
  for (const ChatMessage& m : messages) arr.push_back({{"role", m.role}, {"content", m.content}});
  try {
    return template_->render(arr, chat_options_for(tokenizer_, add_generation_prompt));
  } catch (const jinja::TemplateError& e) {
    throw Error(std::string("chat template: ") + e.what());
  }
}

std::vector<int32_t> Session::tokenize(std::string_view text) const {
  return tokenizer_.encode(text, /*add_special=*/true, /*parse_special=*/true);
}

void Session::close_trace() {
  if (recorder_) recorder_->close();
}

void Session::reset() {
  backend_->truncate(0);
  kv_tokens_.clear();
}

GenerateResult Session::generate_text(std::string_view prompt, const GenerateOptions& options,
                                      const TextCallback& on_text) {
  const std::vector<int32_t> tokens = tokenize(prompt);
  return generate(tokens, options, on_text);
}

GenerateResult Session::chat(const std::vector<ChatMessage>& messages, const GenerateOptions& options,
                             const TextCallback& on_text) {
  const std::string prompt = format_chat(messages, /*add_generation_prompt=*/true);
  nlohmann::json arr = nlohmann::json::array();
  for (const ChatMessage& m : messages) arr.push_back({{"role", m.role}, {"content", m.content}});
  const std::vector<int32_t> tokens = tokenize_chat_prompt(tokenizer_, prompt, arr);
  return generate(tokens, options, on_text);
}

GenerateResult Session::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                 const TextCallback& on_text) {
  Backend& be = *backend_;
  const uint32_t n_ctx = be.n_ctx();
  const size_t n_vocab = be.config().n_vocab;
  if (prompt.empty()) throw Error("the prompt has no tokens");
  if (prompt.size() > n_ctx) {
    throw Error("the prompt has " + std::to_string(prompt.size()) + " tokens but the context holds only " +
                std::to_string(n_ctx) +
                " (n_ctx): start a new conversation, or raise n_ctx (at most the model's " +
                "trained context)");
  }
  auto cancelled = [&] { return options.cancel && options.cancel->load(std::memory_order_relaxed); };

  GenerateResult res;
  res.prompt_tokens.assign(prompt.begin(), prompt.end());
  res.stop_reason = StopReason::Length;
  const Clock::time_point t_start = Clock::now();
  const BackendStats stats_start = be.stats();
  BackendStats stats_prev = stats_start;

  // KV reuse: keep the longest common prefix, evaluating at least the last prompt token.
  size_t keep = std::min<size_t>(kv_tokens_.size(), be.n_past());
  keep = static_cast<size_t>(std::mismatch(kv_tokens_.begin(), kv_tokens_.begin() + static_cast<ptrdiff_t>(keep),
                                           prompt.begin(), prompt.end())
                                 .first -
                             kv_tokens_.begin());
  keep = std::min(keep, prompt.size() - 1);
  if (be.n_past() > keep) be.truncate(static_cast<uint32_t>(keep));
  kv_tokens_.resize(keep);
  res.reused_tokens = static_cast<uint32_t>(keep);

  auto finish_stats = [&] {
    res.stats = stats_delta(stats_start, be.stats());
    res.prefill_tokens_per_s = res.prefill_ms > 0 ? static_cast<double>(prompt.size() - keep) * 1000.0 / res.prefill_ms : 0;
    res.decode_tokens_per_s =
        res.tokens.size() >= 2 && res.decode_ms > 0 ? static_cast<double>(res.tokens.size() - 1) * 1000.0 / res.decode_ms : 0;
  };

  // One forward() with the bookkeeping every call needs: KV token list kept in step with the
  // backend (also when it throws), counters, per-call stats for the next token sample.
  BackendStats step{};
  double step_ms = 0;  // the last forward()'s wall time, bookkeeping included
  auto forward = [&](std::span<const int32_t> toks) {
    logits_.resize(n_vocab);
    const Clock::time_point t0 = Clock::now();
    try {
      be.forward(toks, logits_);
    } catch (...) {
      kv_tokens_.resize(std::min<size_t>(kv_tokens_.size(), be.n_past()));
      throw;
    }
    kv_tokens_.insert(kv_tokens_.end(), toks.begin(), toks.end());
    const BackendStats now = be.stats();
    step = stats_delta(stats_prev, now);
    stats_prev = now;
    add_to_counters(telemetry_->counters(), step);
    const ResidencyMap m = be.residency();
    if (m.n_layers > 0) telemetry_->publish_residency(m);
    step_ms = ms_since(t0);
  };

  if (cancelled()) {
    res.stop_reason = StopReason::Cancelled;
    finish_stats();
    telemetry_->end_reply();
    return res;
  }
  forward(prompt.subspan(keep));
  res.prefill_ms = ms_since(t_start);
  if (options.prompt_logits) *options.prompt_logits = logits_;
  if (options.max_tokens == 0) {
    finish_stats();
    telemetry_->end_reply();
    return res;
  }

  Sampler sampler(options.sampling);
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  StreamDecoder decoder(tokenizer_, /*render_special=*/false);
  std::string held;  // decoded text not yet emitted (could start a stop string)
  bool stopped_by_callback = false;
  auto emit = [&](std::string_view text, int32_t tok) {
    if (text.empty()) return;
    res.text.append(text);
    if (on_text && !on_text(text, tok)) stopped_by_callback = true;
  };

  bool done = false;
  while (!done) {
    int32_t tok = 0;
    try {
      tok = sampler.sample(logits_, history);
    } catch (const Error& e) {
      // Logits with no finite value come from damaged weights (or a backend fault), not from
      // the sampling settings: say where to look.
      throw Error(
          std::string(e.what()) +
          ": the model's output is not a number; its weights may be damaged (an Expert Pack: `moepack "
          "verify PACK --full` checks every expert's SHA-256; or set verify_pack_sha256)");
    }
    if (res.tokens.empty()) res.time_to_first_token_ms = ms_since(t_start);
    res.tokens.push_back(tok);
    history.push_back(tok);
    TokenSample sample;
    sample.read_bytes = step.pack_read_bytes;
    sample.experts_missed = static_cast<uint32_t>(step.cache_misses);
    sample.io_wait_ms = step.io_wait_ms;
    sample.compute_ms = step.compute_ms;
    sample.experts_hit = static_cast<uint32_t>(step.cache_hits);
    sample.evictions = static_cast<uint32_t>(step.cache_evictions);
    sample.reply_start = res.tokens.size() == 1;
    sample.forwarded = sample.reply_start ? static_cast<uint32_t>(prompt.size() - keep) : 1;
    sample.forward_ms = step_ms;
    telemetry_->record_token(sample);

    if (!options.ignore_eos && tokenizer_.is_eog(tok)) {
      res.stop_reason = StopReason::Eos;
      break;
    }
    // Pieces as llama.cpp's token_to_piece gives them: no leading-space removal for the first
    // completion token (it continues the prompt), control tokens render as nothing.
    held += decoder.push_bytes(tokenizer_.text_piece(tok, /*render_special=*/false));
    if (!options.stop.empty()) {
      const size_t at = find_stop(held, options.stop);
      if (at != std::string::npos) {
        emit(std::string_view(held).substr(0, at), tok);
        held.clear();
        res.stop_reason = StopReason::StopString;
        break;
      }
      const size_t hold = stop_prefix_tail(held, options.stop);
      emit(std::string_view(held).substr(0, held.size() - hold), tok);
      held.erase(0, held.size() - hold);
    } else {
      emit(held, tok);
      held.clear();
    }
    if (stopped_by_callback) {
      res.stop_reason = StopReason::Cancelled;
      done = true;
    } else if (options.max_tokens > 0 && res.tokens.size() >= static_cast<size_t>(options.max_tokens)) {
      res.stop_reason = StopReason::Length;
      done = true;
    } else if (cancelled()) {
      res.stop_reason = StopReason::Cancelled;
      done = true;
    } else if (be.n_past() >= n_ctx) {
      res.stop_reason = StopReason::ContextFull;
      done = true;
    } else {
      forward(std::span<const int32_t>(&tok, 1));
      res.decode_ms += step_ms;  // the time the token sample carries (one clock for both)
    }
  }

  // Not ended by a stop string: whatever was held back (a partial stop string, an unfinished
  // UTF-8 sequence) is part of the completion.
  if (res.stop_reason != StopReason::StopString) {
    held += decoder.flush();
    if (!held.empty() && !stopped_by_callback) emit(held, res.tokens.empty() ? kNoToken : res.tokens.back());
    else res.text += held;
  }
  finish_stats();
  telemetry_->end_reply();
  return res;
}

}  // namespace moepack
