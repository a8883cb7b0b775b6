#include "ui/library_download_store.h"

#include <QDateTime>
#include <QSqlError>
#include <QSqlQuery>

#include "core/error.h"
#include "ui/app_database.h"
#include "ui/model_library.h"

namespace moepack::ui {

namespace {
[[noreturn]] void sqlFail(const QSqlQuery& q) {
  throw Error("SQLite (downloads): " + q.lastError().text().toStdString());
}
QString text(const QString& s) { return s.isNull() ? QStringLiteral("") : s; }

void bindFields(QSqlQuery& q, const DownloadRecord& r) {
  q.addBindValue(r.groupId);
  q.addBindValue(r.position);
  q.addBindValue(text(r.url));
  q.addBindValue(text(r.hubRepo));
  q.addBindValue(text(r.hubFile));
  q.addBindValue(text(r.destDir));
  q.addBindValue(text(r.fileName));
  q.addBindValue(r.expectedSize);
  q.addBindValue(text(r.sha256));
  q.addBindValue(text(r.sha256Source));
  q.addBindValue(r.bytesVerified);
  q.addBindValue(text(r.etag));
  q.addBindValue(text(r.state));
  q.addBindValue(text(r.error));
  q.addBindValue(r.convertWhenDone ? 1 : 0);
  q.addBindValue(r.extraBytes);
}
}  // namespace

DownloadStore::DownloadStore(AppDatabase& db) : db_(db) {
  db_.migrate(QStringLiteral("library"), library_schema_steps());
}

std::vector<DownloadRecord> DownloadStore::all() const {
  QSqlQuery q(db_.db());
  if (!q.exec(QStringLiteral(
          "SELECT id, group_id, position, url, hub_repo, hub_file, dest_dir, file_name, expected_size, sha256, "
          "sha256_source, bytes_verified, etag, state, error, convert_when_done, extra_bytes FROM downloads "
          "ORDER BY CASE WHEN group_id = 0 THEN id ELSE group_id END, position, id")))
    sqlFail(q);
  std::vector<DownloadRecord> out;
  while (q.next()) {
    DownloadRecord r;
    r.id = q.value(0).toLongLong();
    r.groupId = q.value(1).toLongLong();
    r.position = q.value(2).toInt();
    r.url = q.value(3).toString();
    r.hubRepo = q.value(4).toString();
    r.hubFile = q.value(5).toString();
    r.destDir = q.value(6).toString();
    r.fileName = q.value(7).toString();
    r.expectedSize = q.value(8).toLongLong();
    r.sha256 = q.value(9).toString();
    r.sha256Source = q.value(10).toString();
    r.bytesVerified = q.value(11).toLongLong();
    r.etag = q.value(12).toString();
    r.state = q.value(13).toString();
    r.error = q.value(14).toString();
    r.convertWhenDone = q.value(15).toBool();
    r.extraBytes = q.value(16).toLongLong();
    out.push_back(std::move(r));
  }
  return out;
}

qint64 DownloadStore::insert(const DownloadRecord& r) {
  QSqlQuery q(db_.db());
  q.prepare(QStringLiteral(
      "INSERT INTO downloads (group_id, position, url, hub_repo, hub_file, dest_dir, file_name, expected_size, "
      "sha256, sha256_source, bytes_verified, etag, state, error, convert_when_done, extra_bytes, added_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  bindFields(q, r);
  q.addBindValue(QDateTime::currentMSecsSinceEpoch());
  if (!q.exec()) sqlFail(q);
  return q.lastInsertId().toLongLong();
}

void DownloadStore::update(const DownloadRecord& r) {
  QSqlQuery q(db_.db());
  q.prepare(QStringLiteral(
      "UPDATE downloads SET group_id = ?, position = ?, url = ?, hub_repo = ?, hub_file = ?, dest_dir = ?, "
      "file_name = ?, expected_size = ?, sha256 = ?, sha256_source = ?, bytes_verified = ?, etag = ?, state = ?, "
      "error = ?, convert_when_done = ?, extra_bytes = ? WHERE id = ?"));
  bindFields(q, r);
  q.addBindValue(r.id);
  if (!q.exec()) sqlFail(q);
  if (q.numRowsAffected() != 1) throw Error("the download list has no row " + std::to_string(r.id));
}

void DownloadStore::remove(qint64 id) {
  QSqlQuery q(db_.db());
  q.prepare(QStringLiteral("DELETE FROM downloads WHERE id = ?"));
  q.addBindValue(id);
  if (!q.exec()) sqlFail(q);
}

void DownloadStore::removeGroup(qint64 groupId) {
  QSqlQuery q(db_.db());
  q.prepare(QStringLiteral("DELETE FROM downloads WHERE group_id = ? OR id = ?"));
  q.addBindValue(groupId);
  q.addBindValue(groupId);
  if (!q.exec()) sqlFail(q);
}

}  // namespace moepack::ui
