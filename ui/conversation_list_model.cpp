#include "ui/conversation_list_model.h"

#include <QDateTime>

namespace moepack::ui {

ConversationListModel::ConversationListModel(QObject* parent) : QAbstractListModel(parent) {}

int ConversationListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

QVariant ConversationListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const ConversationInfo& c = rows_[static_cast<size_t>(index.row())];
  switch (role) {
    case IdRole: return c.id;
    case Qt::DisplayRole:
    case TitleRole: return c.title;
    case UpdatedRole: return QDateTime::fromMSecsSinceEpoch(c.updatedMs);
    case ModelPathRole: return c.modelPath;
    default: return {};
  }
}

QHash<int, QByteArray> ConversationListModel::roleNames() const {
  return {{IdRole, "conversationId"}, {TitleRole, "title"}, {UpdatedRole, "updated"}, {ModelPathRole, "modelPath"}};
}

void ConversationListModel::assign(std::vector<ConversationInfo> rows) {
  bool sameIds = rows.size() == rows_.size();
  for (size_t i = 0; sameIds && i < rows.size(); ++i) sameIds = rows[i].id == rows_[i].id;
  if (sameIds) {
    rows_ = std::move(rows);
    if (!rows_.empty()) emit dataChanged(index(0), index(count() - 1));
    return;
  }
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
  emit countChanged();
}

int ConversationListModel::rowOf(qint64 id) const {
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace moepack::ui
