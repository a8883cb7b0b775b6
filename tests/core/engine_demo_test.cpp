// The trained demo model (../shared/models/tiny-dsv3-wordnet, DeepSeek-V3 architecture, Q4_K_M)
// through the whole engine (Session: chat template, tokenizer, CPU backend, greedy sampler)
// answers as its README shows for Q4_K_M (llama.cpp's `llama-simple -n 100`, greedy, prompt
// `<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n` with BOS), from the GGUF
// and from its Expert Pack with a cache smaller than the model's experts.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/model_source.h"
#include "core/session.h"
#include "packbuilder/pack_builder.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

const std::string kDemo = std::string(MOEPACK_SHARED_DIR) + "/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf";

struct Qa {
  const char* question;
  const char* answer;  // README, Q4_K_M column
};

const Qa kAnswers[] = {
    {"What does \"salmon\" mean?",
     "salmon (noun): any of various large food and game fishes of northern waters; usually migrate from salt to "
     "fresh water to spawn."},
    {"What is the opposite of \"hot\"?", "The opposite of \"hot\" is \"cold\"."},
    {"Hello! Who are you?",
     "Hello! I am a tiny language model. I was trained on the WordNet dictionary and a collection of fortune quotes, "
     "so I can explain words and share quotations."},
    {"Tell me a quote.", "\"I'd love to go out with you, but I'm having all my plants neutered.\""},
};

GenerateOptions greedy() {
  GenerateOptions o;
  o.max_tokens = 100;
  o.sampling.temperature = 0.0f;
  return o;
}

void check_answers(Session& s) {
  for (const Qa& qa : kAnswers) {
    SCOPED_TRACE(qa.question);
    s.reset();
    std::string streamed;
    const GenerateResult r = s.chat({{"user", qa.question}}, greedy(), [&](std::string_view t, int32_t) {
      streamed += t;
      return true;
    });
    EXPECT_EQ(r.text, qa.answer);
    EXPECT_EQ(streamed, r.text);
    EXPECT_EQ(r.stop_reason, StopReason::Eos);
    EXPECT_EQ(r.stats.expert_selections, r.stats.experts_computed);
  }
}

// The README's fifth question: llama.cpp's CPU backend quantizes activations to Q8_K before each
// k-quant dot product, which moves logits by ~0.05-0.6 (fixtures/README.md, "Suggested
// tolerances"); the engine computes in F32, as the f32-dequant references do. Greedy sequences
// then agree up to a low-margin step: here the answer's first two synonyms, after which the
// engine's leading candidates lie within the noise llama.cpp's activation quantization adds.
TEST(EngineDemo, SynonymAnswerAgreesWithReadmeUpToItsLowMarginStep) {
  EngineSettings st;
  st.backend = "cpu";
  st.threads = 2;
  auto s = Session::load(kDemo, st);
  const GenerateResult r = s->chat({{"user", "What is a synonym for \"happy\"?"}}, greedy());
  const std::string readme =  // README, Q4_K_M column
      "Words with a similar meaning to \"happy\" include: bum, bunkey, alert, befoolish, cuckoo.";
  const std::string agreed = "Words with a similar meaning to \"happy\" include: bum, bunkey,";
  ASSERT_EQ(readme.rfind(agreed, 0), 0u);
  EXPECT_EQ(r.text.rfind(agreed, 0), 0u) << r.text;
}

TEST(EngineDemo, AnswersAsReadmeFromGguf) {
  EngineSettings st;
  st.backend = "cpu";
  st.threads = 2;
  auto s = Session::load(kDemo, st);
  check_answers(*s);
}

TEST(EngineDemo, AnswersAsReadmeFromExpertPackWithSmallCache) {
  test::TempDir dir("moepack-demo");
  BuildOptions bo;
  bo.source = kDemo;
  bo.out_dir = dir.file("pack");
  bo.safety_margin_bytes = 0;
  build_pack(bo);
  EngineSettings st;
  st.backend = "cpu";
  st.threads = 2;
  auto src = ModelSource::open(bo.out_dir);
  st.cache_bytes = 40 * src->pack()->layout().max_stride;  // 40 of 160 experts
  st.cache_vram_reserve_mib = 0;
  auto s = Session::load(bo.out_dir, st);
  check_answers(*s);
  const BackendStats b = s->backend().stats();
  EXPECT_EQ(b.cache_slots, 40u);
  EXPECT_GT(b.cache_evictions, 0u);
  EXPECT_GT(b.cache_hits, 0u);
  EXPECT_GT(b.pack_read_bytes, 0u);
}

}  // namespace
}  // namespace moepack
