#include "ui/model_inspector.h"

#include <QCoreApplication>
#include <QEvent>
#include <QLoggingCategory>
#include <QVariantMap>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>

#include "core/expert_pack.h"
#include "core/gguf_model.h"

Q_LOGGING_CATEGORY(lcModel, "moepack.model")

namespace moepack::ui {

ModelInspector::ModelInspector(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<Result>::finished, this, &ModelInspector::finished);
  // Texts made here with tr() (the tokenizer line) follow a language change as QML's do.
  if (QCoreApplication::instance() != nullptr) QCoreApplication::instance()->installEventFilter(this);
}

bool ModelInspector::eventFilter(QObject* watched, QEvent* event) {
  if (watched == QCoreApplication::instance() && event->type() == QEvent::LanguageChange)
    emit summaryChanged();
  return QObject::eventFilter(watched, event);
}

ModelInspector::~ModelInspector() { watcher_.waitForFinished(); }

void ModelInspector::load(const QString& path) {
  // A read still running is left to finish on its own (it touches nothing of this object); the
  // watcher reports only the newest one, so the UI thread never waits for a stale one.
  path_ = path;
  loading_ = true;
  emit loadingChanged();
  // An Expert Pack: its directory or its manifest.json.
  const std::string p = path.toStdString();
  const bool pack = is_pack_path(p);
  isPack_ = pack;
  watcher_.setFuture(QtConcurrent::run([p, pack]() -> Result {
    Result r;
    try {
      if (pack) {
        r.summary = std::make_shared<ModelSummary>(summarize_pack(p));
        return r;
      }
      const GgufModel model = GgufModel::open(p);
      r.summary = std::make_shared<ModelSummary>(summarize(model));
    } catch (const std::exception& e) {
      r.error = QString::fromUtf8(e.what());
    }
    return r;
  }));
}

void ModelInspector::finished() {
  Result r = watcher_.result();
  summary_ = r.summary;
  error_ = r.error;
  if (!error_.isEmpty()) qCWarning(lcModel) << "cannot open model:" << error_;
  layers_.setLayers(summary_ ? summary_->moe_layers : std::vector<MoeLayerInfo>{});
  loading_ = false;
  emit summaryChanged();
  emit loadingChanged();
}

QString ModelInspector::architecture() const {
  return summary_ ? QString::fromStdString(summary_->architecture) : QString();
}
QString ModelInspector::modelName() const {
  return summary_ ? QString::fromStdString(summary_->name) : QString();
}
double ModelInspector::fileBytes() const { return summary_ ? static_cast<double>(summary_->file_bytes) : 0.0; }
int ModelInspector::tensorCount() const { return summary_ ? static_cast<int>(summary_->tensor_count) : 0; }
int ModelInspector::expertCount() const {
  return summary_ && summary_->expert_count ? static_cast<int>(*summary_->expert_count) : 0;
}
int ModelInspector::topK() const {
  return summary_ && summary_->expert_used_count ? static_cast<int>(*summary_->expert_used_count) : 0;
}
int ModelInspector::sharedExperts() const {
  return summary_ && summary_->expert_shared_count ? static_cast<int>(*summary_->expert_shared_count) : 0;
}
double ModelInspector::routedExpertBytes() const {
  return summary_ ? static_cast<double>(summary_->routed_expert_bytes) : 0.0;
}
QString ModelInspector::tokenizer() const {
  if (!summary_) return {};
  return tr("%1 (%2), %n tokens", nullptr, static_cast<int>(summary_->vocab_size))
      .arg(QString::fromStdString(summary_->tokenizer_model), QString::fromStdString(summary_->tokenizer_pre));
}
QVariantList ModelInspector::hyperparameters() const {
  QVariantList out;
  if (!summary_) return out;
  for (const auto& [k, v] : summary_->hparams_text) {
    out.push_back(QVariantMap{{QStringLiteral("key"), QString::fromStdString(k)},
                              {QStringLiteral("value"), QString::fromStdString(v)}});
  }
  return out;
}

}  // namespace moepack::ui
