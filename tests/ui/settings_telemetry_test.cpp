// SettingsViewModel (validation, draft/apply/revert/reset, QSettings persistence, the engine
// settings it produces, the slot-count preview) and TelemetryViewModel (series and counters
// from a scripted engine's telemetry; hand-computed values).
#include <unistd.h>

#include <QQmlComponent>
#include <QQmlEngine>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <utility>

#include "core/engine_settings.h"
#include "core/error.h"
#include "core/victim_tier.h"
#include "fake_chat_engine.h"
#include "ui/settings_view_model.h"
#include "ui/telemetry_view_model.h"

using namespace moepack::ui;

class SettingsTelemetryTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("MoePackTest"));
    QCoreApplication::setApplicationName(QStringLiteral("settings_telemetry_test"));
    QSettings().clear();
  }

  // The charts' value axes (niceaxis.js, as the Dashboard and Benchmarks pages import it): steps
  // of 1, 2, 2.5 or 5 times a power of ten, a whole number of steps at or above the data.
  // Hand-checked: 253 / 5 = 50.6 -> step 100, max 300, ticks 0 100 200 300.
  void chartAxesAreRound() {
    QQmlEngine qml;
    QQmlComponent c(&qml);
    c.setData(R"(import QtQml
import "qrc:/qt/qml/MoePack/Ui/qml/niceaxis.js" as N
QtObject {
    function axis(v) { return [N.max(v), N.ticks(v), N.format(v)] }
    function tokenStep(span) { return N.tokenStep(span) }
})",
              QUrl(QStringLiteral("qrc:/test/axes.qml")));
    std::unique_ptr<QObject> o(c.create());
    QVERIFY2(o, qPrintable(c.errorString()));
    const auto axis = [&](double v) {
      QVariant r;
      QMetaObject::invokeMethod(o.get(), "axis", Q_RETURN_ARG(QVariant, r), Q_ARG(QVariant, v));
      return r.toList();
    };
    const struct {
      double v, max;
      int ticks;
      const char* format;
    } cases[] = {
        {253, 300, 4, "%.0f"},      // step 100
        {220, 250, 6, "%.0f"},      // 44 -> step 50
        {1, 1, 6, "%.1f"},          // 0.2 -> step 0.2
        {45, 50, 6, "%.0f"},        // 9 -> step 10
        {18545, 20000, 5, "%.0f"},  // 3709 -> step 5000
        {0.3, 0.3, 4, "%.1f"},      // 0.06: 0.05 is short of it -> step 0.1
        {12, 12.5, 6, "%.1f"},      // 2.4 -> step 2.5
        {100, 100, 6, "%.0f"},      // 20 -> step 20, exactly 5 steps
    };
    for (const auto& k : cases) {
      const QVariantList r = axis(k.v);
      QCOMPARE(r.size(), 3);
      QCOMPARE(r[0].toDouble(), k.max);
      QCOMPARE(r[1].toInt(), k.ticks);
      QCOMPARE(r[2].toString(), QString::fromLatin1(k.format));
    }
    // Token axes: ticks every round step of the span, never a fraction of a token.
    // Hand-checked: 31 tokens / 5 = 6.2 -> 10; 300 / 5 = 60 -> 100; 3 / 5 = 0.6 -> 1; 0 -> 1;
    // 12 / 5 = 2.4 -> 5 (not 2.5: a tick between tokens); 9 / 5 = 1.8 -> 2.
    const auto tokenStep = [&](double span) {
      QVariant r;
      QMetaObject::invokeMethod(o.get(), "tokenStep", Q_RETURN_ARG(QVariant, r), Q_ARG(QVariant, span));
      return r.toDouble();
    };
    QCOMPARE(tokenStep(31), 10.0);
    QCOMPARE(tokenStep(300), 100.0);
    QCOMPARE(tokenStep(3), 1.0);
    QCOMPARE(tokenStep(0), 1.0);
    QCOMPARE(tokenStep(12), 5.0);
    QCOMPARE(tokenStep(9), 2.0);
  }

  // Settings saved before version 1 held cache_ram_mib 0, the old default: it loads as the new
  // default ("auto"); a 0 saved since (version 1) is the user's choice and stays.
  void oldSavedRamTierDefaultBecomesAuto() {
    QSettings q;
    q.setValue("settings/cache_ram_mib", 0);
    q.remove("settings/version");
    q.sync();
    QCOMPARE(SettingsViewModel().engineSettings().cache_ram_mib, moepack::EngineSettings::kCacheRamAuto);
    q.setValue("settings/cache_ram_mib", 4096);
    q.sync();
    QCOMPARE(SettingsViewModel().engineSettings().cache_ram_mib, uint64_t(4096));
    q.setValue("settings/cache_ram_mib", 0);
    q.setValue("settings/version", 1);
    q.sync();
    QCOMPARE(SettingsViewModel().engineSettings().cache_ram_mib, uint64_t(0));
    {
      SettingsViewModel s;  // an apply writes the version
      q.remove("settings/version");
      q.sync();
      QCOMPARE(s.setValue("temperature", 0.25), QString());
      s.apply();
    }
    q.sync();
    QCOMPARE(q.value("settings/version").toInt(), 1);
    q.clear();
    q.sync();
  }

  void validatesEditsAndPersists() {
    {
      SettingsViewModel s;
      QCOMPARE(s.values().value("cache_vram_mib").toInt(), 1024);
      QCOMPARE(s.values().value("temperature").toDouble(), 0.0);
      QVERIFY(!s.dirty());
      QVERIFY(!s.setValue("read_splits", 0).isEmpty());  // the engine rejects 0
      QVERIFY(!s.valid());
      QVERIFY(!s.setValue("backend", "opencl").isEmpty());
      QVERIFY(!s.setValue("n_ctx", "lots").isEmpty());
      QVERIFY(!s.setValue("no_such_key", 1).isEmpty());
      QCOMPARE(s.setValue("read_splits", 4), QString());
      QCOMPARE(s.setValue("backend", "cpu"), QString());
      QCOMPARE(s.setValue("n_ctx", "2048"), QString());
      QCOMPARE(s.setValue("cache_vram_mib", 64), QString());
      QCOMPARE(s.setValue("direct_io", false), QString());
      QVERIFY(s.values().contains("prefetch_experts"));
      QCOMPARE(s.values().value("prefetch_experts").toBool(), false);  // off by default
      QCOMPARE(s.setValue("prefetch_experts", true), QString());
      // The host-RAM tier is sized from the RAM by default (core/victim_tier.h).
      QCOMPARE(s.values().value("cache_ram_mib").toString(), QString("auto"));
      QCOMPARE(s.engineSettings().cache_ram_mib, moepack::EngineSettings::kCacheRamAuto);
      QCOMPARE(s.setValue("cache_ram_mib", -1), QString("Between 0 and 16777216."));
      // Only what engineSettings() reads as that number: "8192.0" and "1e3" would read as 0 (off).
      for (const char* bad : {"lots", "1.5", "8192.0", "1e3"})
        QCOMPARE(s.setValue("cache_ram_mib", bad), QString("Enter auto or a whole number of MiB."));
      QCOMPARE(s.setValue("cache_ram_mib", " auto "), QString());
      QCOMPARE(s.values().value("cache_ram_mib").toString(), QString("auto"));  // stored trimmed
      QCOMPARE(s.setValue("cache_ram_mib", 8192), QString());
      // The cache's policy and the tier's admission: the engine's defaults, its words only.
      QCOMPARE(s.values().value("cache_policy").toString(), QString("hybrid"));
      QCOMPARE(s.values().value("cache_ram_admission").toString(), QString("frequency"));
      QCOMPARE(s.setValue("cache_policy", "belady"), QString("Choose hybrid, lru or lfu."));
      QCOMPARE(s.setValue("cache_policy", "LRU"), QString("Choose hybrid, lru or lfu."));
      QCOMPARE(s.setValue("cache_ram_admission", "tinylfu"), QString("Choose frequency or all."));
      QCOMPARE(s.values().value("cache_policy").toString(), QString("hybrid"));  // the draft kept
      QCOMPARE(s.setValue("cache_policy", "lru"), QString());
      QCOMPARE(s.setValue("cache_ram_admission", "all"), QString());
      QCOMPARE(s.values().value("verify_pack_sha256").toBool(), true);  // on by default
      QCOMPARE(s.setValue("verify_pack_sha256", false), QString());
      QCOMPARE(s.setValue("language", "zh_CN"), QString());
      QCOMPARE(s.setValue("temperature", 0.7), QString());
      QVERIFY(s.valid());
      QVERIFY(s.dirty());
      QVERIFY(s.applyReloads());  // what the studio asks about before a reply is stopped
      QSignalSpy applied(&s, &SettingsViewModel::applied);
      s.apply();
      QCOMPARE(applied.size(), 1);
      QCOMPARE(applied.at(0).at(0).toBool(), true);  // engine settings changed
      QVERIFY(!s.applyReloads());  // nothing left to apply
      QVERIFY(!s.dirty());
    }
    SettingsViewModel s;  // reloaded from QSettings
    const moepack::EngineSettings e = s.engineSettings();
    QCOMPARE(e.backend, std::string("cpu"));
    QCOMPARE(e.read_splits, 4u);
    QCOMPARE(e.n_ctx, 2048u);
    QCOMPARE(e.cache_vram_mib, uint64_t(64));
    QCOMPARE(e.direct_io, false);
    QCOMPARE(e.prefetch_experts, true);
    QCOMPARE(e.cache_ram_mib, uint64_t(8192));
    QCOMPARE(e.cache_policy, std::string("lru"));
    QCOMPARE(e.cache_ram_admission, std::string("all"));
    QCOMPARE(e.verify_pack_sha256, false);
    QCOMPARE(e.threads, 0u);  // cores - 1 in the engine
    QCOMPARE(s.language(), QString("zh_CN"));
    QCOMPARE(s.generationDefaults().sampling.temperature, 0.7f);
    s.setValue("read_splits", 2);
    s.revert();
    QCOMPARE(s.values().value("read_splits").toInt(), 4);
    s.resetToDefaults();
    QVERIFY(s.dirty());
    QCOMPARE(s.values(), SettingsViewModel::defaults());
  }

  void previewsTheSlotCount() {
    test::FakeScript script;
    EngineController e(test::fake_factory(script), QString());
    SettingsViewModel s;
    s.setEngine(&e);
    QCOMPARE(s.previewSlotCount(), -1);  // no model: expert size unknown
    e.load("model.gguf", false);
    QTRY_COMPARE(e.state(), EngineController::Ready);
    QCOMPARE(s.expertMib(), 1.0);  // the fake's slot is 1 MiB
    QVERIFY(s.freeMemoryMib() > 64);
    // The preview's free memory is the engine's: the CPU engine's cache sizes itself from
    // available_ram_bytes() (a container's limit included), not from MemAvailable alone.
    // (Read twice: allow it to move by 256 MiB in between.)
    QVERIFY(std::abs(s.freeMemoryMib() - static_cast<double>(moepack::available_ram_bytes()) / 1048576.0) <
            256);
    // The hint's "auto" size: at most half the free RAM and never into the 2 GiB kept free
    // (MemAvailable read twice: allow it to move by 256 MiB in between).
    const double ram_auto = SettingsViewModel::ramTierAutoMib();
    QVERIFY(ram_auto >= 0);
    QVERIFY2(ram_auto <= s.freeMemoryMib() / 2 + 256, qPrintable(QString::number(ram_auto)));
    QVERIFY2(ram_auto <= std::max(0.0, s.freeMemoryMib() - 2048 + 256),
             qPrintable(QString::number(ram_auto)));
    s.setValue("cache_vram_reserve_mib", 0);
    s.setValue("cache_vram_mib", 10);
    QCOMPARE(s.previewSlotCount(), 10);
    QCOMPARE(s.previewProblem(), QString());
    QVERIFY(s.canApply());
    s.setValue("cache_vram_mib", 3);  // 3 slots < top-4
    QCOMPARE(s.previewSlotCount(), 3);
    QVERIFY(!s.previewProblem().isEmpty());
    // Values the loaded model would refuse are not applied: nothing stored, the engine keeps its own.
    QVERIFY(s.dirty() && s.valid());
    QVERIFY(!s.canApply());
    const moepack::EngineSettings before = e.engineSettings();
    const QVariantMap savedBefore = s.appliedValues();
    QSignalSpy applied(&s, &SettingsViewModel::applied);
    s.apply();
    QCOMPARE(applied.size(), 0);
    QVERIFY(s.dirty());
    QCOMPARE(s.appliedValues(), savedBefore);
    QCOMPARE(e.engineSettings().cache_vram_mib, before.cache_vram_mib);
    // Values already applied that the preview doubts (it is an estimate) do not block other
    // changes: only changed cache values are held back.
    {
      QSettings q;
      q.setValue("settings/cache_vram_mib", 3);
      q.setValue("settings/cache_vram_reserve_mib", 0);
      q.sync();
      SettingsViewModel doubted;
      doubted.setEngine(&e);
      QVERIFY(!doubted.previewProblem().isEmpty());
      QVERIFY(!doubted.applyBlocked());
      doubted.setValue("temperature", 0.5);
      QVERIFY(doubted.canApply());
      doubted.setValue("cache_vram_mib", 2);  // a changed cache value the preview refuses
      QVERIFY(doubted.applyBlocked() && !doubted.canApply());
      q.remove("settings/cache_vram_mib");
      q.remove("settings/cache_vram_reserve_mib");
      q.sync();
    }
    // The fake model has 5 MoE layers of 32 experts: a budget of 1000 slots makes 160.
    s.setValue("cache_vram_mib", 1000);
    QCOMPARE(s.previewSlotCount(), 160);
  }

  // The engine's numeric values have the engine's own ranges, as `moepack --set` checks them.
  void engineValuesTakeTheEnginesRanges() {
    SettingsViewModel s;
    QCOMPARE(s.setValue("threads", 4096), QString());
    QCOMPARE(s.setValue("threads", 4097), QStringLiteral("Between 0 and 4096."));
    QVERIFY(!s.setValue("threads", 2.5).isEmpty());  // a whole number
    QCOMPARE(s.setValue("stage_slots", 4096), QString());
    QCOMPARE(s.setValue("stage_slots", 4097), QStringLiteral("Between 1 and 4096."));
    QCOMPARE(s.setValue("n_ctx", 63), QStringLiteral("Between 64 and 16777216."));
    QCOMPARE(s.setValue("cache_vram_mib", 0),
             QStringLiteral("Between 1 and 16777216."));  // no cache_bytes here
    QCOMPARE(s.setValue("read_splits", 65), QStringLiteral("Between 1 and 64."));
    moepack::EngineSettings e;
    for (const char* key : {"threads", "stage_slots", "n_ctx", "read_splits", "cache_vram_reserve_mib"}) {
      const auto r = moepack::engine_setting_range(key);
      QVERIFY(r);
      QCOMPARE(s.setValue(key, static_cast<double>(r->hi)), QString());
      QVERIFY(!s.setValue(key, static_cast<double>(r->hi) + 1).isEmpty());
      moepack::apply_setting(e, key, std::to_string(r->hi));  // the CLI's parser takes the same bound
      QVERIFY_THROWS_EXCEPTION(moepack::Error, moepack::apply_setting(e, key, std::to_string(r->hi + 1)));
    }
    s.revert();
  }

  // Range errors print their limits as plain numbers, not "1.67772e+07".
  void rangeErrorsPrintPlainNumbers() {
    SettingsViewModel s;
    const QString err = s.setValue("cache_vram_mib", 99999999999999.0);
    QCOMPARE(err, QStringLiteral("Between 1 and 16777216."));
    QCOMPARE(s.setValue("top_p", 7), QStringLiteral("Between 0.01 and 1."));
    // A fraction where a whole number is wanted says so, whatever its range.
    QCOMPARE(s.setValue("cache_vram_mib", 0.1), QStringLiteral("Enter a whole number."));
  }

  // The seed's whole range survives (an int would turn 4294967294 into -2, "random"); the
  // packs folder must be a folder MoePack can write in or create; changing it reloads nothing.
  void seedRangeAndThePacksFolder() {
    QTemporaryDir dir;
    SettingsViewModel s;
    QCOMPARE(s.setValue("seed", "4294967294"), QString());
    QCOMPARE(s.values().value("seed").toLongLong(), 4294967294LL);
    const QString file = dir.filePath("a-file");
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    QVERIFY(s.setValue("models_folder", file).contains(QStringLiteral("is a file, not a folder")));
    QVERIFY(s.setValue("models_folder", file + "/packs").contains(QStringLiteral("is a file, not a folder")));
    QVERIFY(s.setValue("models_folder", "relative/packs").contains(QStringLiteral("whole path")));
    if (::geteuid() != 0)  // root writes anywhere
      QVERIFY(s.setValue("models_folder", "/proc/packs").contains(QStringLiteral("cannot create")));
    QCOMPARE(s.setValue("models_folder", dir.filePath("new/packs")), QString());
    QVERIFY(s.canApply());
    QVERIFY(!s.applyReloads());
    QSignalSpy applied(&s, &SettingsViewModel::applied);
    s.apply();
    QCOMPARE(applied.size(), 1);
    QCOMPARE(applied.at(0).at(0).toBool(), false);  // no engine reload (and no second conversion)
    QCOMPARE(s.generationDefaults().sampling.seed, uint64_t{4294967294});
  }

  // The cache's policy and the tier's admission are engine settings: changing either alone
  // reloads the model (applied(true)).
  void cacheChoicesReloadTheEngine() {
    for (const auto& [key, value] :
         {std::pair{"cache_policy", "lfu"}, std::pair{"cache_ram_admission", "all"}}) {
      SettingsViewModel s;
      s.resetToDefaults();
      s.apply();
      QCOMPARE(s.setValue(key, value), QString());
      QVERIFY2(s.applyReloads(), key);
      QSignalSpy applied(&s, &SettingsViewModel::applied);
      s.apply();
      QCOMPARE(applied.size(), 1);
      QVERIFY2(applied.at(0).at(0).toBool(), key);
      QCOMPARE(SettingsViewModel().values().value(key).toString(), QString(value));  // saved
      s.resetToDefaults();
      s.apply();
    }
  }

  // A model loaded on the CPU backend has no host-RAM tier: changing the tier's settings alone
  // reloads nothing there (the next load takes them); the cache's policy still reloads.
  void ramTierSettingsDoNotReloadACpuEngine() {
    test::FakeScript script;
    EngineController e(test::fake_factory(script), QString());
    SettingsViewModel s;
    s.resetToDefaults();
    s.apply();
    s.setEngine(&e);
    e.load("model.gguf", false);
    QTRY_COMPARE(e.state(), EngineController::Ready);
    QCOMPARE(e.info().backend, QString("cpu"));
    QSignalSpy applied(&s, &SettingsViewModel::applied);
    QCOMPARE(s.setValue("cache_ram_admission", "all"), QString());
    QCOMPARE(s.setValue("cache_ram_mib", 0), QString());
    QVERIFY(s.canApply());
    QVERIFY(!s.applyReloads());
    s.apply();
    QCOMPARE(applied.size(), 1);
    QCOMPARE(applied.at(0).at(0).toBool(), false);
    QCOMPARE(s.engineSettings().cache_ram_admission, std::string("all"));  // for the next load
    QCOMPARE(s.setValue("cache_policy", "lru"), QString());
    QVERIFY(s.applyReloads());
    s.apply();
    QCOMPARE(applied.size(), 2);
    QCOMPARE(applied.at(1).at(0).toBool(), true);
    s.resetToDefaults();
    s.apply();
  }

  void telemetrySeriesFollowTheEngine() {
    test::FakeScript script;
    script.extra_tokens = 8;  // 10 tokens, 2 misses of 5 * 4 keys each
    EngineController e(test::fake_factory(script), QString());
    TelemetryViewModel t;
    t.setEngine(&e);
    e.load("model.gguf", false);
    QTRY_COMPARE(e.state(), EngineController::Ready);
    QSignalSpy done(&e, &EngineController::generationFinished);
    e.generate({{"user", "hi"}}, {});
    QVERIFY(done.wait(5000));
    t.poll();
    QCOMPARE(t.tokens(), 10.0);
    QCOMPARE(t.cacheMisses(), 20.0);
    QCOMPARE(t.cacheHits(), 180.0);
    QCOMPARE(t.hitRate(), 0.9);
    QCOMPARE(t.packReadBytes(), 40960.0);
    QCOMPARE(t.slotCount(), 64);
    QCOMPARE(t.prefetchReads(), 20.0);
    QCOMPARE(t.prefetchHits(), 10.0);
    QCOMPARE(t.slotsUsed(), 30);  // misses 20 - prefetch hits 10 + prefetch reads 20 - evictions 0
    QCOMPARE(t.hitRateSeries().size(), size_t(10));
    QCOMPARE(t.hitRateSeries()[3].y(), 0.9);  // 1 - 2 / (5 * 4)
    QCOMPARE(t.readKiBSeries()[3].y(), 4.0);
    // One point per token, though one poll covered all ten (a fast reply drew no line before):
    // after token i, 18 (i + 1) hits of 20 (i + 1) lookups.
    QCOMPARE(t.cumulativeSeries().size(), size_t(10));
    QCOMPARE(t.cumulativeSeries()[0], QPointF(0, 0.9));
    QCOMPARE(t.cumulativeSeries()[9], QPointF(9, 0.9));
    QCOMPARE(t.evictionSeries().size(), size_t(10));
    QCOMPARE(t.evictionSeries()[0].y(), 0.0);
    // The reply's rates from its samples: 3 prompt tokens in 6 ms, then 9 tokens of 4 ms each.
    QCOMPARE(t.prefillTps(), 500.0);
    QCOMPARE(t.decodeTps(), 250.0);
    QCOMPARE(t.readBytesPerToken(), 4096.0);
    QCOMPARE(t.decodeReadBytesPerToken(), 4096.0);  // the decoded tokens only (the prefill's 12 KiB left out)
    // A second reply (2 messages: 6 prompt tokens in 12 ms, then 2 ms a token) replaces the
    // first's rates, though both are in the window (both replies' tokens: 18 / 54 ms, 333).
    script.decode_ms = 2.0;
    e.generate({{"user", "hi"}, {"user", "again"}}, {});
    QVERIFY(done.wait(5000));
    t.poll();
    QCOMPARE(t.tokens(), 20.0);
    QCOMPARE(t.prefillTps(), 500.0);
    QCOMPARE(t.decodeTps(), 500.0);
    // A reply longer than the window: its first sample scrolls out, its prefill stays shown.
    t.window = 4;
    script.token_delay_ms = 20;  // polled while it streams, as the dashboard's timer does
    script.decode_ms = 4.0;
    e.generate({{"user", "hi"}, {"user", "again"}, {"user", "and again"}}, {});
    bool sawStart = false;
    QTRY_VERIFY_WITH_TIMEOUT(
        (t.poll(), sawStart = sawStart || (t.tokens() > 20.0 && t.tokens() < 24.0), !e.generating()), 10000);
    t.poll();
    if (!sawStart) QSKIP("no poll while the first tokens streamed (a loaded machine)");
    QCOMPARE(t.tokens(), 30.0);
    QCOMPARE(t.prefillTps(), 500.0);
    QCOMPARE(t.decodeTps(), 250.0);  // the window's 4 decode samples, 4 ms each
  }
};

QTEST_MAIN(SettingsTelemetryTest)
#include "settings_telemetry_test.moc"
