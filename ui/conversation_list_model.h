// The conversation list (sidebar): id, title, last update, most recent first. Read-only for
// QML; ChatViewModel refreshes it from the ConversationStore after every change.
#pragma once

#include <QAbstractListModel>
#include <QtQml/qqmlregistration.h>
#include <vector>

#include "ui/conversation_store.h"

namespace moepack::ui {

class ConversationListModel : public QAbstractListModel {
  Q_OBJECT
  QML_ELEMENT
  QML_UNCREATABLE("owned by ChatViewModel")
  Q_PROPERTY(int count READ count NOTIFY countChanged)

 public:
  enum Role { IdRole = Qt::UserRole + 1, TitleRole, UpdatedRole, ModelPathRole };
  explicit ConversationListModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QHash<int, QByteArray> roleNames() const override;
  int count() const { return static_cast<int>(rows_.size()); }

  // Replaces the rows, keeping row identity where ids match in order (a rename is a
  // dataChanged, not a reset, so the ListView keeps its position).
  void assign(std::vector<ConversationInfo> rows);
  int rowOf(qint64 id) const;  // -1 if absent
  const ConversationInfo& at(int row) const { return rows_[static_cast<size_t>(row)]; }

 signals:
  void countChanged();

 private:
  std::vector<ConversationInfo> rows_;
};

}  // namespace moepack::ui
