#include "ui/settings_view_model.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QQmlEngine>
#include <QSettings>
#include <QStandardPaths>
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <thread>

#include "core/engine_settings.h"
#include "core/victim_tier.h"
#include "ui/engine_worker.h"

Q_DECLARE_LOGGING_CATEGORY(lcUi)

namespace moepack::ui {
namespace {

// Version of the saved settings (group "settings", key "version"): 1 since cache_ram_mib became
// "auto" by default (load() reads an older 0 as that default).
constexpr int kSettingsVersion = 1;

struct Range {
  const char* key;
  double lo, hi;
};
// Numeric limits (inclusive) of the chat's own values. The engine's numeric keys take the
// engine's ranges (engine_setting_range), so Settings and `moepack --set` accept the same values.
constexpr Range kGenerationRanges[] = {
    {"temperature", 0, 5},      {"top_k", 0, 1000},       {"top_p", 0.01, 1},         {"min_p", 0, 1},
    {"repeat_penalty", 0.5, 3}, {"max_tokens", 1, 32768}, {"seed", -1, 4294967294.0},
};

struct ValueRange {
  double lo, hi;
  bool whole;  // an engine value: integers only
};
std::optional<ValueRange> range_of(const QString& key) {
  for (const Range& r : kGenerationRanges) {
    if (key == QLatin1String(r.key)) return ValueRange{r.lo, r.hi, false};
  }
  if (const auto r = engine_setting_range(key.toStdString())) {
    // The studio has no cache_bytes (the CLI's exact budget), so a budget of 0 MiB means nothing.
    const double lo = key == QLatin1String("cache_vram_mib") ? std::max<double>(1, static_cast<double>(r->lo))
                                                             : static_cast<double>(r->lo);
    return ValueRange{lo, static_cast<double>(r->hi), true};
  }
  return std::nullopt;
}

}  // namespace

SettingsViewModel::SettingsViewModel(QObject* parent) : QObject(parent) { load(); }

int SettingsViewModel::defaultThreads() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);
}

QVariantMap SettingsViewModel::defaults() {
  const GenerationSettings g;
  const EngineSettings e;
  return {
      {"backend", "auto"},
      {"threads", 0},  // 0: cores - 1
      {"n_ctx", 4096},
      {"cache_vram_mib", 1024},
      {"cache_vram_reserve_mib", 512},
      // "auto": half of the RAM available when the model loads (core/victim_tier.h,
      // auto_ram_tier_bytes), less if the OS refuses to pin it; a number of MiB; 0: off.
      {"cache_ram_mib", QStringLiteral("auto")},
      // The engine's defaults: which expert the cache evicts (core/expert_cache.h) and which
      // evictions the host-RAM tier keeps (core/victim_tier.h, TierAdmission).
      {"cache_policy", QString::fromStdString(e.cache_policy)},
      {"cache_ram_admission", QString::fromStdString(e.cache_ram_admission)},
      {"stage_slots", 8},
      {"read_splits", 1},
      {"direct_io", true},
      {"prefetch_experts", false},
      // Each expert's SHA-256 (the pack's manifest) checked on its first read in a session: a
      // damaged pack is an error naming the expert, not a wrong answer. One hash per expert.
      {"verify_pack_sha256", true},
      // Greedy by default: answers are reproducible (the demo model's README lists greedy
      // outputs); raise the temperature per conversation.
      {"temperature", 0.0},
      {"top_k", g.sampling.top_k},
      {"top_p", 0.95},  // SamplingParams' defaults, as decimal text (not float -> double)
      {"min_p", 0.05},
      {"repeat_penalty", 1.0},
      {"max_tokens", g.max_tokens},
      {"seed", qint64{-1}},  // up to 2^32 - 2: not an int
      {"system_prompt", QString()},
      {"convert_gguf", true},
      {"models_folder", QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/packs"},
      {"language", "system"},
  };
}

QStringList SettingsViewModel::keys() {
  return {"backend",
          "threads",
          "n_ctx",
          "cache_vram_mib",
          "cache_vram_reserve_mib",
          "cache_policy",
          "cache_ram_mib",
          "cache_ram_admission",
          "stage_slots",
          "read_splits",
          "direct_io",
          "prefetch_experts",
          "verify_pack_sha256",
          "temperature",
          "top_k",
          "top_p",
          "min_p",
          "repeat_penalty",
          "max_tokens",
          "seed",
          "system_prompt",
          "convert_gguf",
          "models_folder",
          "language"};
}

void SettingsViewModel::load() {
  QSettings s;
  s.beginGroup(QStringLiteral("settings"));
  const QVariantMap defs = defaults();
  saved_.clear();
  // Settings written before version 1 saved every key, the defaults too: their cache_ram_mib of
  // 0 was the old default (off), not a choice, and becomes the new default ("auto").
  const int version = s.value(QStringLiteral("version"), 0).toInt();
  for (const QString& k : keys()) {
    QVariant v = s.value(k, defs.value(k));
    if (!validate(k, v).isEmpty()) v = defs.value(k);  // a hand-edited bad value falls back
    v.convert(defs.value(k).metaType());
    if (k == QLatin1String("cache_ram_mib")) {
      v = v.toString().trimmed();
      if (version < kSettingsVersion && v.toString() == QLatin1String("0")) v = defs.value(k);
    }
    saved_.insert(k, v);
  }
  draft_ = saved_;
  errors_.clear();
}

void SettingsViewModel::componentComplete() { applyLanguage(); }

QString SettingsViewModel::validate(const QString& key, const QVariant& value) {
  // Keys with fixed choices: the value must be one of them (the key's own words).
  const auto one_of = [&](std::initializer_list<const char*> choices, const QString& error) {
    const QString v = value.toString();
    return std::any_of(choices.begin(), choices.end(), [&](const char* c) { return v == QLatin1String(c); })
               ? QString()
               : error;
  };
  if (key == QLatin1String("backend"))
    return one_of({"auto", "cpu", "cuda"}, tr("Choose auto, cpu or cuda."));
  if (key == QLatin1String("cache_policy"))
    return one_of({"hybrid", "lru", "lfu"}, tr("Choose hybrid, lru or lfu."));
  if (key == QLatin1String("cache_ram_admission"))
    return one_of({"frequency", "all"}, tr("Choose frequency or all."));
  if (key == QLatin1String("language")) return one_of({"system", "en", "zh_CN"}, tr("Unknown language."));
  if (key == QLatin1String("models_folder")) {
    const QString path = value.toString().trimmed();
    if (path.isEmpty()) return tr("Choose a folder.");
    const QFileInfo fi(path);
    if (!fi.isAbsolute()) return tr("Give the whole path (from /).");
    if (fi.exists()) {
      if (!fi.isDir()) return tr("%1 is a file, not a folder.").arg(path);
      if (!fi.isWritable()) return tr("MoePack cannot write in %1.").arg(path);
      return {};
    }
    // Created at the first conversion: the nearest folder that exists must take it.
    QFileInfo parent(fi.absolutePath());
    while (!parent.exists() && parent.absoluteFilePath() != parent.absolutePath())
      parent = QFileInfo(parent.absolutePath());
    if (!parent.isDir()) return tr("%1 is a file, not a folder.").arg(parent.absoluteFilePath());
    if (!parent.isWritable())
      return tr("MoePack cannot create a folder in %1.").arg(parent.absoluteFilePath());
    return {};
  }
  if (key == QLatin1String("direct_io") || key == QLatin1String("prefetch_experts") ||
      key == QLatin1String("verify_pack_sha256") || key == QLatin1String("convert_gguf") ||
      key == QLatin1String("system_prompt")) {
    return {};
  }
  if (key == QLatin1String("cache_ram_mib")) {
    // "auto" or a whole number of MiB as engineSettings() reads it (an integer: not "8192.0",
    // not "1e3"), within the engine's range below (which names the bounds for "-1").
    const QString t = value.toString().trimmed();
    if (t == QLatin1String("auto")) return {};
    bool ok = false;
    t.toLongLong(&ok);
    if (!ok) return tr("Enter auto or a whole number of MiB.");
  }
  if (const auto r = range_of(key)) {
    const auto [lo, hi, whole] = *r;
    bool ok = false;
    const double v = value.toDouble(&ok);
    if (!ok || !std::isfinite(v)) return tr("Enter a number.");
    // Limits as plain numbers ("16777216", not "1.67772e+07").
    // (C locale: the form the field itself accepts.)
    const auto num = [](double x) { return QString::number(x, 'f', x == std::floor(x) ? 0 : 2); };
    if (whole && v != std::floor(v)) return tr("Enter a whole number.");
    if (v < lo || v > hi) return tr("Between %1 and %2.").arg(num(lo), num(hi));
    return {};
  }
  return tr("Unknown setting %1.").arg(key);
}

QString SettingsViewModel::setValue(const QString& key, const QVariant& value) {
  if (!defaults().contains(key)) return tr("Unknown setting %1.").arg(key);
  const QString err = validate(key, value);
  if (err.isEmpty()) {
    // Stored trimmed (" auto " is "auto": no change, no reload).
    QVariant v = key == QLatin1String("cache_ram_mib") ? QVariant(value.toString().trimmed()) : value;
    v.convert(defaults().value(key).metaType());
    draft_.insert(key, v);
    errors_.remove(key);
  } else {
    errors_.insert(key, err);
  }
  emit valuesChanged();
  return err;
}

bool SettingsViewModel::applyReloads() const {
  if (!canApply()) return false;
  const bool cpuEngine = engine_ && engine_->info().backend == QLatin1String("cpu");
  for (const char* k : {"backend", "threads", "n_ctx", "cache_vram_mib", "cache_vram_reserve_mib",
                        "cache_policy", "cache_ram_mib", "cache_ram_admission", "stage_slots", "read_splits",
                        "direct_io", "prefetch_experts", "verify_pack_sha256"}) {
    // (not models_folder: the loaded model stays; the next conversion goes to the new folder)
    // The host-RAM tier is the CUDA backend's: a model loaded on the CPU backend has none, so
    // its settings change nothing there until the next load (which takes them).
    if (cpuEngine && (qstrcmp(k, "cache_ram_mib") == 0 || qstrcmp(k, "cache_ram_admission") == 0)) continue;
    if (draft_.value(k) != saved_.value(k)) return true;
  }
  return false;
}

void SettingsViewModel::apply() {
  if (!canApply()) return;
  const bool languageChanged = draft_.value("language") != saved_.value("language");
  const bool engineChanged = applyReloads();
  QSettings s;
  s.beginGroup(QStringLiteral("settings"));
  for (auto it = draft_.cbegin(); it != draft_.cend(); ++it) s.setValue(it.key(), it.value());
  s.setValue(QStringLiteral("version"), kSettingsVersion);
  s.endGroup();
  s.sync();
  saved_ = draft_;
  emit valuesChanged();
  if (languageChanged) applyLanguage();
  if (engine_) {
    engine_->setEngineSettings(engineSettings());
    engine_->setPacksFolder(packsFolder());
  }
  emit applied(engineChanged);
}

void SettingsViewModel::revert() {
  draft_ = saved_;
  errors_.clear();
  emit valuesChanged();
}

void SettingsViewModel::resetToDefaults() {
  draft_ = defaults();
  errors_.clear();
  emit valuesChanged();
}

void SettingsViewModel::setEngine(EngineController* e) {
  if (engine_ == e) return;
  if (engine_) disconnect(engine_, nullptr, this, nullptr);
  engine_ = e;
  if (e) {
    connect(e, &EngineController::stateChanged, this, &SettingsViewModel::valuesChanged);
    e->setEngineSettings(engineSettings());
    e->setPacksFolder(packsFolder());
  }
  emit engineChanged();
  emit valuesChanged();
}

double SettingsViewModel::freeMemoryMib() const {
  // What the CPU engine's cache sizes itself from (core/expert_provider.cpp: ExpertStore's
  // available_bytes): MemAvailable, within a container's memory limit.
  const uint64_t b = available_ram_bytes();
  return b == ~uint64_t{0} ? 0.0 : static_cast<double>(b) / (1024.0 * 1024.0);
}

double SettingsViewModel::ramTierAutoMib() {
  return static_cast<double>(auto_ram_tier_usable_bytes(available_ram_bytes())) / (1024.0 * 1024.0);
}

double SettingsViewModel::expertMib() const {
  if (!engine_ || engine_->info().cacheSlotBytes == 0) return 0;
  return static_cast<double>(engine_->info().cacheSlotBytes) / (1024.0 * 1024.0);
}

double SettingsViewModel::previewUsableMib() const {
  const double want = draft_.value("cache_vram_mib").toDouble();
  // The loaded CPU engine's own cache is freed by the reload that applies new values.
  const double own = engine_ && engine_->info().backend == QLatin1String("cpu")
                         ? static_cast<double>(engine_->info().cacheSlots) *
                               static_cast<double>(engine_->info().cacheSlotBytes) / (1024.0 * 1024.0)
                         : 0.0;
  const double avail = freeMemoryMib() + own - draft_.value("cache_vram_reserve_mib").toDouble();
  return std::max(0.0, std::min(want, avail));
}

bool SettingsViewModel::applyBlocked() const {
  if (previewProblem().isEmpty()) return false;
  return draft_.value("cache_vram_mib") != saved_.value("cache_vram_mib") ||
         draft_.value("cache_vram_reserve_mib") != saved_.value("cache_vram_reserve_mib");
}

int SettingsViewModel::previewSlotCount() const {
  const double e = expertMib();
  if (e <= 0) return -1;
  const double by_budget = std::floor(previewUsableMib() / e);
  // The engine never makes more slots than the model has experts (cache_slots_for_budget's cap).
  const double experts = engine_ ? static_cast<double>(engine_->info().moeLayers) *
                                       static_cast<double>(engine_->info().expertsPerLayer)
                                 : 0.0;
  return static_cast<int>(experts > 0 ? std::min(by_budget, experts) : by_budget);
}

QString SettingsViewModel::previewProblem() const {
  // Host memory is the CPU engine's cache; a CUDA engine's is VRAM, which this preview does not see.
  if (!engine_ || engine_->info().backend != QLatin1String("cpu")) return {};
  const int nslots = previewSlotCount();
  if (nslots < 0) return {};
  const uint32_t need = engine_->info().topK;
  if (static_cast<uint32_t>(nslots) < need) {
    return tr("%n slot(s) cannot hold one layer's %1 selected experts; the engine would refuse to start.", "",
              nslots)
        .arg(need);
  }
  return {};
}

EngineSettings SettingsViewModel::engineSettings() const {
  EngineSettings s;
  s.backend = saved_.value("backend").toString().toStdString();
  s.threads = saved_.value("threads").toUInt();
  s.n_ctx = saved_.value("n_ctx").toUInt();
  s.cache_vram_mib = saved_.value("cache_vram_mib").toULongLong();
  s.cache_vram_reserve_mib = saved_.value("cache_vram_reserve_mib").toULongLong();
  const QString ram = saved_.value("cache_ram_mib").toString().trimmed();
  s.cache_ram_mib = ram == QLatin1String("auto") ? EngineSettings::kCacheRamAuto : ram.toULongLong();
  s.cache_policy = saved_.value("cache_policy").toString().toStdString();
  s.cache_ram_admission = saved_.value("cache_ram_admission").toString().toStdString();
  s.stage_slots = saved_.value("stage_slots").toUInt();
  s.read_splits = saved_.value("read_splits").toUInt();
  s.direct_io = saved_.value("direct_io").toBool();
  s.prefetch_experts = saved_.value("prefetch_experts").toBool();
  s.verify_pack_sha256 = saved_.value("verify_pack_sha256").toBool();
  return s;
}

GenerationSettings SettingsViewModel::generationDefaults() const {
  return generation_from_json(QJsonObject::fromVariantMap(saved_));
}

QString SettingsViewModel::systemPromptDefault() const { return saved_.value("system_prompt").toString(); }
bool SettingsViewModel::convertGguf() const { return saved_.value("convert_gguf").toBool(); }
QString SettingsViewModel::packsFolder() const { return saved_.value("models_folder").toString(); }
QString SettingsViewModel::language() const { return saved_.value("language").toString(); }

void SettingsViewModel::applyLanguage() {
  if (translatorInstalled_) {
    QCoreApplication::removeTranslator(&translator_);
    translatorInstalled_ = false;
  }
  const QString lang = language();
  const QLocale locale = lang == QLatin1String("system") ? QLocale() : QLocale(lang);
  // The locale's catalogue, else English's: English is the source language, and its catalogue
  // holds the plural forms ("%n token(s)" -> "1 token", "2 tokens"); untranslated strings fall
  // through to the source text.
  if (translator_.load(locale, QStringLiteral("moepack"), QStringLiteral("_"), QStringLiteral(":/i18n")) ||
      translator_.load(QStringLiteral("moepack_en"), QStringLiteral(":/i18n"))) {
    translatorInstalled_ = QCoreApplication::installTranslator(&translator_);
  }
  qCInfo(lcUi) << "language" << lang << "->" << locale.name() << (translatorInstalled_ ? "(translated)" : "");
  if (QQmlEngine* e = qmlEngine(this)) e->retranslate();
  emit languageApplied();
}

}  // namespace moepack::ui
