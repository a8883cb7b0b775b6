// ConvertWizard drives the real pack builder on a fixture copy: monotonic progress ending in a
// pack that passes a full verify, a refusal for lack of space that states both numbers, and a
// cancel that leaves nothing loadable followed by a run that completes the pack.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "core/expert_pack.h"
#include "core/pack_verify.h"
#include "ui/convert_wizard.h"

using moepack::ui::ConvertWizard;

namespace {
const QString kQwen = QStringLiteral(MOEPACK_SHARED_DIR "/fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf");
constexpr double kQwenBytes = 20223488;  // ls -l

bool waitFor(ConvertWizard& w, ConvertWizard::Step s) {
  return QTest::qWaitFor([&] { return !w.busy() && w.step() == s; }, 60000);
}
}  // namespace

class ConvertWizardTest : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  QString copySource() {
    const QString src = tmp_.filePath(QStringLiteral("src/qwen.gguf"));
    QDir().mkpath(QFileInfo(src).absolutePath());
    QFile::remove(src);
    if (!QFile::copy(kQwen, src)) return {};
    QFile::setPermissions(src, QFile::ReadOwner | QFile::WriteOwner);
    return src;
  }
  static void prepare(ConvertWizard& w) {
    w.setSafetyMarginBytes(0);
    w.setDirectIo(false);  // the temp folder's file system may lack O_DIRECT
  }

 private slots:
  void convertsWithMonotonicProgressAndVerifies() {
    const QString src = copySource();
    QVERIFY(!src.isEmpty());
    ConvertWizard w;
    prepare(w);
    w.chooseSource(src);
    QVERIFY(w.busy());
    QVERIFY(waitFor(w, ConvertWizard::Space));
    QCOMPARE(w.sourceBytes(), kQwenBytes);
    QVERIFY(w.neededBytes() > 0);
    w.chooseOutput(tmp_.filePath(QStringLiteral("packs/qwen")));
    QCOMPARE(w.step(), ConvertWizard::Options);
    QVERIFY(w.fits());
    QVERIFY(w.freeBytes() >= w.neededBytes());

    std::vector<double> seen;
    connect(&w, &ConvertWizard::progressChanged, this, [&] { seen.push_back(w.overallDone()); });
    QSignalSpy finished(&w, &ConvertWizard::finished);
    w.start();
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.front().front().toBool(), qPrintable(w.error()));
    QCOMPARE(w.step(), ConvertWizard::Done);
    QVERIFY(seen.size() >= 3);
    for (size_t i = 1; i < seen.size(); ++i) QVERIFY(seen[i] >= seen[i - 1]);
    QCOMPARE(seen.back(), w.overallTotal());
    // Independently of the wizard: the pack opens and passes the full verify.
    const moepack::VerifyResult v = moepack::verify_pack(w.packDir().toStdString(), {.full = true, .progress = {}});
    QVERIFY2(v.ok, v.message.c_str());

    // Deleting the source needs the explicit confirmation.
    QCOMPARE(w.bytesFreedBySource(), kQwenBytes);
    QVERIFY(!w.deleteSourceFiles(false));
    QVERIFY(QFileInfo::exists(src));
    QVERIFY(w.deleteSourceFiles(true));
    QVERIFY(!QFileInfo::exists(src));
  }

  void refusedWhenTheDiskIsTooSmall() {
    const QString src = copySource();
    ConvertWizard w;
    prepare(w);
    w.setFreeBytesProbe([](const QString&) -> std::optional<qint64> { return 1000; });
    w.chooseSource(src);
    QVERIFY(waitFor(w, ConvertWizard::Space));
    w.chooseOutput(tmp_.filePath(QStringLiteral("packs/small")));
    QCOMPARE(w.step(), ConvertWizard::Space);
    QVERIFY(!w.fits());
    QVERIFY2(w.error().contains(QString::number(static_cast<qint64>(w.neededBytes()))) &&
                 w.error().contains(QStringLiteral("1000 bytes are free")),
             qPrintable(w.error()));
    w.start();  // refused: not in the Options step
    QCOMPARE(w.step(), ConvertWizard::Space);
    QVERIFY(!QFileInfo::exists(tmp_.filePath(QStringLiteral("packs/small"))));
  }

  void cancelThenResume() {
    const QString src = copySource();
    ConvertWizard w;
    prepare(w);
    std::atomic<bool> once{false};
    moepack::BuildTestHooks hooks;
    hooks.at = [&](std::string_view point, uint64_t) {
      if (point == "header" && !once.exchange(true)) w.cancel();  // before the first expert batch
    };
    w.setBuildHooks(hooks);
    w.chooseSource(src);
    QVERIFY(waitFor(w, ConvertWizard::Space));
    const QString out = tmp_.filePath(QStringLiteral("packs/resume"));
    w.chooseOutput(out);
    QSignalSpy finished(&w, &ConvertWizard::finished);
    w.start();
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.front().front().toBool(), false);
    QCOMPARE(w.step(), ConvertWizard::Options);  // back to options; start() resumes
    QVERIFY(!QFileInfo::exists(out + QStringLiteral("/manifest.json")));
    QVERIFY_THROWS_EXCEPTION(moepack::Error, moepack::ExpertPack::open(out.toStdString()));
    w.start();
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.back().front().toBool(), qPrintable(w.error()));
    QCOMPARE(w.step(), ConvertWizard::Done);
    QVERIFY(moepack::verify_pack(out.toStdString(), {.full = true, .progress = {}}).ok);
  }
};

QTEST_GUILESS_MAIN(ConvertWizardTest)
#include "convert_wizard_test.moc"
