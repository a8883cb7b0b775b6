// The studio as a user meets it, offscreen: Main.qml starts on the bundled demo model, converts
// it to an Expert Pack (first run, visible progress), chats, and shows the dashboard with
// non-empty charts. Screenshots (QQuickWindow::grabWindow) of the first run, the chat and the
// dashboard go to $MOEPACK_ARTIFACTS (default: <build>/test-artifacts) as test artefacts.
//
// Also measures frame pacing while a reply streams: intervals between
// QQuickWindow::frameSwapped, reported as p50 / p99 (target p99 < 33 ms on the CPU machine).
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QQmlApplicationEngine>
#include <QQuickWindow>
#include <QSettings>
#include <QStandardPaths>
#include <QThread>
#include <QtQml/qqmlextensionplugin.h>
#include <QtTest>
#include <algorithm>
#include <cstdio>

#include "ui/chat_view_model.h"
#include "ui/engine_worker.h"
#include "ui/telemetry_view_model.h"

Q_IMPORT_QML_PLUGIN(MoePack_UiPlugin)

using namespace moepack::ui;

namespace {
const QString kDemo = QStringLiteral(MOEPACK_SOURCE_DIR "/resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf");
// resources/models/tiny-dsv3-wordnet/README.md, "Reference outputs (llama.cpp, greedy)", Q4_K_M.
const QString kSalmon = QStringLiteral(
    "salmon (noun): any of various large food and game fishes of northern waters; usually migrate from salt to "
    "fresh water to spawn.");

QString artifactDir() {
  QString d = qEnvironmentVariable("MOEPACK_ARTIFACTS");
  if (d.isEmpty()) d = QStringLiteral(MOEPACK_BINARY_DIR "/test-artifacts");
  QDir().mkpath(d);
  return d;
}

void save(QQuickWindow* w, const QString& name) {
  const QImage img = w->grabWindow();
  QVERIFY(!img.isNull());
  const QString path = artifactDir() + "/" + name;
  QVERIFY2(img.save(path), qPrintable(path));
  qInfo() << "screenshot" << path;
}

// Main.qml on the demo model in `qml`, its QML warnings collected into `warnings`; the window,
// or null when it did not load.
QQuickWindow* loadStudio(QQmlApplicationEngine& qml, QStringList& warnings) {
  qml.addImportPath(QStringLiteral("qrc:/qt/qml"));
  QObject::connect(&qml, &QQmlApplicationEngine::warnings, &qml, [&warnings](const QList<QQmlError>& ws) {
    for (const auto& w : ws) warnings << w.toString();
  });
  qml.setInitialProperties({{QStringLiteral("initialModel"), kDemo}});
  qml.load(QUrl(QStringLiteral("qrc:/qt/qml/MoePack/Ui/qml/Main.qml")));
  if (qml.rootObjects().size() != 1) return nullptr;
  return qobject_cast<QQuickWindow*>(qml.rootObjects().first());
}
}  // namespace

class StudioGuiTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("MoePackTest"));
    QCoreApplication::setApplicationName(QStringLiteral("studio_gui_test"));
    // A fresh first run: no database, no pack, default settings.
    QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).removeRecursively();
    QSettings settings;
    settings.clear();
    // A 4 MiB expert cache (the demo's 160 experts are 20 MiB): the dashboard shows evictions.
    settings.setValue("settings/cache_vram_mib", 4);
    settings.setValue("settings/cache_vram_reserve_mib", 0);
  }

  void chatWithTheDemoModelAndShowTheDashboard() {
    QQmlApplicationEngine qml;
    QStringList warnings;
    QQuickWindow* window = loadStudio(qml, warnings);
    QVERIFY(window);
    auto* engine = window->property("engine").value<EngineController*>();
    auto* chat = window->property("chat").value<ChatViewModel*>();
    auto* telemetry = window->property("telemetry").value<TelemetryViewModel*>();
    QVERIFY(engine && chat && telemetry);

    // First run: the GGUF becomes an Expert Pack with visible progress.
    QTRY_VERIFY_WITH_TIMEOUT(engine->state() != EngineController::Empty, 5000);
    if (engine->state() == EngineController::Loading) save(window, QStringLiteral("studio-first-run.png"));
    QTRY_VERIFY_WITH_TIMEOUT(engine->state() != EngineController::Loading, 180000);
    QVERIFY2(engine->state() == EngineController::Ready, qPrintable(engine->error()));
    QVERIFY(engine->info().isPack);
    QVERIFY(engine->modelPath().startsWith(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)));

    // Chat, measuring frame intervals while the reply streams.
    std::vector<double> intervals;
    QElapsedTimer clock;
    clock.start();
    qint64 last = -1;
    auto frames = connect(window, &QQuickWindow::frameSwapped, this, [&] {
      const qint64 now = clock.nsecsElapsed();
      if (last >= 0 && chat->generating()) intervals.push_back(static_cast<double>(now - last) / 1e6);
      last = now;
    });
    QSignalSpy finished(chat, &ChatViewModel::replyFinished);
    QVERIFY(chat->send(QStringLiteral("What does \"salmon\" mean?")));
    QVERIFY(finished.wait(120000));
    disconnect(frames);
    QCOMPARE(chat->lastError(), QString());
    QCOMPARE(chat->messages()->count(), 2);
    QCOMPARE(chat->messages()->at(1).message.content, kSalmon);
    QVERIFY(chat->messages()->at(1).message.stats.generatedTokens > 10);
    QVERIFY(chat->send(QStringLiteral("Tell me a quote.")));
    QVERIFY(finished.wait(120000));
    QCOMPARE(chat->messages()->count(), 4);
    QTest::qWait(200);
    save(window, QStringLiteral("studio-chat.png"));
    // The frame-pacing benchmark (issue 8: p99 < 33 ms on the CPU machine): JSON on stdout and
    // as an artefact, with the machine's load so a loaded run reads as one.
    QVERIFY2(intervals.size() >= 10, "too few frames while streaming to measure pacing");
    std::sort(intervals.begin(), intervals.end());
    const auto pct = [&](double p) { return intervals[static_cast<size_t>(p * static_cast<double>(intervals.size() - 1))]; };
    double load1 = -1;
    if (QFile la(QStringLiteral("/proc/loadavg")); la.open(QIODevice::ReadOnly)) load1 = la.readAll().split(' ').value(0).toDouble();
    const QJsonObject pacing{{"benchmark", "studio_frame_pacing"},
                             {"frames", static_cast<qint64>(intervals.size())},
                             {"p50_ms", pct(0.5)},
                             {"p99_ms", pct(0.99)},
                             {"max_ms", intervals.back()},
                             {"target_p99_ms", 33.0},
                             {"meets_target", pct(0.99) < 33.0},
                             {"engine_threads", static_cast<qint64>(engine->info().threads)},
                             {"engine_nice_increment", moepack::ui::kEngineNiceIncrement},
                             {"cpu_cores", QThread::idealThreadCount()},
                             {"load_average_1min", load1},
                             {"platform", QGuiApplication::platformName()}};
    const QByteArray json = QJsonDocument(pacing).toJson(QJsonDocument::Compact);
    std::printf("%s\n", json.constData());
    QFile out(artifactDir() + QStringLiteral("/frame-pacing.json"));
    QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
    out.write(json + '\n');

    // Dashboard: the charts have points.
    window->setProperty("currentPage", 1);
    QTRY_VERIFY_WITH_TIMEOUT(!telemetry->cumulativeSeries().empty() && !telemetry->hitRateSeries().empty(), 5000);
    QVERIFY(telemetry->tokens() > 0);
    QVERIFY(telemetry->cacheMisses() > 0);
    QVERIFY(telemetry->cacheEvictions() > 0);
    QVERIFY(telemetry->slotCount() > 0);
    QTest::qWait(600);
    save(window, QStringLiteral("studio-dashboard.png"));

    window->setProperty("currentPage", 3);
    QTest::qWait(200);
    save(window, QStringLiteral("studio-settings.png"));
    QVERIFY2(warnings.isEmpty(), qPrintable(warnings.join(QLatin1Char('\n'))));
  }

  // Every file and folder dialog of the pages opens and closes without a QML warning. Offscreen
  // (as on Linux without a platform dialog) Qt Quick Dialogs uses its QML implementation,
  // which needs the Qt.labs.folderlistmodel module: without it the dialog logs "module
  // Qt.labs.folderlistmodel is not installed" and choosing a file crashed the studio.
  void everyFileDialogOpensAndCloses() {
    QQmlApplicationEngine qml;
    QStringList warnings;
    QQuickWindow* window = loadStudio(qml, warnings);
    QVERIFY(window);
    for (const char* name : {"libraryAddFileDialog", "libraryScanFolderDialog", "chatExportDialog",
                             "benchPromptDialog", "benchExportDialog"}) {
      auto* dialog = window->findChild<QObject*>(QLatin1String(name));
      QVERIFY2(dialog, name);
      QVERIFY(QMetaObject::invokeMethod(dialog, "open"));
      QTRY_VERIFY2_WITH_TIMEOUT(dialog->property("visible").toBool(), name, 5000);
      QTest::qWait(100);
      QVERIFY(QMetaObject::invokeMethod(dialog, "reject"));
      QTRY_VERIFY2_WITH_TIMEOUT(!dialog->property("visible").toBool(), name, 5000);
      QVERIFY2(warnings.isEmpty(),
               qPrintable(QLatin1String(name) + QLatin1Char('\n') + warnings.join(QLatin1Char('\n'))));
    }
    auto* engine = window->property("engine").value<EngineController*>();
    QVERIFY(engine);
    QTRY_VERIFY_WITH_TIMEOUT(engine->state() != EngineController::Loading, 180000);
  }
};

QTEST_MAIN(StudioGuiTest)
#include "studio_gui_test.moc"
