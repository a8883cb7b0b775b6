#include "ui/conversation_store.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include "core/error.h"
#include "ui/app_database.h"

namespace moepack::ui {
namespace {

// A null QString binds as SQL NULL; the text columns are NOT NULL.
QString nn(const QString& s) { return s.isNull() ? QStringLiteral("") : s; }

qint64 now_ms() { return QDateTime::currentMSecsSinceEpoch(); }

void run(QSqlQuery& q) {
  if (!q.exec()) {
    throw Error("SQLite: " + q.lastError().text().toStdString() + " in: " + q.lastQuery().toStdString());
  }
}

QString sampling_text(const QJsonObject& o) { return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)); }

QJsonObject sampling_object(const QString& text) {
  const QJsonDocument d = QJsonDocument::fromJson(text.toUtf8());
  return d.isObject() ? d.object() : QJsonObject{};
}

void write_atomically(const QString& path, const QByteArray& bytes) {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) throw Error("cannot write " + path.toStdString() + ": " + f.errorString().toStdString());
  if (f.write(bytes) != bytes.size() || !f.commit()) {
    throw Error("cannot write " + path.toStdString() + ": " + f.errorString().toStdString());
  }
}

constexpr const char* kConversationColumns =
    "id, title, system_prompt, sampling_json, model_path, created_ms, updated_ms";

ConversationInfo read_conversation(const QSqlQuery& q) {
  ConversationInfo c;
  c.id = q.value(0).toLongLong();
  c.title = q.value(1).toString();
  c.systemPrompt = q.value(2).toString();
  c.sampling = sampling_object(q.value(3).toString());
  c.modelPath = q.value(4).toString();
  c.createdMs = q.value(5).toLongLong();
  c.updatedMs = q.value(6).toLongLong();
  return c;
}

}  // namespace

QStringList ConversationStore::schemaSteps() {
  return {
      // 1: conversations and messages.
      "CREATE TABLE conversations ("
      " id INTEGER PRIMARY KEY AUTOINCREMENT,"
      " title TEXT NOT NULL,"
      " system_prompt TEXT NOT NULL DEFAULT '',"
      " sampling_json TEXT NOT NULL DEFAULT '{}',"
      " model_path TEXT NOT NULL DEFAULT '',"
      " created_ms INTEGER NOT NULL,"
      " updated_ms INTEGER NOT NULL);"
      "CREATE TABLE messages ("
      " id INTEGER PRIMARY KEY AUTOINCREMENT,"
      " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
      " position INTEGER NOT NULL,"
      " role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),"
      " content TEXT NOT NULL,"
      " created_ms INTEGER NOT NULL,"
      " UNIQUE (conversation_id, position))",
      // 2: per-reply statistics.
      "ALTER TABLE messages ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;"
      "ALTER TABLE messages ADD COLUMN generated_tokens INTEGER NOT NULL DEFAULT 0;"
      "ALTER TABLE messages ADD COLUMN ttft_ms REAL NOT NULL DEFAULT 0;"
      "ALTER TABLE messages ADD COLUMN prefill_tps REAL NOT NULL DEFAULT 0;"
      "ALTER TABLE messages ADD COLUMN decode_tps REAL NOT NULL DEFAULT 0;"
      "ALTER TABLE messages ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';"
      "CREATE INDEX conversations_by_update ON conversations(updated_ms)",
  };
}

ConversationStore::ConversationStore(AppDatabase& db) : db_(db) {
  db_.migrate(QStringLiteral("conversations"), schemaSteps());
}

qint64 ConversationStore::createConversation(const QString& title, const QString& systemPrompt,
                                             const QJsonObject& sampling, const QString& modelPath) {
  QSqlQuery q(db_.db());
  q.prepare("INSERT INTO conversations(title, system_prompt, sampling_json, model_path, created_ms, updated_ms) "
            "VALUES(?, ?, ?, ?, ?, ?)");
  const qint64 t = now_ms();
  q.addBindValue(nn(title));
  q.addBindValue(nn(systemPrompt));
  q.addBindValue(sampling_text(sampling));
  q.addBindValue(nn(modelPath));
  q.addBindValue(t);
  q.addBindValue(t);
  run(q);
  return q.lastInsertId().toLongLong();
}

std::vector<ConversationInfo> ConversationStore::conversations() const {
  QSqlQuery q(db_.db());
  q.prepare(QStringLiteral("SELECT %1 FROM conversations ORDER BY updated_ms DESC, id DESC")
                .arg(QLatin1String(kConversationColumns)));
  run(q);
  std::vector<ConversationInfo> out;
  while (q.next()) out.push_back(read_conversation(q));
  return out;
}

std::optional<ConversationInfo> ConversationStore::conversation(qint64 id) const {
  QSqlQuery q(db_.db());
  q.prepare(QStringLiteral("SELECT %1 FROM conversations WHERE id = ?").arg(QLatin1String(kConversationColumns)));
  q.addBindValue(id);
  run(q);
  if (!q.next()) return std::nullopt;
  return read_conversation(q);
}

namespace {
void set_column(QSqlDatabase db, const char* column, qint64 id, const QVariant& value) {
  QSqlQuery q(db);
  q.prepare(QStringLiteral("UPDATE conversations SET %1 = ?, updated_ms = ? WHERE id = ?").arg(QLatin1String(column)));
  q.addBindValue(value);
  q.addBindValue(now_ms());
  q.addBindValue(id);
  run(q);
}
}  // namespace

void ConversationStore::renameConversation(qint64 id, const QString& title) { set_column(db_.db(), "title", id, nn(title)); }
void ConversationStore::setSystemPrompt(qint64 id, const QString& p) { set_column(db_.db(), "system_prompt", id, nn(p)); }
void ConversationStore::setSampling(qint64 id, const QJsonObject& s) {
  set_column(db_.db(), "sampling_json", id, sampling_text(s));
}
void ConversationStore::setModelPath(qint64 id, const QString& p) { set_column(db_.db(), "model_path", id, nn(p)); }

void ConversationStore::removeConversation(qint64 id) {
  QSqlQuery q(db_.db());
  q.prepare("DELETE FROM conversations WHERE id = ?");
  q.addBindValue(id);
  run(q);
}

void ConversationStore::touch(qint64 id) {
  QSqlQuery q(db_.db());
  q.prepare("UPDATE conversations SET updated_ms = ? WHERE id = ?");
  q.addBindValue(now_ms());
  q.addBindValue(id);
  run(q);
}

std::vector<StoredMessage> ConversationStore::messages(qint64 conversationId) const {
  QSqlQuery q(db_.db());
  q.prepare("SELECT id, conversation_id, position, role, content, created_ms, prompt_tokens, generated_tokens, "
            "ttft_ms, prefill_tps, decode_tps, stop_reason FROM messages WHERE conversation_id = ? "
            "ORDER BY position");
  q.addBindValue(conversationId);
  run(q);
  std::vector<StoredMessage> out;
  while (q.next()) {
    StoredMessage m;
    m.id = q.value(0).toLongLong();
    m.conversationId = q.value(1).toLongLong();
    m.position = q.value(2).toInt();
    m.role = q.value(3).toString();
    m.content = q.value(4).toString();
    m.createdMs = q.value(5).toLongLong();
    m.stats.promptTokens = q.value(6).toInt();
    m.stats.generatedTokens = q.value(7).toInt();
    m.stats.ttftMs = q.value(8).toDouble();
    m.stats.prefillTps = q.value(9).toDouble();
    m.stats.decodeTps = q.value(10).toDouble();
    m.stats.stopReason = q.value(11).toString();
    out.push_back(std::move(m));
  }
  return out;
}

qint64 ConversationStore::appendMessage(qint64 conversationId, const QString& role, const QString& content,
                                        const ReplyStats& s) {
  QSqlQuery q(db_.db());
  q.prepare("INSERT INTO messages(conversation_id, position, role, content, created_ms, prompt_tokens, "
            "generated_tokens, ttft_ms, prefill_tps, decode_tps, stop_reason) "
            "VALUES(?, (SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE conversation_id = ?), "
            "?, ?, ?, ?, ?, ?, ?, ?, ?)");
  q.addBindValue(conversationId);
  q.addBindValue(conversationId);
  q.addBindValue(nn(role));
  q.addBindValue(nn(content));
  q.addBindValue(now_ms());
  q.addBindValue(s.promptTokens);
  q.addBindValue(s.generatedTokens);
  q.addBindValue(s.ttftMs);
  q.addBindValue(s.prefillTps);
  q.addBindValue(s.decodeTps);
  q.addBindValue(nn(s.stopReason));
  run(q);
  const qint64 id = q.lastInsertId().toLongLong();
  touch(conversationId);
  return id;
}

void ConversationStore::updateMessage(qint64 messageId, const QString& content, const ReplyStats& s) {
  QSqlQuery q(db_.db());
  q.prepare("UPDATE messages SET content = ?, prompt_tokens = ?, generated_tokens = ?, ttft_ms = ?, "
            "prefill_tps = ?, decode_tps = ?, stop_reason = ? WHERE id = ?");
  q.addBindValue(nn(content));
  q.addBindValue(s.promptTokens);
  q.addBindValue(s.generatedTokens);
  q.addBindValue(s.ttftMs);
  q.addBindValue(s.prefillTps);
  q.addBindValue(s.decodeTps);
  q.addBindValue(nn(s.stopReason));
  q.addBindValue(messageId);
  run(q);
}

void ConversationStore::truncate(qint64 conversationId, int position) {
  QSqlQuery q(db_.db());
  q.prepare("DELETE FROM messages WHERE conversation_id = ? AND position >= ?");
  q.addBindValue(conversationId);
  q.addBindValue(position);
  run(q);
  touch(conversationId);
}

QString formatStatsPlain(const ReplyStats& s) {
  // Exports are in English whatever the studio's language: "1 token", "2 tokens".
  const auto count = [](int n, const char* noun) {
    return QStringLiteral("%1 %2%3").arg(n).arg(QLatin1String(noun), n == 1 ? QString() : QStringLiteral("s"));
  };
  QString line = QStringLiteral("%1 · %2 · TTFT %3 ms · prefill %4 tok/s")
                     .arg(count(s.promptTokens, "prompt token"), count(s.generatedTokens, "token"))
                     .arg(s.ttftMs, 0, 'f', 0)
                     .arg(s.prefillTps, 0, 'f', 1);
  // A decode rate needs two tokens (core/session.h: (generated - 1) / decode_ms).
  if (s.generatedTokens >= 2) line += QStringLiteral(" · decode %1 tok/s").arg(s.decodeTps, 0, 'f', 1);
  return line;
}

QString ConversationStore::toMarkdown(qint64 conversationId) const {
  const auto c = conversation(conversationId);
  if (!c) throw Error("no conversation " + std::to_string(conversationId));
  QString md = QStringLiteral("# %1\n\n").arg(c->title);
  if (!c->modelPath.isEmpty()) md += QStringLiteral("Model: `%1`\n\n").arg(c->modelPath);
  if (!c->systemPrompt.isEmpty()) {
    md += QStringLiteral("> **System:** ") + QString(c->systemPrompt).replace('\n', QStringLiteral("\n> ")) + "\n\n";
  }
  for (const auto& m : messages(conversationId)) {
    const QString who = m.role == QLatin1String("user")        ? QStringLiteral("User")
                        : m.role == QLatin1String("assistant") ? QStringLiteral("Assistant")
                                                               : QStringLiteral("System");
    md += QStringLiteral("### %1\n\n%2\n\n").arg(who, m.content);
    if (m.role == QLatin1String("assistant") && m.stats.generatedTokens > 0) {
      md += QStringLiteral("*%1*\n\n").arg(formatStatsPlain(m.stats));
    }
  }
  return md;
}

QJsonObject ConversationStore::toJson(qint64 conversationId) const {
  const auto c = conversation(conversationId);
  if (!c) throw Error("no conversation " + std::to_string(conversationId));
  QJsonArray msgs;
  for (const auto& m : messages(conversationId)) {
    QJsonObject o{{"role", m.role}, {"content", m.content}, {"created_ms", m.createdMs}};
    if (m.role == QLatin1String("assistant")) {
      o.insert("stats", QJsonObject{{"prompt_tokens", m.stats.promptTokens},
                                    {"generated_tokens", m.stats.generatedTokens},
                                    {"ttft_ms", m.stats.ttftMs},
                                    {"prefill_tokens_per_s", m.stats.prefillTps},
                                    {"decode_tokens_per_s", m.stats.decodeTps},
                                    {"stop_reason", m.stats.stopReason}});
    }
    msgs.append(o);
  }
  return QJsonObject{{"format", "moepack-conversation"}, {"version", 1},
                     {"title", c->title},                {"system_prompt", c->systemPrompt},
                     {"model_path", c->modelPath},       {"sampling", c->sampling},
                     {"created_ms", c->createdMs},       {"updated_ms", c->updatedMs},
                     {"messages", msgs}};
}

void ConversationStore::exportMarkdown(qint64 conversationId, const QString& path) const {
  write_atomically(path, toMarkdown(conversationId).toUtf8());
}

void ConversationStore::exportJson(qint64 conversationId, const QString& path) const {
  write_atomically(path, QJsonDocument(toJson(conversationId)).toJson(QJsonDocument::Indented));
}

}  // namespace moepack::ui
