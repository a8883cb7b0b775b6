#include "ui/chat_view_model.h"

#include <QClipboard>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLoggingCategory>
#include <cmath>

#include "core/error.h"
#include "core/ollama_store.h"
#include "ui/app_database.h"
#include "ui/conversation_store.h"
#include "ui/engine_worker.h"
#include "ui/save_location.h"
#include "ui/settings_view_model.h"

Q_LOGGING_CATEGORY(lcUi, "moepack.ui")

namespace moepack::ui {
namespace {
constexpr int kTitleChars = 48;

QString title_from(const QString& text) {
  QString t = text.simplified();
  if (t.size() > kTitleChars) t = t.left(kTitleChars - 1) + QChar(0x2026);
  return t;
}
}  // namespace

ChatViewModel::ChatViewModel(QObject* parent) : QObject(parent) {}

ChatViewModel::~ChatViewModel() {
  if (pending_.id == 0) return;
  if (engine_) engine_->stop();
  // Closing the studio mid-reply (its engine's last words will not reach onFinished): what was
  // written so far is kept as Stop keeps it, a reply that stopped.
  ReplyStats stats;
  stats.stopReason = QStringLiteral("cancelled");
  if (store_ && keepsReply(pending_.conversation, pending_.text, stats.stopReason)) {
    try {
      store_->appendMessage(pending_.conversation, QStringLiteral("assistant"), pending_.text, stats);
    } catch (const std::exception& e) {
      qCWarning(lcUi) << "the reply being written could not be kept:" << e.what();
    }
  }
}

void ChatViewModel::componentComplete() {
  if (!store_) openDatabase(databasePath_);
}

bool ChatViewModel::openDatabase(const QString& path) {
  try {
    store_.reset();
    db_ = std::make_unique<AppDatabase>(path.isEmpty() ? AppDatabase::default_path() : path);
    store_ = std::make_unique<ConversationStore>(*db_);
  } catch (const std::exception& e) {
    qCWarning(lcUi) << "cannot open the conversation database:" << e.what();
    setError(tr("Cannot open the conversation database: %1").arg(QString::fromUtf8(e.what())));
    return false;
  }
  refreshList();
  if (conversations_.count() > 0) {
    bool initialExists = false;
    for (int i = 0; i < conversations_.count(); ++i) initialExists |= conversations_.at(i).id == initialConversation_;
    selectConversation(initialExists ? initialConversation_ : conversations_.at(0).id);
  }
  return true;
}

void ChatViewModel::setDefaults(const GenerationSettings& sampling, const QString& systemPrompt) {
  defaultGeneration_ = sampling;
  defaultSystemPrompt_ = systemPrompt;
  if (current_ == 0) {
    generation_ = sampling;
    systemPrompt_ = systemPrompt;
    emit samplingChanged();
    emit currentChanged();
  }
}

void ChatViewModel::setEngine(EngineController* e) {
  if (engine_ == e) return;
  for (const auto& c : engineConnections_) disconnect(c);
  engineConnections_.clear();
  engine_ = e;
  if (e) {
    engineConnections_ << connect(e, &EngineController::textReady, this, &ChatViewModel::onText)
                       << connect(e, &EngineController::generationFinished, this, &ChatViewModel::onFinished)
                       << connect(e, &EngineController::generationFailed, this, &ChatViewModel::onFailed)
                       << connect(e, &EngineController::stateChanged, this, &ChatViewModel::canSendChanged)
                       << connect(e, &EngineController::stateChanged, this, &ChatViewModel::modelMatchChanged)
                       << connect(e, &EngineController::modelLoaded, this, &ChatViewModel::onModelLoaded);
    if (e->state() == EngineController::Ready) onModelLoaded();  // the model already loaded
  }
  emit engineChanged();
  emit canSendChanged();
}

namespace {
// A model path as onModelLoaded compares it: canonical where the file exists.
QString canonicalModel(const QString& path) {
  const QString c = QFileInfo(path).canonicalFilePath();
  return c.isEmpty() ? path : c;
}
}  // namespace

bool ChatViewModel::heldWithLoadedModel() const {
  // The loaded model as opened (a pack after a conversion) or as asked for (its GGUF, an Ollama
  // name): a conversation stored with either is this model's.
  if (!engine_) return false;
  const QString held = canonicalModel(conversationModel_);
  return held == canonicalModel(engine_->modelPath()) || held == canonicalModel(engine_->requestedPath());
}

bool ChatViewModel::otherModelLoaded() const {
  return current_ != 0 && !conversationModel_.isEmpty() && engine_ &&
         engine_->state() == EngineController::Ready && !heldWithLoadedModel();
}

bool ChatViewModel::conversationModelAvailable() const {
  if (conversationModel_.isEmpty()) return false;
  if (QFileInfo::exists(conversationModel_)) return true;
  return ollama_looks_like_name(conversationModel_.toStdString());  // resolved when loaded
}

bool ChatViewModel::offerConversationModel() const {
  if (current_ == 0 || !engine_ || engine_->held()) return false;
  const auto s = engine_->state();
  if (s != EngineController::Failed && s != EngineController::Empty) return false;
  // After a failure, not the model that failed (Reload retries that one).
  return conversationModelAvailable() && (s == EngineController::Empty || !heldWithLoadedModel());
}

void ChatViewModel::onModelLoaded() {
  // A conversation stays with the model it was held with: when the loaded model changes from one
  // model to another, the open chat is left for a new one. The first load (a start, a restart
  // reopening its conversation) and a reload of the same model (settings applied, Reload) keep
  // it; paths are compared canonically (a relative path, a trailing slash).
  if (!engine_) return;
  // Loading the open conversation's own model (the chat's "Load" offer) keeps it.
  const QString now = canonicalModel(engine_->modelPath());
  const bool changed = !lastModel_.isEmpty() && now != lastModel_;
  lastModel_ = now;
  if (changed && current_ != 0 && !heldWithLoadedModel()) {
    newConversation();
  } else if (current_ != 0 && heldWithLoadedModel() && conversationModel_ != engine_->modelPath()) {
    adoptLoadedModel();  // held with the GGUF this pack was converted from: the pack from now on
  }
  emit modelMatchChanged();
}

void ChatViewModel::adoptLoadedModel() {
  try {
    conversationModel_ = engine_->modelPath();
    store_->setModelPath(current_, conversationModel_);
  } catch (const std::exception& e) {
    qCWarning(lcUi) << "cannot record the conversation's model:" << e.what();
  }
}

void ChatViewModel::setSettings(SettingsViewModel* s) {
  if (settings_ == s) return;
  if (settings_) disconnect(settings_, nullptr, this, nullptr);
  settings_ = s;
  if (s) {
    auto pull = [this] {
      if (settings_) setDefaults(settings_->generationDefaults(), settings_->systemPromptDefault());
    };
    connect(s, &SettingsViewModel::applied, this, pull);
    pull();
  }
  emit settingsChanged();
}

void ChatViewModel::setDatabasePath(const QString& p) {
  if (databasePath_ == p) return;
  databasePath_ = p;
  emit databasePathChanged();
}

QString ChatViewModel::title() const {
  const int row = conversations_.rowOf(current_);
  return row >= 0 ? conversations_.at(row).title : QString();
}

QString ChatViewModel::replyConversationTitle() const {
  const int row = conversations_.rowOf(replyConversationId());
  return row >= 0 ? conversations_.at(row).title : QString();
}

QVariantMap ChatViewModel::sampling() const { return generation_to_json(generation_).toVariantMap(); }

bool ChatViewModel::canSend() const {
  return store_ && engine_ && engine_->state() == EngineController::Ready && pending_.id == 0;
}

void ChatViewModel::setError(const QString& e, bool inReply) {
  if (lastError_ == e && lastErrorInReply_ == inReply) return;
  lastError_ = e;
  lastErrorInReply_ = inReply && !e.isEmpty();
  emit lastErrorChanged();
}

void ChatViewModel::refreshList() {
  if (!store_) return;
  try {
    conversations_.assign(store_->conversations());
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
  }
  if (pending_.id != 0) emit generatingChanged();  // replyConversationTitle (a rename)
}

void ChatViewModel::newConversation() {
  // A reply still being written goes on into its own conversation (stored there when it ends).
  current_ = 0;
  conversationModel_.clear();
  systemPrompt_ = defaultSystemPrompt_;
  generation_ = defaultGeneration_;
  messages_.reset({});
  setError({});  // a failed reply's error belonged to the conversation left (its bubble is gone)
  emit currentChanged();
  emit samplingChanged();
  emit modelMatchChanged();
  emit generatingChanged();  // the reply, if any, is elsewhere now
}

void ChatViewModel::selectConversation(qint64 id) {
  if (!store_ || id == current_) return;
  // A reply being written goes on (LM Studio's way): it streams into its own conversation,
  // stored there when it ends, and shows again when that conversation is reopened.
  try {
    const auto c = store_->conversation(id);
    if (!c) return;
    current_ = id;
    conversationModel_ = c->modelPath;
    systemPrompt_ = c->systemPrompt;
    generation_ = generation_from_json(c->sampling, defaultGeneration_);
    messages_.reset(store_->messages(id));
    if (pending_.id != 0 && pending_.conversation == id) {
      // Back to the conversation whose reply is still being written: its row is not stored
      // yet, so it streams on into one rebuilt from what came so far.
      MessageListModel::Row row;
      row.message.conversationId = id;
      row.message.position = messages_.count();
      row.message.role = QStringLiteral("assistant");
      row.message.content = pending_.text;
      row.streaming = true;
      messages_.append(row);
    }
    setError({});  // failed replies are not stored: their error went with the conversation left
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
  }
  emit currentChanged();
  emit samplingChanged();
  emit modelMatchChanged();
  emit generatingChanged();
}

void ChatViewModel::deleteConversation(qint64 id) {
  if (!store_) return;
  if (pending_.id != 0 && pending_.conversation == id) {
    stop();
    pending_.conversation = 0;  // its reply, still ending, has nowhere to go: dropped (onFinished)
  }
  try {
    store_->removeConversation(id);
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
  }
  refreshList();
  if (id == current_) {
    current_ = 0;
    if (conversations_.count() > 0) {
      selectConversation(conversations_.at(0).id);
    } else {
      newConversation();
    }
  }
}

void ChatViewModel::renameConversation(qint64 id, const QString& title) {
  const QString t = title.simplified();
  if (!store_ || t.isEmpty()) return;
  try {
    store_->renameConversation(id, t);
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
  }
  refreshList();
  if (id == current_) emit currentChanged();
}

void ChatViewModel::setSystemPrompt(const QString& prompt) {
  if (prompt == systemPrompt_) return;
  systemPrompt_ = prompt;
  if (store_ && current_ != 0) {
    try {
      store_->setSystemPrompt(current_, prompt);
    } catch (const std::exception& e) {
      setError(QString::fromUtf8(e.what()));
    }
  }
  emit currentChanged();
}

void ChatViewModel::setSamplingValue(const QString& key, const QVariant& value) {
  bool ok = false;
  const double v = value.toDouble(&ok);
  if (!ok || !std::isfinite(v)) {
    emit samplingChanged();  // the field shows the value in force again
    return;
  }
  QJsonObject o = generation_to_json(generation_);
  o.insert(key, v);
  generation_ = generation_from_json(o, generation_);
  if (store_ && current_ != 0) {
    try {
      store_->setSampling(current_, generation_to_json(generation_));
    } catch (const std::exception& e) {
      setError(QString::fromUtf8(e.what()));
    }
  }
  emit samplingChanged();
}

void ChatViewModel::resetSampling() {
  generation_ = defaultGeneration_;
  if (store_ && current_ != 0) {
    try {
      store_->setSampling(current_, generation_to_json(generation_));
    } catch (const std::exception& e) {
      setError(QString::fromUtf8(e.what()));
    }
  }
  emit samplingChanged();
}

bool ChatViewModel::ensureConversation() {
  if (current_ != 0) return true;
  try {
    conversationModel_ = engine_ ? engine_->modelPath() : QString();
    current_ = store_->createConversation(tr("New chat"), systemPrompt_, generation_to_json(generation_),
                                          conversationModel_);
    emit modelMatchChanged();
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
    return false;
  }
  refreshList();
  emit currentChanged();
  emit generatingChanged();
  return true;
}

bool ChatViewModel::send(const QString& text) {
  const QString t = text.trimmed();
  if (t.isEmpty() || !canSend()) return false;  // replyElsewhere: the chat says why
  if (!ensureConversation()) return false;
  while (messages_.count() > 0 && !messages_.at(messages_.count() - 1).error.isEmpty()) {
    messages_.truncate(messages_.count() - 1);  // a failed reply is replaced by the next one
  }
  try {
    const bool first = messages_.count() == 0;
    MessageListModel::Row row;
    row.message.id = store_->appendMessage(current_, QStringLiteral("user"), t);
    row.message.conversationId = current_;
    row.message.position = messages_.count();
    row.message.role = QStringLiteral("user");
    row.message.content = t;
    messages_.append(row);
    if (first) store_->renameConversation(current_, title_from(t));
    refreshList();
    emit currentChanged();
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
    return false;
  }
  return startReply();
}

bool ChatViewModel::startReply() {
  std::vector<ChatMessage> msgs;
  if (!systemPrompt_.trimmed().isEmpty()) msgs.push_back({"system", systemPrompt_.toStdString()});
  for (int i = 0; i < messages_.count(); ++i) {
    const auto& r = messages_.at(i);
    if (!r.error.isEmpty()) continue;
    msgs.push_back({r.message.role.toStdString(), r.message.content.toStdString()});
  }
  const quint64 id = engine_->generate(std::move(msgs), generation_);
  if (id == 0) {
    setError(tr("The model is not ready."));
    return false;
  }
  setError({});
  pending_ = {id, current_, {}};
  if (otherModelLoaded()) {  // the conversation goes on with the loaded model: it is its model now
    adoptLoadedModel();
    emit modelMatchChanged();
  }
  MessageListModel::Row row;
  row.message.conversationId = current_;
  row.message.position = messages_.count();
  row.message.role = QStringLiteral("assistant");
  row.streaming = true;
  messages_.append(row);
  emit generatingChanged();
  emit canSendChanged();
  return true;
}

void ChatViewModel::stop() {
  if (engine_ && pending_.id != 0) engine_->stop();
}

bool ChatViewModel::regenerate() {
  if (!canSend() || current_ == 0 || messages_.count() == 0) return false;
  const int last = messages_.count() - 1;
  try {
    if (messages_.at(last).message.role == QLatin1String("assistant")) {
      store_->truncate(current_, messages_.at(last).message.position);
      messages_.truncate(last);
    }
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
    return false;
  }
  if (messages_.count() == 0 || messages_.at(messages_.count() - 1).message.role != QLatin1String("user")) return false;
  return startReply();
}

bool ChatViewModel::editMessage(int row, const QString& text) {
  const QString t = text.trimmed();
  if (!canSend() || row < 0 || row >= messages_.count() || t.isEmpty()) return false;
  if (messages_.at(row).message.role != QLatin1String("user")) return false;
  try {
    store_->truncate(current_, messages_.at(row).message.position);
    messages_.truncate(row);
    MessageListModel::Row r;
    r.message.id = store_->appendMessage(current_, QStringLiteral("user"), t);
    r.message.conversationId = current_;
    r.message.position = messages_.count();
    r.message.role = QStringLiteral("user");
    r.message.content = t;
    messages_.append(r);
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
    return false;
  }
  return startReply();
}

void ChatViewModel::copyMessage(int row) {
  if (row < 0 || row >= messages_.count()) return;
  if (auto* cb = QGuiApplication::clipboard()) cb->setText(messages_.at(row).message.content);
}

QUrl ChatViewModel::suggestedExportFile(const QString& format) const {
  const QString t = title();
  return suggested_save_file(t.isEmpty() ? QStringLiteral("conversation") : t,
                             format == QLatin1String("json") ? QStringLiteral("json") : QStringLiteral("md"));
}

QString ChatViewModel::exportConversation(const QUrl& file, const QString& format) {
  if (!store_ || current_ == 0) return tr("There is no conversation to export.");
  const QString path = file.isLocalFile() ? file.toLocalFile() : file.toString();
  try {
    if (format == QLatin1String("json")) {
      store_->exportJson(current_, path);
    } else {
      store_->exportMarkdown(current_, path);
    }
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

int ChatViewModel::streamingRow() const {
  if (pending_.id == 0 || pending_.conversation == 0 || pending_.conversation != current_) return -1;
  const int row = messages_.count() - 1;
  return row >= 0 && messages_.at(row).streaming ? row : -1;
}

void ChatViewModel::onText(quint64 id, const QString& text) {
  if (id != pending_.id) return;
  pending_.text += text;
  if (const int row = streamingRow(); row >= 0) messages_.appendText(row, text);
}

void ChatViewModel::clearPending() {
  pending_ = {};
  emit generatingChanged();
  emit canSendChanged();
}

bool ChatViewModel::keepsReply(qint64 conversation, const QString& text, const QString& stopReason) {
  return conversation != 0 && !(text.isEmpty() && stopReason == QLatin1String("cancelled"));
}

void ChatViewModel::onFinished(const GenerationReply& reply) {
  if (reply.id != pending_.id) return;
  const qint64 conv = pending_.conversation;
  const int row = streamingRow();
  const bool visible = row >= 0;
  try {
    if (keepsReply(conv, reply.text, reply.stats.stopReason)) {
      const qint64 mid = store_->appendMessage(conv, QStringLiteral("assistant"), reply.text, reply.stats);
      if (visible) {
        MessageListModel::Row r = messages_.at(row);
        r.message.id = mid;
        r.message.content = reply.text;
        r.message.stats = reply.stats;
        r.streaming = false;
        messages_.update(row, r);
      }
    } else if (visible) {
      messages_.truncate(row);
    }
  } catch (const std::exception& e) {
    setError(QString::fromUtf8(e.what()));
  }
  clearPending();
  refreshList();
  emit replyFinished();
}

void ChatViewModel::onFailed(quint64 id, const QString& message) {
  if (id != pending_.id) return;
  const int row = streamingRow();
  const bool inReply = row >= 0;
  if (inReply) {
    MessageListModel::Row r = messages_.at(row);
    r.streaming = false;
    r.error = message;
    messages_.update(row, r);
  }
  // Not for a deleted conversation's reply; one that failed in a conversation not open says where.
  if (pending_.conversation != 0) {
    if (inReply || pending_.conversation == current_) {
      setError(message, inReply);
    } else {
      setError(tr("The reply in “%1” failed: %2").arg(replyConversationTitle(), message));
    }
  }
  clearPending();
  emit replyFinished();
}

}  // namespace moepack::ui
