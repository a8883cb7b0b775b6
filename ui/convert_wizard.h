// View-model of the convert wizard: GGUF (file, split set, Ollama name) -> Expert Pack with the
// same builder as `moepack build` (packbuilder/pack_builder.h), on a worker thread.
//
// Steps: Source (chooseSource: the plan is read, neededBytes = the pack's size from
// pack_plan_summary + safetyMarginBytes) -> Space (chooseOutput: freeBytes of the target
// folder; neededBytes and shardModeNeededBytes from estimate_build_space (formulas in
// packbuilder/pack_builder.h) + safetyMarginBytes; `fits` false refuses with both numbers and,
// when the shard-by-shard delete-as-you-go mode would fit (a split set on the target's file
// system), sets `shardModeOffered`; chooseShardMode() accepts it) -> Options (outputDir,
// verifyFull, deleteSourceAfterVerify; in shard mode the source shards are deleted as they
// are verified, so deleteSourceAfterVerify reads true) ->
// Converting (start: phase, bytes/s, ETA; cancel() stops at the next batch, nothing loads, and
// start() again resumes from the last checkpoint) -> Verifying (full SHA-256 verify, with its own
// progress; cancel() stops it before its next read (VerifyOptions::cancel), back to Options:
// start() again finds the pack complete, and verifies it again, deleting the source first if
// that was asked) -> Done
// (packDir; deleteSourceFiles(true) unlinks the source only after an explicit confirmation,
// bytesFreedBySource() says how much) or Failed (error).
// Progress: `overallDone`/`overallTotal` bytes over the dense and experts phases, monotonic
// within one run.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QStringList>
#include <QtQml/qqmlregistration.h>
#include <atomic>
#include <functional>
#include <optional>

#include "packbuilder/pack_builder.h"

namespace moepack::ui {

class ConvertWizard : public QObject {
  Q_OBJECT
  QML_ELEMENT
  Q_PROPERTY(Step step READ step NOTIFY changed)
  Q_PROPERTY(QString source READ source NOTIFY changed)
  Q_PROPERTY(QString outputDir READ outputDir NOTIFY changed)
  Q_PROPERTY(double sourceBytes READ sourceBytes NOTIFY changed)
  // The free space the build needs, the safety margin included.
  Q_PROPERTY(double neededBytes READ neededBytes NOTIFY changed)
  // The plan's size of the pack's files (pack_plan_summary's total_bytes, as its text says it):
  // the same number in every step (the Space and Options steps once showed two different ones).
  Q_PROPERTY(double packBytes READ packBytes NOTIFY changed)
  Q_PROPERTY(double safetyMarginBytes READ safetyMarginBytes NOTIFY changed)
  Q_PROPERTY(double freeBytes READ freeBytes NOTIFY changed)
  Q_PROPERTY(bool fits READ fits NOTIFY changed)
  Q_PROPERTY(double shardModeNeededBytes READ shardModeNeededBytes NOTIFY changed)  // -1: not applicable
  Q_PROPERTY(bool shardModeOffered READ shardModeOffered NOTIFY changed)
  Q_PROPERTY(bool shardMode READ shardMode NOTIFY changed)
  Q_PROPERTY(bool deleteSourceAfterVerify READ deleteSourceAfterVerify WRITE setDeleteSourceAfterVerify NOTIFY changed)
  // False for an Ollama model (its blob is the store's, shared by its models: `ollama rm`
  // removes it): neither deleteSourceAfterVerify nor deleteSourceFiles then delete anything.
  Q_PROPERTY(bool sourceDeletable READ sourceDeletable NOTIFY changed)
  // Done: the source files are gone (deleted after the verify, or by deleteSourceFiles).
  Q_PROPERTY(bool sourceDeleted READ sourceDeleted NOTIFY changed)
  Q_PROPERTY(bool busy READ busy NOTIFY changed)
  Q_PROPERTY(QString phase READ phase NOTIFY progressChanged)
  Q_PROPERTY(double overallDone READ overallDone NOTIFY progressChanged)
  Q_PROPERTY(double overallTotal READ overallTotal NOTIFY progressChanged)
  Q_PROPERTY(double rate READ rate NOTIFY progressChanged)  // bytes/s
  Q_PROPERTY(double eta READ eta NOTIFY progressChanged)    // seconds, 0 unknown
  Q_PROPERTY(bool verifyFull READ verifyFull WRITE setVerifyFull NOTIFY changed)
  Q_PROPERTY(QString packDir READ packDir NOTIFY changed)
  Q_PROPERTY(bool resumed READ resumed NOTIFY changed)
  Q_PROPERTY(QString message READ message NOTIFY changed)
  Q_PROPERTY(QString error READ error NOTIFY changed)

 public:
  enum Step { Source, Space, Options, Converting, Verifying, Done, Failed };
  Q_ENUM(Step)
  using FreeBytesProbe = std::function<std::optional<qint64>(const QString& dir)>;

  explicit ConvertWizard(QObject* parent = nullptr);
  ~ConvertWizard() override;

  Q_INVOKABLE void chooseSource(const QString& pathOrUrl);   // async; -> Space or Failed
  Q_INVOKABLE void chooseOutput(const QString& dirOrUrl);    // sync (statvfs); -> Options if fits
  Q_INVOKABLE bool chooseShardMode();                        // when offered: -> Options in shard mode
  Q_INVOKABLE void start();                                  // async; -> Done / Options (cancelled) / Failed
  Q_INVOKABLE void cancel();                                 // thread-safe
  Q_INVOKABLE double bytesFreedBySource() const;             // size of the source files, bytes
  Q_INVOKABLE bool deleteSourceFiles(bool confirmed);        // only in Done, after a passing verify
  // The pack's own folder inside `folderOrUrl`: "<folder>/<model_source_stem(source)>-pack".
  Q_INVOKABLE QString packFolderIn(const QString& folderOrUrl) const;

  // Tests: free-space probe (also handed to the builder) and the builder's fault hooks.
  void setFreeBytesProbe(FreeBytesProbe p) { freeBytes_ = std::move(p); }
  void setBuildHooks(BuildTestHooks h) { hooks_ = std::move(h); }
  void setSafetyMarginBytes(qint64 b) { margin_ = b; }
  void setDirectIo(bool on) { directIo_ = on; }

  Step step() const { return step_; }
  QString source() const { return source_; }
  QString outputDir() const { return outputDir_; }
  double sourceBytes() const { return static_cast<double>(sourceBytes_); }
  double packBytes() const { return static_cast<double>(packBytes_); }
  double neededBytes() const { return static_cast<double>(needed_); }
  double safetyMarginBytes() const { return static_cast<double>(margin_); }
  double freeBytes() const { return static_cast<double>(free_); }
  bool fits() const { return free_ < 0 || free_ >= needed_; }
  double shardModeNeededBytes() const { return static_cast<double>(shardNeeded_); }
  bool shardModeOffered() const { return !fits() && shardNeeded_ >= 0 && shardNeeded_ < needed_ && free_ >= shardNeeded_; }
  bool shardMode() const { return shardMode_; }
  bool deleteSourceAfterVerify() const { return shardMode_ || deleteSource_; }
  bool sourceDeletable() const { return sourceDeletable_; }
  bool sourceDeleted() const { return sourceDeleted_; }
  void setDeleteSourceAfterVerify(bool v);
  bool busy() const { return busy_; }
  QString phase() const { return phase_; }
  double overallDone() const { return overallDone_; }
  double overallTotal() const { return overallTotal_; }
  double rate() const { return rate_; }
  double eta() const { return eta_; }
  bool verifyFull() const { return verifyFull_; }
  void setVerifyFull(bool v);
  QString packDir() const { return outputDir_; }
  bool resumed() const { return resumed_; }
  QString message() const { return message_; }
  QString error() const { return error_; }

 signals:
  void changed();
  void progressChanged();
  void finished(bool ok);  // after start(): Done (true), cancelled or Failed (false)

 private:
  struct Outcome {
    bool ok = false;
    bool cancelled = false;
    bool verifyCancelled = false;  // built, its verify stopped by cancel()
    bool alreadyComplete = false;
    bool sourceDeleted = false;
    bool ollama = false;
    bool resumed = false;
    QString message;
    QString error;
    qint64 sourceBytes = 0, needed = 0, packBytes = 0, denseBytes = 0, expertsBytes = 0;
    QStringList files;
  };
  void onProgress(const QString& phase, qint64 done, qint64 total, double rate, double eta);
  void setStep(Step s);

  Step step_ = Source;
  QString source_, outputDir_, phase_, message_, error_;
  QStringList sourceFiles_;
  qint64 sourceBytes_ = 0, packBytes_ = 0, needed_ = 0, free_ = -1, denseBytes_ = 0, expertsBytes_ = 0;
  qint64 shardNeeded_ = -1;
  bool shardMode_ = false;
  bool deleteSource_ = false;
  bool sourceDeletable_ = true;
  bool sourceDeleted_ = false;
  qint64 margin_ = qint64{1} << 30;
  bool directIo_ = true;
  bool verifyFull_ = true;
  bool busy_ = false;
  bool resumed_ = false;
  bool verified_ = false;
  double overallDone_ = 0, overallTotal_ = 0, rate_ = 0, eta_ = 0;
  std::atomic<bool> cancel_{false};
  FreeBytesProbe freeBytes_;
  BuildTestHooks hooks_;
  QFutureWatcher<Outcome> watcher_;
  std::function<void(const Outcome&)> onDone_;
};

}  // namespace moepack::ui
