#include "ui/downloads_view_model.h"

#include <QFileInfo>
#include <QStandardPaths>

namespace moepack::ui {

namespace {
QString stateName(Downloader::State s) {
  switch (s) {
    case Downloader::State::Idle: return QStringLiteral("idle");
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
}  // namespace

int DownloadListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(items_.size());
}

QVariant DownloadListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Downloader& d = *items_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
    case NameRole: return QFileInfo(d.finalPath()).fileName();
    case UrlRole: return d.property("url");
    case StateRole: return stateName(d.state());
    case BytesDoneRole: return static_cast<double>(d.bytesDone());
    case BytesTotalRole: return static_cast<double>(d.bytesTotal());
    case RateRole: return d.rateBytesPerSecond();
    case EtaRole: return d.etaSeconds();
    case ErrorRole: return d.error();
    case HashSourceRole: return d.hashSource();
    default: return {};
  }
}

QHash<int, QByteArray> DownloadListModel::roleNames() const {
  return {{NameRole, "name"},           {UrlRole, "url"},   {StateRole, "state"},
          {BytesDoneRole, "bytesDone"}, {BytesTotalRole, "bytesTotal"}, {RateRole, "rate"},
          {EtaRole, "eta"},             {ErrorRole, "error"}, {HashSourceRole, "hashSource"}};
}

void DownloadListModel::append(std::unique_ptr<Downloader> d) {
  Downloader* raw = d.get();
  connect(raw, &Downloader::progress, this, [this, raw] { changed(raw); });
  connect(raw, &Downloader::stateChanged, this, [this, raw] { changed(raw); });
  const int row = static_cast<int>(items_.size());
  beginInsertRows(QModelIndex(), row, row);
  items_.push_back(std::move(d));
  endInsertRows();
}

Downloader* DownloadListModel::at(int row) const {
  return row >= 0 && row < static_cast<int>(items_.size()) ? items_[static_cast<size_t>(row)].get() : nullptr;
}

void DownloadListModel::changed(const Downloader* d) {
  for (size_t i = 0; i < items_.size(); ++i) {
    if (items_[i].get() == d) {
      const QModelIndex idx = index(static_cast<int>(i));
      emit dataChanged(idx, idx);
      return;
    }
  }
}

DownloadsViewModel::DownloadsViewModel(QObject* parent)
    : QObject(parent),
      modelsFolder_(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/models")) {}

void DownloadsViewModel::setModelsFolder(const QString& f) {
  const QUrl u(f);
  modelsFolder_ = u.isLocalFile() ? u.toLocalFile() : f;
  emit settingsChanged();
}
void DownloadsViewModel::setHubBaseUrl(const QString& u) {
  hubBaseUrl_ = u;
  emit settingsChanged();
}
void DownloadsViewModel::setCaBundlePath(const QString& p) {
  const QUrl u(p);
  caBundlePath_ = u.isLocalFile() ? u.toLocalFile() : p;
  emit settingsChanged();
}

void DownloadsViewModel::add(const QString& source, const QString& file, const QString& sha256, double extraBytes) {
  DownloadRequest r;
  const QString s = source.trimmed();
  if (s.startsWith(QLatin1String("https://"))) {
    r.url = QUrl(s, QUrl::StrictMode);
  } else {
    QString why;
    r.url = hub_file_url(hubBaseUrl_, s, file.trimmed(), &why);
    if (!r.url.isValid()) {
      emit errorOccurred(why);
      return;
    }
  }
  r.destDir = modelsFolder_;
  r.expectedSha256 = sha256.trimmed();
  r.extraBytesNeeded = static_cast<qint64>(extraBytes);
  auto d = std::make_unique<Downloader>(&nam_);
  if (!caBundlePath_.isEmpty() && !d->addCaBundle(caBundlePath_)) {
    emit errorOccurred(tr("no certificate in the CA bundle %1").arg(caBundlePath_));
    return;
  }
  d->setProperty("url", r.url.toString());
  Downloader* raw = d.get();
  connect(raw, &Downloader::finished, this, [this, raw](bool ok) {
    if (ok) emit downloadFinished(raw->finalPath());
    else if (raw->state() == Downloader::State::Failed) emit errorOccurred(raw->error());
  });
  list_.append(std::move(d));
  raw->start(r);
}

void DownloadsViewModel::pause(int row) {
  if (Downloader* d = list_.at(row)) d->pause();
}
void DownloadsViewModel::resume(int row) {
  if (Downloader* d = list_.at(row)) d->resume();
}
void DownloadsViewModel::cancel(int row) {
  if (Downloader* d = list_.at(row)) d->cancel();
}

}  // namespace moepack::ui
