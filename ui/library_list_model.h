// List model of the library page: one row per LibraryEntry (ui/model_library.h), read-only.
// The view-model replaces the rows after every command; QML reads the roles below.
#pragma once

#include <QAbstractListModel>
#include <QtQml/qqmlregistration.h>
#include <vector>

#include "ui/model_library.h"

namespace moepack::ui {

class LibraryListModel : public QAbstractListModel {
  Q_OBJECT
  QML_ELEMENT
  QML_UNCREATABLE("owned by LibraryViewModel")
  Q_PROPERTY(int count READ rowCount NOTIFY countChanged)

 public:
  enum Role {
    IdRole = Qt::UserRole + 1,
    KindRole,          // "gguf", "split", "ollama", "pack"
    NameRole,
    PathRole,
    ArchitectureRole,
    SizeBytesRole,     // double (QML has no 64-bit integers), bytes
    QuantTypesRole,    // "q4_K, q6_K, f32"
    ExpertsRole,       // routed experts per MoE layer
    TopKRole,
    PackStatusRole,    // none, building, ready, failed-verify
    PackPathRole,
    StatusDetailRole,
    SourcePresentRole,
    AddedAtRole,       // QDateTime
    FileCountRole,
    CtxBytesPerTokenRole,  // double, bytes of attention state per token of context; 0 unknown
    CtxFixedBytesRole,     // double, bytes per sequence independent of its length
    CtxTrainRole,          // double, the model's training context length, tokens
    DenseBytesRole,        // double, non-expert tensor bytes
    CtxFormulaRole,        // one line: which layers contribute what
  };
  Q_ENUM(Role)

  explicit LibraryListModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QHash<int, QByteArray> roleNames() const override;

  void setEntries(std::vector<LibraryEntry> entries);
  const std::vector<LibraryEntry>& entries() const { return entries_; }
  // Row of the entry with this id, -1 if absent.
  int rowOf(qint64 id) const;

 signals:
  void countChanged();

 private:
  std::vector<LibraryEntry> entries_;
};

}  // namespace moepack::ui
