// The studio's QML loads (MoePack.Ui module, QtCharts, Controls) and, given the demo model,
// shows its architecture and one chart bar per MoE layer.
#include <QApplication>
#include <QQmlApplicationEngine>
#include <QQuickWindow>
#include <QStandardPaths>
#include <QtQml/qqmlextensionplugin.h>
#include <QtTest>

#include "ui/model_inspector.h"

Q_IMPORT_QML_PLUGIN(MoePack_UiPlugin)

class StudioWindowTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    // Main.qml opens the chat database and converts the demo model: keep them out of the
    // user's data folders.
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("MoePackTest"));
    QCoreApplication::setApplicationName(QStringLiteral("studio_window_test"));
  }

  void mainWindowShowsTheDemoModel() {
    QQmlApplicationEngine engine;
    engine.addImportPath(QStringLiteral("qrc:/qt/qml"));
    QStringList warnings;
    connect(&engine, &QQmlApplicationEngine::warnings, this, [&](const QList<QQmlError>& ws) {
      for (const auto& w : ws) warnings << w.toString();
    });
    engine.setInitialProperties({{QStringLiteral("initialModel"),
                                  QStringLiteral(MOEPACK_SOURCE_DIR "/resources/models/tiny-dsv3-wordnet/"
                                                                    "tiny-dsv3-wordnet-Q4_K_M.gguf")}});
    engine.load(QUrl(QStringLiteral("qrc:/qt/qml/MoePack/Ui/qml/Main.qml")));
    QCOMPARE(engine.rootObjects().size(), 1);
    auto* window = qobject_cast<QQuickWindow*>(engine.rootObjects().first());
    QVERIFY(window != nullptr);
    auto* inspector = window->property("inspector").value<moepack::ui::ModelInspector*>();
    QVERIFY(inspector != nullptr);
    QTRY_VERIFY_WITH_TIMEOUT(!inspector->loading() && !inspector->architecture().isEmpty(), 20000);
    QCOMPARE(inspector->architecture(), QStringLiteral("deepseek2"));
    QTRY_VERIFY(window->title().contains(QStringLiteral("MoePack Studio")));
    QVERIFY2(warnings.isEmpty(), qPrintable(warnings.join(QLatin1Char('\n'))));
  }
};

QTEST_MAIN(StudioWindowTest)
#include "studio_window_test.moc"
