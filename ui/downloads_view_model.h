// View-model of the downloads section of the library page: a list of Downloader jobs
// (ui/downloader.h) with their progress, and the commands QML calls. Settings: the models
// folder (destination), the hub's base URL (default https://huggingface.co) and an optional
// extra CA bundle (PEM) added to the trusted roots; TLS verification itself is always on.
#pragma once

#include <QAbstractListModel>
#include <QNetworkAccessManager>
#include <QtQml/qqmlregistration.h>
#include <memory>
#include <vector>

#include "ui/downloader.h"

namespace moepack::ui {

class DownloadListModel : public QAbstractListModel {
  Q_OBJECT
  QML_ELEMENT
  QML_UNCREATABLE("owned by DownloadsViewModel")
 public:
  enum Role {
    NameRole = Qt::UserRole + 1,
    UrlRole,
    StateRole,       // "probing", "downloading", "paused", "finished", "failed", ...
    BytesDoneRole,   // double, bytes
    BytesTotalRole,  // double, bytes; -1 unknown
    RateRole,        // bytes/s
    EtaRole,         // seconds; -1 unknown
    ErrorRole,
    HashSourceRole,  // "user", "server", "none"
  };
  explicit DownloadListModel(QObject* parent = nullptr) : QAbstractListModel(parent) {}
  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QHash<int, QByteArray> roleNames() const override;

  void append(std::unique_ptr<Downloader> d);
  Downloader* at(int row) const;

 private:
  void changed(const Downloader* d);
  std::vector<std::unique_ptr<Downloader>> items_;
};

class DownloadsViewModel : public QObject {
  Q_OBJECT
  QML_ELEMENT
  Q_PROPERTY(DownloadListModel* downloads READ downloads CONSTANT)
  Q_PROPERTY(QString modelsFolder READ modelsFolder WRITE setModelsFolder NOTIFY settingsChanged)
  Q_PROPERTY(QString hubBaseUrl READ hubBaseUrl WRITE setHubBaseUrl NOTIFY settingsChanged)
  Q_PROPERTY(QString caBundlePath READ caBundlePath WRITE setCaBundlePath NOTIFY settingsChanged)
 public:
  explicit DownloadsViewModel(QObject* parent = nullptr);

  // `source`: an https:// URL, or a hub path "owner/repo" with `file` naming the file in it.
  // `sha256`: optional, 64 hex digits. `extraBytes`: estimated pack size when the user ticked
  // "convert when done" (counted in the space check). Errors arrive as errorOccurred.
  Q_INVOKABLE void add(const QString& source, const QString& file, const QString& sha256, double extraBytes);
  Q_INVOKABLE void pause(int row);
  Q_INVOKABLE void resume(int row);
  Q_INVOKABLE void cancel(int row);

  DownloadListModel* downloads() { return &list_; }
  QString modelsFolder() const { return modelsFolder_; }
  void setModelsFolder(const QString& f);
  QString hubBaseUrl() const { return hubBaseUrl_; }
  void setHubBaseUrl(const QString& u);
  QString caBundlePath() const { return caBundlePath_; }
  void setCaBundlePath(const QString& p);

 signals:
  void settingsChanged();
  void errorOccurred(const QString& message);
  void downloadFinished(const QString& path);  // verified and installed: add it to the library

 private:
  QNetworkAccessManager nam_;
  DownloadListModel list_;
  QString modelsFolder_;
  QString hubBaseUrl_ = QStringLiteral("https://huggingface.co");
  QString caBundlePath_;
};

}  // namespace moepack::ui
