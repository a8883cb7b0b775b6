// View-model of the studio's Benchmarks page (issue 10): runs a prompt set through the engine
// with the same library as `moepack bench` (bench/bench_runner.h: same method, same report),
// on a worker thread, and exports the report as JSON, CSV, HTML (the bench library's writers)
// and PDF (ui/pdf_report.h).
//
// Settings: modelPath (default: the chat engine's model, EngineController::modelPath),
// promptSetPath (default: bench::default_prompt_set_path(), published-10.json), maxTokens
// (default 200), baselineUrl (optional OpenAI-compatible server); engine settings as the chat's. Greedy, EOS ignored, chat
// template: as the CLI's defaults.
//
// Threading: run() starts a QThread that calls bench::run_bench(); its events (BenchEvent) come
// back as queued calls, so the UI thread never waits for the engine. cancel() sets the bench's
// cancel flag (checked before every forward pass): the run ends with no report (finished(false)).
//
// The chat model: a benchmark needs the whole machine and its own Session. When `engine` holds a
// model (Ready, not generating), run() asks the engine worker to unload it (EngineWorker::unload,
// queued on the engine thread) and starts after `unloaded`; when the run ends, engine->reload()
// loads it again. While the chat is generating or loading, run() refuses with an error.
//
// Progress: requestIndex (1-based) of requestCount for `system`, tokens of the running request
// of maxTokens, progress 0..1 = (finished requests + tokens / maxTokens) / (requests x systems)
// (never decreases during a run). Charts: updateSeries() fills QtCharts series with decode
// tokens/s and hit rate per finished MoePack request (x = request number, 1-based) and the
// running request's timeline (x = token index; forward ms and SSD KB = 1000 bytes per token).
#pragma once

#include <QObject>
#include <QPointF>
#include <QPointer>
#include <QString>
#include <QThread>
#include <QTimer>
#include <QVariantList>
#include <QtCharts/QAbstractSeries>
#include <QtQml/qqmlregistration.h>
#include <atomic>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <vector>

#include "ui/engine_worker.h"

namespace moepack::ui {

class BenchViewModel : public QObject {
  Q_OBJECT
  QML_ELEMENT
  Q_PROPERTY(moepack::ui::EngineController* engine READ engine WRITE setEngine NOTIFY engineChanged)
  Q_PROPERTY(QString modelPath READ modelPath WRITE setModelPath NOTIFY settingsChanged)
  Q_PROPERTY(QString promptSetPath READ promptSetPath WRITE setPromptSetPath NOTIFY settingsChanged)
  Q_PROPERTY(QString promptSetName READ promptSetName NOTIFY settingsChanged)
  Q_PROPERTY(int promptCount READ promptCount NOTIFY settingsChanged)
  Q_PROPERTY(int maxTokens READ maxTokens WRITE setMaxTokens NOTIFY settingsChanged)
  Q_PROPERTY(QString baselineUrl READ baselineUrl WRITE setBaselineUrl NOTIFY settingsChanged)
  Q_PROPERTY(bool running READ running NOTIFY runningChanged)
  Q_PROPERTY(QString status READ status NOTIFY progressChanged)
  Q_PROPERTY(QString error READ error NOTIFY errorChanged)
  Q_PROPERTY(QString system READ system NOTIFY progressChanged)
  Q_PROPERTY(int requestIndex READ requestIndex NOTIFY progressChanged)
  Q_PROPERTY(int requestCount READ requestCount NOTIFY progressChanged)
  Q_PROPERTY(int tokens READ tokens NOTIFY progressChanged)
  Q_PROPERTY(double progress READ progress NOTIFY progressChanged)
  Q_PROPERTY(bool hasReport READ hasReport NOTIFY reportChanged)
  // One map per finished request and system: id, dataset, system, ok, error, promptTokens,
  // completionTokens, ttftMs, prefillTps, decodeTps, hitRate, readBytesPerToken (-1: none),
  // text, request (1-based).
  Q_PROPERTY(QVariantList results READ results NOTIFY resultsChanged)
  // Per data set (and "all"): group, source ("MoePack (cpu)", "published: CONFIG", a baseline),
  // prefillTps, decodeTps, hitRate, ssdGbPerToken (-1: none). Ours first, then the published
  // figures of that group.
  Q_PROPERTY(QVariantList aggregates READ aggregates NOTIFY reportChanged)
  Q_PROPERTY(double decodeMax READ decodeMax NOTIFY resultsChanged)
  Q_PROPERTY(double timelineMaxMs READ timelineMaxMs NOTIFY timelineChanged)
  Q_PROPERTY(double timelineMaxKib READ timelineMaxKib NOTIFY timelineChanged)
  Q_PROPERTY(int timelineTokens READ timelineTokens NOTIFY timelineChanged)

 public:
  explicit BenchViewModel(QObject* parent = nullptr);
  ~BenchViewModel() override;  // cancels and joins a running benchmark

  EngineController* engine() const { return engine_; }
  void setEngine(EngineController* e);
  QString modelPath() const;  // the set path, else the engine's model
  void setModelPath(const QString& p);
  QString promptSetPath() const { return promptSetPath_; }
  // Loads and validates the set (bench::load_prompt_set); on error sets `error` and keeps the
  // previous set. Accepts a local path or a file:// URL (from a FileDialog).
  void setPromptSetPath(const QString& p);
  QString promptSetName() const { return promptSetName_; }
  int promptCount() const { return promptCount_; }
  int maxTokens() const { return maxTokens_; }
  void setMaxTokens(int n);
  QString baselineUrl() const { return baselineUrl_; }
  void setBaselineUrl(const QString& u);
  bool running() const { return running_; }
  QString status() const { return status_; }
  QString error() const { return error_; }
  QString system() const { return system_; }
  int requestIndex() const { return requestIndex_; }
  int requestCount() const { return requestCount_; }
  int tokens() const { return tokens_; }
  double progress() const { return progress_; }
  bool hasReport() const { return !report_.is_null(); }
  QVariantList results() const { return results_; }
  QVariantList aggregates() const { return aggregates_; }
  double decodeMax() const { return decodeMax_; }
  double timelineMaxMs() const { return timelineMaxMs_; }
  double timelineMaxKib() const { return timelineMaxKib_; }
  int timelineTokens() const { return static_cast<int>(timelineMs_.size()); }

  // Engine settings for the run (C++ only): by default the engine's (EngineController::
  // engineSettings), else EngineSettings' defaults.
  void setEngineSettings(const EngineSettings& s) { settings_ = s; }

  // The finished run's report (null before one finished).
  const nlohmann::json& report() const { return report_; }

  Q_INVOKABLE void run();
  Q_INVOKABLE void cancel();
  // Writes the report as "json", "csv", "html" or "pdf" to `path` (local path or file:// URL),
  // atomically (temp file, fsync, rename). Returns false and sets `error` on failure.
  Q_INVOKABLE bool exportReport(const QString& format, const QString& path);
  // The export dialog's suggestion: "moepack-bench-<model>-<date>.<format>" in the documents
  // folder (ui/save_location.h).
  Q_INVOKABLE QUrl suggestedReportFile(const QString& format) const;
  // Replaces the points of the given series (any may be null).
  Q_INVOKABLE void updateSeries(QAbstractSeries* decodeTps, QAbstractSeries* hitRate,
                                QAbstractSeries* timelineMs, QAbstractSeries* timelineKib) const;

  // Minimum time between timelineChanged / progressChanged signals for tokens (ms).
  int tokenSignalIntervalMs = 50;

 signals:
  void engineChanged();
  void settingsChanged();
  void runningChanged();
  void progressChanged();
  void errorChanged();
  void resultsChanged();
  void timelineChanged();
  void reportChanged();
  // The run ended: ok = a report exists (false: failed or cancelled, see `error`).
  void finished(bool ok);

 private:
  void startThread();
  void onEvent(const QString& system, int systemIndex, int systems, int request, int requests, int tokens,
               int kind, const QVariantMap& result);
  void onToken(int index, double forwardMs, double readKib);
  void onDone(const QString& error, bool cancelled, const std::shared_ptr<nlohmann::json>& report);
  void setError(const QString& e);
  void setStatus(const QString& s);
  void buildAggregates();

  QPointer<EngineController> engine_;
  std::optional<EngineSettings> settings_;
  QString modelPath_, promptSetPath_, promptSetName_, baselineUrl_;
  QString runModel_;  // the model of the running benchmark (fixed at run(): unloading clears the chat's)
  int promptCount_ = 0;
  int maxTokens_ = 200;
  bool running_ = false;
  bool unloadedEngine_ = false;
  QMetaObject::Connection unloadWait_;
  QString status_, error_, system_;
  int requestIndex_ = 0, requestCount_ = 0, tokens_ = 0, systems_ = 1;
  double progress_ = 0;
  QVariantList results_, aggregates_;
  std::vector<QPointF> decodePts_, hitPts_;
  double decodeMax_ = 0;
  std::vector<double> timelineMs_, timelineKib_;
  double timelineMaxMs_ = 0, timelineMaxKib_ = 0;
  QTimer tokenTimer_;
  nlohmann::json report_;
  QThread* thread_ = nullptr;
  std::shared_ptr<std::atomic<bool>> cancel_;
};

}  // namespace moepack::ui
