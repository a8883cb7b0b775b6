// The studio's one SQLite database (Qt SQL, QSQLITE driver): conversations, the model library
// and downloads live in it. This class only opens the connection and runs the schema steps
// each store registers; every store (ConversationStore, ModelLibrary, ...) owns its tables.
//
// Schema versioning: table `schema_versions(component TEXT PRIMARY KEY, version INTEGER)`.
// A store calls migrate(component, steps): step i (0-based) runs, inside one transaction with
// the version update, when the recorded version is <= i. Steps are never edited once shipped;
// a change is a new step. WAL journal, foreign keys on, synchronous=FULL (a crash never loses
// a committed message).
//
// Threads: a QSqlDatabase connection belongs to the thread that opened it; open one
// AppDatabase per thread (each gets its own connection name) on the same file.
#pragma once

#include <QSqlDatabase>
#include <QString>
#include <QStringList>

namespace moepack::ui {

class AppDatabase {
 public:
  // Opens (creating if needed) the database file at `path`; ":memory:" for a private
  // in-memory database. Throws moepack::Error with the path and the driver's message.
  explicit AppDatabase(const QString& path);
  ~AppDatabase();
  AppDatabase(const AppDatabase&) = delete;
  AppDatabase& operator=(const AppDatabase&) = delete;

  QSqlDatabase db() const;  // the connection (valid while this object lives)
  const QString& path() const { return path_; }

  // Brings `component`'s tables to steps.size(); throws moepack::Error naming the component,
  // the step and the SQL error (the transaction is rolled back).
  void migrate(const QString& component, const QStringList& steps);
  int version(const QString& component) const;  // 0 if never migrated

  // The default location: QStandardPaths::AppDataLocation + "/moepack.sqlite".
  static QString default_path();

 private:
  QString path_;
  QString connection_;
};

// Runs `sql` (one statement) on `db`; throws moepack::Error with the statement and the error.
void exec_sql(QSqlDatabase& db, const QString& sql);

}  // namespace moepack::ui
