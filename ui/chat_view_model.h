// View-model of the chat screen: the conversation list, the open conversation's messages,
// its system prompt and sampling settings, and the commands QML calls (send, stop,
// regenerate, edit and re-run, copy, new / rename / delete, export). Owns the
// ConversationStore (SQLite, ui/conversation_store.h) on the UI thread; generation goes
// through an EngineController (ui/engine_worker.h), so nothing here blocks.
//
// Reply life cycle: send() stores the user message and appends a streaming assistant row;
// streamed text grows that row; when the engine finishes, the reply and its statistics are
// stored (also when stopped: stop_reason "cancelled"). A failed reply keeps its error in
// the row and is not stored. A reply goes on while the user reads or starts another
// conversation (one engine: nothing can be sent there until it ends, `replyElsewhere`); it is
// stored in the conversation it belongs to, and streams on into it when that one is reopened.
#pragma once

#include <QObject>
#include <QPointer>
#include <QQmlParserStatus>
#include <QUrl>
#include <QVariantMap>
#include <QtQml/qqmlregistration.h>
#include <memory>

#include "ui/conversation_list_model.h"
#include "ui/engine_worker.h"
#include "ui/message_list_model.h"
#include "ui/sampling_json.h"
#include "ui/settings_view_model.h"

namespace moepack::ui {

class AppDatabase;
class ConversationStore;

class ChatViewModel : public QObject, public QQmlParserStatus {
  Q_OBJECT
  QML_ELEMENT
  Q_INTERFACES(QQmlParserStatus)
  Q_PROPERTY(moepack::ui::EngineController* engine READ engine WRITE setEngine NOTIFY engineChanged)
  Q_PROPERTY(moepack::ui::SettingsViewModel* settings READ settings WRITE setSettings NOTIFY settingsChanged)
  Q_PROPERTY(QString databasePath READ databasePath WRITE setDatabasePath NOTIFY databasePathChanged)
  Q_PROPERTY(moepack::ui::ConversationListModel* conversations READ conversations CONSTANT)
  Q_PROPERTY(moepack::ui::MessageListModel* messages READ messages CONSTANT)
  Q_PROPERTY(qint64 currentConversationId READ currentConversationId NOTIFY currentChanged)
  Q_PROPERTY(QString title READ title NOTIFY currentChanged)
  Q_PROPERTY(QString systemPrompt READ systemPrompt NOTIFY currentChanged)
  Q_PROPERTY(QVariantMap sampling READ sampling NOTIFY samplingChanged)
  // A reply is being written into the open conversation (its Stop button).
  Q_PROPERTY(bool generating READ generating NOTIFY generatingChanged)
  // A reply is being written anywhere (the engine is busy), and into which conversation.
  Q_PROPERTY(bool replying READ replying NOTIFY generatingChanged)
  Q_PROPERTY(qint64 replyConversationId READ replyConversationId NOTIFY generatingChanged)
  Q_PROPERTY(QString replyConversationTitle READ replyConversationTitle NOTIFY generatingChanged)
  // A reply is being written into another conversation than the open one: sending, regenerating
  // and editing here wait for it (one engine); the chat says where it is.
  Q_PROPERTY(bool replyElsewhere READ replyElsewhere NOTIFY generatingChanged)
  Q_PROPERTY(bool canSend READ canSend NOTIFY canSendChanged)
  Q_PROPERTY(QString lastError READ lastError NOTIFY lastErrorChanged)
  // True when lastError is a failed reply's, shown in that reply's bubble (the page shows it once).
  Q_PROPERTY(bool lastErrorInReply READ lastErrorInReply NOTIFY lastErrorChanged)
  // The model the open conversation was last held with (its stored model_path), and whether a
  // different one is loaded now: its next reply would come from another model. The chat shows
  // both and offers to load the conversation's model; a reply from the loaded model makes it
  // the conversation's model.
  Q_PROPERTY(QString conversationModelPath READ conversationModelPath NOTIFY modelMatchChanged)
  Q_PROPERTY(bool otherModelLoaded READ otherModelLoaded NOTIFY modelMatchChanged)
  // Whether that model can still be loaded (its file or folder exists, or it is an Ollama name).
  Q_PROPERTY(bool conversationModelAvailable READ conversationModelAvailable NOTIFY modelMatchChanged)
  // No model is loaded (a failed load, none asked for) and the open conversation's own model,
  // another than the one that failed, can be loaded: the no-model banner offers it.
  Q_PROPERTY(bool offerConversationModel READ offerConversationModel NOTIFY modelMatchChanged)
  // The conversation to show when the database opens (the studio's --open-conversation, used
  // by the restart after a lost GPU); 0 or an unknown id: the most recent one.
  Q_PROPERTY(qint64 initialConversation READ initialConversation WRITE setInitialConversation)

 public:
  explicit ChatViewModel(QObject* parent = nullptr);
  ~ChatViewModel() override;

  void classBegin() override {}
  void componentComplete() override;
  // Opens the database (AppDatabase::default_path() when empty). Called by
  // componentComplete(); tests call it directly. Errors go to lastError.
  bool openDatabase(const QString& path = {});

  // Defaults for new conversations (from the settings page).
  void setDefaults(const GenerationSettings& sampling, const QString& systemPrompt);

  // Commands.
  Q_INVOKABLE void newConversation();
  Q_INVOKABLE void selectConversation(qint64 id);
  Q_INVOKABLE void deleteConversation(qint64 id);
  Q_INVOKABLE void renameConversation(qint64 id, const QString& title);
  Q_INVOKABLE void setSystemPrompt(const QString& prompt);
  // key: temperature, top_k, top_p, min_p, repeat_penalty, max_tokens, seed (sampling_json.h).
  Q_INVOKABLE void setSamplingValue(const QString& key, const QVariant& value);
  Q_INVOKABLE void resetSampling();
  Q_INVOKABLE bool send(const QString& text);
  Q_INVOKABLE void stop();
  Q_INVOKABLE bool regenerate();
  Q_INVOKABLE bool editMessage(int row, const QString& text);  // a user message; re-runs from it
  Q_INVOKABLE void copyMessage(int row);
  // format: "md" or "json". Returns "" or the error message.
  Q_INVOKABLE QString exportConversation(const QUrl& file, const QString& format);
  // The export dialog's suggestion: the conversation's title as a file name in the documents
  // folder (ui/save_location.h), with the format's suffix ("md" or "json").
  Q_INVOKABLE QUrl suggestedExportFile(const QString& format) const;

  EngineController* engine() const { return engine_; }
  void setEngine(EngineController* e);
  SettingsViewModel* settings() const { return settings_; }
  void setSettings(SettingsViewModel* s);  // defaults for new conversations come from it
  QString databasePath() const { return databasePath_; }
  qint64 initialConversation() const { return initialConversation_; }
  void setInitialConversation(qint64 id) { initialConversation_ = id; }
  void setDatabasePath(const QString& p);
  ConversationListModel* conversations() { return &conversations_; }
  MessageListModel* messages() { return &messages_; }
  qint64 currentConversationId() const { return current_; }
  QString title() const;
  QString systemPrompt() const { return systemPrompt_; }
  QVariantMap sampling() const;
  const GenerationSettings& generation() const { return generation_; }
  bool generating() const { return pending_.id != 0 && pending_.conversation == current_ && current_ != 0; }
  bool replying() const { return pending_.id != 0; }
  qint64 replyConversationId() const { return pending_.id != 0 ? pending_.conversation : 0; }
  QString replyConversationTitle() const;
  bool replyElsewhere() const { return replying() && !generating(); }
  bool canSend() const;
  QString lastError() const { return lastError_; }
  bool lastErrorInReply() const { return lastErrorInReply_; }
  QString conversationModelPath() const { return conversationModel_; }
  bool otherModelLoaded() const;
  bool conversationModelAvailable() const;
  bool offerConversationModel() const;
  ConversationStore* store() { return store_.get(); }

 signals:
  void engineChanged();
  void settingsChanged();
  void databasePathChanged();
  void currentChanged();
  void samplingChanged();
  void generatingChanged();
  void canSendChanged();
  void lastErrorChanged();
  void replyFinished();  // after a reply was stored (or failed)
  void modelMatchChanged();

 private:
  void onModelLoaded();
  bool heldWithLoadedModel() const;
  void adoptLoadedModel();  // the open conversation's model becomes the loaded one (stored)
  bool ensureConversation();
  bool startReply();
  void refreshList();
  void setError(const QString& e, bool inReply = false);
  void onText(quint64 id, const QString& text);
  void onFinished(const GenerationReply& reply);
  void onFailed(quint64 id, const QString& message);
  void clearPending();
  // Whether a reply that ended is stored: not one cancelled before its first word, nor one whose
  // conversation was deleted (0) while it ran.
  static bool keepsReply(qint64 conversation, const QString& text, const QString& stopReason);

  QPointer<EngineController> engine_;
  QPointer<SettingsViewModel> settings_;
  QString databasePath_;
  std::unique_ptr<AppDatabase> db_;
  std::unique_ptr<ConversationStore> store_;
  ConversationListModel conversations_;
  MessageListModel messages_;
  qint64 current_ = 0;
  qint64 initialConversation_ = 0;
  QString systemPrompt_;
  GenerationSettings generation_;
  GenerationSettings defaultGeneration_;
  QString defaultSystemPrompt_;
  QString lastError_;
  bool lastErrorInReply_ = false;
  struct Pending {
    quint64 id = 0;
    qint64 conversation = 0;
    QString text;  // streamed so far (the row is rebuilt from it when its conversation is reopened)
  } pending_;
  // The row the pending reply streams into: the open conversation's last row while it is the
  // pending one and streaming; -1 otherwise.
  int streamingRow() const;
  QList<QMetaObject::Connection> engineConnections_;
  QString lastModel_;  // the model loaded last (canonical path), for onModelLoaded
  QString conversationModel_;  // the open conversation's model_path
};

}  // namespace moepack::ui
