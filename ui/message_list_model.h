// The messages of the open conversation, one row each, for the chat pane's ListView.
// Read-only for QML: ChatViewModel changes it through the C++ methods below. While a reply
// streams, its row has streaming = true and appendText() grows its content (dataChanged on
// that row's content role only).
#pragma once

#include <QAbstractListModel>
#include <QtQml/qqmlregistration.h>
#include <vector>

#include "ui/conversation_store.h"

namespace moepack::ui {

class MessageListModel : public QAbstractListModel {
  Q_OBJECT
  QML_ELEMENT
  QML_UNCREATABLE("owned by ChatViewModel")
  Q_PROPERTY(int count READ count NOTIFY countChanged)

 public:
  enum Role {
    RoleRole = Qt::UserRole + 1,  // "user" | "assistant" | "system"
    ContentRole,
    StreamingRole,
    ErrorRole,          // error text of a failed reply ("" otherwise)
    PromptTokensRole,
    GeneratedTokensRole,
    TtftMsRole,
    PrefillTpsRole,
    DecodeTpsRole,
    StopReasonRole,
  };
  Q_ENUM(Role)

  struct Row {
    StoredMessage message;
    bool streaming = false;
    QString error;
  };

  explicit MessageListModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QHash<int, QByteArray> roleNames() const override;
  int count() const { return static_cast<int>(rows_.size()); }

  void reset(std::vector<StoredMessage> messages);
  void append(const Row& row);
  void appendText(int row, const QString& text);
  void update(int row, const Row& value);
  void truncate(int row);  // removes `row` and everything after it
  const Row& at(int row) const { return rows_[static_cast<size_t>(row)]; }

 signals:
  void countChanged();

 private:
  std::vector<Row> rows_;
};

}  // namespace moepack::ui
