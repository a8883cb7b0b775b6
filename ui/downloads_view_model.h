// View-model of the downloads section of the library page: a list of Downloader jobs
// (ui/downloader.h) with their progress, and the commands QML calls. Settings: the models
// folder (destination), the hub's base URL (default https://huggingface.co; kept in QSettings
// key downloads/hub_base_url), an optional extra
// CA bundle (PEM) added to the trusted roots (TLS verification itself is always on) and the
// database file that keeps the list across restarts (ui/library_download_store.h; "" = not
// kept).
//
// Hub downloads: `owner/repo` with a file name or a shard pattern (ui/library_hub.h). The
// repository is listed first; every matching file becomes one row, the rows of one request
// form a group downloaded one file after the other (shard order) and reported once, as the
// path of its first file, when all are verified (so the library gets one entry for the set).
// A group is reported only when whole: positions 0..n-1 and, for a llama-gguf-split set
// (PREFIX-0000K-of-0000N.gguf), all N shards present (in the group or already in the folder);
// otherwise errorOccurred names what is missing. cancel() removes the whole group from the
// kept list, its finished files included (they stay installed on disk).
// Sizes and SHA-256 come from the listing (hash source "hub listing").
//
// Space: before anything is queued, needed = the bytes still to download, plus, with "convert
// when done", the later Expert Pack estimated as the download's size again; refused with both
// numbers ("... N bytes needed, M bytes free"). Each file's Downloader checks again at its HEAD
// with the later files and the pack as extra bytes.
//
// Convert when done: once a group is verified, its first file is handed to `convertWizard`
// (ui/convert_wizard.h, public API only: chooseSource, then chooseOutput(<models folder>/<model
// name>-pack), then start); conversions queue while the wizard is busy. A refusal (space: the
// message has both numbers) or failure is errorOccurred + conversionRefused. Without a wizard
// the path is only announced by conversionQueued().
//
// Restart: setDatabasePath() restores the list. Rows that were transferring resume by
// themselves (HTTP Range from the .part, If-Range with the recorded ETag); paused and failed
// rows reappear as they were; queued shards of a group continue after the active one.
#pragma once

#include <QAbstractListModel>
#include <QElapsedTimer>
#include <QNetworkAccessManager>
#include <QPointer>
#include <QtQml/qqmlregistration.h>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "ui/downloader.h"
#include "ui/library_download_store.h"
#include "ui/library_hub.h"

namespace moepack::ui {

class AppDatabase;
class ConvertWizard;

class DownloadListModel : public QAbstractListModel {
  Q_OBJECT
  QML_ELEMENT
  QML_UNCREATABLE("owned by DownloadsViewModel")
 public:
  enum Role {
    NameRole = Qt::UserRole + 1,
    UrlRole,
    StateRole,       // "queued", "probing", "hashing", "downloading", "paused", "finished", "failed", ...
    BytesDoneRole,   // double, bytes
    BytesTotalRole,  // double, bytes; -1 unknown
    RateRole,        // bytes/s
    EtaRole,         // seconds; -1 unknown
    ErrorRole,
    HashSourceRole,  // "user", "hub listing", "server", "none"
    HashedBytesRole,   // double, bytes of the .part hashed so far while "hashing"
    GroupSizeRole,     // files in this row's group (1: alone)
    PositionRole,      // 1-based position in the group
    ConvertRole,       // bool, convert when done
  };
  explicit DownloadListModel(QObject* parent = nullptr) : QAbstractListModel(parent) {}
  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QHash<int, QByteArray> roleNames() const override;

  void append(std::unique_ptr<Downloader> d, const DownloadRecord& rec);
  Downloader* at(int row) const;
  DownloadRecord* record(int row);
  const DownloadRecord* record(int row) const;
  int rowOf(const Downloader* d) const;
  std::vector<int> groupRows(qint64 groupId) const;  // in position order
  // Removes the rows whose whole group is finished or cancelled; returns their downloaders'
  // addresses (no longer valid) for the caller's bookkeeping.
  std::vector<const Downloader*> removeEnded();

 private:
  struct Item {
    std::unique_ptr<Downloader> d;
    DownloadRecord rec;
  };
  void changed(const Downloader* d);
  std::vector<Item> items_;
};

class DownloadsViewModel : public QObject {
  Q_OBJECT
  QML_ELEMENT
  Q_MOC_INCLUDE("ui/convert_wizard.h")
  Q_PROPERTY(DownloadListModel* downloads READ downloads CONSTANT)
  Q_PROPERTY(QString modelsFolder READ modelsFolder WRITE setModelsFolder NOTIFY settingsChanged)
  Q_PROPERTY(QString hubBaseUrl READ hubBaseUrl WRITE setHubBaseUrl NOTIFY settingsChanged)
  Q_PROPERTY(QString caBundlePath READ caBundlePath WRITE setCaBundlePath NOTIFY settingsChanged)
  Q_PROPERTY(QString databasePath READ databasePath WRITE setDatabasePath NOTIFY settingsChanged)
  Q_PROPERTY(moepack::ui::ConvertWizard* convertWizard READ convertWizard WRITE setConvertWizard NOTIFY settingsChanged)
 public:
  explicit DownloadsViewModel(QObject* parent = nullptr);
  ~DownloadsViewModel() override;

  // `source`: an https:// URL, or a hub path "owner/repo" with `file` naming the file or a shard
  // pattern in it. `sha256`: optional, 64 hex digits (a single file only). Errors arrive as
  // errorOccurred (nothing is queued).
  Q_INVOKABLE void addDownload(const QString& source, const QString& file, const QString& sha256,
                               bool convertWhenDone);
  // As addDownload without conversion, with `extraBytes` more counted in the space check.
  Q_INVOKABLE void add(const QString& source, const QString& file, const QString& sha256, double extraBytes);
  Q_INVOKABLE void pause(int row);
  Q_INVOKABLE void resume(int row);
  Q_INVOKABLE void cancel(int row);  // the whole group: every .part of it is deleted
  // Clears the finished and cancelled downloads (whole groups) from the list.
  Q_INVOKABLE void clearEnded();
  // The dialog showing a refused conversion was closed: the next queued "convert when done"
  // download gets the wizard (a refusal leaves the refused source in it for the user until then).
  Q_INVOKABLE void resumeConversions() {
    refusedShown_ = false;
    pumpConversions();
  }

  DownloadListModel* downloads() { return &list_; }
  QString modelsFolder() const { return modelsFolder_; }
  void setModelsFolder(const QString& f);
  QString hubBaseUrl() const { return hubBaseUrl_; }
  void setHubBaseUrl(const QString& u);
  QString caBundlePath() const { return caBundlePath_; }
  void setCaBundlePath(const QString& p);
  QString databasePath() const { return databasePath_; }
  // Opens the database (once; later calls with another path are refused with errorOccurred)
  // and restores the list.
  void setDatabasePath(const QString& p);
  ConvertWizard* convertWizard() const { return wizard_; }
  void setConvertWizard(ConvertWizard* w);

  // Tests: the free-space probe (also given to every Downloader) and the retry policy.
  void setFreeBytesProbe(Downloader::FreeBytesProbe p) { freeBytes_ = std::move(p); }
  void setRetryPolicy(int maxRetries, int baseDelayMs, int maxDelayMs);

 signals:
  void settingsChanged();
  void errorOccurred(const QString& message);
  void downloadFinished(const QString& path);  // a group verified and installed: add it to the library
  void conversionQueued(const QString& path);  // "convert when done" of a finished download
  void conversionStarted(const QString& source, const QString& packDir);
  // The wizard refused or failed the hand-off (message as in errorOccurred); it stays on its
  // step (e.g. Space with shardModeOffered) so that the page can show it to the user.
  void conversionRefused(const QString& source, const QString& message);

 private:
  void addInternal(const QString& source, const QString& file, const QString& sha256, bool convert, qint64 extra);
  void queueGroup(std::vector<DownloadRecord> group);
  bool checkSpace(const std::vector<DownloadRecord>& group);
  DownloadRequest requestOf(const DownloadRecord& r, int row) const;
  std::unique_ptr<Downloader> makeDownloader();
  void attach(Downloader* d);
  void persist(int row);
  void onFinished(Downloader* d, bool ok);
  void startNext(qint64 groupId);
  void groupDone(qint64 groupId);
  void pumpConversions();
  bool refusedShown_ = false;  // a refused hand-off's source is in the wizard for the user
  void onWizardChanged();

  std::unique_ptr<AppDatabase> db_;
  std::unique_ptr<DownloadStore> store_;
  QNetworkAccessManager nam_;
  DownloadListModel list_;
  QString modelsFolder_;
  QString hubBaseUrl_ = QStringLiteral("https://huggingface.co");
  QString caBundlePath_;
  QString databasePath_;
  Downloader::FreeBytesProbe freeBytes_;
  int maxRetries_ = 5, baseDelayMs_ = 500, maxDelayMs_ = 30000;
  qint64 nextLocalId_ = -1;  // ids of rows when no database is set (negative)
  std::vector<std::unique_ptr<HubLister>> listers_;
  std::map<const Downloader*, QElapsedTimer> lastPersist_;  // progress writes at most every 2 s
  QPointer<ConvertWizard> wizard_;
  std::deque<QString> pendingConversions_;
  QString handoffSource_;
  bool handoffOutputChosen_ = false, handoffStarted_ = false;
};

}  // namespace moepack::ui
