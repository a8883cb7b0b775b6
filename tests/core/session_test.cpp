// Session (core/session.h) over a scripted backend: the generation loop's contract — KV prefix
// reuse (forwarded tokens counted), stop on EOS / stop strings (also split across tokens) /
// max_tokens / cancel / full context, UTF-8-safe streaming whose pieces add up to the result,
// prompt logits, telemetry per token. The tokenizer is the real SentencePiece vocabulary of
// the llama-moe fixture (llama.cpp's llama-spm: BOS 1, EOS 2, byte tokens <0xXX> = 3 + byte).
#include "core/session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/gguf_model.h"

namespace {

namespace fs = std::filesystem;
using namespace moepack;

const fs::path kLlamaSpm = fs::path(MOEPACK_SHARED_DIR) / "fixtures/llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf";

Tokenizer load_tokenizer() { return Tokenizer::from_gguf(GgufModel::open(kLlamaSpm.string()).primary()); }

// Logits put 10 on next(last token) and 0 elsewhere: next = script[last] if scripted, else
// (last + 1) % n_vocab. Counts calls; every forwarded token is recorded.
class ScriptedBackend : public Backend {
 public:
  struct Log {
    std::vector<std::vector<int32_t>> forwards;  // tokens of each forward() call
    std::vector<uint32_t> truncates;             // argument of each truncate() call
  };
  ScriptedBackend(uint32_t n_vocab, uint32_t n_ctx, std::map<int32_t, int32_t> script, Log* log)
      : n_ctx_(n_ctx), script_(std::move(script)), log_(log) {
    cfg_.arch = "scripted";
    cfg_.n_vocab = n_vocab;
  }
  std::string_view name() const override { return "scripted"; }
  const ModelConfig& config() const override { return cfg_; }
  uint32_t n_ctx() const override { return n_ctx_; }
  uint32_t n_past() const override { return static_cast<uint32_t>(kv_.size()); }
  void forward(std::span<const int32_t> tokens, std::span<float> logits, std::span<float>) override {
    if (kv_.size() + tokens.size() > n_ctx_) throw Error("scripted: tokens do not fit in n_ctx");
    log_->forwards.emplace_back(tokens.begin(), tokens.end());
    kv_.insert(kv_.end(), tokens.begin(), tokens.end());
    const int32_t last = kv_.back();
    const auto it = script_.find(last);
    const int32_t next = it != script_.end() ? it->second : (last + 1) % static_cast<int32_t>(cfg_.n_vocab);
    if (next < 0) {  // scripted -1: every logit NaN (damaged weights)
      std::fill(logits.begin(), logits.end(), std::numeric_limits<float>::quiet_NaN());
    } else {
      std::fill(logits.begin(), logits.end(), 0.0f);
      logits[static_cast<size_t>(next)] = 10.0f;
    }
    stats_.forward_calls += 1;
    stats_.tokens_evaluated += tokens.size();
    stats_.pack_read_bytes += 100 * tokens.size();
    stats_.cache_misses += 2;
    stats_.cache_hits += 3 * tokens.size();  // hand-picked: 3 hits and 1 eviction a forwarded token
    stats_.cache_evictions += tokens.size();
  }
  void truncate(uint32_t n) override {
    log_->truncates.push_back(n);
    kv_.resize(n);
  }
  void set_routing_observer(RoutingObserver) override {}
  BackendStats stats() const override { return stats_; }

 private:
  ModelConfig cfg_;
  uint32_t n_ctx_;
  std::map<int32_t, int32_t> script_;
  Log* log_;
  std::vector<int32_t> kv_;
  BackendStats stats_;
};

struct Fixture {
  ScriptedBackend::Log log;
  std::unique_ptr<Session> session;
};

std::unique_ptr<Fixture> make(std::map<int32_t, int32_t> script = {}, uint32_t n_ctx = 256,
                              const EngineSettings& settings = {}) {
  auto f = std::make_unique<Fixture>();
  Tokenizer tok = load_tokenizer();
  const auto n_vocab = static_cast<uint32_t>(tok.n_tokens());
  f->session = std::make_unique<Session>(
      nullptr, std::make_unique<ScriptedBackend>(n_vocab, n_ctx, std::move(script), &f->log), std::move(tok), "",
      settings);
  return f;
}

GenerateOptions greedy(int32_t max_tokens) {
  GenerateOptions o;
  o.max_tokens = max_tokens;
  o.sampling.temperature = 0;
  o.ignore_eos = false;
  return o;
}

// A script that makes the backend continue `from` with `seq` (ids distinct, not `from`).
std::map<int32_t, int32_t> chain(int32_t from, const std::vector<int32_t>& seq) {
  std::map<int32_t, int32_t> m;
  int32_t last = from;
  for (int32_t t : seq) {
    m[last] = t;
    last = t;
  }
  return m;
}

TEST(Session, GreedyFollowsTheBackendAndCountsForwards) {
  auto f = make();
  const std::vector<int32_t> prompt = {1, 1000, 1001};
  const GenerateResult r = f->session->generate(prompt, greedy(5));
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{1002, 1003, 1004, 1005, 1006}));
  EXPECT_EQ(r.stop_reason, StopReason::Length);
  EXPECT_EQ(r.prompt_tokens, prompt);
  // Prefill (3 tokens) + one forward per generated token except the last.
  ASSERT_EQ(f->log.forwards.size(), 5u);
  EXPECT_EQ(f->log.forwards[0], prompt);
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(f->log.forwards[i].size(), 1u);
  EXPECT_EQ(r.stats.forward_calls, 5u);
  EXPECT_EQ(r.stats.tokens_evaluated, 7u);  // 3 + 4
  EXPECT_EQ(r.reused_tokens, 0u);
  EXPECT_EQ(f->session->kv_tokens(), (std::vector<int32_t>{1, 1000, 1001, 1002, 1003, 1004, 1005}));
}

TEST(Session, PrefixReuseForwardsOnlyTheNewTokens) {
  auto f = make();
  f->session->generate(std::vector<int32_t>{1, 500, 501, 502}, greedy(3));  // kv: 1 500..502 503 504
  f->log = {};
  // Shares 1 500 501 502 503 with the cache, then diverges: 7 tokens, 2 new.
  const GenerateResult r = f->session->generate(std::vector<int32_t>{1, 500, 501, 502, 503, 900, 901}, greedy(1));
  EXPECT_EQ(r.reused_tokens, 5u);
  ASSERT_EQ(f->log.truncates, (std::vector<uint32_t>{5}));  // 504 dropped
  ASSERT_EQ(f->log.forwards.size(), 1u);
  EXPECT_EQ(f->log.forwards[0], (std::vector<int32_t>{900, 901}));
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{902}));
  EXPECT_EQ(r.stats.tokens_evaluated, 2u);
}

TEST(Session, WholePromptReusedStillEvaluatesTheLastToken) {
  auto f = make();
  const std::vector<int32_t> prompt = {1, 700, 701};
  f->session->generate(prompt, greedy(1));  // kv: 1 700 701 (702 sampled, never forwarded)
  f->log = {};
  const GenerateResult r = f->session->generate(prompt, greedy(1));
  EXPECT_EQ(r.reused_tokens, 2u);
  EXPECT_EQ(f->log.truncates, (std::vector<uint32_t>{2}));
  ASSERT_EQ(f->log.forwards.size(), 1u);
  EXPECT_EQ(f->log.forwards[0], (std::vector<int32_t>{701}));
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{702}));
}

TEST(Session, ResetForgetsTheCache) {
  auto f = make();
  f->session->generate(std::vector<int32_t>{1, 10}, greedy(2));
  f->session->reset();
  EXPECT_TRUE(f->session->kv_tokens().empty());
  EXPECT_EQ(f->session->backend().n_past(), 0u);
  f->log = {};
  const GenerateResult r = f->session->generate(std::vector<int32_t>{1, 10}, greedy(1));
  EXPECT_EQ(r.reused_tokens, 0u);
  EXPECT_EQ(f->log.forwards[0].size(), 2u);
}

TEST(Session, StopsAtEosUnlessIgnored) {
  // 1000 -> 1001 -> EOS (2) -> 3 ...
  auto f = make(chain(1000, {1001, 2}));
  const GenerateResult r = f->session->generate(std::vector<int32_t>{1, 1000}, greedy(10));
  EXPECT_EQ(r.stop_reason, StopReason::Eos);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{1001, 2}));  // the EOS is included in the ids
  EXPECT_EQ(r.text, f->session->tokenizer().token_to_piece(1001, false));  // not in the text

  f->session->reset();
  GenerateOptions o = greedy(4);
  o.ignore_eos = true;
  const GenerateResult r2 = f->session->generate(std::vector<int32_t>{1, 1000}, o);
  EXPECT_EQ(r2.stop_reason, StopReason::Length);
  EXPECT_EQ(r2.tokens, (std::vector<int32_t>{1001, 2, 3, 4}));  // (2 + 1) % V = 3 after EOS
}

TEST(Session, MaxTokensZeroOnlyPrefillsAndGivesPromptLogits) {
  auto f = make();
  GenerateOptions o = greedy(0);
  std::vector<float> logits;
  o.prompt_logits = &logits;
  const GenerateResult r = f->session->generate(std::vector<int32_t>{1, 41}, o);
  EXPECT_TRUE(r.tokens.empty());
  ASSERT_EQ(logits.size(), f->session->tokenizer().n_tokens());
  EXPECT_EQ(logits[42], 10.0f);
  EXPECT_EQ(logits[41], 0.0f);
}

TEST(Session, StopStringIsStrippedAndWithheldAcrossTokens) {
  Tokenizer tok = load_tokenizer();
  // "Hello world, and more" as SentencePiece tokens (" Hello", " world", ",", " and", " more");
  // the stop string "d, a" starts inside one token's text and ends two tokens later.
  const std::vector<int32_t> words = tok.encode("Hello world, and more", false, false);
  ASSERT_GE(words.size(), 4u);
  auto f = make(chain(1, words));
  GenerateOptions o = greedy(20);
  o.ignore_eos = true;
  o.stop = {"d, a"};
  std::string streamed;
  const GenerateResult r = f->session->generate(std::vector<int32_t>{1}, o, [&](std::string_view t, int32_t) {
    streamed += t;
    EXPECT_EQ(streamed.find("d, a"), std::string::npos);
    // Never shows text that could turn out to be part of the stop string.
    EXPECT_NE(streamed.back(), 'd');
    return true;
  });
  EXPECT_EQ(r.stop_reason, StopReason::StopString);
  EXPECT_EQ(r.text, " Hello worl");  // pieces continue the prompt (leading space kept); stop cut
  EXPECT_EQ(streamed, r.text);
  // Generation stopped at the token that completed the stop string.
  const std::string all = tok.decode(r.tokens, false);
  EXPECT_NE(all.find("d, a"), std::string::npos);
}

TEST(Session, HeldBackPartialStopStringIsReleasedAtTheEnd) {
  Tokenizer tok = load_tokenizer();
  const std::vector<int32_t> words = tok.encode("one two", false, false);  // " one", " two"
  auto f = make(chain(1, words));
  GenerateOptions o = greedy(static_cast<int32_t>(words.size()));
  o.stop = {"two three"};  // "two" is a prefix of the stop string, held back, then released
  std::string streamed;
  const GenerateResult r = f->session->generate(std::vector<int32_t>{1}, o, [&](std::string_view t, int32_t) {
    streamed += t;
    return true;
  });
  EXPECT_EQ(r.stop_reason, StopReason::Length);
  EXPECT_EQ(r.text, " one two");
  EXPECT_EQ(streamed, r.text);
}

TEST(Session, Utf8CharacterSplitOverByteTokensIsStreamedWhole) {
  // "€" = E2 82 AC as three byte tokens (<0xE2> = 3 + 0xE2, ...), then "x".
  const int32_t x = load_tokenizer().find_token("x");
  ASSERT_NE(x, kNoToken);
  auto f = make(chain(1, {3 + 0xE2, 3 + 0x82, 3 + 0xAC, x}));
  GenerateOptions o = greedy(4);
  std::vector<std::string> pieces;
  const GenerateResult r = f->session->generate(std::vector<int32_t>{1}, o, [&](std::string_view t, int32_t) {
    pieces.emplace_back(t);
    return true;
  });
  EXPECT_EQ(r.text, "\xE2\x82\xACx");
  EXPECT_EQ(pieces, (std::vector<std::string>{"\xE2\x82\xAC", "x"}));
}

TEST(Session, CancelFlagAndCallbackStopGeneration) {
  auto f = make();
  std::atomic<bool> cancel{false};
  GenerateOptions o = greedy(100);
  o.ignore_eos = true;
  o.cancel = &cancel;
  int calls = 0;
  const GenerateResult r = f->session->generate(std::vector<int32_t>{1, 2000}, o, [&](std::string_view, int32_t) {
    if (++calls == 3) cancel = true;
    return true;
  });
  EXPECT_EQ(r.stop_reason, StopReason::Cancelled);
  EXPECT_EQ(r.tokens.size(), 3u);
  EXPECT_EQ(f->log.forwards.size(), 3u);  // prefill + 2 decode steps; none after the flag

  // Set before the call: no forward at all.
  f->log = {};
  const GenerateResult r2 = f->session->generate(std::vector<int32_t>{1, 3000}, o);
  EXPECT_EQ(r2.stop_reason, StopReason::Cancelled);
  EXPECT_TRUE(r2.tokens.empty());
  EXPECT_TRUE(f->log.forwards.empty());

  // The callback returning false.
  cancel = false;
  f->log = {};
  const GenerateResult r3 =
      f->session->generate(std::vector<int32_t>{1, 4000}, o, [](std::string_view, int32_t) { return false; });
  EXPECT_EQ(r3.stop_reason, StopReason::Cancelled);
  EXPECT_EQ(r3.tokens.size(), 1u);
  EXPECT_EQ(f->log.forwards.size(), 1u);
}

TEST(Session, StopsWhenTheContextIsFull) {
  auto f = make({}, /*n_ctx=*/8);
  GenerateOptions o = greedy(100);
  o.ignore_eos = true;
  const GenerateResult r = f->session->generate(std::vector<int32_t>{1, 100, 101}, o);
  EXPECT_EQ(r.stop_reason, StopReason::ContextFull);
  // 3 prompt + 5 decoded tokens fill the 8 positions; the 6th token comes from the last logits.
  EXPECT_EQ(r.tokens.size(), 6u);
  EXPECT_EQ(f->session->backend().n_past(), 8u);
  // A prompt longer than the context is refused before any forward().
  f->log = {};
  EXPECT_THROW(f->session->generate(std::vector<int32_t>(9, 5), o), Error);
  EXPECT_THROW(f->session->generate(std::vector<int32_t>{}, o), Error);
  EXPECT_TRUE(f->log.forwards.empty());
}

TEST(Session, StreamedTextEqualsResultTextAndTimingsAreSet) {
  auto f = make();
  GenerateOptions o = greedy(40);
  o.ignore_eos = true;
  std::string streamed;
  const GenerateResult r = f->session->generate(std::vector<int32_t>{1, 300}, o, [&](std::string_view t, int32_t) {
    streamed += t;
    return true;
  });
  EXPECT_EQ(streamed, r.text);
  EXPECT_FALSE(r.text.empty());
  EXPECT_EQ(r.tokens.size(), 40u);
  EXPECT_GE(r.time_to_first_token_ms, r.prefill_ms);
  EXPECT_GE(r.decode_ms, 0.0);
}

TEST(Session, TelemetryGetsOneSamplePerTokenFromStatsDeltas) {
  auto f = make();
  GenerateOptions o = greedy(4);
  o.ignore_eos = true;
  f->session->generate(std::vector<int32_t>{1, 50, 51}, o);
  const std::vector<TokenSample> s = f->session->telemetry().recent(10);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].read_bytes, 300u);  // the prefill: 3 tokens x 100 bytes
  EXPECT_EQ(s[1].read_bytes, 100u);
  EXPECT_EQ(s[3].experts_missed, 2u);
  EXPECT_EQ(s[0].experts_hit, 9u);  // the prefill's 3 tokens x 3
  EXPECT_EQ(s[0].evictions, 3u);
  EXPECT_EQ(s[2].experts_hit, 3u);
  EXPECT_EQ(s[2].evictions, 1u);
  const TelemetrySnapshot snap = f->session->telemetry().snapshot();
  EXPECT_EQ(snap.tokens, 4u);
  EXPECT_EQ(snap.pack_read_bytes, 600u);  // 3 + 1 + 1 + 1 tokens forwarded
  EXPECT_EQ(snap.cache_misses, 8u);       // 4 forwards x 2
}

// Every sample names the forward() that gave it: the prefill (the prompt less the KV cache's
// reused prefix) for a reply's first token, one token after; the decode rate the dashboard
// takes from the samples is the result's (forward times inside the result's decode_ms).
TEST(Session, TokenSamplesCarryTheirForwardForTokensPerSecond) {
  auto f = make();
  GenerateOptions o = greedy(4);
  o.ignore_eos = true;
  const GenerateResult a = f->session->generate(std::vector<int32_t>{1, 50, 51}, o);
  // The second prompt shares 1, 50, 51 with the KV cache: 2 tokens are forwarded.
  const GenerateResult b = f->session->generate(std::vector<int32_t>{1, 50, 51, 60, 61}, o);
  ASSERT_EQ(b.reused_tokens, 3u);
  const std::vector<TokenSample> s = f->session->telemetry().recent(10);
  ASSERT_EQ(s.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(s[i].reply_start, i % 4 == 0);
    EXPECT_EQ(s[i].forwarded, i == 0 ? 3u : i == 4 ? 2u : 1u);
    EXPECT_GE(s[i].forward_ms, 0.0);
  }
  double decode_ms = 0;
  for (size_t i = 1; i < 4; ++i) decode_ms += s[i].forward_ms;
  EXPECT_LE(decode_ms, a.decode_ms);
  EXPECT_LE(s[0].forward_ms, a.prefill_ms);
  const nlohmann::json j = f->session->telemetry().to_json(8);
  EXPECT_EQ(j["recent_tokens"][4]["forwarded"], 2);
  EXPECT_EQ(j["recent_tokens"][4]["reply_start"], true);
}

// All-NaN logits (damaged weights) are an error that says so and where to check, not only the
// sampler's; a prompt longer than n_ctx says what to do.
TEST(Session, ErrorsSayWhatToDo) {
  auto f = make({{50, -1}});
  try {
    f->session->generate(std::vector<int32_t>{1, 50}, greedy(4));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no finite logit"), std::string::npos) << what;
    EXPECT_NE(what.find("moepack verify PACK --full"), std::string::npos) << what;
  }
  auto g = make({}, 4);
  try {
    g->session->generate(std::vector<int32_t>{1, 2, 3, 4, 5}, greedy(1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "the prompt has 5 tokens but the context holds only 4 (n_ctx): start a new conversation, or raise "
        "n_ctx (at most the model's trained context)");
  }
}

TEST(Session, ChatUsesTheTemplateAndTokenizesMarkersOnly) {
  auto f = make();
  // No template given: ChatML fallback with a warning.
  EXPECT_FALSE(f->session->template_warning().empty());
  const std::string p = f->session->format_chat({{"user", "hi"}}, true);
  EXPECT_EQ(p, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_THROW((void)f->session->model(), Error);
  EXPECT_FALSE(f->session->has_model());
}

TEST(Session, TokenizeAddsBosAndParsesSpecialTokens) {
  auto f = make();
  const std::vector<int32_t> ids = f->session->tokenize("</s>");
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], 1);  // BOS
  EXPECT_EQ(ids[1], 2);  // "</s>" parsed as EOS
}

}  // namespace
