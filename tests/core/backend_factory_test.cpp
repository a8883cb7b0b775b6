// core/backend_factory.h: `auto` takes the first registered backend usable for the model, else the CPU; a
// backend whose usability check throws (it says why it cannot run here, as the CUDA backend does for a GPU
// below compute capability 9.0) is skipped by `auto`, which says why (stderr, the caller,
// Session::backend_note), and fails an explicit request with its own message.
#include "core/backend_factory.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/error.h"
#include "core/model_source.h"
#include "core/session.h"

namespace moepack {
namespace {

const std::string kDemo =
    std::string(MOEPACK_SOURCE_DIR) + "/resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf";

TEST(BackendFactory, AutoSkipsABackendThatSaysWhyItCannotRun) {
  const auto model = ModelSource::open(kDemo);
  int made = 0;
  const auto make = [&made](std::shared_ptr<const ModelSource> m, const EngineSettings& s) {
    ++made;
    return make_cpu_backend(std::move(m), s);
  };
  register_backend("gpu-test", make, [](const ModelSource&) -> bool {
    throw Error("backend \"gpu-test\": GPU 0 (RTX 4090, compute capability 8.9) is too old");
  });
  EngineSettings s;
  s.n_ctx = 64;
  s.backend = "auto";
  const std::string why = "backend \"gpu-test\": GPU 0 (RTX 4090, compute capability 8.9) is too old";
  testing::internal::CaptureStderr();
  std::string passed_over = "stale";
  auto b = make_backend(model, s, &passed_over);
  const std::string said = testing::internal::GetCapturedStderr();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name(), "cpu");
  EXPECT_EQ(made, 0);
  // Said once, with the backend's own reason, and no advice to pick the CPU it already runs on; the caller
  // gets the reason too.
  EXPECT_EQ(said, "moepack: --backend auto runs on the CPU: " + why + "\n");
  EXPECT_EQ(passed_over, why);
  // A session loaded so keeps it for the studio.
  testing::internal::CaptureStderr();
  const auto session = Session::load(kDemo, s);
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(session->backend().name(), "cpu");
  EXPECT_EQ(session->backend_note(), why);
  s.backend = "gpu-test";
  try {
    make_backend(model, s);
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("compute capability 8.9"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("; use --backend cpu or auto"), std::string::npos) << e.what();
  }
  EXPECT_EQ(made, 0);
  // Usable: `auto` takes it, and nothing is passed over.
  register_backend("gpu-test", make, [](const ModelSource&) { return true; });
  s.backend = "auto";
  b = make_backend(model, s, &passed_over);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(passed_over, "");
  // The CPU asked for: no note.
  s.backend = "cpu";
  EXPECT_EQ(Session::load(kDemo, s)->backend_note(), "");
  // Not usable without a reason: an explicit request names the backend and the model.
  register_backend("gpu-test", make, [](const ModelSource&) { return false; });
  s.backend = "gpu-test";
  EXPECT_THROW(make_backend(model, s), Error);
  s.backend = "auto";
  EXPECT_EQ(make_backend(model, s)->name(), "cpu");
  EXPECT_EQ(made, 1);
}

}  // namespace
}  // namespace moepack
