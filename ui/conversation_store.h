// Chat history in the studio's SQLite database (ui/app_database.h): conversations (title,
// system prompt, per-conversation sampling settings as JSON, model path, timestamps) and their
// messages (role, content and, for replies, the generation statistics).
//
// Schema (component "conversations", steps in schemaSteps(); never edit a shipped step):
//   1  conversations(id, title, system_prompt, sampling_json, model_path, created_ms, updated_ms)
//      messages(id, conversation_id -> conversations ON DELETE CASCADE, position, role,
//               content, created_ms), UNIQUE(conversation_id, position)
//   2  messages += prompt_tokens, generated_tokens, ttft_ms, prefill_tps, decode_tps,
//      stop_reason (per-reply statistics); index on conversations(updated_ms)
// Times are milliseconds since the Unix epoch (UTC). Positions are 0-based and dense.
//
// Threads: use from the thread that opened the AppDatabase (the UI thread). Every method
// throws moepack::Error with the SQL error on failure.
#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <optional>
#include <vector>

namespace moepack::ui {

class AppDatabase;

// Statistics of one generated reply (zero for user messages).
struct ReplyStats {
  int promptTokens = 0;      // tokens in the prompt the reply was generated from
  int generatedTokens = 0;   // completion tokens
  double ttftMs = 0;         // time to first token, ms
  double prefillTps = 0;     // prompt tokens/s
  double decodeTps = 0;      // generated tokens/s after the first
  QString stopReason;        // eos, stop, length, context, cancelled ("" while streaming)
  bool operator==(const ReplyStats&) const = default;
};

struct StoredMessage {
  qint64 id = 0;
  qint64 conversationId = 0;
  int position = 0;
  QString role;  // system | user | assistant
  QString content;
  qint64 createdMs = 0;
  ReplyStats stats;
};

struct ConversationInfo {
  qint64 id = 0;
  QString title;
  QString systemPrompt;
  QJsonObject sampling;  // see ui/sampling_json.h
  QString modelPath;
  qint64 createdMs = 0;
  qint64 updatedMs = 0;
};

class ConversationStore {
 public:
  // Brings the schema up to date (throws on a newer or broken database).
  explicit ConversationStore(AppDatabase& db);

  static QStringList schemaSteps();

  qint64 createConversation(const QString& title, const QString& systemPrompt = {},
                            const QJsonObject& sampling = {}, const QString& modelPath = {});
  std::vector<ConversationInfo> conversations() const;  // most recently updated first
  std::optional<ConversationInfo> conversation(qint64 id) const;
  void renameConversation(qint64 id, const QString& title);
  void setSystemPrompt(qint64 id, const QString& systemPrompt);
  void setSampling(qint64 id, const QJsonObject& sampling);
  void setModelPath(qint64 id, const QString& modelPath);
  void removeConversation(qint64 id);  // and its messages

  std::vector<StoredMessage> messages(qint64 conversationId) const;  // by position
  // Appends at the end; returns the new message's id. Touches the conversation's updated_ms.
  qint64 appendMessage(qint64 conversationId, const QString& role, const QString& content,
                       const ReplyStats& stats = {});
  void updateMessage(qint64 messageId, const QString& content, const ReplyStats& stats);
  // Deletes the messages at `position` and after (edit / regenerate re-run from there).
  void truncate(qint64 conversationId, int position);

  // Exports. Markdown: "# title", the system prompt as a quote, one "### User/Assistant"
  // section per message, reply stats in italics. JSON: {"format": "moepack-conversation",
  // "version": 1, "title", "system_prompt", "model_path", "sampling", "created_ms",
  // "updated_ms", "messages": [{"role", "content", "created_ms", "stats"?}]}.
  QString toMarkdown(qint64 conversationId) const;
  QJsonObject toJson(qint64 conversationId) const;
  // Atomic writes (QSaveFile: temp file, flush, rename). Throw Error naming the path.
  void exportMarkdown(qint64 conversationId, const QString& path) const;
  void exportJson(qint64 conversationId, const QString& path) const;

 private:
  void touch(qint64 id);
  AppDatabase& db_;
};

// "12 prompt tokens · 42 tokens · TTFT 120 ms · prefill 350 tok/s · decode 28.5 tok/s"
// (untranslated; the UI builds its own translated line). The decode part only with at least two
// generated tokens (a rate needs them).
QString formatStatsPlain(const ReplyStats& s);

}  // namespace moepack::ui
