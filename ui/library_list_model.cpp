#include "ui/library_list_model.h"

namespace moepack::ui {

LibraryListModel::LibraryListModel(QObject* parent) : QAbstractListModel(parent) {}

int LibraryListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(entries_.size());
}

QVariant LibraryListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const LibraryEntry& e = entries_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
    case NameRole: return e.name;
    case IdRole: return e.id;
    case KindRole: return e.kind;
    case PathRole: return e.path;
    case ArchitectureRole: return e.architecture;
    case SizeBytesRole: return static_cast<double>(e.sizeBytes);
    case QuantTypesRole: return e.quantTypes.join(QStringLiteral(", "));
    case ExpertsRole: return e.experts;
    case TopKRole: return e.topK;
    case PackStatusRole: return e.packStatus;
    case PackPathRole: return e.packPath;
    case StatusDetailRole: return e.statusDetail;
    case SourcePresentRole: return e.sourcePresent;
    case AddedAtRole: return e.addedAt;
    case FileCountRole: return static_cast<int>(e.files.size());
    case CtxBytesPerTokenRole: return e.ctxBytesPerToken;
    case CtxFixedBytesRole: return static_cast<double>(e.ctxFixedBytes);
    case CtxTrainRole: return static_cast<double>(e.ctxTrain);
    case DenseBytesRole: return static_cast<double>(e.denseBytes);
    case CtxFormulaRole: return e.ctxFormula;
    default: return {};
  }
}

QHash<int, QByteArray> LibraryListModel::roleNames() const {
  return {{IdRole, "modelId"},           {KindRole, "kind"},
          {NameRole, "name"},            {PathRole, "path"},
          {ArchitectureRole, "architecture"}, {SizeBytesRole, "sizeBytes"},
          {QuantTypesRole, "quantTypes"}, {ExpertsRole, "experts"},
          {TopKRole, "topK"},            {PackStatusRole, "packStatus"},
          {PackPathRole, "packPath"},    {StatusDetailRole, "statusDetail"},
          {SourcePresentRole, "sourcePresent"}, {AddedAtRole, "addedAt"},
          {FileCountRole, "fileCount"},  {CtxBytesPerTokenRole, "ctxBytesPerToken"},
          {CtxFixedBytesRole, "ctxFixedBytes"}, {CtxTrainRole, "ctxTrain"},
          {DenseBytesRole, "denseBytes"}, {CtxFormulaRole, "ctxFormula"}};
}

void LibraryListModel::setEntries(std::vector<LibraryEntry> entries) {
  const bool countChange = entries.size() != entries_.size();
  beginResetModel();
  entries_ = std::move(entries);
  endResetModel();
  if (countChange) emit countChanged();
}

int LibraryListModel::rowOf(qint64 id) const {
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].id == id) return static_cast<int>(i);
  return -1;
}

}  // namespace moepack::ui
