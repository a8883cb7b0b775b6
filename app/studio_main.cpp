// moepack-studio: the Qt Quick desktop app. Wiring only; views and view-models live in ui/.
#include <QApplication>
#include <QCommandLineParser>
#include <QQmlApplicationEngine>
#include <QQmlContext>
#include <QtQml/qqmlextensionplugin.h>

Q_IMPORT_QML_PLUGIN(MoePack_UiPlugin)

int main(int argc, char** argv) {
  QApplication app(argc, argv);  // QApplication, not QGuiApplication: QtCharts draws with Graphics View
  QApplication::setApplicationName(QStringLiteral("MoePack Studio"));
  QApplication::setOrganizationName(QStringLiteral("MoePack"));
  QApplication::setApplicationVersion(QStringLiteral(MOEPACK_VERSION));

  // The UI language (system locale or the user's choice) is applied by SettingsViewModel.
  QCommandLineParser parser;
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption model({QStringLiteral("m"), QStringLiteral("model")},
                           QStringLiteral("GGUF file, shard or Ollama name to open"), QStringLiteral("path"),
                           QStringLiteral(MOEPACK_DEMO_MODEL));
  parser.addOption(model);
  QCommandLineOption conversation(QStringLiteral("open-conversation"),
                                  QStringLiteral("conversation to show first (its id in the database)"),
                                  QStringLiteral("id"), QStringLiteral("0"));
  parser.addOption(conversation);
  parser.process(app);

  QQmlApplicationEngine engine;
  engine.addImportPath(QStringLiteral("qrc:/qt/qml"));
  engine.setInitialProperties({{QStringLiteral("initialModel"), parser.value(model)},
                               {QStringLiteral("initialConversation"), parser.value(conversation).toLongLong()}});
  engine.load(QUrl(QStringLiteral("qrc:/qt/qml/MoePack/Ui/qml/Main.qml")));
  if (engine.rootObjects().isEmpty()) return 1;
  return QApplication::exec();
}
