// List model of a GGUF model's layers with routed experts, one row per transformer block:
// block index, experts, bytes of one expert (all roles) and a per-role description.
#pragma once

#include <QAbstractListModel>
#include <QtQml/qqmlregistration.h>
#include <vector>

#include "core/model_summary.h"

namespace moepack::ui {

class MoeLayerListModel : public QAbstractListModel {
  Q_OBJECT
  QML_ELEMENT
  QML_UNCREATABLE("Provided by ModelInspector")

 public:
  enum Role { BlockRole = Qt::UserRole + 1, ExpertsRole, ExpertBytesRole, RolesTextRole };

  explicit MoeLayerListModel(QObject* parent = nullptr) : QAbstractListModel(parent) {}

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QHash<int, QByteArray> roleNames() const override;

  // Replaces all rows (model reset).
  void setLayers(std::vector<MoeLayerInfo> layers);
  const std::vector<MoeLayerInfo>& layers() const { return layers_; }

 private:
  std::vector<MoeLayerInfo> layers_;
};

}  // namespace moepack::ui
