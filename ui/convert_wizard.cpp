#include "ui/convert_wizard.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QPointer>
#include <QUrl>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>

#include "core/durable_io.h"
#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/pack_verify.h"
#include "packbuilder/pack_builder.h"
#include "packbuilder/pack_plan.h"

namespace moepack::ui {

Q_LOGGING_CATEGORY(lcConvert, "moepack.convert")

namespace {
QString localPath(const QString& p) {
  const QUrl u(p);
  return u.isLocalFile() ? u.toLocalFile() : p;
}
}  // namespace

ConvertWizard::ConvertWizard(QObject* parent) : QObject(parent) {
  freeBytes_ = [](const QString& dir) -> std::optional<qint64> {
    QString d = dir;
    while (!d.isEmpty() && !QFileInfo(d).isDir()) d = QFileInfo(d).absolutePath();  // nearest existing parent
    const std::optional<uint64_t> f = moepack::free_bytes(d.toStdString());
    if (!f) return std::nullopt;
    return static_cast<qint64>(*f);
  };
  connect(&watcher_, &QFutureWatcher<Outcome>::finished, this, [this] {
    busy_ = false;
    if (onDone_) onDone_(watcher_.result());
    emit changed();
  });
}

ConvertWizard::~ConvertWizard() {
  cancel_ = true;
  watcher_.waitForFinished();
}

void ConvertWizard::setStep(Step s) {
  step_ = s;
  emit changed();
}

void ConvertWizard::setVerifyFull(bool v) {
  if (v == verifyFull_) return;
  verifyFull_ = v;
  emit changed();
}

void ConvertWizard::setDeleteSourceAfterVerify(bool v) {
  if (v == deleteSource_ || (v && !sourceDeletable_)) return;
  deleteSource_ = v;
  emit changed();
}

void ConvertWizard::chooseSource(const QString& pathOrUrl) {
  if (busy_) return;
  source_ = localPath(pathOrUrl);
  shardMode_ = false;
  shardNeeded_ = -1;
  sourceDeletable_ = true;
  error_.clear();
  busy_ = true;
  emit changed();
  const std::string src = source_.toStdString();
  const qint64 margin = margin_;
  onDone_ = [this](const Outcome& o) {
    if (!o.error.isEmpty()) {
      error_ = o.error;
      setStep(Failed);
      return;
    }
    sourceBytes_ = o.sourceBytes;
    sourceFiles_ = o.files;
    sourceDeletable_ = !o.ollama;
    if (o.ollama) deleteSource_ = false;
    needed_ = o.needed;
    packBytes_ = o.packBytes;
    denseBytes_ = o.denseBytes;
    expertsBytes_ = o.expertsBytes;
    message_ = o.message;
    setStep(Space);
  };
  watcher_.setFuture(QtConcurrent::run([src, margin]() -> Outcome {
    Outcome o;
    try {
      const GgufModel model = GgufModel::open(src);
      const nlohmann::json s = pack_plan_summary(model);
      if (s.contains("error")) throw Error(s["error"].get<std::string>());
      o.sourceBytes = static_cast<qint64>(model.total_file_bytes());
      o.ollama = model.origin().rfind("ollama ", 0) == 0;
      for (const GgufFile& f : model.shards()) {
        o.files << QString::fromStdString(f.path());
        o.ollama = o.ollama || is_ollama_blob(f.path());
      }
      o.denseBytes = s.value("dense_bytes", qint64{0});
      o.expertsBytes = s.value("experts_bytes", qint64{0});
      o.packBytes = s.value("total_bytes", qint64{0});
      o.needed = o.packBytes + margin;
      o.message = QString::fromStdString(pack_plan_summary_text(s));
    } catch (const std::exception& e) {
      o.error = QString::fromUtf8(e.what());
    }
    return o;
  }));
}

QString ConvertWizard::packFolderIn(const QString& folderOrUrl) const {
  const std::string stem = model_source_stem(QFile::encodeName(source_).toStdString());
  return QDir(QDir::cleanPath(localPath(folderOrUrl)))
      .filePath(QFile::decodeName(stem.c_str()) + QStringLiteral("-pack"));
}

void ConvertWizard::chooseOutput(const QString& dirOrUrl) {
  if (busy_ || (step_ != Space && step_ != Options)) return;
  outputDir_ = QDir::cleanPath(QFileInfo(localPath(dirOrUrl)).absoluteFilePath());
  const std::optional<qint64> f = freeBytes_(outputDir_);
  free_ = f ? *f : -1;
  shardMode_ = false;
  shardNeeded_ = -1;
  try {
    // Both modes' needs for this folder (the same formulas as the builder's pre-flight).
    QString d = outputDir_;
    while (!d.isEmpty() && !QFileInfo(d).isDir()) d = QFileInfo(d).absolutePath();
    const GgufModel model = GgufModel::open(source_.toStdString());
    const BuildSpace sp = estimate_build_space(model, QFileInfo::exists(outputDir_) ? outputDir_.toStdString() : d.toStdString());
    needed_ = static_cast<qint64>(sp.normal_needed) + margin_;
    if (sp.shard_mode_helps) shardNeeded_ = static_cast<qint64>(sp.shard_mode_needed) + margin_;
  } catch (const std::exception& e) {
    qCWarning(lcConvert) << "space estimate:" << e.what();  // keep the plan's size from chooseSource
  }
  if (!fits()) {
    error_ = tr("Not enough space in %1: the pack needs %2 bytes, %3 bytes are free")
                 .arg(outputDir_)
                 .arg(needed_)
                 .arg(free_);
    if (shardModeOffered()) {
      error_ += tr(". The shard-by-shard mode fits: it needs %1 bytes, because it deletes each source shard as "
                   "soon as its bytes are in the pack and verified (the source is gone afterwards).")
                    .arg(shardNeeded_);
    } else if (shardNeeded_ >= 0) {
      error_ += tr("; even the shard-by-shard mode needs %1 bytes").arg(shardNeeded_);
    }
    qCWarning(lcConvert) << error_;
    setStep(Space);
    return;
  }
  error_.clear();
  setStep(Options);
}

bool ConvertWizard::chooseShardMode() {
  if (busy_ || step_ != Space || !shardModeOffered()) return false;
  shardMode_ = true;
  error_.clear();
  message_ = tr("Shard-by-shard mode: needs %1 bytes of the %2 free; each source shard is deleted once its "
                "bytes are in the pack and verified.")
                 .arg(shardNeeded_)
                 .arg(free_);
  setStep(Options);
  return true;
}

void ConvertWizard::cancel() { cancel_ = true; }

void ConvertWizard::onProgress(const QString& phase, qint64 done, qint64 total, double rate, double eta) {
  phase_ = phase;
  if (phase == QLatin1String("verify")) {
    // The verify's own bar: bytes hashed of the pack's bytes.
    if (step_ == Converting) setStep(Verifying);
    if (total > 0) {
      overallTotal_ = static_cast<double>(total);
      overallDone_ = static_cast<double>(std::min(done, total));
    } else {
      overallDone_ = 0;
    }
    rate_ = rate;
    eta_ = eta;
    emit progressChanged();
    return;
  }
  overallTotal_ = static_cast<double>(denseBytes_ + expertsBytes_);
  double overall = overallDone_;
  if (phase == QLatin1String("dense")) overall = static_cast<double>(std::min(done, denseBytes_));
  else if (phase == QLatin1String("experts")) overall = static_cast<double>(denseBytes_ + std::min(done, expertsBytes_));
  else if (phase == QLatin1String("finalize") || phase == QLatin1String("done"))
    overall = overallTotal_;
  overallDone_ = std::min(overall, overallTotal_);
  rate_ = rate;
  eta_ = eta;
  emit progressChanged();
}

void ConvertWizard::start() {
  if (busy_ || step_ != Options) return;
  cancel_ = false;
  busy_ = true;
  verified_ = false;
  sourceDeleted_ = false;
  error_.clear();
  message_.clear();  // an earlier run's "Cancelled ..." is not this run's
  overallDone_ = 0;
  setStep(Converting);
  BuildOptions opt;
  opt.source = source_.toStdString();
  opt.out_dir = outputDir_.toStdString();
  opt.safety_margin_bytes = static_cast<uint64_t>(margin_);
  opt.direct_io = directIo_;
  opt.delete_source_shards = shardMode_;
  opt.delete_source_after_verify = deleteSource_ && !shardMode_ && sourceDeletable_;
  opt.cancel = &cancel_;
  opt.hooks = hooks_;
  if (!opt.hooks.free_bytes) {
    FreeBytesProbe probe = freeBytes_;
    const QString dir = outputDir_;
    opt.hooks.free_bytes = [probe, dir]() -> uint64_t {
      const std::optional<qint64> f = probe(dir);
      return f ? static_cast<uint64_t>(*f) : UINT64_MAX;
    };
  }
  QPointer<ConvertWizard> self(this);
  auto post = [self](const QString& phase, qint64 done, qint64 total, double rate, double eta) {
    QMetaObject::invokeMethod(
        self, [self, phase, done, total, rate, eta] {
          if (self) self->onProgress(phase, done, total, rate, eta);
        },
        Qt::QueuedConnection);
  };
  opt.on_progress = [post](const BuildProgress& p) {
    post(QString::fromStdString(p.phase), static_cast<qint64>(p.bytes_done), static_cast<qint64>(p.bytes_total),
         p.rate_bytes_per_s, p.eta_s);
  };
  const bool full = verifyFull_;
  onDone_ = [this](const Outcome& o) {
    resumed_ = o.resumed;
    sourceDeleted_ = o.sourceDeleted;
    message_ = o.message;
    if (o.verifyCancelled) {
      message_ =
          tr("Verification cancelled. The pack is built but not verified; convert again to verify it "
             "(nothing is rebuilt).");
      setStep(Options);
      emit finished(false);
    } else if (o.cancelled) {
      message_ = tr("Cancelled. Nothing was finalised; start again to resume.");
      setStep(Options);
      emit finished(false);
    } else if (!o.ok) {
      error_ = o.error;
      qCWarning(lcConvert) << error_;
      setStep(Failed);
      emit finished(false);
    } else {
      verified_ = true;
      if (o.alreadyComplete)
        message_ =
            tr("The folder already held this model's finished pack: nothing was rebuilt.") + '\n' + message_;
      else if (o.resumed)
        message_ = tr("Resumed from the last checkpoint of the interrupted conversion.") + '\n' + message_;
      setStep(Done);
      emit finished(true);
    }
  };
  const std::atomic<bool>* cancel = &cancel_;  // the destructor waits for this job
  watcher_.setFuture(QtConcurrent::run([opt, full, post, cancel]() -> Outcome {
    Outcome o;
    try {
      const BuildResult r = build_pack(opt);
      o.resumed = r.resumed;
      o.alreadyComplete = r.already_complete;
      o.sourceDeleted = r.source_deleted;
      if (r.source_deleted && !opt.delete_source_shards) {
        // The builder verified every byte before it deleted the source: not twice.
        o.ok = true;
        o.message = QString::fromStdString(r.pack_dir + ": verified in full, then the source was deleted");
        return o;
      }
      post(QStringLiteral("verify"), 0, 0, 0, 0);
      VerifyOptions vo;
      vo.full = full;
      vo.cancel = cancel;
      vo.progress = [post](uint64_t done, uint64_t total) {
        post(QStringLiteral("verify"), static_cast<qint64>(done), static_cast<qint64>(total), 0, 0);
      };
      const VerifyResult v = verify_pack(r.pack_dir, vo);
      if (v.cancelled) {
        o.verifyCancelled = true;
        return o;
      }
      if (!v.ok) throw Error("verify failed: " + v.message);
      o.ok = true;
      o.message = QString::fromStdString(v.message);
    } catch (const BuildCancelled&) {
      // Cancelled in the builder's own verify (before deleting the source): the pack is finished.
      if (QFileInfo::exists(QString::fromStdString(opt.out_dir + "/" + kPackManifestName)))
        o.verifyCancelled = true;
      else
        o.cancelled = true;
    } catch (const std::exception& e) {
      o.error = QString::fromUtf8(e.what());
    }
    return o;
  }));
}

double ConvertWizard::bytesFreedBySource() const {
  qint64 b = 0;
  for (const QString& f : sourceFiles_) b += QFileInfo(f).size();
  return static_cast<double>(b);
}

bool ConvertWizard::deleteSourceFiles(bool confirmed) {
  if (!confirmed || step_ != Done || !verified_ || !verifyFull_) return false;
  if (!sourceDeletable_) {
    error_ =
        tr("%1 is a blob of Ollama's store, which its models may share: remove the model with `ollama rm`")
            .arg(sourceFiles_.value(0));
    emit changed();
    return false;
  }
  for (const QString& f : sourceFiles_) {
    if (QFileInfo::exists(f) && !QFile::remove(f)) {
      error_ = tr("cannot delete %1").arg(f);
      emit changed();
      return false;
    }
  }
  message_ = tr("Source deleted.");
  sourceDeleted_ = true;
  emit changed();
  return true;
}

}  // namespace moepack::ui
