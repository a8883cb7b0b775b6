#include "ui/app_database.h"

#include <QDir>
#include <QFileInfo>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QUuid>

#include "core/error.h"

namespace moepack::ui {

void exec_sql(QSqlDatabase& db, const QString& sql) {
  QSqlQuery q(db);
  if (!q.exec(sql)) {
    throw Error("SQLite: " + q.lastError().text().toStdString() + " in: " + sql.toStdString());
  }
}

AppDatabase::AppDatabase(const QString& path)
    : path_(path), connection_("moepack-db-" + QUuid::createUuid().toString(QUuid::WithoutBraces)) {
  if (path != ":memory:") {
    const QString dir = QFileInfo(path).absolutePath();
    if (!QDir().mkpath(dir)) throw Error("cannot create the database folder " + dir.toStdString());
  }
  QSqlDatabase db = QSqlDatabase::addDatabase("QSQLITE", connection_);
  db.setDatabaseName(path);
  if (!db.open()) {
    const std::string why = db.lastError().text().toStdString();
    db = QSqlDatabase();
    QSqlDatabase::removeDatabase(connection_);
    throw Error("cannot open the database " + path.toStdString() + ": " + why);
  }
  try {
    exec_sql(db, "PRAGMA busy_timeout=5000");  // first: another connection's lock is waited for
    if (path != ":memory:") exec_sql(db, "PRAGMA journal_mode=WAL");
    exec_sql(db, "PRAGMA foreign_keys=ON");
    exec_sql(db, "PRAGMA synchronous=FULL");
    exec_sql(db,
             "CREATE TABLE IF NOT EXISTS schema_versions ("
             "component TEXT PRIMARY KEY, version INTEGER NOT NULL)");
  } catch (const Error& e) {
    // SQLite opens any file; the first statement finds out ("file is not a database").
    db.close();
    db = QSqlDatabase();
    QSqlDatabase::removeDatabase(connection_);
    const std::string why = e.what();
    const bool damaged =
        why.find("not a database") != std::string::npos || why.find("malformed") != std::string::npos;
    throw Error(
        "the database " + path.toStdString() + " cannot be used (" + why + ")" +
        (damaged ? "; move it aside (MoePack then starts a new one) or restore it from a backup" : ""));
  }
}

AppDatabase::~AppDatabase() {
  {
    QSqlDatabase db = QSqlDatabase::database(connection_, false);
    if (db.isOpen()) db.close();
  }
  QSqlDatabase::removeDatabase(connection_);
}

QSqlDatabase AppDatabase::db() const { return QSqlDatabase::database(connection_, false); }

int AppDatabase::version(const QString& component) const {
  QSqlQuery q(db());
  q.prepare("SELECT version FROM schema_versions WHERE component = ?");
  q.addBindValue(component);
  if (!q.exec()) throw Error("SQLite: " + q.lastError().text().toStdString());
  return q.next() ? q.value(0).toInt() : 0;
}

void AppDatabase::migrate(const QString& component, const QStringList& steps) {
  QSqlDatabase d = db();
  const auto tooNew = [&](int have) {
    return Error("database " + path_.toStdString() + ": " + component.toStdString() + " schema version " +
                 std::to_string(have) + " is newer than this MoePack (" + std::to_string(steps.size()) +
                 "); upgrade MoePack");
  };
  if (const int have = version(component); have > steps.size()) throw tooNew(have);
  for (int i = 0; i < steps.size(); ++i) {
    // BEGIN IMMEDIATE takes the write lock before the version is read again, so two connections
    // migrating the same component at once (the library worker and the downloads list) run each
    // step once: the second waits (busy_timeout), then sees the new version and skips it.
    exec_sql(d, QStringLiteral("BEGIN IMMEDIATE"));
    try {
      const int have = version(component);
      if (have > steps.size()) throw tooNew(have);
      if (have > i) {
        exec_sql(d, QStringLiteral("COMMIT"));
        continue;
      }
      for (const QString& stmt : steps[i].split(';', Qt::SkipEmptyParts)) {
        if (stmt.trimmed().isEmpty()) continue;
        exec_sql(d, stmt);
      }
      QSqlQuery q(d);
      q.prepare("INSERT INTO schema_versions(component, version) VALUES(?, ?) "
                "ON CONFLICT(component) DO UPDATE SET version = excluded.version");
      q.addBindValue(component);
      q.addBindValue(i + 1);
      if (!q.exec()) throw Error("SQLite: " + q.lastError().text().toStdString());
      exec_sql(d, QStringLiteral("COMMIT"));
    } catch (const Error& e) {
      QSqlQuery(d).exec(QStringLiteral("ROLLBACK"));
      throw Error("database " + path_.toStdString() + ": " + component.toStdString() + " schema step " +
                  std::to_string(i + 1) + " failed: " + e.what());
    }
  }
}

QString AppDatabase::default_path() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/moepack.sqlite";
}

}  // namespace moepack::ui
