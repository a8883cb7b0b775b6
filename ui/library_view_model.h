// View-model of the library page. QML calls the commands; each runs on a worker thread (one
// at a time, in call order) against its own connection to the database file, then the list
// model is replaced on the GUI thread. Failures arrive as errorOccurred(message naming the
// file); nothing throws into QML.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QStringList>
#include <QThreadPool>
#include <QUrl>
#include <QtQml/qqmlregistration.h>
#include <deque>
#include <functional>

#include "ui/library_list_model.h"

namespace moepack::ui {

class LibraryViewModel : public QObject {
  Q_OBJECT
  QML_ELEMENT
  Q_PROPERTY(LibraryListModel* models READ models CONSTANT)
  Q_PROPERTY(bool busy READ busy NOTIFY busyChanged)
  // Database file (default AppDatabase::default_path()) and models folder (default
  // AppDataLocation/models). Set both before the first command.
  Q_PROPERTY(QString databasePath READ databasePath WRITE setDatabasePath NOTIFY settingsChanged)
  Q_PROPERTY(QString modelsFolder READ modelsFolder WRITE setModelsFolder NOTIFY settingsChanged)
  // The Expert Pack folder (the Settings' models_folder): packs the studio converted into it may
  // be deleted with their row, as downloads in modelsFolder may.
  Q_PROPERTY(QString packsFolder READ packsFolder WRITE setPacksFolder NOTIFY settingsChanged)
  Q_PROPERTY(QString lastError READ lastError NOTIFY errorOccurred)
  // For the context column: memory the model may use (bytes; default the physical RAM) and the
  // expert cache the user plans in it (bytes; default 1 GiB, the Settings' default
  // cache_vram_mib; the Library page sets it from the Settings).
  Q_PROPERTY(double memoryBudgetBytes READ memoryBudgetBytes WRITE setMemoryBudgetBytes NOTIFY budgetChanged)
  Q_PROPERTY(double expertCacheBytes READ expertCacheBytes WRITE setExpertCacheBytes NOTIFY budgetChanged)

 public:
  explicit LibraryViewModel(QObject* parent = nullptr);
  ~LibraryViewModel() override;

  // Each accepts a local path or a file:// URL (as DropArea and FileDialog give them).
  Q_INVOKABLE void addPath(const QString& pathOrUrl);
  Q_INVOKABLE void addPaths(const QStringList& pathsOrUrls);  // a drop of several files
  // Adds the paths that exist, in order, with no status message (failures only logged): what the
  // studio opened joins the library.
  Q_INVOKABLE void addQuietly(const QStringList& paths);
  Q_INVOKABLE void scanFolder(const QString& pathOrUrl);
  Q_INVOKABLE void addOllama(const QString& name, const QString& ollamaDir = QString());
  Q_INVOKABLE void refresh();
  // Removes the model; emits removed(bytesFreed). deleteFiles only inside the models folder.
  Q_INVOKABLE void remove(qint64 id, bool deleteFiles);
  // For the confirmation dialog (GUI thread, from the stored row): bytes that remove(id,
  // deleteFiles) frees, or -1 when the files may not be deleted (reason in deleteRefusal()).
  Q_INVOKABLE double bytesFreed(qint64 id, bool deleteFiles) const;
  Q_INVOKABLE QString deleteRefusal(qint64 id) const;
  Q_INVOKABLE static QString formatBytes(double bytes);
  // Tokens of context one sequence of model `id` can have next to an expert cache of
  // `expertCacheBytes` within `memoryBytes` (affordable_context_tokens() in
  // ui/model_library.h: (memory - cache - dense - fixed) / per-token, clamped to
  // [0, context_length]); -1 when the model's per-token size is unknown or the id is unknown.
  Q_INVOKABLE double affordableContext(qint64 id, double memoryBytes, double expertCacheBytes) const;

  double memoryBudgetBytes() const { return memoryBudget_; }
  void setMemoryBudgetBytes(double b);
  double expertCacheBytes() const { return expertCache_; }
  void setExpertCacheBytes(double b);

  LibraryListModel* models() { return &models_; }
  bool busy() const { return busy_; }
  QString databasePath() const { return databasePath_; }
  void setDatabasePath(const QString& p);
  QString modelsFolder() const { return modelsFolder_; }
  QString packsFolder() const { return packsFolder_; }
  void setPacksFolder(const QString& p);
  void setModelsFolder(const QString& p);
  QString lastError() const { return lastError_; }

 signals:
  void busyChanged();
  void settingsChanged();
  void errorOccurred(const QString& message);
  void message(const QString& text);  // a one-line report of a finished command
  void removed(qint64 id, double bytesFreed);
  void finishedCommand();  // after every command, errors or not (tests wait on it)
  void budgetChanged();

 private:
  struct Result {
    std::vector<LibraryEntry> entries;
    QStringList errors;
    QString message;
    qint64 removedId = -1;
    qint64 bytesFreed = 0;
  };
  using Job = std::function<void(ModelLibrary&, Result&)>;
  void enqueue(Job job);
  void startNext();
  void jobFinished();

  LibraryListModel models_;
  QString databasePath_;
  QString modelsFolder_;
  QString packsFolder_;
  QString lastError_;
  bool busy_ = false;
  double memoryBudget_ = 0;
  double expertCache_ = double(qint64{1} << 30);
  std::deque<Job> queue_;
  QThreadPool pool_;  // one thread: commands run in order
  QFutureWatcher<Result> watcher_;
};

}  // namespace moepack::ui
