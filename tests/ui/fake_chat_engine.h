// A scripted ChatEngine for view-model tests: replies "echo: <last user message>" followed by
// `extra_tokens` numbered words, one token per word, `token_delay_ms` apart; records one
// telemetry sample per token (2 misses and 4096 bytes each). A user message "fail" throws;
// "gpu-lost" throws DeviceLostError (a CUDA sticky error). A model path containing "no-gpu" loads with the
// note `auto` leaves when it passes over the CUDA backend (kNoGpuNote), one containing "no-code" with another
// (kNoCodeNote).
#pragma once

#include <QThread>
#include <atomic>
#include <string>

#include "core/error.h"
#include "ui/chat_engine.h"

namespace moepack::ui::test {

struct FakeScript {
  int extra_tokens = 3;
  int token_delay_ms = 0;
  double decode_ms = 4.0;       // the forward time a later token's sample reports
  std::atomic<int> replies{0};  // chat() calls so far
  std::atomic<int> alive{0};    // engines constructed and not yet destroyed
  bool convert = false;         // "x.gguf" opens as "x-pack", as a converted model does
};

inline const QString kNoGpuNote = QStringLiteral(
    "backend \"cuda\": GPU 0 (NVIDIA GeForce RTX 4090, compute capability 8.9): MoePack's CUDA backend needs "
    "compute capability 9.0 or later (H100, H200, RTX 50xx)");

inline const QString kNoCodeNote = QStringLiteral(
    "backend \"cuda\": GPU 0 (NVIDIA H100, compute capability 9.0): this build holds CUDA code for "
    "\"120-real\" "
    "only, none of which runs there");

class FakeChatEngine final : public ChatEngine {
 public:
  FakeChatEngine(QString path, FakeScript& script) : path_(std::move(path)), script_(script) {
    if (script_.convert && path_.endsWith(QLatin1String(".gguf")))
      path_ = path_.chopped(5) + QStringLiteral("-pack");
    ++script_.alive;
  }
  ~FakeChatEngine() override { --script_.alive; }
  EngineInfo info() const override {
    EngineInfo i;
    i.path = path_;
    i.modelName = QStringLiteral("fake");
    i.backend = QStringLiteral("cpu");
    if (path_.contains(QLatin1String("no-gpu"))) i.backendNote = kNoGpuNote;
    if (path_.contains(QLatin1String("no-code"))) i.backendNote = kNoCodeNote;
    i.nCtx = 512;
    i.moeLayers = 5;
    i.topK = 4;
    i.expertsPerLayer = 32;
    i.cacheSlots = 64;
    i.cacheSlotBytes = 1 << 20;
    return i;
  }
  GenerateResult chat(const std::vector<ChatMessage>& messages, const GenerateOptions& options,
                      const TextCallback& on_text) override {
    const std::string last = messages.empty() ? std::string() : messages.back().content;
    if (last == "fail") throw Error("scripted failure");
    if (last == "gpu-lost") throw DeviceLostError("cudaStreamSynchronize failed: an illegal memory access was encountered");
    const int n = ++script_.replies;
    std::vector<std::string> words{"echo:", " " + last};
    for (int i = 0; i < script_.extra_tokens; ++i) words.push_back(" w" + std::to_string(n) + "." + std::to_string(i));
    GenerateResult r;
    r.prompt_tokens.assign(messages.size() * 3, 1);
    r.stop_reason = StopReason::Eos;
    for (const auto& w : words) {
      if (static_cast<int32_t>(r.tokens.size()) >= options.max_tokens) {
        r.stop_reason = StopReason::Length;
        break;
      }
      if (options.cancel && options.cancel->load()) {
        r.stop_reason = StopReason::Cancelled;
        break;
      }
      if (script_.token_delay_ms > 0) QThread::msleep(static_cast<unsigned long>(script_.token_delay_ms));
      r.tokens.push_back(static_cast<int32_t>(r.tokens.size()));
      r.text += w;
      telemetry_.counters().cache_misses += 2;
      telemetry_.counters().cache_hits += 18;
      telemetry_.counters().prefetch_reads += 2;  // one of the 2 misses was read ahead
      telemetry_.counters().prefetch_hits += 1;
      telemetry_.counters().pack_read_bytes += 4096;
      // The first token's forward is the prefill of the prompt's 3 tokens a message in 6 ms
      // (500 tokens/s), every later one a token in `decode_ms` (4 ms: 250 tokens/s).
      const bool first = r.tokens.size() == 1;
      TokenSample ts{0, 4096, 2, 0.1, 1.0, 18, 0};
      ts.reply_start = first;
      ts.forwarded = first ? static_cast<uint32_t>(r.prompt_tokens.size()) : 1;
      ts.forward_ms = first ? 6.0 * static_cast<double>(messages.size()) : script_.decode_ms;
      if (first) ts.read_bytes = 3 * 4096;  // the prefill reads more (its prompt's experts)
      telemetry_.record_token(ts);
      if (on_text && !on_text(w, r.tokens.back())) {
        r.stop_reason = StopReason::Cancelled;
        break;
      }
    }
    r.time_to_first_token_ms = 5;
    r.prefill_tokens_per_s = 1000;
    r.decode_tokens_per_s = 100;
    return r;
  }
  Telemetry& telemetry() override { return telemetry_; }

 private:
  QString path_;
  FakeScript& script_;
  Telemetry telemetry_;
};

// A factory over `script`; paths containing "bad" fail to open.
inline ChatEngineFactory fake_factory(FakeScript& script) {
  return [&script](const QString& path, const EngineSettings&) -> std::unique_ptr<ChatEngine> {
    if (path.contains(QLatin1String("bad"))) throw Error(path.toStdString() + ": not a model");
    return std::make_unique<FakeChatEngine>(path, script);
  };
}

}  // namespace moepack::ui::test
