#include "ui/single_instance.h"

#include <QDir>

namespace moepack::ui {

std::unique_ptr<QLockFile> acquire_instance_lock(const QString& dir, int wait_ms, QString* why) {
  if (!QDir().mkpath(dir)) {
    if (why) *why = QStringLiteral("cannot create the folder %1").arg(dir);
    return nullptr;
  }
  const QString path = QDir(dir).filePath(QStringLiteral("moepack-studio.lock"));
  auto lock = std::make_unique<QLockFile>(path);
  lock->setStaleLockTime(0);  // only a dead owner makes it stale, never its age
  if (lock->tryLock(wait_ms)) return lock;
  if (why) {
    qint64 pid = 0;
    QString host, app;
    if (lock->error() == QLockFile::LockFailedError && lock->getLockInfo(&pid, &host, &app)) {
      *why = QStringLiteral(
                 "MoePack Studio is already running (process %1 on %2); close it first, or switch "
                 "to its window")
                 .arg(pid)
                 .arg(host);
    } else {
      *why = QStringLiteral("cannot write the lock file %1").arg(path);
    }
  }
  return nullptr;
}

}  // namespace moepack::ui
