#include "ui/downloads_view_model.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>
#include <algorithm>
#include <exception>

#include "core/gguf_model.h"
#include "ui/app_database.h"
#include "ui/byte_units.h"
#include "ui/convert_wizard.h"

namespace moepack::ui {

namespace {
QString stateName(Downloader::State s) {
  switch (s) {
    case Downloader::State::Idle: return QStringLiteral("queued");
    case Downloader::State::Probing: return QStringLiteral("probing");
    case Downloader::State::Hashing: return QStringLiteral("hashing");
    case Downloader::State::Downloading: return QStringLiteral("downloading");
    case Downloader::State::Waiting: return QStringLiteral("waiting");
    case Downloader::State::Paused: return QStringLiteral("paused");
    case Downloader::State::Verifying: return QStringLiteral("verifying");
    case Downloader::State::Finished: return QStringLiteral("finished");
    case Downloader::State::Failed: return QStringLiteral("failed");
    case Downloader::State::Cancelled: return QStringLiteral("cancelled");
  }
  return {};
}

QString localPath(const QString& p) {
  const QUrl u(p);
  return u.isLocalFile() ? u.toLocalFile() : p;
}

// "<folder>/<model>-pack" (model_source_stem: the file name without .gguf and without a
// -0000N-of-0000M suffix).
QString packDirFor(const QString& folder, const QString& gguf) {
  const std::string stem = model_source_stem(QFile::encodeName(gguf).toStdString());
  return QDir(folder).filePath(QFile::decodeName(stem.c_str()) + QStringLiteral("-pack"));
}
}  // namespace

// ---- list model ----

int DownloadListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(items_.size());
}

QVariant DownloadListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Item& it = items_[static_cast<size_t>(index.row())];
  const Downloader& d = *it.d;
  switch (role) {
    case Qt::DisplayRole:
    case NameRole: return it.rec.fileName;
    case UrlRole: return it.rec.hubRepo.isEmpty() ? it.rec.url : it.rec.hubRepo + '/' + it.rec.hubFile;
    case StateRole: return stateName(d.state());
    case BytesDoneRole: return static_cast<double>(d.bytesDone());
    case BytesTotalRole:
      return static_cast<double>(d.bytesTotal() >= 0 ? d.bytesTotal() : it.rec.expectedSize);
    case RateRole: return d.rateBytesPerSecond();
    case EtaRole: return d.etaSeconds();
    case ErrorRole: return d.error();
    case HashSourceRole: return d.hashSource();
    case HashedBytesRole: return static_cast<double>(d.hashedBytes());
    case GroupSizeRole: return static_cast<int>(groupRows(it.rec.groupId).size());
    case PositionRole: return it.rec.position + 1;
    case ConvertRole: return it.rec.convertWhenDone;
    default: return {};
  }
}

QHash<int, QByteArray> DownloadListModel::roleNames() const {
  return {{NameRole, "name"},           {UrlRole, "url"},
          {StateRole, "state"},         {BytesDoneRole, "bytesDone"},
          {BytesTotalRole, "bytesTotal"}, {RateRole, "rate"},
          {EtaRole, "eta"},             {ErrorRole, "error"},
          {HashSourceRole, "hashSource"}, {HashedBytesRole, "hashedBytes"},
          {GroupSizeRole, "groupSize"}, {PositionRole, "position"},
          {ConvertRole, "convertWhenDone"}};
}

void DownloadListModel::append(std::unique_ptr<Downloader> d, const DownloadRecord& rec) {
  Downloader* raw = d.get();
  connect(raw, &Downloader::progress, this, [this, raw] { changed(raw); });
  connect(raw, &Downloader::hashProgress, this, [this, raw] { changed(raw); });
  connect(raw, &Downloader::stateChanged, this, [this, raw] { changed(raw); });
  const int row = static_cast<int>(items_.size());
  beginInsertRows(QModelIndex(), row, row);
  items_.push_back({std::move(d), rec});
  endInsertRows();
}

Downloader* DownloadListModel::at(int row) const {
  return row >= 0 && row < static_cast<int>(items_.size()) ? items_[static_cast<size_t>(row)].d.get() : nullptr;
}

DownloadRecord* DownloadListModel::record(int row) {
  return row >= 0 && row < static_cast<int>(items_.size()) ? &items_[static_cast<size_t>(row)].rec : nullptr;
}

const DownloadRecord* DownloadListModel::record(int row) const {
  return row >= 0 && row < static_cast<int>(items_.size()) ? &items_[static_cast<size_t>(row)].rec : nullptr;
}

int DownloadListModel::rowOf(const Downloader* d) const {
  for (size_t i = 0; i < items_.size(); ++i)
    if (items_[i].d.get() == d) return static_cast<int>(i);
  return -1;
}

std::vector<int> DownloadListModel::groupRows(qint64 groupId) const {
  std::vector<int> rows;
  for (size_t i = 0; i < items_.size(); ++i)
    if (items_[i].rec.groupId == groupId) rows.push_back(static_cast<int>(i));
  std::stable_sort(rows.begin(), rows.end(), [this](int a, int b) {
    return items_[static_cast<size_t>(a)].rec.position < items_[static_cast<size_t>(b)].rec.position;
  });
  return rows;
}

std::vector<const Downloader*> DownloadListModel::removeEnded() {
  const auto ended = [](const Downloader* d) {
    return d->state() == Downloader::State::Finished || d->state() == Downloader::State::Cancelled;
  };
  std::vector<const Downloader*> gone;
  for (int row = static_cast<int>(items_.size()) - 1; row >= 0; --row) {
    const Item& it = items_[static_cast<size_t>(row)];
    bool all = true;
    for (int g : groupRows(it.rec.groupId)) all = all && ended(items_[static_cast<size_t>(g)].d.get());
    if (it.rec.groupId == 0) all = ended(it.d.get());
    if (!all) continue;
    beginRemoveRows(QModelIndex(), row, row);
    gone.push_back(it.d.get());
    items_.erase(items_.begin() + row);
    endRemoveRows();
  }
  return gone;
}

void DownloadListModel::changed(const Downloader* d) {
  const int row = rowOf(d);
  if (row < 0) return;
  const QModelIndex idx = index(row);
  emit dataChanged(idx, idx);
}

// ---- view-model ----

DownloadsViewModel::DownloadsViewModel(QObject* parent)
    : QObject(parent),
      modelsFolder_(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/models")) {
  const QSettings s;
  hubBaseUrl_ = s.value(QStringLiteral("downloads/hub_base_url"), hubBaseUrl_).toString();
}

// Rows that are transferring keep their state in the database ("downloading"), so that the next
// start resumes them; the Downloaders abort their replies and close their .part files.
DownloadsViewModel::~DownloadsViewModel() = default;

void DownloadsViewModel::setModelsFolder(const QString& f) {
  modelsFolder_ = localPath(f);
  emit settingsChanged();
}
void DownloadsViewModel::setHubBaseUrl(const QString& u) {
  if (u == hubBaseUrl_) return;
  hubBaseUrl_ = u;
  QSettings().setValue(QStringLiteral("downloads/hub_base_url"), u);  // a setting: kept across starts
  emit settingsChanged();
}
void DownloadsViewModel::setCaBundlePath(const QString& p) {
  caBundlePath_ = localPath(p);
  emit settingsChanged();
}
void DownloadsViewModel::setRetryPolicy(int maxRetries, int baseDelayMs, int maxDelayMs) {
  maxRetries_ = maxRetries;
  baseDelayMs_ = baseDelayMs;
  maxDelayMs_ = maxDelayMs;
}

void DownloadsViewModel::setConvertWizard(ConvertWizard* w) {
  if (w == wizard_) return;
  if (wizard_) wizard_->disconnect(this);
  wizard_ = w;
  if (wizard_) {
    // Queued: the wizard emits changed() from inside chooseOutput()/start(); react after.
    connect(wizard_, &ConvertWizard::changed, this, &DownloadsViewModel::onWizardChanged, Qt::QueuedConnection);
    // Any conversion's end frees the wizard for the next queued one: the hand-off's own, or
    // one the user started from a refused hand-off's dialog (shard mode, another folder).
    connect(wizard_, &ConvertWizard::finished, this, [this](bool) {
      if (!handoffSource_.isEmpty() && handoffStarted_) handoffSource_.clear();
      // A conversion the user started in a refused hand-off's dialog keeps the wizard (its Done
      // step) until that dialog closes (resumeConversions).
      QMetaObject::invokeMethod(this, &DownloadsViewModel::pumpConversions, Qt::QueuedConnection);
    });
  }
  emit settingsChanged();
  pumpConversions();
}

std::unique_ptr<Downloader> DownloadsViewModel::makeDownloader() {
  auto d = std::make_unique<Downloader>(&nam_);
  if (!caBundlePath_.isEmpty()) d->addCaBundle(caBundlePath_);
  if (freeBytes_) d->setFreeBytesProbe(freeBytes_);
  d->setRetryPolicy(maxRetries_, baseDelayMs_, maxDelayMs_);
  return d;
}

DownloadRequest DownloadsViewModel::requestOf(const DownloadRecord& r, int row) const {
  DownloadRequest q;
  q.url = QUrl(r.url, QUrl::StrictMode);
  // A row from before the URLs were kept encoded ("…/My Model.gguf"): read it as a browser would.
  if (!q.url.isValid()) q.url = QUrl(r.url, QUrl::TolerantMode);
  q.destDir = r.destDir;
  q.fileName = r.fileName;
  q.expectedSize = r.expectedSize;
  if (r.sha256Source == QLatin1String("user") || r.sha256Source == QLatin1String("hub listing")) {
    q.expectedSha256 = r.sha256;
    q.sha256Source = r.sha256Source;
  }
  // The space check at this file's HEAD: the later files of its group, and the pack.
  qint64 later = 0, group = 0;
  bool after = false;
  for (int g : list_.groupRows(r.groupId)) {
    const DownloadRecord* o = list_.record(g);
    group += std::max<qint64>(0, o->expectedSize);
    if (after) later += std::max<qint64>(0, o->expectedSize);
    if (g == row) after = true;
  }
  q.extraBytesNeeded = r.extraBytes + later;
  if (r.convertWhenDone) {
    if (group > 0) q.extraBytesNeeded += group;
    else q.countPack = true;  // a URL of unknown size: the pack counts as the file again
  }
  return q;
}

void DownloadsViewModel::add(const QString& source, const QString& file, const QString& sha256, double extraBytes) {
  addInternal(source, file, sha256, false, static_cast<qint64>(extraBytes));
}

void DownloadsViewModel::addDownload(const QString& source, const QString& file, const QString& sha256,
                                     bool convertWhenDone) {
  addInternal(source, file, sha256, convertWhenDone, 0);
}

void DownloadsViewModel::addInternal(const QString& source, const QString& file, const QString& sha256, bool convert,
                                     qint64 extra) {
  const QString s = source.trimmed();
  const QString sha = sha256.trimmed().toLower();
  if (!caBundlePath_.isEmpty() && QSslCertificate::fromPath(caBundlePath_, QSsl::Pem).isEmpty()) {
    emit errorOccurred(tr("no certificate in the CA bundle %1").arg(caBundlePath_));
    return;
  }
  if (s.startsWith(QLatin1String("https://"), Qt::CaseInsensitive)) {
    DownloadRecord r;
    // Kept percent-encoded ("%20" stays "%20"): the decoded form ("a b") is no valid URL.
    r.url = QUrl(s, QUrl::StrictMode).toString(QUrl::FullyEncoded);
    r.destDir = modelsFolder_;
    const QUrl u(s, QUrl::StrictMode);
    const QString enc = u.path(QUrl::FullyEncoded);
    QString why;
    r.fileName = sanitized_file_name(
        file.trimmed().isEmpty() ? QUrl::fromPercentEncoding(enc.mid(enc.lastIndexOf('/') + 1).toUtf8()) : file.trimmed(),
        &why);
    if (!u.isValid() || r.fileName.isEmpty()) {
      emit errorOccurred(tr("refused download %1: %2").arg(s, why.isEmpty() ? tr("not a valid URL") : why));
      return;
    }
    r.sha256 = sha;
    r.sha256Source = sha.isEmpty() ? QString() : QStringLiteral("user");
    r.convertWhenDone = convert;
    r.extraBytes = extra;
    queueGroup({r});
    return;
  }
  // Any other URL (http://, ftp://, ...) is a refused address, not a malformed repository name:
  // downloads travel over TLS only.
  const QUrl other(s);
  if (other.isValid() && !other.scheme().isEmpty() && s.contains(QLatin1String("://"))) {
    emit errorOccurred(
        tr("refused download %1: only https:// addresses are downloaded (TLS, certificate checked)").arg(s));
    return;
  }
  QString why;
  if (!hub_file_url(hubBaseUrl_, s, QStringLiteral("x"), &why).isValid()) {
    emit errorOccurred(why);
    return;
  }
  const QString pattern = file.trimmed();
  QList<QSslCertificate> cas;
  if (!caBundlePath_.isEmpty()) cas = QSslCertificate::fromPath(caBundlePath_, QSsl::Pem);
  auto lister = std::make_unique<HubLister>(&nam_);
  HubLister* raw = lister.get();
  const QString base = hubBaseUrl_, folder = modelsFolder_;
  auto drop = [this, raw] {
    for (auto it = listers_.begin(); it != listers_.end(); ++it) {
      if (it->get() == raw) {
        it->release()->deleteLater();
        listers_.erase(it);
        return;
      }
    }
  };
  connect(raw, &HubLister::failed, this, [this, drop](const QString& message) {
    emit errorOccurred(message);
    drop();
  });
  connect(raw, &HubLister::listed, this,
          [this, drop, s, pattern, sha, convert, extra, base, folder](const std::vector<HubFile>& files) {
            drop();
            QString reason;
            const std::vector<HubFile> chosen = select_hub_files(files, pattern, &reason);
            if (chosen.empty()) {
              emit errorOccurred(tr("%1: %2").arg(s, reason));
              return;
            }
            if (!sha.isEmpty() && chosen.size() > 1) {
              emit errorOccurred(tr("a SHA-256 can only be given for a single file; '%1' matches %2 files")
                                     .arg(pattern)
                                     .arg(chosen.size()));
              return;
            }
            std::vector<DownloadRecord> group;
            for (size_t i = 0; i < chosen.size(); ++i) {
              const HubFile& f = chosen[i];
              DownloadRecord r;
              r.position = static_cast<int>(i);
              r.url = hub_file_url(base, s, f.path).toString(QUrl::FullyEncoded);
              r.hubRepo = s;
              r.hubFile = f.path;
              r.destDir = folder;
              r.fileName = f.localName;
              r.expectedSize = f.size;
              if (!sha.isEmpty()) {
                r.sha256 = sha;
                r.sha256Source = QStringLiteral("user");
              } else if (!f.sha256.isEmpty()) {
                r.sha256 = f.sha256;
                r.sha256Source = QStringLiteral("hub listing");
              }
              r.convertWhenDone = convert;
              r.extraBytes = extra;
              group.push_back(r);
            }
            queueGroup(std::move(group));
          });
  listers_.push_back(std::move(lister));
  raw->list(base, s, cas);
}

bool DownloadsViewModel::checkSpace(const std::vector<DownloadRecord>& group) {
  qint64 remaining = 0, total = 0;
  for (const DownloadRecord& r : group) {
    if (r.expectedSize < 0) return true;  // unknown: the Downloader checks at its HEAD
    total += r.expectedSize;
    const qint64 part = QFileInfo(QDir(r.destDir).filePath(r.fileName + QStringLiteral(".part"))).size();
    remaining += std::max<qint64>(0, r.expectedSize - part);
  }
  // What the downloads already in the list will still write there (and the packs of those
  // converted when done): free space they are going to take.
  qint64 others = 0;
  for (int row = 0; row < list_.rowCount(); ++row) {
    const Downloader* d = list_.at(row);
    const DownloadRecord* o = list_.record(row);
    if (!d || !o || o->destDir != modelsFolder_) continue;
    const auto st = d->state();
    if (st == Downloader::State::Finished || st == Downloader::State::Cancelled ||
        st == Downloader::State::Failed)
      continue;
    const qint64 size = d->bytesTotal() >= 0 ? d->bytesTotal() : o->expectedSize;
    if (size < 0) continue;
    others += std::max<qint64>(0, size - d->bytesDone()) + (o->convertWhenDone ? size : 0);
  }
  const qint64 needed = remaining + (group.front().convertWhenDone ? total : 0) + group.front().extraBytes;
  const std::optional<qint64> free = freeBytes_ ? freeBytes_(modelsFolder_) : free_bytes_in(modelsFolder_);
  if (free && *free < needed + others) {
    QString msg = tr("not enough space in %1: %2 needed (%3 bytes), %4 free (%5 bytes)")
                      .arg(modelsFolder_, format_bytes(static_cast<double>(needed)))
                      .arg(needed)
                      .arg(format_bytes(static_cast<double>(*free)))
                      .arg(*free);
    if (group.front().convertWhenDone) msg += tr(" (the download and the Expert Pack built from it)");
    if (others > 0)
      msg += tr("; the downloads already in the list will still take %1 of it")
                 .arg(format_bytes(static_cast<double>(others)));
    emit errorOccurred(msg);
    return false;
  }
  return true;
}

void DownloadsViewModel::queueGroup(std::vector<DownloadRecord> group) {
  if (group.empty() || !checkSpace(group)) return;
  for (const DownloadRecord& r : group) {
    if (QFileInfo::exists(QDir(r.destDir).filePath(r.fileName))) {
      emit errorOccurred(tr("%1 already exists; remove it first").arg(QDir(r.destDir).filePath(r.fileName)));
      return;
    }
    for (int row = 0; row < list_.rowCount(); ++row) {
      const DownloadRecord* o = list_.record(row);
      const Downloader::State st = list_.at(row)->state();
      if (o->destDir == r.destDir && o->fileName == r.fileName && st != Downloader::State::Cancelled &&
          st != Downloader::State::Finished) {
        emit errorOccurred(tr("%1 is already in the download list").arg(r.fileName));
        return;
      }
    }
  }
  try {
    qint64 groupId = 0;
    for (DownloadRecord& r : group) {
      r.state = QStringLiteral("queued");
      if (store_) {
        r.groupId = groupId;
        r.id = store_->insert(r);
        if (groupId == 0) {
          groupId = r.id;
          r.groupId = groupId;
          store_->update(r);
        }
      } else {
        r.id = nextLocalId_--;
        if (groupId == 0) groupId = r.id;
        r.groupId = groupId;
      }
    }
  } catch (const std::exception& e) {
    emit errorOccurred(tr("cannot record the download: %1").arg(QString::fromUtf8(e.what())));
    return;
  }
  std::vector<Downloader*> made;
  for (const DownloadRecord& r : group) {  // all rows first: each request counts the later ones
    auto d = makeDownloader();
    made.push_back(d.get());
    list_.append(std::move(d), r);
  }
  for (size_t i = 0; i < made.size(); ++i) {
    made[i]->prepare(requestOf(group[i], list_.rowOf(made[i])), Downloader::State::Idle);
    attach(made[i]);
  }
  startNext(group.front().groupId);
}

void DownloadsViewModel::attach(Downloader* d) {
  connect(d, &Downloader::stateChanged, this, [this, d] {
    persist(list_.rowOf(d));
    lastPersist_[d].start();
  });
  connect(d, &Downloader::progress, this, [this, d] {
    QElapsedTimer& t = lastPersist_[d];
    if (!t.isValid() || t.elapsed() >= 2000) {
      persist(list_.rowOf(d));
      t.start();
    }
  });
  connect(d, &Downloader::finished, this, [this, d](bool ok) { onFinished(d, ok); });
}

void DownloadsViewModel::persist(int row) {
  DownloadRecord* r = list_.record(row);
  Downloader* d = list_.at(row);
  if (!r || !d) return;
  r->state = stateName(d->state());
  r->error = d->error();
  r->bytesVerified = d->state() == Downloader::State::Hashing ? d->hashedBytes() : d->bytesDone();
  if (d->bytesTotal() >= 0) r->expectedSize = d->bytesTotal();
  if (!d->etag().isEmpty()) r->etag = d->etag();
  if (!d->hashSource().isEmpty()) {
    r->sha256Source = d->hashSource();
    r->sha256 = d->expectedSha256();
  }
  if (!store_ || r->state == QLatin1String("cancelled")) return;
  try {
    store_->update(*r);
  } catch (const std::exception& e) {
    qCWarning(lcDownload) << "download list:" << e.what();
  }
}

void DownloadsViewModel::onFinished(Downloader* d, bool ok) {
  const int row = list_.rowOf(d);
  DownloadRecord* r = list_.record(row);
  if (!r) return;
  const qint64 groupId = r->groupId;
  if (ok) {
    startNext(groupId);
    return;
  }
  if (d->state() == Downloader::State::Failed) {
    emit errorOccurred(d->error());
    return;
  }
  if (d->state() == Downloader::State::Cancelled) {
    // The whole group leaves the list, its finished files included: otherwise, after a restart,
    // the finished rows alone would look like a complete group (downloadFinished and a
    // conversion of an incomplete split set).
    if (store_) {
      try {
        if (groupId != 0)
          store_->removeGroup(groupId);
        else
          store_->remove(r->id);
      } catch (const std::exception& e) {
        qCWarning(lcDownload) << "download list:" << e.what();
      }
    }
    for (int g : list_.groupRows(groupId)) list_.at(g)->cancel();  // no-op for the finished / cancelled
  }
}

// Starts the group's first file that is not finished, if it is queued; reports the group when
// every file is finished.
void DownloadsViewModel::startNext(qint64 groupId) {
  for (int g : list_.groupRows(groupId)) {
    Downloader* d = list_.at(g);
    switch (d->state()) {
      case Downloader::State::Finished: continue;
      case Downloader::State::Idle: d->resume(); return;
      default: return;  // active, paused, failed or cancelled: the group waits
    }
  }
  groupDone(groupId);
}

void DownloadsViewModel::groupDone(qint64 groupId) {
  const std::vector<int> rows = list_.groupRows(groupId);
  if (rows.empty()) return;
  const QString first = list_.at(rows.front())->finalPath();
  const bool convert = list_.record(rows.front())->convertWhenDone;
  if (store_) {
    try {
      store_->removeGroup(groupId);
    } catch (const std::exception& e) {
      qCWarning(lcDownload) << "download list:" << e.what();
    }
  }
  // The group must be whole: positions 0..n-1, and a llama-gguf-split set
  // (PREFIX-0000K-of-0000N.gguf) needs all N shards, in the group or already in the folder.
  // A list left by an older version (a cancelled group's finished rows) is not reported.
  QStringList missing;
  for (size_t i = 0; i < rows.size(); ++i)
    if (list_.record(rows[i])->position != static_cast<int>(i))
      missing << tr("position %1 of the group").arg(i + 1);
  std::string prefix;
  int shardNo = 0, shardCount = 0;
  if (missing.isEmpty() && parse_split_path(QFile::encodeName(first).toStdString(), prefix, shardNo, shardCount)) {
    for (int k = 1; k <= shardCount; ++k) {
      const QString shard = QFile::decodeName(QByteArray::fromStdString(split_path(prefix, k, shardCount)));
      if (!QFileInfo::exists(shard)) missing << shard;
    }
  }
  if (!missing.isEmpty()) {
    emit errorOccurred(tr("the download of %1 is incomplete (missing: %2); it was not added to the library")
                           .arg(first, missing.join(QStringLiteral(", "))));
    return;
  }
  emit downloadFinished(first);
  if (convert) {
    pendingConversions_.push_back(first);
    emit conversionQueued(first);
    pumpConversions();
  }
}

void DownloadsViewModel::pause(int row) {
  if (Downloader* d = list_.at(row)) d->pause();
}
void DownloadsViewModel::resume(int row) {
  Downloader* d = list_.at(row);
  if (!d) return;
  d->resume();
}
void DownloadsViewModel::cancel(int row) {
  Downloader* d = list_.at(row);
  if (!d) return;
  if (d->state() == Downloader::State::Finished) {
    // A finished file of an unfinished group: cancel the group through its other files.
    for (int g : list_.groupRows(list_.record(row)->groupId)) list_.at(g)->cancel();
    return;
  }
  d->cancel();
}

void DownloadsViewModel::clearEnded() {
  for (const Downloader* d : list_.removeEnded()) lastPersist_.erase(d);
}

void DownloadsViewModel::setDatabasePath(const QString& p) {
  const QString path = localPath(p);
  if (path == databasePath_) return;
  if (db_) {
    emit errorOccurred(tr("the download list is already kept in %1").arg(databasePath_));
    return;
  }
  std::vector<DownloadRecord> rows;
  try {
    db_ = std::make_unique<AppDatabase>(path);
    store_ = std::make_unique<DownloadStore>(*db_);
    rows = store_->all();
  } catch (const std::exception& e) {
    store_.reset();
    db_.reset();
    emit errorOccurred(tr("the download list cannot be kept: %1").arg(QString::fromUtf8(e.what())));
    return;
  }
  databasePath_ = path;
  emit settingsChanged();
  std::vector<qint64> groups;
  std::vector<Downloader*> made;
  for (const DownloadRecord& r : rows) {
    auto d = makeDownloader();
    made.push_back(d.get());
    list_.append(std::move(d), r);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const DownloadRecord& r = rows[i];
    Downloader* raw = made[i];
    const Downloader::State shown = r.state == QLatin1String("paused")     ? Downloader::State::Paused
                                    : r.state == QLatin1String("failed")   ? Downloader::State::Failed
                                    : r.state == QLatin1String("finished") ? Downloader::State::Finished
                                                                           : Downloader::State::Idle;
    raw->prepare(requestOf(r, list_.rowOf(raw)), shown, r.error);
    attach(raw);
    if (std::find(groups.begin(), groups.end(), r.groupId) == groups.end()) groups.push_back(r.groupId);
  }
  // Interrupted and queued files go on; a group whose next file is paused or failed waits.
  for (qint64 g : groups) startNext(g);
}

void DownloadsViewModel::pumpConversions() {
  if (!wizard_ || !handoffSource_.isEmpty() || refusedShown_ || pendingConversions_.empty()) return;
  if (wizard_->busy() || wizard_->step() == ConvertWizard::Converting || wizard_->step() == ConvertWizard::Verifying)
    return;  // its finished() pumps again
  handoffSource_ = pendingConversions_.front();
  pendingConversions_.pop_front();
  handoffOutputChosen_ = false;
  handoffStarted_ = false;
  wizard_->chooseSource(handoffSource_);
}

void DownloadsViewModel::onWizardChanged() {
  if (!wizard_ || handoffSource_.isEmpty() || handoffStarted_ || wizard_->busy()) return;
  if (wizard_->source() != handoffSource_) return;
  auto giveUp = [this](const QString& why) {
    const QString source = handoffSource_;
    const QString message = tr("convert %1: %2").arg(QFileInfo(source).fileName(), why);
    handoffSource_.clear();
    emit errorOccurred(message);
    // The refused source stays in the wizard (its dialog offers the shard mode or another
    // folder); the queue goes on when that dialog closes (resumeConversions) or a conversion ends.
    refusedShown_ = true;
    emit conversionRefused(source, message);
  };
  switch (wizard_->step()) {
    case ConvertWizard::Space:
      if (!handoffOutputChosen_) {
        handoffOutputChosen_ = true;
        wizard_->chooseOutput(packDirFor(modelsFolder_, handoffSource_));
      } else if (!wizard_->fits()) {
        giveUp(wizard_->error());
      }
      break;
    case ConvertWizard::Options:
      handoffStarted_ = true;
      wizard_->start();
      emit conversionStarted(handoffSource_, wizard_->outputDir());
      break;
    case ConvertWizard::Failed: giveUp(wizard_->error()); break;
    default: break;
  }
}

}  // namespace moepack::ui
