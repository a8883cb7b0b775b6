#include "ui/engine_worker.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QProcess>
#include <QSettings>
#include <QStandardPaths>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/error.h"
#include "core/gguf_model.h"
#include "packbuilder/pack_builder.h"

Q_LOGGING_CATEGORY(lcEngine, "moepack.engine")

namespace moepack::ui {

int engineThreadNiceness() {
#ifdef __linux__
  errno = 0;
  const int n = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  return errno == 0 ? n : 0;
#else
  return 0;
#endif
}

namespace {

// The engine thread runs at nice +10 (Linux niceness is per thread and inherited by the
// threads it creates: the engine's thread pool and I/O threads), so that when the machine is
// busy the UI thread is scheduled first and frames keep their pace while tokens stream.
void lowerThisThreadPriority() {
#ifdef __linux__
  const id_t tid = static_cast<id_t>(syscall(SYS_gettid));
  if (setpriority(PRIO_PROCESS, tid, std::min(19, engineThreadNiceness() + kEngineNiceIncrement)) != 0) {
    qCWarning(lcEngine) << "could not lower the engine thread's priority:" << strerror(errno);
  }
#endif
}

// Registers the types that cross the thread boundary in queued signals (once).
void register_metatypes() {
  static const bool done = [] {
    qRegisterMetaType<moepack::EngineSettings>();
    qRegisterMetaType<moepack::ui::GenerationRequest>();
    qRegisterMetaType<moepack::ui::GenerationReply>();
    qRegisterMetaType<moepack::ui::EngineInfo>();
    qRegisterMetaType<moepack::ui::TelemetryHandle>();
    qRegisterMetaType<moepack::ui::TelemetryWeak>();
    return true;
  }();
  (void)done;
}

ReplyStats reply_stats(const GenerateResult& r) {
  ReplyStats s;
  s.promptTokens = static_cast<int>(r.prompt_tokens.size());
  s.generatedTokens = static_cast<int>(r.tokens.size());
  s.ttftMs = r.time_to_first_token_ms;
  s.prefillTps = r.prefill_tokens_per_s;
  s.decodeTps = r.decode_tokens_per_s;
  s.stopReason = QString::fromLatin1(stop_reason_name(r.stop_reason));
  return s;
}

}  // namespace

EngineWorker::EngineWorker(ChatEngineFactory factory, QString packsFolder)
    : factory_(std::move(factory)), packsFolder_(std::move(packsFolder)) {
  register_metatypes();
}

EngineWorker::~EngineWorker() = default;

QString EngineWorker::convertToPack(quint64 seq, const QString& gguf, const EngineSettings& settings) {
  // Named after the model (an Ollama model's name and tag, a split set's common prefix).
  const QString out =
      QDir(packsFolder_)
          .filePath(QString::fromStdString(model_source_stem(QFile::encodeName(gguf).toStdString())));
  if (!QDir().mkpath(packsFolder_)) throw Error("cannot create the packs folder " + packsFolder_.toStdString());
  BuildOptions o;
  o.source = gguf.toStdString();
  o.out_dir = out.toStdString();
  o.direct_io = settings.direct_io;
  o.cancel = &cancel_;
  QElapsedTimer since;
  since.start();
  o.on_progress = [&](const BuildProgress& p) {
    if (since.elapsed() < 50 && p.phase != "done") return;  // at most ~20 updates/s
    since.restart();
    const double f = p.bytes_total > 0 ? static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total) : -1.0;
    emit loadProgress(seq, QString::fromStdString(p.phase), f, QString::fromStdString(p.message));
  };
  // A pack of this very source already in the packs folder serves it, whatever its folder's
  // name (an earlier build named split sets' packs after their first shard).
  if (const auto found = find_finished_pack(packsFolder_.toStdString(), o.source);
      found && found->dir != o.out_dir) {
    BuildOptions again = o;
    again.out_dir = found->dir;
    again.source = found->source;  // as the pack's build spelled it (its plan id hashes the path)
    try {
      // Confirms it (or, its data files gone or cut, builds it again there), or refuses
      // without writing when the source changed since.
      const BuildResult r = build_pack(again);
      qCInfo(lcEngine) << "using the pack" << QString::fromStdString(r.pack_dir) << "of" << gguf
                       << (r.already_complete ? "(finished)" : "(built again)");
      return QString::fromStdString(r.pack_dir);
    } catch (const BuildCancelled&) {
      throw;
    } catch (const std::exception& e) {
      qCInfo(lcEngine) << "the pack in" << QString::fromStdString(found->dir)
                       << "is not this source's now:" << e.what();
    }
  }
  // The model's folder name taken by a pack of another model (another file of the same name, in
  // another folder) or by another source's interrupted build: the next free name, "<name>-2",
  // "<name>-3", ... A pack of this model made
  // before the file changed keeps its folder until the user removes it (no silent second copy).
  // Whether a pack's recorded source is this model: a manifest names a model by its first file
  // (a split set's first shard, an Ollama blob). Opened only when a name is taken.
  const auto thisModels = [&](const std::string& other) {
    std::string firstFile = o.source;
    try {
      firstFile = GgufModel::open(o.source).shards().front().path();
    } catch (const std::exception&) {  // build_pack reported no problem with it: keep the path
    }
    return same_source_file(other, firstFile);
  };
  BuildResult r;
  o.keep_other_builds = true;
  for (int k = 1;; ++k) {
    if (k > 1) o.out_dir = out.toStdString() + "-" + std::to_string(k);
    qCInfo(lcEngine) << "converting" << gguf << "to an Expert Pack in" << QString::fromStdString(o.out_dir);
    try {
      r = build_pack(o);
      break;
    } catch (const PackDirBuildingOther& e) {
      // Another source's interrupted build keeps its folder (its progress may be hours).
      if (k == 99)
        throw Error(std::string(e.what()) + "; so do the names before it: choose another packs folder");
    } catch (const PackOutputUnsafe& e) {
      // The CLI's advice (another output directory) is the packs folder here.
      throw Error(
          "refusing to build into " + e.dir() + ": " + e.reasons() +
          ". Nothing was written; choose another Expert Pack folder in the Settings (or move the file away)");
    } catch (const PackDirOccupied& e) {
      // The CLI's advice (--overwrite) is no choice here.
      const std::string remove =
          " Remove it in the Library (or move the folder away), then load the model again.";
      if (e.other_source().empty())  // maybe this model's own: never a silent second copy
        throw Error(e.holding() + ": its manifest cannot be read (a damaged pack)." + remove);
      if (thisModels(e.other_source()))
        throw Error(
            e.holding() +
            ": this file's from before its size or modification time changed (a new download, a copy, a "
            "touch)." +
            remove);
      if (k == 99)
        throw Error(
            out.toStdString() + " and " + o.out_dir +
            " and the names between hold other models' packs: choose another packs folder in the Settings.");
    }
  }
  qCInfo(lcEngine) << "pack ready:" << QString::fromStdString(r.pack_dir)
                   << (r.already_complete ? "(already complete)" : "") << r.seconds << "s";
  return QString::fromStdString(r.pack_dir);
}

void EngineWorker::load(quint64 seq, const QString& path, const EngineSettings& settings, bool convertGguf) {
  engine_.reset();
  // Cleared before the check (the controller publishes the newer number before it sets the
  // flag), so a cancel meant for this load is never lost.
  cancel_.store(false);
  if (superseded(seq)) return;  // a newer load or an unload is queued behind this one
  try {
    QString open = path;
    // By content, not suffix: an Ollama model's manifest and blob have no ".gguf".
    if (convertGguf && is_gguf_source(QFile::encodeName(path).toStdString())) {
      emit loadProgress(seq, QStringLiteral("plan"), -1.0, {});
      open = convertToPack(seq, path, settings);
    }
    emit loadProgress(seq, QStringLiteral("open"), -1.0, open);
    std::shared_ptr<ChatEngine> engine = factory_(open, settings);
    if (superseded(seq)) {
      // Asked for another model (or none) while this one opened: it goes now, on this thread,
      // before the next load needs its memory.
      qCInfo(lcEngine) << "dropping" << open << ": another load or an unload came while it opened";
      return;
    }
    const EngineInfo info = engine->info();
    engine_ = engine;
    // Aliasing pointer: the UI keeps the engine alive while it reads its telemetry (once the
    // controller has locked it).
    const TelemetryWeak telemetry = TelemetryHandle(engine, &engine->telemetry());
    qCInfo(lcEngine) << "loaded" << info.path << "backend" << info.backend << "threads" << info.threads;
    emit loaded(seq, info, telemetry);
  } catch (const DeviceLostError& e) {
    qCCritical(lcEngine) << "GPU lost while loading:" << e.what();
    emit loadFailed(seq, QString::fromUtf8(e.what()));
    emit deviceLost(QString::fromUtf8(e.what()));
  } catch (const std::bad_alloc&) {
    if (!superseded(seq)) emit loadFailed(seq, tr("Out of memory while loading %1.").arg(path));
  } catch (const BuildCancelled&) {
    // The conversion stopped for a newer request; a cancel without one is the user's.
    if (!superseded(seq)) emit loadFailed(seq, tr("The conversion of %1 was cancelled.").arg(path));
  } catch (const std::exception& e) {
    qCWarning(lcEngine) << "load failed:" << e.what();
    if (!superseded(seq)) emit loadFailed(seq, QString::fromUtf8(e.what()));
  }
}

void EngineWorker::unload() {
  engine_.reset();
  emit unloaded();
}

void EngineWorker::generate(const GenerationRequest& request) {
  if (!engine_) {
    emit generationFailed(request.id, tr("No model is loaded."));
    return;
  }
  cancel_.store(false);
  GenerateOptions options;
  options.max_tokens = request.settings.max_tokens;
  options.sampling = request.settings.sampling;
  options.cancel = &cancel_;
  std::string pending;
  QElapsedTimer lastEmit;
  lastEmit.start();
  auto flush = [&] {
    if (pending.empty()) return;
    emit textReady(request.id, QString::fromStdString(pending));
    pending.clear();
    lastEmit.restart();
  };
  try {
    const GenerateResult r = engine_->chat(request.messages, options, [&](std::string_view text, int32_t) {
      pending.append(text);
      if (lastEmit.elapsed() >= batchIntervalMs) flush();
      return !cancel_.load(std::memory_order_relaxed);
    });
    flush();
    GenerationReply reply;
    reply.id = request.id;
    reply.text = QString::fromStdString(r.text);
    reply.stats = reply_stats(r);
    if (cancel_.load()) reply.stats.stopReason = QStringLiteral("cancelled");
    emit generationFinished(reply);
  } catch (const DeviceLostError& e) {
    flush();
    engine_.reset();  // nothing can run on this context any more
    qCCritical(lcEngine) << "GPU lost during generation:" << e.what();
    emit generationFailed(request.id, QString::fromUtf8(e.what()));
    emit deviceLost(QString::fromUtf8(e.what()));
  } catch (const std::bad_alloc&) {
    flush();
    emit generationFailed(request.id, tr("Out of memory during generation."));
  } catch (const std::exception& e) {
    flush();
    qCWarning(lcEngine) << "generation failed:" << e.what();
    emit generationFailed(request.id, QString::fromUtf8(e.what()));
  }
}

// ---------------------------------------------------------------------------------------------

namespace {
const QString kDismissedBackendNote = QStringLiteral("ui/dismissed_backend_note");
}  // namespace

bool EngineController::backendNoteShown() const {
  return !info_.backendNote.isEmpty() &&
         QSettings().value(kDismissedBackendNote).toString() != info_.backendNote;
}

void EngineController::dismissBackendNote() {
  if (info_.backendNote.isEmpty()) return;
  QSettings().setValue(kDismissedBackendNote, info_.backendNote);
  emit backendNoteShownChanged();
}

EngineController::EngineController(ChatEngineFactory factory, QString packsFolder, QObject* parent)
    : QObject(parent) {
  register_metatypes();
  if (packsFolder.isEmpty()) {
    packsFolder = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/packs");
  }
  worker_ = new EngineWorker(std::move(factory), packsFolder);
  worker_->moveToThread(&thread_);
  thread_.setObjectName(QStringLiteral("moepack-engine"));
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(&thread_, &QThread::started, worker_, [] { lowerThisThreadPriority(); });
  connect(this, &EngineController::stateChanged, this, &EngineController::backendNoteShownChanged);

  connect(worker_, &EngineWorker::loadProgress, this,
          [this](quint64 seq, const QString& phase, double f, const QString& d) {
            if (seq != loadSeq_) return;
            phase_ = phase;
            progress_ = f;
            detail_ = d;
            emit progressChanged();
          });
  connect(worker_, &EngineWorker::loaded, this,
          [this](quint64 seq, const EngineInfo& info, const TelemetryWeak& weak) {
            // An older load's result is left alone: the worker, its only owner, frees it.
            if (seq != loadSeq_) return;
            const TelemetryHandle t = weak.lock();
            if (!t) return;  // dropped by the worker already (a newer request reached it first)
            // As a path that opens from any folder (a relative one would not at the next start).
            const QFileInfo given(lastPath_);
            QSettings().setValue(QStringLiteral("session/last_model"),
                                 given.exists() ? given.absoluteFilePath() : lastPath_);
            info_ = info;
            telemetry_ = t;
            setState(Ready);
            emit modelLoaded();
          });
  connect(worker_, &EngineWorker::loadFailed, this, [this](quint64 seq, const QString& m) {
    if (seq != loadSeq_) return;
    info_ = {};
    telemetry_.reset();
    setState(Failed, m);
  });
  connect(worker_, &EngineWorker::textReady, this, &EngineController::textReady);
  connect(worker_, &EngineWorker::generationFinished, this, [this](const GenerationReply& r) {
    if (r.id == generatingId_) {
      generatingId_ = 0;
      emit generatingChanged();
    }
    emit generationFinished(r);
  });
  connect(worker_, &EngineWorker::generationFailed, this, [this](quint64 id, const QString& m) {
    if (id == generatingId_) {
      generatingId_ = 0;
      emit generatingChanged();
    }
    emit generationFailed(id, m);
  });
  connect(worker_, &EngineWorker::unloaded, this, &EngineController::unloaded);
  connect(worker_, &EngineWorker::deviceLost, this, [this](const QString& m) {
    info_ = {};
    telemetry_.reset();
    setState(DeviceLost, m);
    emit deviceLost(m);
  });
  thread_.start();
}

EngineController::~EngineController() {
  worker_->cancelFlag().store(true);
  thread_.quit();
  thread_.wait();
}

void EngineController::setState(State s, const QString& error) {
  state_ = s;
  error_ = error;
  emit stateChanged();
}

void EngineController::load(const QString& path, bool convertGguf) {
  if (state_ == DeviceLost) return;  // only a new process can use the GPU again
  lastPath_ = path;
  lastConvert_ = convertGguf;
  if (held_) {
    loadAfterHold_ = true;
    phase_ = QStringLiteral("waiting");
    progress_ = -1;
    detail_ = path;
    emit progressChanged();
    setState(Loading);
    return;
  }
  worker_->latestLoad().store(++loadSeq_);  // before the cancel: see EngineWorker::load
  worker_->cancelFlag().store(true);        // a running generation ends first (queued after it)
  telemetry_.reset();
  info_ = {};
  phase_.clear();
  progress_ = -1;
  detail_.clear();
  emit progressChanged();
  setState(Loading);
  QMetaObject::invokeMethod(worker_, "load", Qt::QueuedConnection, Q_ARG(quint64, loadSeq_),
                            Q_ARG(QString, path), Q_ARG(moepack::EngineSettings, settings_),
                            Q_ARG(bool, convertGguf));
}

QString EngineController::lastLoadedModel() {
  const QString last = QSettings().value(QStringLiteral("session/last_model")).toString();
  // A path must still be there; an Ollama name ("qwen3:30b") is not a path and is kept.
  if (last.contains(QLatin1Char('/')) && !QFileInfo::exists(last)) return {};
  return last;
}

void EngineController::setPacksFolder(const QString& folder) {
  QMetaObject::invokeMethod(worker_, "setPacksFolder", Qt::QueuedConnection, Q_ARG(QString, folder));
}

void EngineController::reload() {
  if (!lastPath_.isEmpty()) load(lastPath_, lastConvert_);
}

void EngineController::stop() { worker_->cancelFlag().store(true); }

void EngineController::unload() {
  if (state_ == DeviceLost) return;
  if (held_) {  // the user's own unload during a benchmark: nothing loads when it ends
    loadAfterHold_ = false;
    reloadAfterHold_ = false;
  }
  dropModel();
}

void EngineController::dropModel() {
  worker_->latestLoad().store(++loadSeq_);  // a load still running is dropped, not shown
  worker_->cancelFlag().store(true);        // a running generation ends first (queued after it)
  telemetry_.reset();
  info_ = {};
  setState(Empty);
  QMetaObject::invokeMethod(worker_, "unload", Qt::QueuedConnection);
}

void EngineController::holdForBenchmark(const QString& benchmarkModel) {
  if (held_) return;
  held_ = true;
  benchmarkModel_ = benchmarkModel;
  loadAfterHold_ = false;
  reloadAfterHold_ = true;
  if (state_ == Loading) {  // still opening (or converting): dropped now, asked again afterwards
    loadAfterHold_ = true;
    dropModel();
  }
  emit stateChanged();  // held
}

void EngineController::releaseHold(bool reloadLast) {
  if (!held_) return;
  held_ = false;
  benchmarkModel_.clear();
  emit stateChanged();  // held
  const bool again = ((reloadLast && reloadAfterHold_) || loadAfterHold_) && !lastPath_.isEmpty();
  loadAfterHold_ = false;
  if (again) {
    load(lastPath_, lastConvert_);
  } else if (state_ == Loading) {
    setState(Empty);  // "waiting" with nothing to wait for
  }
}

bool EngineController::restartApplication(qint64 conversationId) {
  QStringList args = QCoreApplication::arguments();
  const QString program = args.isEmpty() ? QCoreApplication::applicationFilePath() : args.takeFirst();
  // Drop an earlier --open-conversation (both spellings) so the new one is the only one.
  for (int i = 0; i < args.size();) {
    if (args[i] == QLatin1String("--open-conversation") && i + 1 < args.size()) {
      args.remove(i, 2);
    } else if (args[i].startsWith(QLatin1String("--open-conversation="))) {
      args.remove(i);
    } else {
      ++i;
    }
  }
  if (conversationId >= 0) args << QStringLiteral("--open-conversation") << QString::number(conversationId);
  const QString exe = QCoreApplication::applicationFilePath().isEmpty() ? program : QCoreApplication::applicationFilePath();
  const bool started = restarter_ ? restarter_(exe, args) : QProcess::startDetached(exe, args);
  qCInfo(lcEngine) << "restart" << exe << args << (started ? "started" : "failed");
  if (!started) {
    error_ = tr("MoePack could not be restarted (%1). Close it and start it again.").arg(exe);
    emit stateChanged();
    return false;
  }
  if (quit_) {
    quit_();
  } else {
    QMetaObject::invokeMethod(QCoreApplication::instance(), &QCoreApplication::quit, Qt::QueuedConnection);
  }
  return true;
}

quint64 EngineController::generate(std::vector<ChatMessage> messages, const GenerationSettings& settings) {
  if (state_ != Ready || generatingId_ != 0) return 0;
  GenerationRequest r;
  r.id = nextId_++;
  r.messages = std::move(messages);
  r.settings = settings;
  generatingId_ = r.id;
  emit generatingChanged();
  QMetaObject::invokeMethod(worker_, "generate", Qt::QueuedConnection,
                            Q_ARG(moepack::ui::GenerationRequest, r));
  return r.id;
}

}  // namespace moepack::ui
