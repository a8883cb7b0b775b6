#include "ui/library_view_model.h"

#include <unistd.h>

#include <QDir>
#include <QFileInfo>
#include <QLocale>
#include <QLoggingCategory>
#include <QStandardPaths>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>

#include "ui/app_database.h"
#include "ui/byte_units.h"

namespace moepack::ui {

namespace {
QString localPath(const QString& pathOrUrl) {
  const QUrl url(pathOrUrl);
  if (url.isLocalFile()) return url.toLocalFile();
  return pathOrUrl;
}
}  // namespace

LibraryViewModel::LibraryViewModel(QObject* parent)
    : QObject(parent),
      databasePath_(AppDatabase::default_path()),
      modelsFolder_(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/models")) {
  pool_.setMaxThreadCount(1);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) memoryBudget_ = static_cast<double>(pages) * static_cast<double>(page);
  connect(&watcher_, &QFutureWatcher<Result>::finished, this, &LibraryViewModel::jobFinished);
}

LibraryViewModel::~LibraryViewModel() {
  queue_.clear();
  watcher_.waitForFinished();
  pool_.waitForDone();
}

void LibraryViewModel::setDatabasePath(const QString& p) {
  if (p == databasePath_) return;
  databasePath_ = p;
  emit settingsChanged();
}

void LibraryViewModel::setPacksFolder(const QString& p) {
  const QString l = localPath(p);
  if (l == packsFolder_) return;
  packsFolder_ = l;
  emit settingsChanged();
}

void LibraryViewModel::setModelsFolder(const QString& p) {
  if (p == modelsFolder_) return;
  modelsFolder_ = localPath(p);
  emit settingsChanged();
}

void LibraryViewModel::enqueue(Job job) {
  queue_.push_back(std::move(job));
  if (!busy_) startNext();
}

void LibraryViewModel::startNext() {
  if (queue_.empty()) {
    if (busy_) {
      busy_ = false;
      emit busyChanged();
    }
    return;
  }
  Job job = std::move(queue_.front());
  queue_.pop_front();
  if (!busy_) {
    busy_ = true;
    emit busyChanged();
  }
  const QString db = databasePath_, folder = modelsFolder_, packs = packsFolder_;
  watcher_.setFuture(QtConcurrent::run(&pool_, [job = std::move(job), db, folder, packs]() -> Result {
    Result r;
    try {
      AppDatabase database(db);
      ModelLibrary lib(database, folder, packs);
      job(lib, r);
      r.entries = lib.entries();
    } catch (const std::exception& e) {
      r.errors << QString::fromUtf8(e.what());
      try {
        AppDatabase database(db);
        r.entries = ModelLibrary(database, folder, packs).entries();
      } catch (const std::exception&) {
      }
    }
    return r;
  }));
}

void LibraryViewModel::jobFinished() {
  Result r = watcher_.result();
  models_.setEntries(std::move(r.entries));
  // The summary first, then the errors: a status line showing the last signal keeps the reason a
  // file was refused, not "0 model(s) added" over it.
  if (!r.message.isEmpty()) emit message(r.message);
  for (const QString& e : r.errors) {
    qCWarning(lcLibrary) << e;
    lastError_ = e;
    emit errorOccurred(e);
  }
  if (r.removedId >= 0) emit removed(r.removedId, static_cast<double>(r.bytesFreed));
  emit finishedCommand();
  startNext();
}

void LibraryViewModel::addPath(const QString& pathOrUrl) { addPaths({pathOrUrl}); }

void LibraryViewModel::addPaths(const QStringList& pathsOrUrls) {
  QStringList paths;
  for (const QString& p : pathsOrUrls) paths << localPath(p);
  enqueue([paths](ModelLibrary& lib, Result& r) {
    int added = 0;
    for (const QString& p : paths) {
      try {
        if (QFileInfo(p).isDir() && !QFileInfo::exists(p + QStringLiteral("/manifest.json")) &&
            !QFileInfo::exists(p + QStringLiteral("/build-state.json"))) {
          const ScanResult s = lib.scanFolder(p);  // a dropped folder is scanned
          added += static_cast<int>(s.added.size());
          r.errors << s.errors;
        } else {
          lib.addPath(p);
          ++added;
        }
      } catch (const std::exception& e) {
        QString msg = QString::fromUtf8(e.what());
        if (!msg.contains(p)) msg = p + QStringLiteral(": ") + msg;
        r.errors << msg;
      }
    }
    r.message = tr("%n model(s) added", nullptr, added);
  });
}

void LibraryViewModel::addQuietly(const QStringList& paths) {
  QStringList existing;
  for (const QString& p : paths) {
    const QString local = localPath(p);
    if (QFileInfo::exists(local)) existing << local;  // an Ollama name is not a path: skipped
  }
  if (existing.isEmpty()) return;
  enqueue([existing](ModelLibrary& lib, Result&) {
    for (const QString& p : existing) {
      try {
        lib.addPath(p);
      } catch (const std::exception& e) {
        qCInfo(lcLibrary) << "library: not added:" << p << e.what();
      }
    }
  });
}

void LibraryViewModel::scanFolder(const QString& pathOrUrl) {
  const QString folder = localPath(pathOrUrl);
  enqueue([folder](ModelLibrary& lib, Result& r) {
    const ScanResult s = lib.scanFolder(folder);
    r.errors << s.errors;
    r.message = tr("%n model(s) found in %1", nullptr, static_cast<int>(s.added.size())).arg(folder);
  });
}

void LibraryViewModel::addOllama(const QString& name, const QString& ollamaDir) {
  enqueue([name, ollamaDir](ModelLibrary& lib, Result& r) {
    const LibraryEntry e = lib.addOllama(name, localPath(ollamaDir));
    r.message = tr("Ollama model %1 added").arg(e.name);
  });
}

void LibraryViewModel::refresh() {
  enqueue([](ModelLibrary& lib, Result&) { lib.refresh(); });
}

void LibraryViewModel::remove(qint64 id, bool deleteFiles) {
  enqueue([id, deleteFiles](ModelLibrary& lib, Result& r) {
    r.bytesFreed = lib.remove(id, deleteFiles);
    r.removedId = id;
    r.message = tr("Removed; %1 freed").arg(formatBytes(static_cast<double>(r.bytesFreed)));
  });
}

double LibraryViewModel::bytesFreed(qint64 id, bool deleteFiles) const {
  const int row = models_.rowOf(id);
  if (row < 0) return -1;
  if (!deleteFiles) return 0;
  if (!deleteRefusal(id).isEmpty()) return -1;
  qint64 bytes = 0;
  for (const QString& f : models_.entries()[static_cast<size_t>(row)].files) bytes += QFileInfo(f).size();
  return static_cast<double>(bytes);
}

QString LibraryViewModel::deleteRefusal(qint64 id) const {
  const int row = models_.rowOf(id);
  if (row < 0) return tr("unknown model");
  return deletion_refusal(models_.entries()[static_cast<size_t>(row)], modelsFolder_, packsFolder_);
}

QString LibraryViewModel::formatBytes(double bytes) { return format_bytes(bytes); }

}  // namespace moepack::ui

namespace moepack::ui {

double LibraryViewModel::affordableContext(qint64 id, double memoryBytes, double expertCacheBytes) const {
  const int row = models_.rowOf(id);
  if (row < 0) return -1;
  return static_cast<double>(affordable_context_tokens(models_.entries()[static_cast<size_t>(row)],
                                                       static_cast<qint64>(memoryBytes),
                                                       static_cast<qint64>(expertCacheBytes)));
}

void LibraryViewModel::setMemoryBudgetBytes(double b) {
  if (b == memoryBudget_) return;
  memoryBudget_ = b;
  emit budgetChanged();
}

void LibraryViewModel::setExpertCacheBytes(double b) {
  if (b == expertCache_) return;
  expertCache_ = b;
  emit budgetChanged();
}

}  // namespace moepack::ui
