#include "ui/session_engine.h"

#include <QFileInfo>
#include <QStandardPaths>
#include <algorithm>
#include <thread>

#include "core/model_source.h"
#include "ui/engine_worker.h"

namespace moepack::ui {
namespace {

class SessionEngine final : public ChatEngine {
 public:
  SessionEngine(std::unique_ptr<Session> s, const QString& path, const EngineSettings& settings)
      : session_(std::move(s)) {
    const ModelConfig& c = session_->backend().config();
    info_.path = path;
    info_.modelName = QString::fromStdString(c.name);
    if (info_.modelName.isEmpty()) info_.modelName = QFileInfo(path).completeBaseName();
    info_.architecture = QString::fromStdString(c.arch);
    info_.backend = QString::fromUtf8(session_->backend().name().data(),
                                      static_cast<qsizetype>(session_->backend().name().size()));
    info_.isPack = session_->has_model() && session_->model().is_pack();
    info_.nCtx = session_->backend().n_ctx();
    info_.threads = settings.threads != 0 ? settings.threads
                                          : std::max(1u, std::thread::hardware_concurrency() - 1);
    for (uint32_t il = 0; il < c.n_layer; ++il) info_.moeLayers += c.is_moe_layer(il) ? 1 : 0;
    info_.expertsPerLayer = c.n_expert;
    info_.topK = c.n_expert_used;
    const BackendStats st = session_->backend().stats();
    info_.cacheSlots = st.cache_slots;
    info_.cacheSlotBytes = st.cache_slot_bytes;
    info_.ramTierSlots = st.ram_tier_slots;
    info_.templateWarning = QString::fromStdString(session_->template_warning());
    info_.backendNote = QString::fromStdString(session_->backend_note());
  }
  EngineInfo info() const override { return info_; }
  GenerateResult chat(const std::vector<ChatMessage>& messages, const GenerateOptions& options,
                      const TextCallback& on_text) override {
    return session_->chat(messages, options, on_text);
  }
  Telemetry& telemetry() override { return session_->telemetry(); }

 private:
  std::unique_ptr<Session> session_;
  EngineInfo info_;
};

}  // namespace

std::unique_ptr<ChatEngine> open_session_engine(const QString& path, const EngineSettings& settings) {
  return std::make_unique<SessionEngine>(Session::load(path.toStdString(), settings), path, settings);
}

// Defined here, not in engine_worker.cpp, so that tests with a scripted engine link without
// the model engine.
EngineController::EngineController(QObject* parent) : EngineController(&open_session_engine, QString(), parent) {}

}  // namespace moepack::ui
