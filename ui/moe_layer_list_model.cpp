#include "ui/moe_layer_list_model.h"

namespace moepack::ui {

int MoeLayerListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(layers_.size());
}

QVariant MoeLayerListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const MoeLayerInfo& L = layers_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
    case BlockRole: return static_cast<int>(L.block);
    case ExpertsRole: return static_cast<int>(L.n_experts);
    case ExpertBytesRole: return static_cast<double>(L.expert_bytes);
    case RolesTextRole: {
      QStringList parts;
      for (const ExpertRole& r : L.roles) {
        parts << QStringLiteral("%1 %2 (%3 B)")
                     .arg(QString::fromStdString(r.role),
                          QString::fromUtf8(ggml_type_name(r.type).data(),
                                            static_cast<qsizetype>(ggml_type_name(r.type).size())))
                     .arg(r.bytes_per_expert);
      }
      return parts.join(QStringLiteral(", "));
    }
    default: return {};
  }
}

QHash<int, QByteArray> MoeLayerListModel::roleNames() const {
  return {{BlockRole, "block"}, {ExpertsRole, "experts"}, {ExpertBytesRole, "expertBytes"},
          {RolesTextRole, "rolesText"}};
}

void MoeLayerListModel::setLayers(std::vector<MoeLayerInfo> layers) {
  beginResetModel();
  layers_ = std::move(layers);
  endResetModel();
}

}  // namespace moepack::ui
