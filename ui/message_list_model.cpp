#include "ui/message_list_model.h"

namespace moepack::ui {

MessageListModel::MessageListModel(QObject* parent) : QAbstractListModel(parent) {}

int MessageListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

QVariant MessageListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  const ReplyStats& s = r.message.stats;
  switch (role) {
    case Qt::DisplayRole:
    case ContentRole: return r.message.content;
    case RoleRole: return r.message.role;
    case StreamingRole: return r.streaming;
    case ErrorRole: return r.error;
    case PromptTokensRole: return s.promptTokens;
    case GeneratedTokensRole: return s.generatedTokens;
    case TtftMsRole: return s.ttftMs;
    case PrefillTpsRole: return s.prefillTps;
    case DecodeTpsRole: return s.decodeTps;
    case StopReasonRole: return s.stopReason;
    default: return {};
  }
}

QHash<int, QByteArray> MessageListModel::roleNames() const {
  return {{RoleRole, "role"},
          {ContentRole, "content"},
          {StreamingRole, "streaming"},
          {ErrorRole, "error"},
          {PromptTokensRole, "promptTokens"},
          {GeneratedTokensRole, "generatedTokens"},
          {TtftMsRole, "ttftMs"},
          {PrefillTpsRole, "prefillTps"},
          {DecodeTpsRole, "decodeTps"},
          {StopReasonRole, "stopReason"}};
}

void MessageListModel::reset(std::vector<StoredMessage> messages) {
  beginResetModel();
  rows_.clear();
  for (auto& m : messages) rows_.push_back(Row{std::move(m), false, {}});
  endResetModel();
  emit countChanged();
}

void MessageListModel::append(const Row& row) {
  const int n = count();
  beginInsertRows({}, n, n);
  rows_.push_back(row);
  endInsertRows();
  emit countChanged();
}

void MessageListModel::appendText(int row, const QString& text) {
  if (row < 0 || row >= count()) return;
  rows_[static_cast<size_t>(row)].message.content += text;
  const QModelIndex i = index(row);
  emit dataChanged(i, i, {ContentRole, Qt::DisplayRole});
}

void MessageListModel::update(int row, const Row& value) {
  if (row < 0 || row >= count()) return;
  rows_[static_cast<size_t>(row)] = value;
  const QModelIndex i = index(row);
  emit dataChanged(i, i);
}

void MessageListModel::truncate(int row) {
  if (row < 0 || row >= count()) return;
  beginRemoveRows({}, row, count() - 1);
  rows_.erase(rows_.begin() + row, rows_.end());
  endRemoveRows();
  emit countChanged();
}

}  // namespace moepack::ui
