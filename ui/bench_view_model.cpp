// The Benchmarks page's view-model (bench_view_model.h).
#include "ui/bench_view_model.h"

#include <QDate>
#include <QDir>
#include <QFileInfo>
#include <QUrl>
#include <QtCharts/QXYSeries>
#include <algorithm>
#include <exception>
#include <map>

#include "bench/bench_runner.h"
#include "bench/prompt_set.h"
#include "bench/report_csv.h"
#include "bench/report_html.h"
#include "bench/report_json.h"
#include "core/durable_io.h"
#include "core/error.h"
#include "core/gguf_model.h"
#include "ui/pdf_report.h"
#include "ui/save_location.h"

namespace moepack::ui {

namespace {

using nlohmann::json;

QString localPath(const QString& p) {
  const QUrl u(p);
  return u.isLocalFile() ? u.toLocalFile() : p;
}

double numOr(const json& o, const char* key, double dflt = -1) {
  if (!o.is_object()) return dflt;
  const auto it = o.find(key);
  return it != o.end() && it->is_number() ? it->get<double>() : dflt;
}

QString strOf(const json& o, const char* key) {
  if (!o.is_object()) return {};
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? QString::fromStdString(it->get<std::string>()) : QString();
}

}  // namespace

BenchViewModel::BenchViewModel(QObject* parent) : QObject(parent) {
  tokenTimer_.setSingleShot(true);
  connect(&tokenTimer_, &QTimer::timeout, this, [this] {
    emit progressChanged();
    emit timelineChanged();
  });
  try {
    setPromptSetPath(QString::fromStdString(bench::default_prompt_set_path()));
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
  }
}

BenchViewModel::~BenchViewModel() {
  if (thread_) {
    cancel_->store(true);
    thread_->wait();
    delete thread_;
  }
  if (engine_ && running_) engine_->releaseHold(false);  // never leave the chat's loads waiting
}

void BenchViewModel::setEngine(EngineController* e) {
  if (engine_ == e) return;
  if (engine_ && running_) engine_->releaseHold(false);
  if (engine_) disconnect(engine_, nullptr, this, nullptr);
  engine_ = e;
  if (engine_) connect(engine_, &EngineController::stateChanged, this, &BenchViewModel::settingsChanged);
  emit engineChanged();
  emit settingsChanged();
}

QString BenchViewModel::modelPath() const {
  if (!modelPath_.isEmpty()) return modelPath_;
  // The chat's model is unloaded while it runs: the field keeps showing what runs.
  if (running_) return runModel_;
  if (!engine_) return {};
  // Reloading (after a run, a settings change): the model on its way.
  if (engine_->modelPath().isEmpty() && engine_->state() == EngineController::Loading)
    return engine_->requestedPath();
  return engine_->modelPath();
}

void BenchViewModel::setModelPath(const QString& p) {
  const QString v = localPath(p);
  if (v == modelPath_) return;
  modelPath_ = v;
  emit settingsChanged();
}

void BenchViewModel::setPromptSetPath(const QString& p) {
  const QString path = localPath(p);
  try {
    const bench::PromptSet ps = bench::load_prompt_set(path.toStdString());
    promptSetPath_ = path;
    promptSetName_ = QString::fromStdString(ps.name);
    promptCount_ = static_cast<int>(ps.requests.size());
    setError({});
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
  }
  emit settingsChanged();
}

void BenchViewModel::setMaxTokens(int n) {
  if (n == maxTokens_ || n < 1) return;
  maxTokens_ = n;
  emit settingsChanged();
}

void BenchViewModel::setBaselineUrl(const QString& u) {
  if (u.trimmed() == baselineUrl_) return;
  baselineUrl_ = u.trimmed();
  emit settingsChanged();
}

void BenchViewModel::setError(const QString& e) {
  if (e == error_) return;
  error_ = e;
  emit errorChanged();
}

void BenchViewModel::setStatus(const QString& s) {
  status_ = s;
  emit progressChanged();
}

void BenchViewModel::run() {
  if (running_) return;
  if (modelPath().isEmpty()) {
    setError(tr("Choose a model to benchmark."));
    return;
  }
  runModel_ = modelPath();
  if (promptSetPath_.isEmpty()) {
    setError(tr("Choose a prompt set."));
    return;
  }
  if (engine_ && (engine_->generating() || engine_->state() == EngineController::Loading)) {
    setError(tr("The chat engine is busy; wait for it (or stop the reply) before benchmarking."));
    return;
  }
  setError({});
  report_ = json();
  results_.clear();
  aggregates_.clear();
  decodePts_.clear();
  hitPts_.clear();
  decodeMax_ = 0;
  timelineMs_.clear();
  timelineKib_.clear();
  timelineMaxMs_ = timelineMaxKib_ = 0;
  requestIndex_ = tokens_ = 0;
  requestCount_ = promptCount_;
  systems_ = baselineUrl_.isEmpty() ? 1 : 2;
  progress_ = 0;
  system_.clear();
  running_ = true;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  emit runningChanged();
  emit settingsChanged();  // modelPath: the run's
  emit resultsChanged();
  emit reportChanged();
  emit timelineChanged();

  // One model in memory: the chat engine's copy goes first (reloaded when the run ends), and
  // the chat's loads wait for the run's end.
  if (engine_) engine_->holdForBenchmark(runModel_);
  if (engine_ && engine_->state() == EngineController::Ready) {
    setStatus(tr("Unloading the chat model"));
    unloadedEngine_ = true;
    unloadWait_ = connect(engine_, &EngineController::unloaded, this, [this] {
      disconnect(unloadWait_);
      startThread();
    }, Qt::QueuedConnection);
    engine_->dropModel();  // drops the controller's telemetry handle too: the engine is freed
    return;
  }
  unloadedEngine_ = false;
  startThread();
}

void BenchViewModel::startThread() {
  if (cancel_->load()) {
    onDone(tr("Cancelled."), true, nullptr);
    return;
  }
  setStatus(tr("Loading %1").arg(runModel_));
  bench::BenchOptions o;
  o.model_path = runModel_.toStdString();
  if (settings_) o.settings = *settings_;
  else if (engine_) o.settings = engine_->engineSettings();
  o.max_tokens = maxTokens_;
  if (!baselineUrl_.isEmpty()) o.baselines.push_back({baselineUrl_.toStdString(), ""});
  o.cancel = cancel_.get();
  const std::string promptPath = promptSetPath_.toStdString();
  auto cancel = cancel_;  // keeps the flag alive for the thread
  QPointer<BenchViewModel> self(this);
  o.on_event = [this](const bench::BenchEvent& e) {
    if (e.kind == bench::BenchEvent::Kind::Token) {
      const double kb = static_cast<double>(e.token_read_bytes) / 1024.0;  // KiB, as the dashboard
      const int index = static_cast<int>(e.token_index);
      const double fwd = e.token_forward_ms;
      QMetaObject::invokeMethod(this, [this, index, fwd, kb] { onToken(index, fwd, kb); }, Qt::QueuedConnection);
      return;
    }
    QVariantMap res;
    std::vector<double> ms, kb;
    if (e.result) {
      const json& r = *e.result;
      res = {{"ok", r.value("ok", false)},
             {"error", strOf(r, "error")},
             {"promptTokens", numOr(r, "prompt_tokens")},
             {"completionTokens", numOr(r, "completion_tokens")},
             {"ttftMs", numOr(r, "ttft_ms")},
             {"prefillTps", numOr(r, "prefill_tps")},
             {"decodeTps", numOr(r, "decode_tps")},
             {"hitRate", numOr(r, "hit_rate")},
             {"readBytesPerToken", numOr(r, "read_bytes_per_token")},
             {"text", strOf(r, "text")}};
      const auto tl = r.find("timeline");
      if (tl != r.end() && tl->is_object()) {
        for (const json& v : (*tl)["forward_ms"]) ms.push_back(v.get<double>());
        for (const json& v : (*tl)["read_bytes"]) kb.push_back(v.get<double>() / 1024.0);
      }
    }
    res["id"] = QString::fromStdString(e.request_id);
    res["dataset"] = QString::fromStdString(e.dataset);
    const QString system = QString::fromStdString(e.system);
    const int si = static_cast<int>(e.system_index), ns = static_cast<int>(e.systems);
    const int rq = static_cast<int>(e.request), nr = static_cast<int>(e.requests), tk = static_cast<int>(e.tokens);
    const int kind = static_cast<int>(e.kind);
    QMetaObject::invokeMethod(
        this,
        [this, system, si, ns, rq, nr, tk, kind, res, ms = std::move(ms), kb = std::move(kb)] {
          if (kind == static_cast<int>(bench::BenchEvent::Kind::RequestFinished) && !ms.empty()) {
            timelineMs_ = ms;
            timelineKib_ = kb;
            timelineMaxMs_ = ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end());
            timelineMaxKib_ = kb.empty() ? 0 : *std::max_element(kb.begin(), kb.end());
          }
          onEvent(system, si, ns, rq, nr, tk, kind, res);
        },
        Qt::QueuedConnection);
  };
  thread_ = QThread::create([self, o = std::move(o), promptPath, cancel]() mutable {
    std::shared_ptr<json> report;
    QString error;
    bool cancelled = false;
    try {
      o.prompts = bench::load_prompt_set(promptPath);
      report = std::make_shared<json>(bench::run_bench(o));
    } catch (const bench::BenchCancelled&) {
      cancelled = true;
    } catch (const std::bad_alloc&) {
      error = QObject::tr("Out of memory while benchmarking.");
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    if (cancel->load()) {
      cancelled = true;
      report.reset();
    }
    if (self) {
      QMetaObject::invokeMethod(
          self.data(), [self, error, cancelled, report] { if (self) self->onDone(error, cancelled, report); },
          Qt::QueuedConnection);
    }
  });
  thread_->setObjectName(QStringLiteral("moepack-bench"));
  thread_->start();
}

void BenchViewModel::onEvent(const QString& system, int systemIndex, int systems, int request, int requests,
                             int tokens, int kind, const QVariantMap& result) {
  using Kind = bench::BenchEvent::Kind;
  system_ = system;
  systems_ = systems;
  requestCount_ = requests;
  const double total = std::max(1, requests * systems);
  const double done = systemIndex * requests + request;
  switch (static_cast<Kind>(kind)) {
    case Kind::Loaded:
      setStatus(tr("Model loaded"));
      return;
    case Kind::RequestStarted:
      requestIndex_ = request + 1;
      tokens_ = 0;
      if (systemIndex == 0) {
        timelineMs_.clear();
        timelineKib_.clear();
        timelineMaxMs_ = timelineMaxKib_ = 0;
        emit timelineChanged();
      }
      progress_ = std::max(progress_, done / total);
      setStatus(tr("%1: request %2 of %3").arg(system).arg(request + 1).arg(requests));
      return;
    case Kind::Token:
      return;
    case Kind::RequestFinished: {
      tokens_ = tokens;
      progress_ = std::max(progress_, (done + 1) / total);
      QVariantMap row = result;
      row["system"] = system;
      row["request"] = request + 1;
      results_.append(row);
      if (systemIndex == 0) {
        const double d = result.value("decodeTps").toDouble(), h = result.value("hitRate").toDouble();
        if (d >= 0) {
          decodePts_.emplace_back(request + 1, d);
          decodeMax_ = std::max(decodeMax_, d);
        }
        if (h >= 0) hitPts_.emplace_back(request + 1, h);
      }
      emit resultsChanged();
      emit timelineChanged();
      setStatus(tr("%1: request %2 of %3 done").arg(system).arg(request + 1).arg(requests));
      return;
    }
  }
}

void BenchViewModel::onToken(int index, double forwardMs, double readKib) {
  if (!running_) return;
  // Tokens that produced no text have no event; their samples arrive with RequestFinished.
  if (static_cast<size_t>(index) >= timelineMs_.size()) {
    timelineMs_.resize(index + 1, 0.0);
    timelineKib_.resize(index + 1, 0.0);
  }
  timelineMs_[index] = forwardMs;
  timelineKib_[index] = readKib;
  timelineMaxMs_ = std::max(timelineMaxMs_, forwardMs);
  timelineMaxKib_ = std::max(timelineMaxKib_, readKib);
  tokens_ = std::max(tokens_, index + 1);
  const double total = std::max(1, requestCount_ * systems_);
  const double done = (requestIndex_ - 1) + std::min(1.0, static_cast<double>(tokens_) / std::max(1, maxTokens_));
  progress_ = std::max(progress_, done / total);
  if (!tokenTimer_.isActive()) tokenTimer_.start(tokenSignalIntervalMs);
}

void BenchViewModel::onDone(const QString& error, bool cancelled, const std::shared_ptr<json>& report) {
  if (thread_) {
    thread_->wait();
    delete thread_;
    thread_ = nullptr;
  }
  tokenTimer_.stop();
  running_ = false;
  if (report) {
    report_ = std::move(*report);
    progress_ = 1.0;
    buildAggregates();
    setStatus(tr("Finished in %1 s").arg(report_.value("duration_s", 0.0), 0, 'f', 1));
  } else {
    setError(cancelled ? tr("Cancelled.") : error);
    setStatus(cancelled ? tr("Cancelled") : tr("Failed"));
  }
  if (engine_) engine_->releaseHold(unloadedEngine_);
  unloadedEngine_ = false;
  emit runningChanged();
  emit settingsChanged();
  emit reportChanged();
  emit timelineChanged();
  emit finished(report_.is_object());
}

void BenchViewModel::cancel() {
  if (!running_ || !cancel_) return;
  cancel_->store(true);
  setStatus(tr("Cancelling"));
}

void BenchViewModel::buildAggregates() {
  aggregates_.clear();
  std::map<std::string, std::string> labels;
  for (const json& s : report_.value("systems", json::array())) {
    labels[s.value("id", "")] = s.value("label", s.value("id", ""));
  }
  for (const json& a : report_.value("aggregates", json::array())) {
    const QString group = strOf(a, "group");
    const json results = a.value("results", json::object());
    for (const auto& [id, r] : results.items()) {
      aggregates_.append(QVariantMap{{"group", group},
                                     {"source", QString::fromStdString(labels[id])},
                                     {"published", false},
                                     {"prefillTps", numOr(r, "prefill_tps")},
                                     {"decodeTps", numOr(r, "decode_tps")},
                                     {"hitRate", numOr(r, "hit_rate")},
                                     {"ssdGbPerToken", numOr(r, "ssd_gb_per_token")}});
    }
    const json published = a.value("published", json::object());
    for (const auto& [config, p] : published.items()) {
      aggregates_.append(QVariantMap{{"group", group},
                                     {"source", tr("published: %1").arg(QString::fromStdString(config))},
                                     {"published", true},
                                     {"prefillTps", numOr(p, "prefill_tok_s")},
                                     {"decodeTps", numOr(p, "decode_tok_s")},
                                     {"hitRate", numOr(p, "hit_rate")},
                                     {"ssdGbPerToken", numOr(p, "ssd_gb_per_token")}});
    }
  }
}

QUrl BenchViewModel::suggestedReportFile(const QString& format) const {
  // model_source_stem: a pack folder's name whole ("qwen3-0.6b"), a GGUF's without ".gguf".
  const QString model = QString::fromStdString(model_source_stem(modelPath().toStdString()));
  return suggested_save_file(
      QStringLiteral("moepack-bench-%1-%2")
          .arg(model.isEmpty() ? QStringLiteral("model") : model, QDate::currentDate().toString(Qt::ISODate)),
      format);
}

bool BenchViewModel::exportReport(const QString& format, const QString& path) {
  if (!report_.is_object()) {
    setError(tr("Run a benchmark first."));
    return false;
  }
  const QFileInfo fi(localPath(path));
  const std::string dir = fi.absolutePath().toStdString(), name = fi.fileName().toStdString();
  try {
    if (name.empty()) throw Error("export: no file name in \"" + path.toStdString() + "\"");
    if (!QDir().mkpath(fi.absolutePath())) throw Error("export: cannot create directory " + dir);
    if (format == QLatin1String("json")) {
      write_file_atomic(dir, name, report_.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    } else if (format == QLatin1String("csv")) {
      write_file_atomic(dir, name, bench::report_csv(report_));
    } else if (format == QLatin1String("html")) {
      write_file_atomic(dir, name, bench::report_html(report_));
    } else if (format == QLatin1String("pdf")) {
      write_pdf_report(report_, fi.absoluteFilePath());
    } else {
      throw Error("export: unknown format \"" + format.toStdString() + "\" (expected json, csv, html, pdf)");
    }
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
    return false;
  }
  setError({});
  return true;
}

void BenchViewModel::updateSeries(QAbstractSeries* decodeTps, QAbstractSeries* hitRate,
                                  QAbstractSeries* timelineMs, QAbstractSeries* timelineKib) const {
  auto put = [](QAbstractSeries* s, const QList<QPointF>& pts) {
    if (auto* xy = qobject_cast<QXYSeries*>(s)) xy->replace(pts);
  };
  put(decodeTps, QList<QPointF>(decodePts_.begin(), decodePts_.end()));
  put(hitRate, QList<QPointF>(hitPts_.begin(), hitPts_.end()));
  QList<QPointF> ms, kb;
  for (size_t i = 0; i < timelineMs_.size(); ++i) {
    ms.append(QPointF(static_cast<double>(i), timelineMs_[i]));
    kb.append(QPointF(static_cast<double>(i), timelineKib_[i]));
  }
  put(timelineMs, ms);
  put(timelineKib, kb);
}

}  // namespace moepack::ui
