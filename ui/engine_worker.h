// The studio's engine thread. EngineController (UI thread, QML_ELEMENT) owns a QThread and an
// EngineWorker living on it; commands go to the worker and results come back as queued
// signals, so the UI thread never waits for the engine.
//
//   load(path, settings)  optional GGUF -> Expert Pack conversion (packbuilder/pack_builder.h)
//                         with progress, then the model is opened (ChatEngineFactory)
//   generate(messages)    the model's chat template, streamed text batched to at most one
//                         signal per `batchIntervalMs` (16 ms, ~60 Hz): the worker coalesces by
//                         time inside the token callback (its event loop is busy while the
//                         engine runs, so a worker-side QTimer would never fire)
//   stop()                sets an std::atomic<bool> the engine checks before every forward();
//                         callable from any thread, takes effect within one token
//
// Errors (a bad model, a failed conversion, out of memory, an engine exception) arrive as
// loadFailed / generationFailed with a message; the previous model stays unloaded and
// reload() tries again. A DeviceLostError (a CUDA sticky error: the process can no longer use
// the GPU) puts the controller in DeviceLost instead: load and generate are refused, and
// restartApplication() starts a new studio process on the same conversation and quits this
// one. Engine threads default to hardware_concurrency() - 1 so the UI keeps
// a core (EngineSettings.threads = 0 means exactly that in the engine).
#pragma once

#include <QElapsedTimer>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QObject>
#include <QString>
#include <QThread>
#include <QtQml/qqmlregistration.h>
#include <QStringList>
#include <atomic>
#include <functional>
#include <memory>

#include "core/engine_settings.h"
#include "ui/chat_engine.h"
#include "ui/conversation_store.h"
#include "ui/sampling_json.h"

Q_DECLARE_LOGGING_CATEGORY(lcEngine)

namespace moepack::ui {

// One generation request. `id` ties streamed text and the result to the request.
struct GenerationRequest {
  quint64 id = 0;
  std::vector<ChatMessage> messages;
  GenerationSettings settings;
};

struct GenerationReply {
  quint64 id = 0;
  QString text;
  ReplyStats stats;
};

// The engine thread's niceness is raised by this much over the process's (capped at 19), so a
// busy machine schedules the UI thread first; the engine's own threads inherit it.
inline constexpr int kEngineNiceIncrement = 10;
// The calling thread's niceness (Linux; 0 elsewhere). Tests call it on the engine thread.
int engineThreadNiceness();

// The telemetry of the loaded engine, shareable with the UI thread (keeps the engine alive).
using TelemetryHandle = std::shared_ptr<const Telemetry>;
// What the worker hands the UI thread: the worker stays the engine's only owner until the
// controller, finding the load still the newest, locks it. So an engine whose load was
// superseded is destroyed by the worker's next load or unload, on the engine thread, before
// another model opens.
using TelemetryWeak = std::weak_ptr<const Telemetry>;

// Lives on the engine thread; use through EngineController.
class EngineWorker : public QObject {
  Q_OBJECT
 public:
  EngineWorker(ChatEngineFactory factory, QString packsFolder);
  ~EngineWorker() override;
  std::atomic<bool>& cancelFlag() { return cancel_; }
  // The newest load request's number (set by the controller before it queues a load or an
  // unload): a load whose number is older is skipped, or its engine dropped here, on this
  // thread, without a signal.
  std::atomic<quint64>& latestLoad() { return latestLoad_; }
  int batchIntervalMs = 16;

 public slots:
  void load(quint64 seq, const QString& path, const moepack::EngineSettings& settings, bool convertGguf);
  void generate(const moepack::ui::GenerationRequest& request);
  void unload();
  void setPacksFolder(const QString& folder) { packsFolder_ = folder; }

 signals:
  // `seq`: the load() these belong to (the controller ignores older ones).
  void loadProgress(quint64 seq, const QString& phase, double fraction, const QString& detail);
  void loaded(quint64 seq, const moepack::ui::EngineInfo& info, const moepack::ui::TelemetryWeak& telemetry);
  void loadFailed(quint64 seq, const QString& message);
  void textReady(quint64 id, const QString& text);
  void generationFinished(const moepack::ui::GenerationReply& reply);
  void generationFailed(quint64 id, const QString& message);
  void deviceLost(const QString& message);  // after loadFailed / generationFailed
  void unloaded();

 private:
  QString convertToPack(quint64 seq, const QString& gguf, const EngineSettings& settings);
  bool superseded(quint64 seq) const { return latestLoad_.load() != seq; }

  ChatEngineFactory factory_;
  QString packsFolder_;
  std::shared_ptr<ChatEngine> engine_;
  std::atomic<bool> cancel_{false};
  std::atomic<quint64> latestLoad_{0};
};

// UI-thread façade: starts the engine thread and exposes the engine's state to QML.
class EngineController : public QObject {
  Q_OBJECT
  QML_ELEMENT
  Q_PROPERTY(State state READ state NOTIFY stateChanged)
  Q_PROPERTY(QString error READ error NOTIFY stateChanged)
  Q_PROPERTY(QString modelPath READ modelPath NOTIFY stateChanged)
  Q_PROPERTY(QString modelName READ modelName NOTIFY stateChanged)
  Q_PROPERTY(QString backendName READ backendName NOTIFY stateChanged)
  // Why the loaded model runs on the CPU under backend "auto" though a GPU backend exists (its reason), or
  // "".
  Q_PROPERTY(QString backendNote READ backendNote NOTIFY stateChanged)
  // backendNote is non-empty and was not dismissed (dismissBackendNote; kept across starts: the reason is the
  // machine's and the build's, the same for every model).
  Q_PROPERTY(bool backendNoteShown READ backendNoteShown NOTIFY backendNoteShownChanged)
  Q_PROPERTY(QString progressPhase READ progressPhase NOTIFY progressChanged)
  Q_PROPERTY(double progress READ progress NOTIFY progressChanged)  // 0..1, -1 unknown
  Q_PROPERTY(QString progressDetail READ progressDetail NOTIFY progressChanged)
  Q_PROPERTY(bool generating READ generating NOTIFY generatingChanged)
  Q_PROPERTY(bool restartRequired READ restartRequired NOTIFY stateChanged)
  // The loaded model's KV cache length in tokens: n_ctx capped at its trained context (0 when
  // no model is loaded).
  Q_PROPERTY(int nCtx READ nCtx NOTIFY stateChanged)
  Q_PROPERTY(QString requestedPath READ requestedPath NOTIFY stateChanged)
  // A benchmark has the memory (holdForBenchmark .. releaseHold), and the model it runs: the chat
  // says so rather than "No model loaded".
  Q_PROPERTY(bool held READ held NOTIFY stateChanged)
  Q_PROPERTY(QString benchmarkModel READ benchmarkModel NOTIFY stateChanged)

 public:
  // DeviceLost: the GPU context is unusable until the process exits (DeviceLostError).
  enum State { Empty, Loading, Ready, Failed, DeviceLost };
  Q_ENUM(State)

  // The default factory opens models with moepack::Session::load. `packsFolder` receives
  // converted packs (default: AppDataLocation/packs).
  explicit EngineController(QObject* parent = nullptr);
  EngineController(ChatEngineFactory factory, QString packsFolder, QObject* parent = nullptr);
  ~EngineController() override;

  // Loads `path` (a GGUF converted to a pack first when `convertGguf`). Settings come from
  // setEngineSettings (defaults otherwise).
  Q_INVOKABLE void load(const QString& path, bool convertGguf = true);
  Q_INVOKABLE void reload();  // the last load() again (after an error or a settings change)
  // The model the last successful load() opened, as it was given (a GGUF, a shard, a pack, an
  // Ollama name), kept in QSettings "session/last_model" so that the next start opens it; empty
  // when there is none or its file is gone.
  static QString lastLoadedModel();
  Q_INVOKABLE void stop();    // cancels the running generation (any thread)
  // Frees the model: drops this controller's telemetry handle (which keeps the engine alive)
  // and has the worker release the engine; state Empty, then unloaded() once the memory is
  // released. reload() loads it again. Ignored while DeviceLost.
  Q_INVOKABLE void unload();
  // A benchmark has the memory: from holdForBenchmark() to releaseHold(), load() (and reload())
  // only records the request, shown as state Loading with phase "waiting"; a load still
  // opening is dropped and asked again. releaseHold(true) then loads the last model asked for;
  // releaseHold(false) only when a load was asked for during the hold. An unload() during the
  // hold (the user's) cancels both. The benchmark drops the chat's model with dropModel().
  void holdForBenchmark(const QString& benchmarkModel = {});
  void dropModel();  // unload() without its meaning during a hold (the benchmark's own unload)
  void releaseHold(bool reloadLast);
  bool held() const { return held_; }
  QString benchmarkModel() const { return held_ ? benchmarkModel_ : QString(); }
  // After DeviceLost: starts this program again with its arguments and
  // `--open-conversation <conversationId>` (when >= 0) through the restarter, then quits the
  // application. Returns false (and stays) when the new process could not be started.
  Q_INVOKABLE bool restartApplication(qint64 conversationId);
  // Starts `program` with `arguments` detached; the default is QProcess::startDetached.
  using Restarter = std::function<bool(const QString& program, const QStringList& arguments)>;
  // `quit` replaces the queued QCoreApplication::quit (tests).
  void setRestarter(Restarter r, std::function<void()> quit = {}) {
    restarter_ = std::move(r);
    quit_ = std::move(quit);
  }
  void setEngineSettings(const EngineSettings& s) { settings_ = s; }
  // Where load() puts converted packs (queued to the worker).
  void setPacksFolder(const QString& folder);
  const EngineSettings& engineSettings() const { return settings_; }

  // Starts a generation; returns its id (0 when not Ready or already generating).
  quint64 generate(std::vector<ChatMessage> messages, const GenerationSettings& settings);

  State state() const { return state_; }
  QString error() const { return error_; }
  QString modelPath() const { return info_.path; }
  // The path last given to load(): the GGUF or Ollama name a converted pack (modelPath) came from.
  QString requestedPath() const { return lastPath_; }
  QString modelName() const { return info_.modelName; }
  QString backendName() const { return info_.backend; }
  QString backendNote() const { return info_.backendNote; }
  bool backendNoteShown() const;
  // Hides this backendNote from now on, also after a restart (QSettings "ui/dismissed_backend_note"); a
  // different note shows again.
  Q_INVOKABLE void dismissBackendNote();
  QString progressPhase() const { return phase_; }
  double progress() const { return progress_; }
  QString progressDetail() const { return detail_; }
  bool generating() const { return generatingId_ != 0; }
  bool restartRequired() const { return state_ == DeviceLost; }
  int nCtx() const { return state_ == Ready ? static_cast<int>(info_.nCtx) : 0; }
  const EngineInfo& info() const { return info_; }
  TelemetryHandle telemetry() const { return telemetry_; }
  EngineWorker* worker() { return worker_; }

 signals:
  void stateChanged();
  void progressChanged();
  void generatingChanged();
  void textReady(quint64 id, const QString& text);
  void generationFinished(const moepack::ui::GenerationReply& reply);
  void generationFailed(quint64 id, const QString& message);
  void modelLoaded();
  void unloaded();  // the worker released the engine (after unload())
  void deviceLost(const QString& message);
  void backendNoteShownChanged();

 private:
  void setState(State s, const QString& error = {});

  QThread thread_;
  EngineWorker* worker_ = nullptr;  // lives on thread_, deleted on thread finish
  EngineSettings settings_;
  Restarter restarter_;
  std::function<void()> quit_;
  QString lastPath_;
  bool lastConvert_ = true;
  State state_ = Empty;
  QString error_;
  EngineInfo info_;
  TelemetryHandle telemetry_;
  QString phase_, detail_;
  double progress_ = 0;
  quint64 nextId_ = 1;
  quint64 generatingId_ = 0;
  quint64 loadSeq_ = 0;  // the newest load() or unload(); older loads' signals are ignored
  bool held_ = false;    // holdForBenchmark() .. releaseHold()
  QString benchmarkModel_;
  bool loadAfterHold_ = false;
  bool reloadAfterHold_ = true;  // false after the user's unload() during the hold
};

}  // namespace moepack::ui

Q_DECLARE_METATYPE(moepack::EngineSettings)
Q_DECLARE_METATYPE(moepack::ui::GenerationRequest)
Q_DECLARE_METATYPE(moepack::ui::GenerationReply)
Q_DECLARE_METATYPE(moepack::ui::EngineInfo)
Q_DECLARE_METATYPE(moepack::ui::TelemetryHandle)
Q_DECLARE_METATYPE(moepack::ui::TelemetryWeak)
