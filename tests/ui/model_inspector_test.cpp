// ModelInspector opens models off the UI thread and exposes what the demo model's README and
// the fixtures' READMEs state; its layer list model passes QAbstractItemModelTester.
#include "ui/model_inspector.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "packbuilder/pack_builder.h"

using moepack::ui::ModelInspector;
using moepack::ui::MoeLayerListModel;

class ModelInspectorTest : public QObject {
  Q_OBJECT

 private:
  static bool loadAndWait(ModelInspector& m, const QString& path) {
    QSignalSpy done(&m, &ModelInspector::summaryChanged);
    m.load(path);
    if (!m.loading()) return false;  // loading must be asynchronous
    return done.wait(20000);
  }

 private slots:
  // A second load while the first still reads: the newest model is shown, once, and the first
  // one's result never arrives after it.
  void theNewestLoadWins() {
    ModelInspector m;
    QSignalSpy done(&m, &ModelInspector::summaryChanged);
    m.load(QStringLiteral(MOEPACK_SOURCE_DIR
                          "/resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf"));
    m.load(QStringLiteral(MOEPACK_SHARED_DIR "/fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf"));
    QVERIFY(done.wait(20000));
    QTest::qWait(300);
    QCOMPARE(done.size(), 1);
    QVERIFY(!m.loading());
    QCOMPARE(m.architecture(), QStringLiteral("qwen3moe"));
  }

  void demoModelMatchesItsReadme() {
    ModelInspector m;
    QAbstractItemModelTester tester(m.layers(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(loadAndWait(m, QStringLiteral(MOEPACK_SOURCE_DIR "/resources/models/tiny-dsv3-wordnet/"
                                                             "tiny-dsv3-wordnet-Q4_K_M.gguf")));
    QCOMPARE(m.error(), QString());
    QCOMPARE(m.architecture(), QStringLiteral("deepseek2"));
    QCOMPARE(m.fileBytes(), 22402144.0);             // README: 22,402,144 bytes
    QCOMPARE(m.tensorCount(), 105);                  // README: 41 + 24 + 5 + 35 tensors
    QCOMPARE(m.expertCount(), 32);                   // 32 routed experts per MoE layer
    QCOMPARE(m.topK(), 4);                           // top-4
    QCOMPARE(m.sharedExperts(), 1);
    QCOMPARE(m.layers()->rowCount(), 5);             // layers 1-5 are MoE
    const QModelIndex first = m.layers()->index(0, 0);
    QCOMPARE(m.layers()->data(first, MoeLayerListModel::BlockRole).toInt(), 1);
    QCOMPARE(m.layers()->data(first, MoeLayerListModel::ExpertsRole).toInt(), 32);
    // gate/up/down 256x256 each; q4_K rows of 256 = 144 B -> 36,864 B per role when all q4_K.
    QVERIFY(m.layers()->data(first, MoeLayerListModel::RolesTextRole).toString().startsWith(
        QStringLiteral("gate q4_K (36864 B)")));
    bool hasBlockCount = false;
    for (const QVariant& v : m.hyperparameters()) {
      const QVariantMap kv = v.toMap();
      if (kv.value(QStringLiteral("key")).toString() == QStringLiteral("block_count")) {
        QCOMPARE(kv.value(QStringLiteral("value")).toString(), QStringLiteral("6"));  // 6 layers
        hasBlockCount = true;
      }
    }
    QVERIFY(hasBlockCount);
  }

  void splitSetLoadsFromAnyShard() {
    ModelInspector m;
    QVERIFY(loadAndWait(m, QStringLiteral(MOEPACK_SHARED_DIR "/fixtures/deepseek2-tiny/"
                                                             "deepseek2-tiny-Q2_K-00003-of-00003.gguf")));
    QCOMPARE(m.error(), QString());
    QCOMPARE(m.tensorCount(), 69);  // 3 shards x 23 tensors (fixtures README)
    QCOMPARE(m.expertCount(), 16);
    QCOMPARE(m.layers()->rowCount(), 3);
  }

  // An Expert Pack of the demo model (its directory, or its manifest.json) reads as its source:
  // the README's numbers above, the same routed expert bytes; the files are the pack's two.
  void packReadsAsItsSource() {
    const QString demo = QStringLiteral(MOEPACK_SOURCE_DIR
                                        "/resources/models/tiny-dsv3-wordnet/"
                                        "tiny-dsv3-wordnet-Q4_K_M.gguf");
    ModelInspector source;
    QVERIFY(loadAndWait(source, demo));
    QVERIFY(!source.isPack());
    QTemporaryDir tmp;
    const QString dir = tmp.filePath(QStringLiteral("demo.pack"));
    moepack::BuildOptions opt;
    opt.source = demo.toStdString();
    opt.out_dir = dir.toStdString();
    opt.direct_io = false;
    opt.safety_margin_bytes = 0;
    moepack::build_pack(opt);
    for (const QString& path : {dir, dir + QStringLiteral("/manifest.json")}) {
      ModelInspector m;
      QVERIFY(loadAndWait(m, path));
      QCOMPARE(m.error(), QString());
      QVERIFY(m.isPack());
      QCOMPARE(m.architecture(), QStringLiteral("deepseek2"));
      QCOMPARE(m.tensorCount(), 105);  // README: 105 tensors, the routed ones now in experts.bin
      QCOMPARE(m.expertCount(), 32);
      QCOMPARE(m.topK(), 4);
      QCOMPARE(m.sharedExperts(), 1);
      QCOMPARE(m.layers()->rowCount(), 5);
      QCOMPARE(m.routedExpertBytes(), source.routedExpertBytes());
      const QModelIndex first = m.layers()->index(0, 0);
      QCOMPARE(m.layers()->data(first, MoeLayerListModel::BlockRole).toInt(), 1);
      QCOMPARE(m.layers()->data(first, MoeLayerListModel::ExpertsRole).toInt(), 32);
      QCOMPARE(
          m.layers()->data(first, MoeLayerListModel::RolesTextRole).toString(),
          source.layers()->data(source.layers()->index(0, 0), MoeLayerListModel::RolesTextRole).toString());
      QCOMPARE(m.fileBytes(), static_cast<double>(QFileInfo(dir + QStringLiteral("/dense.gguf")).size() +
                                                  QFileInfo(dir + QStringLiteral("/experts.bin")).size()));
    }
    // A pack without its manifest is an error naming the file.
    QVERIFY(QFile::remove(dir + QStringLiteral("/manifest.json")));
    ModelInspector broken;
    QVERIFY(loadAndWait(broken, dir));
    QVERIFY2(broken.error().contains(dir + QStringLiteral(": not an Expert Pack (no manifest.json)")),
             qPrintable(broken.error()));
  }

  void brokenFileShowsErrorNamingTheFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("broken.gguf"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("GGUF\x03\x00\x00\x00", 8);  // header cut after the version
    f.close();
    ModelInspector m;
    QVERIFY(loadAndWait(m, path));
    QVERIFY(m.error().contains(path));
    QVERIFY(m.error().contains(QStringLiteral("n_tensors")) || m.error().contains(QStringLiteral("header")));
    QCOMPARE(m.architecture(), QString());
    QCOMPARE(m.layers()->rowCount(), 0);
  }
};

QTEST_GUILESS_MAIN(ModelInspectorTest)
#include "model_inspector_test.moc"
