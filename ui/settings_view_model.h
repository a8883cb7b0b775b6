// View-model of the settings page: engine (backend, threads, n_ctx), expert cache
// (cache_vram_mib, cache_vram_reserve_mib, stage_slots, read_splits, direct_io,
// prefetch_experts, verify_pack_sha256), sampling defaults for new conversations, paths and language. Names
// are the engine's settings vocabulary (core/engine_settings.h, ARCHITECTURE.md).
//
// QML edits a draft with setValue(key, value), which validates and returns "" or the reason;
// apply() stores the draft in QSettings (group "settings") and emits applied(); revert()
// drops the draft; resetToDefaults() sets the draft to the defaults below. The slot count the
// cache settings give is shown before applying (preview*), with the formula of ARCHITECTURE.md:
//   usable = min(cache_vram_mib, free - cache_vram_reserve_mib),
//   slot_count = min(floor(usable / expert_payload_bytes), the model's routed experts)
// where free is what the CPU engine's cache sizes itself from, available_ram_bytes() (core/
// victim_tier.h: MemAvailable within a container's memory limit), and expert_payload_bytes the
// loaded model's slot size (unknown before a model is loaded).
//
// Language: "system" (the locale), "en" or "zh_CN"; applied at start and on apply() by
// installing a QTranslator for :/i18n/moepack_<lang>.qm and retranslating the QML engine.
#pragma once

#include <QObject>
#include <QPointer>
#include <QQmlParserStatus>
#include <QTranslator>
#include <QVariantMap>
#include <QtQml/qqmlregistration.h>

#include "core/engine_settings.h"
#include "ui/sampling_json.h"
#include "ui/engine_worker.h"

namespace moepack::ui {

class SettingsViewModel : public QObject, public QQmlParserStatus {
  Q_OBJECT
  QML_ELEMENT
  Q_INTERFACES(QQmlParserStatus)
  Q_PROPERTY(moepack::ui::EngineController* engine READ engine WRITE setEngine NOTIFY engineChanged)
  Q_PROPERTY(QVariantMap values READ values NOTIFY valuesChanged)    // the draft
  Q_PROPERTY(QVariantMap appliedValues READ appliedValues NOTIFY valuesChanged)  // stored by apply()
  Q_PROPERTY(QVariantMap errors READ errors NOTIFY valuesChanged)    // key -> message
  Q_PROPERTY(bool dirty READ dirty NOTIFY valuesChanged)
  Q_PROPERTY(bool valid READ valid NOTIFY valuesChanged)
  Q_PROPERTY(int previewSlotCount READ previewSlotCount NOTIFY valuesChanged)  // -1 unknown
  Q_PROPERTY(double previewUsableMib READ previewUsableMib NOTIFY valuesChanged)
  Q_PROPERTY(double freeMemoryMib READ freeMemoryMib NOTIFY valuesChanged)
  // What cache_ram_mib "auto" would take now (core/victim_tier.h, auto_ram_tier_usable_bytes of
  // available_ram_bytes: a container's limit included), MiB; 0 unknown.
  Q_PROPERTY(double ramTierAutoMib READ ramTierAutoMib NOTIFY valuesChanged)
  Q_PROPERTY(double expertMib READ expertMib NOTIFY valuesChanged)  // 0 unknown
  Q_PROPERTY(QString previewProblem READ previewProblem NOTIFY valuesChanged)
  // Changed cache values the loaded model would refuse (previewProblem) are not applied; other
  // changes apply whatever the preview says.
  Q_PROPERTY(bool applyBlocked READ applyBlocked NOTIFY valuesChanged)
  Q_PROPERTY(bool canApply READ canApply NOTIFY valuesChanged)  // dirty, valid, not applyBlocked
  // apply() now would reload the loaded model (an engine setting of the draft differs from the
  // applied one), which stops a reply being written: the studio asks first.
  Q_PROPERTY(bool applyReloads READ applyReloads NOTIFY valuesChanged)
  Q_PROPERTY(int defaultThreads READ defaultThreads CONSTANT)

 public:
  explicit SettingsViewModel(QObject* parent = nullptr);

  void classBegin() override {}
  void componentComplete() override;

  Q_INVOKABLE QString setValue(const QString& key, const QVariant& value);
  Q_INVOKABLE void apply();  // does nothing unless canApply
  Q_INVOKABLE void revert();
  Q_INVOKABLE void resetToDefaults();

  static QVariantMap defaults();
  static QStringList keys();  // in display order

  EngineController* engine() const { return engine_; }
  void setEngine(EngineController* e);
  QVariantMap values() const { return draft_; }
  QVariantMap appliedValues() const { return saved_; }
  QVariantMap errors() const { return errors_; }
  bool dirty() const { return draft_ != saved_; }
  bool valid() const { return errors_.isEmpty(); }
  int previewSlotCount() const;
  double previewUsableMib() const;
  double freeMemoryMib() const;
  static double ramTierAutoMib();
  double expertMib() const;
  QString previewProblem() const;
  bool applyBlocked() const;
  bool canApply() const { return dirty() && valid() && !applyBlocked(); }
  bool applyReloads() const;
  static int defaultThreads();  // hardware_concurrency() - 1, at least 1

  // The applied values, as the engine and the chat want them.
  EngineSettings engineSettings() const;
  GenerationSettings generationDefaults() const;
  QString systemPromptDefault() const;
  bool convertGguf() const;
  QString packsFolder() const;  // models_folder
  QString language() const;
  // Validates one value; "" when fine.
  static QString validate(const QString& key, const QVariant& value);

 signals:
  void engineChanged();
  void valuesChanged();
  // After apply(); `engineChanged`: an engine setting changed (a reload applies it).
  void applied(bool engineChanged);
  void languageApplied();

 private:
  void load();
  void applyLanguage();

  QPointer<EngineController> engine_;
  QVariantMap saved_;
  QVariantMap draft_;
  QVariantMap errors_;
  QTranslator translator_;
  bool translatorInstalled_ = false;
};

}  // namespace moepack::ui
