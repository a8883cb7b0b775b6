// moepack-studio: the Qt Quick desktop app. Wiring only; views and view-models live in ui/.
#include <QtQml/qqmlextensionplugin.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QQmlApplicationEngine>
#include <QQmlContext>
#include <QStandardPaths>
#include <cstdio>
#include <memory>

#include "ui/engine_worker.h"
#include "ui/quit_cleanly.h"
#include "ui/single_instance.h"

Q_IMPORT_QML_PLUGIN(MoePack_UiPlugin)

int main(int argc, char** argv) {
  QApplication app(argc, argv);  // QApplication, not QGuiApplication: QtCharts draws with Graphics View
  // SIGINT (Ctrl+C in the terminal), SIGTERM (logout) and SIGHUP end the event loop as the window's
  // close does, so the reply being written is kept (ui/quit_cleanly.h); from the start, so one
  // during start-up ends it as soon as it runs.
  if (QString why; !moepack::ui::quit_on_termination_signals(app, &why))
    std::fprintf(stderr, "moepack-studio: Ctrl+C and logout will end the studio at once (%s)\n", qPrintable(why));
  QApplication::setApplicationName(QStringLiteral("MoePack Studio"));
  QApplication::setOrganizationName(QStringLiteral("MoePack"));
  QApplication::setApplicationVersion(QStringLiteral(MOEPACK_VERSION));

  // The UI language (system locale or the user's choice) is applied by SettingsViewModel.
  QCommandLineParser parser;
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption model(
      {QStringLiteral("m"), QStringLiteral("model")},
      QStringLiteral("GGUF file, shard, Expert Pack or Ollama name to open (default: the "
                     "model opened last, else the bundled demo model)"),
      QStringLiteral("path"));
  parser.addOption(model);
  QCommandLineOption conversation(QStringLiteral("open-conversation"),
                                  QStringLiteral("conversation to show first (its id in the database)"),
                                  QStringLiteral("id"), QStringLiteral("0"));
  parser.addOption(conversation);
  parser.addPositionalArgument(QStringLiteral("model"), QStringLiteral("the model to open (as --model)"),
                               QStringLiteral("[model]"));
  parser.process(app);
  // `moepack-studio MODEL` opens MODEL, as `moepack run MODEL` does; never silently the demo.
  const QStringList positional = parser.positionalArguments();
  if (positional.size() > 1 || (positional.size() == 1 && parser.isSet(model))) {
    std::fprintf(stderr, "moepack-studio: give one model, either as an argument or with --model (got %s)\n",
                 qPrintable(positional.join(QLatin1Char(' '))));
    return 2;
  }
  QString modelPath = positional.isEmpty() ? parser.value(model) : positional.front();
  if (modelPath.isEmpty()) modelPath = moepack::ui::EngineController::lastLoadedModel();
  if (modelPath.isEmpty()) modelPath = QStringLiteral(MOEPACK_DEMO_MODEL);

  // One studio at a time (ui/single_instance.h). A second start is refused at once; only the
  // restart after a lost GPU (--open-conversation) gives the quitting studio time to go.
  QString why;
  const std::unique_ptr<QLockFile> instance = moepack::ui::acquire_instance_lock(
      QStandardPaths::writableLocation(QStandardPaths::AppDataLocation),
      moepack::ui::instance_lock_wait_ms(parser.isSet(conversation)), &why);
  if (!instance) {
    std::fprintf(stderr, "moepack-studio: %s\n", qPrintable(why));
    if (QGuiApplication::platformName() != QLatin1String("offscreen"))
      QMessageBox::warning(nullptr, QStringLiteral("MoePack Studio"), why);
    return 1;
  }

  QQmlApplicationEngine engine;
  engine.addImportPath(QStringLiteral("qrc:/qt/qml"));
  engine.setInitialProperties(
      {{QStringLiteral("initialModel"), modelPath},
       {QStringLiteral("initialConversation"), parser.value(conversation).toLongLong()}});
  engine.load(QUrl(QStringLiteral("qrc:/qt/qml/MoePack/Ui/qml/Main.qml")));
  if (engine.rootObjects().isEmpty()) return 1;
  return QApplication::exec();
}
