// View-model of the model page: opens a GGUF model (file, split set or Ollama name) or an
// Expert Pack (its directory or manifest.json: core's summarize_pack) on a worker thread with
// the same reader as `moepack inspect`, and exposes its summary.
// QML calls load(); everything else is read-only properties with NOTIFY.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QVariantList>
#include <QtQml/qqmlregistration.h>
#include <memory>

#include "ui/moe_layer_list_model.h"

namespace moepack::ui {

class ModelInspector : public QObject {
  Q_OBJECT
  QML_ELEMENT
  Q_PROPERTY(QString path READ path NOTIFY summaryChanged)
  Q_PROPERTY(bool isPack READ isPack NOTIFY summaryChanged)  // path is an Expert Pack (folder or manifest)
  Q_PROPERTY(bool loading READ loading NOTIFY loadingChanged)
  Q_PROPERTY(QString error READ error NOTIFY summaryChanged)
  Q_PROPERTY(QString architecture READ architecture NOTIFY summaryChanged)
  Q_PROPERTY(QString modelName READ modelName NOTIFY summaryChanged)
  Q_PROPERTY(double fileBytes READ fileBytes NOTIFY summaryChanged)
  Q_PROPERTY(int tensorCount READ tensorCount NOTIFY summaryChanged)
  Q_PROPERTY(int expertCount READ expertCount NOTIFY summaryChanged)
  Q_PROPERTY(int topK READ topK NOTIFY summaryChanged)
  Q_PROPERTY(int sharedExperts READ sharedExperts NOTIFY summaryChanged)
  Q_PROPERTY(double routedExpertBytes READ routedExpertBytes NOTIFY summaryChanged)
  Q_PROPERTY(QString tokenizer READ tokenizer NOTIFY summaryChanged)
  Q_PROPERTY(QVariantList hyperparameters READ hyperparameters NOTIFY summaryChanged)
  Q_PROPERTY(MoeLayerListModel* layers READ layers CONSTANT)

 public:
  explicit ModelInspector(QObject* parent = nullptr);
  ~ModelInspector() override;

  // Starts reading `path` on a worker thread; emits loadingChanged, then summaryChanged.
  Q_INVOKABLE void load(const QString& path);

  QString path() const { return path_; }
  bool isPack() const { return isPack_; }
  bool loading() const { return loading_; }
  QString error() const { return error_; }
  QString architecture() const;
  QString modelName() const;
  double fileBytes() const;
  int tensorCount() const;
  int expertCount() const;
  int topK() const;
  int sharedExperts() const;
  double routedExpertBytes() const;
  QString tokenizer() const;
  QVariantList hyperparameters() const;  // [{key, value}] sorted by key
  MoeLayerListModel* layers() { return &layers_; }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 signals:
  void loadingChanged();
  void summaryChanged();

 private:
  struct Result {
    std::shared_ptr<ModelSummary> summary;
    QString error;
  };
  void finished();

  QString path_;
  bool isPack_ = false;
  bool loading_ = false;
  QString error_;
  std::shared_ptr<ModelSummary> summary_;
  MoeLayerListModel layers_;
  QFutureWatcher<Result> watcher_;
};

}  // namespace moepack::ui
