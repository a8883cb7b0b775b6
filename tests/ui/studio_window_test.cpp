// The studio's QML loads (MoePack.Ui module, QtCharts, Controls) and, given the demo model,
// shows its architecture and one chart bar per MoE layer.
#include <QtQml/qqmlextensionplugin.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QProcess>
#include <QQmlApplicationEngine>
#include <QQuickWindow>
#include <QStandardPaths>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>
#include <cstring>

#include "ui/model_inspector.h"
#include "ui/single_instance.h"

Q_IMPORT_QML_PLUGIN(MoePack_UiPlugin)

namespace {
// moepack-studio's environment in a profile of its own under `home` (offscreen), and that profile's
// AppDataLocation (XDG_DATA_HOME/<organization>/<application>), where its instance lock lives.
QProcessEnvironment isolatedStudioEnvironment(const QTemporaryDir& home) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* var : {"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"})
    env.insert(QLatin1String(var), home.filePath(QLatin1String(var)));
  env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
  return env;
}
QString isolatedStudioDataDir(const QTemporaryDir& home) {
  return home.filePath(QStringLiteral("XDG_DATA_HOME/MoePack/MoePack Studio"));
}
}  // namespace

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

  // One studio at a time: a second instance is refused with the holder's pid; a lock left by a
  // process that is gone is taken over.
  void oneStudioAtATime() {
    QTemporaryDir dir;
    QString why;
    auto first = moepack::ui::acquire_instance_lock(dir.path(), 0, &why);
    QVERIFY2(first != nullptr, qPrintable(why));
    auto second = moepack::ui::acquire_instance_lock(dir.path(), 100, &why);
    QVERIFY(second == nullptr);
    QVERIFY2(why.contains(QStringLiteral("already running")) &&
                 why.contains(QString::number(QCoreApplication::applicationPid())),
             qPrintable(why));
    first.reset();  // the first quits
    auto third = moepack::ui::acquire_instance_lock(dir.path(), 0, &why);
    QVERIFY2(third != nullptr, qPrintable(why));
    third.reset();
    // A crashed studio's lock: a pid that no longer runs, this host.
    QProcess gone;
    gone.start(QStringLiteral("true"));
    QVERIFY(gone.waitForFinished());
    QFile stale(dir.filePath(QStringLiteral("moepack-studio.lock")));
    QVERIFY(stale.open(QIODevice::WriteOnly));
    stale.write(QByteArray::number(gone.processId() > 0 ? gone.processId() : 2147483) + '\n' +
                QByteArray("moepack-studio\n") + QSysInfo::machineHostName().toUtf8() + '\n');
    stale.close();
    auto taken = moepack::ui::acquire_instance_lock(dir.path(), 2000, &why);
    QVERIFY2(taken != nullptr, qPrintable(why));
  }

  // moepack-studio beside a running studio (the lock held here, in the data folder of a profile
  // of its own): a start is refused at once, exit 1 with the holder's pid and no window; only
  // the restart after a lost GPU (--open-conversation) waits for the quitting studio's lock.
  void aSecondStudioIsRefusedAtOnce() {
    QTemporaryDir home;
    QVERIFY(home.isValid());
    const QProcessEnvironment env = isolatedStudioEnvironment(home);
    const QString dataDir = isolatedStudioDataDir(home);
    const QString model = home.filePath(QStringLiteral("none.gguf"));  // never opened: no window
    QString why;
    auto running = moepack::ui::acquire_instance_lock(dataDir, 0, &why);
    QVERIFY2(running != nullptr, qPrintable(why));

    QProcess second;
    second.setProcessEnvironment(env);
    QElapsedTimer clock;
    clock.start();
    second.start(QStringLiteral(MOEPACK_STUDIO), {model});
    QVERIFY(second.waitForFinished(30000));
    const qint64 ms = clock.elapsed();
    const QString err = QString::fromLocal8Bit(second.readAllStandardError());
    QCOMPARE(second.exitStatus(), QProcess::NormalExit);
    QCOMPARE(second.exitCode(), 1);
    QVERIFY2(
        err.contains(QStringLiteral("already running (process %1 ").arg(QCoreApplication::applicationPid())),
        qPrintable(err));
    // It waited 15 s on the lock before: now only its start-up (well under a second unloaded).
    QVERIFY2(ms < 5000, qPrintable(QStringLiteral("refused after %1 ms").arg(ms)));

    // The restart after a lost GPU waits while the old studio quits, then takes the lock.
    QProcess restart;
    restart.setProcessEnvironment(env);
    restart.start(QStringLiteral(MOEPACK_STUDIO),
                  {QStringLiteral("--open-conversation"), QStringLiteral("1"), model});
    QVERIFY(restart.waitForStarted());
    QVERIFY2(!restart.waitForFinished(2000),
             qPrintable(QString::fromLocal8Bit(restart.readAllStandardError())));
    running.reset();  // the old studio is gone
    const auto heldByRestart = [&] {
      auto probe = moepack::ui::acquire_instance_lock(dataDir, 0, &why);
      if (probe) return false;  // not yet taken (released again at once)
      return why.contains(QStringLiteral("process %1 ").arg(restart.processId()));
    };
    QTRY_VERIFY2_WITH_TIMEOUT(heldByRestart(), qPrintable(why), 10000);
    QCOMPARE(restart.state(), QProcess::Running);
    restart.kill();
    QVERIFY(restart.waitForFinished(10000));
  }

  // Ctrl+C in the terminal (SIGINT), the desktop's logout (SIGTERM) and the terminal closed
  // (SIGHUP) quit the studio as its window's close does (ui/quit_cleanly.h): exec() returns,
  // main()'s objects are destroyed in order (a reply being written is kept), exit status 0, the
  // instance lock released, also for a signal during start-up. Before, each signal ended the
  // process where it stood.
  void terminationSignalsQuitAsTheWindowsCloseDoes() {
    for (const int signo : {SIGINT, SIGTERM, SIGHUP}) {
      QTemporaryDir home;
      QVERIFY(home.isValid());
      QProcessEnvironment env = isolatedStudioEnvironment(home);
      env.insert(QStringLiteral("QT_QUICK_BACKEND"), QStringLiteral("software"));
      const QString dataDir = isolatedStudioDataDir(home);
      QProcess studio;
      studio.setProcessEnvironment(env);
      // A model that is not there: the window opens and says so (no model to load meanwhile).
      studio.start(QStringLiteral(MOEPACK_STUDIO), {home.filePath(QStringLiteral("none.gguf"))});
      QVERIFY(studio.waitForStarted());
      // The lock file names the studio's pid once it holds the lock (read, not probed: a probe
      // holding the lock for a moment would refuse the studio's own start).
      const auto heldByStudio = [&] {
        QFile lock(dataDir + QStringLiteral("/moepack-studio.lock"));
        return lock.open(QIODevice::ReadOnly) &&
               lock.readLine().trimmed() == QByteArray::number(studio.processId());
      };
      QTRY_VERIFY_WITH_TIMEOUT(heldByStudio() || studio.state() != QProcess::Running, 20000);
      QVERIFY2(heldByStudio(), studio.readAllStandardError().constData());
      // SIGTERM during start-up (the lock is taken before the window loads; the handlers are in
      // place before that): acted on once the event loop runs. The others once it runs.
      if (signo != SIGTERM) QTest::qWait(500);
      QCOMPARE(::kill(static_cast<pid_t>(studio.processId()), signo), 0);
      QVERIFY2(studio.waitForFinished(20000), ::strsignal(signo));
      const QString err = QString::fromLocal8Bit(studio.readAllStandardError());
      QVERIFY2(studio.exitStatus() == QProcess::NormalExit, qPrintable(QString::fromLatin1(::strsignal(signo)) + err));
      QCOMPARE(studio.exitCode(), 0);
      QString why;
      auto after = moepack::ui::acquire_instance_lock(dataDir, 0, &why);
      QVERIFY2(after != nullptr, qPrintable(why));
    }
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
