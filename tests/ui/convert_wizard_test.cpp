// ConvertWizard drives the real pack builder on a fixture copy: monotonic progress ending in a
// pack that passes a full verify, a refusal for lack of space that states both numbers, a
// cancel that leaves nothing loadable followed by a run that completes the pack, and (on a
// copy of the 3-shard split set) a refusal that offers the shard-by-shard mode, whose
// conversion ends in a pack that verifies with every source shard gone.
#include "ui/convert_wizard.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "core/expert_pack.h"
#include "core/pack_verify.h"
#include "ollama_store.h"

using moepack::ui::ConvertWizard;

namespace {
const QString kQwen = QStringLiteral(MOEPACK_SHARED_DIR "/fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf");
const QString kSplitDir = QStringLiteral(MOEPACK_SHARED_DIR "/fixtures/deepseek2-tiny/");
const QStringList kShards = {QStringLiteral("deepseek2-tiny-Q2_K-00001-of-00003.gguf"),
                             QStringLiteral("deepseek2-tiny-Q2_K-00002-of-00003.gguf"),
                             QStringLiteral("deepseek2-tiny-Q2_K-00003-of-00003.gguf")};
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
    // The pack's size is one number in every step (Space and Options once showed two).
    const double packBytes = w.packBytes();
    QVERIFY(packBytes > 0 && packBytes <= w.neededBytes());
    // A chosen folder (a file dialog's URL, a trailing slash) gets the pack's own folder.
    QCOMPARE(w.packFolderIn(QUrl::fromLocalFile(tmp_.path()).toString() + QStringLiteral("/")),
             tmp_.filePath(QStringLiteral("qwen-pack")));
    w.chooseOutput(tmp_.filePath(QStringLiteral("packs/qwen")));
    QCOMPARE(w.step(), ConvertWizard::Options);
    QVERIFY(w.fits());
    QVERIFY(w.freeBytes() >= w.neededBytes());
    QCOMPARE(w.packBytes(), packBytes);

    // The conversion's bar, then the verify's own: each monotonic, each ending at its total.
    struct Seen {
      ConvertWizard::Step step;
      double done, total;
    };
    std::vector<Seen> seen;
    connect(&w, &ConvertWizard::progressChanged, this, [&] {
      seen.push_back({w.step(), w.overallDone(), w.overallTotal()});
    });
    QSignalSpy finished(&w, &ConvertWizard::finished);
    w.start();
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.front().front().toBool(), qPrintable(w.error()));
    QCOMPARE(w.step(), ConvertWizard::Done);
    QVERIFY(seen.size() >= 3);
    for (size_t i = 1; i < seen.size(); ++i) {
      QVERIFY(seen[i].step >= seen[i - 1].step);
      if (seen[i].step == seen[i - 1].step) QVERIFY(seen[i].done >= seen[i - 1].done);
    }
    const auto lastOf = [&](ConvertWizard::Step st) {
      Seen r{st, -1, -1};
      for (const Seen& x : seen)
        if (x.step == st) r = x;
      return r;
    };
    const Seen conv = lastOf(ConvertWizard::Converting), ver = lastOf(ConvertWizard::Verifying);
    QVERIFY(conv.done > 0);
    QCOMPARE(conv.done, conv.total);
    QVERIFY(ver.total >= conv.total);  // every byte of experts.bin and dense.gguf
    QCOMPARE(ver.done, ver.total);
    // Independently of the wizard: the pack opens and passes the full verify.
    const moepack::VerifyResult v = moepack::verify_pack(w.packDir().toStdString(), {.full = true, .progress = {}});
    QVERIFY2(v.ok, v.message.c_str());
    // ... and the size said before is the size of its files.
    QCOMPARE(w.packBytes(),
             static_cast<double>(QFileInfo(w.packDir() + QStringLiteral("/experts.bin")).size() +
                                 QFileInfo(w.packDir() + QStringLiteral("/dense.gguf")).size()));

    // Deleting the source needs the explicit confirmation.
    QCOMPARE(w.bytesFreedBySource(), kQwenBytes);
    QVERIFY(!w.deleteSourceFiles(false));
    QVERIFY(QFileInfo::exists(src));
    QVERIFY(w.deleteSourceFiles(true));
    QVERIFY(!QFileInfo::exists(src));
  }

  // Cancel during the verify: back to Options with the pack built (it loads); converting again
  // builds nothing and verifies it.
  void aVerifyCanBeCancelledAndRunAgain() {
    const QString src = copySource();
    ConvertWizard w;
    prepare(w);
    w.chooseSource(src);
    QVERIFY(waitFor(w, ConvertWizard::Space));
    const QString out = tmp_.filePath(QStringLiteral("packs/verify-cancel"));
    w.chooseOutput(out);
    // Cancelled as the build ends (its last hook, on the worker), so the verify that follows
    // stops at its first read: no race with the UI thread.
    std::atomic<bool> cancelled{false};
    moepack::BuildTestHooks hooks;
    hooks.at = [&](std::string_view point, uint64_t) {
      if (point == "done" && !cancelled.exchange(true)) w.cancel();
    };
    w.setBuildHooks(hooks);
    QSignalSpy finished(&w, &ConvertWizard::finished);
    w.start();
    QVERIFY(finished.wait(120000));
    QVERIFY(cancelled);
    QCOMPARE(finished.front().front().toBool(), false);
    QCOMPARE(w.step(), ConvertWizard::Options);
    QVERIFY2(w.message().contains(QStringLiteral("Verification cancelled")), qPrintable(w.message()));
    QVERIFY(QFileInfo::exists(out + QStringLiteral("/manifest.json")));
    w.start();
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.back().front().toBool(), qPrintable(w.error()));
    QCOMPARE(w.step(), ConvertWizard::Done);
    QVERIFY(w.message().contains(QStringLiteral("OK")));
    QVERIFY2(w.message().contains(QStringLiteral("nothing was rebuilt")), qPrintable(w.message()));
  }

  // An Ollama model's blob is the store's: the wizard never deletes it, neither after the
  // verify nor by the Done step's button.
  void anOllamaModelsBlobIsNeverDeleted() {
    const moepack::ui::test::OllamaStore store = moepack::ui::test::make_ollama_store(
        tmp_.filePath(QStringLiteral("ollama")), kQwen, QStringLiteral("tiny"), QStringLiteral("q4"));
    QVERIFY(!store.blob.isEmpty());
    const QString blob = store.blob, manifest = store.manifest;
    ConvertWizard w;
    prepare(w);
    w.chooseSource(manifest);
    QVERIFY(waitFor(w, ConvertWizard::Space));
    QVERIFY(!w.sourceDeletable());
    w.chooseOutput(tmp_.filePath(QStringLiteral("packs/ollama")));
    QCOMPARE(w.step(), ConvertWizard::Options);
    w.setDeleteSourceAfterVerify(true);
    QVERIFY(!w.deleteSourceAfterVerify());
    QSignalSpy finished(&w, &ConvertWizard::finished);
    w.start();
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.front().front().toBool(), qPrintable(w.error()));
    QVERIFY(!w.deleteSourceFiles(true));
    QVERIFY(w.error().contains(QStringLiteral("ollama rm")));
    QVERIFY(QFileInfo::exists(blob));
  }

  // Deleting the source after the builder's own full verify: done, the source gone, and no
  // second verify by the wizard.
  void deletingTheSourceAfterTheVerifyVerifiesOnce() {
    const QString src = copySource();
    ConvertWizard w;
    prepare(w);
    w.chooseSource(src);
    QVERIFY(waitFor(w, ConvertWizard::Space));
    QVERIFY(w.sourceDeletable());
    w.chooseOutput(tmp_.filePath(QStringLiteral("packs/delete-after")));
    w.setDeleteSourceAfterVerify(true);
    QVERIFY(w.deleteSourceAfterVerify());
    // Cancelled in the builder's own verify (at its "finalize" hook, before the verify): the
    // source stays, the pack is finished, and the next start deletes it after a full verify.
    std::atomic<bool> once{false};
    moepack::BuildTestHooks hooks;
    hooks.at = [&](std::string_view point, uint64_t) {
      if (point == "manifest" && !once.exchange(true)) w.cancel();
    };
    w.setBuildHooks(hooks);
    QSignalSpy finished(&w, &ConvertWizard::finished);
    w.start();
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.front().front().toBool(), false);
    QVERIFY(QFileInfo::exists(src));
    QVERIFY2(w.message().contains(QStringLiteral("Verification cancelled")), qPrintable(w.message()));
    QCOMPARE(w.step(), ConvertWizard::Options);
    w.start();
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.back().front().toBool(), qPrintable(w.error()));
    QVERIFY(w.sourceDeleted());
    QCOMPARE(w.step(), ConvertWizard::Done);
    QVERIFY(!QFileInfo::exists(src));
    QVERIFY2(w.message().contains(QStringLiteral("verified in full, then the source was deleted")),
             qPrintable(w.message()));
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
    QVERIFY(w.message().contains(QStringLiteral("Cancelled")));
    QVERIFY(!QFileInfo::exists(out + QStringLiteral("/manifest.json")));
    QVERIFY_THROWS_EXCEPTION(moepack::Error, moepack::ExpertPack::open(out.toStdString()));
    w.start();
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.back().front().toBool(), qPrintable(w.error()));
    QCOMPARE(w.step(), ConvertWizard::Done);
    QVERIFY2(!w.message().contains(QStringLiteral("Cancelled")),
             qPrintable(w.message()));  // not the last run's
    QVERIFY(moepack::verify_pack(out.toStdString(), {.full = true, .progress = {}}).ok);
  }

  void refusedThenShardByShardModeDeletesTheShards() {
    QStringList copies;
    for (const QString& n : kShards) {
      const QString to = tmp_.filePath(QStringLiteral("split/") + n);
      QDir().mkpath(QFileInfo(to).absolutePath());
      QFile::remove(to);
      QVERIFY(QFile::copy(kSplitDir + n, to));
      QFile::setPermissions(to, QFile::ReadOwner | QFile::WriteOwner);
      copies << to;
    }
    ConvertWizard w;
    prepare(w);
    qint64 freeValue = qint64{1} << 50;
    w.setFreeBytesProbe([&](const QString&) -> std::optional<qint64> { return freeValue; });
    w.chooseSource(copies.front());
    QVERIFY(waitFor(w, ConvertWizard::Space));
    // Named after the set, not after one shard.
    QCOMPARE(w.packFolderIn(tmp_.path()), tmp_.filePath(QStringLiteral("deepseek2-tiny-Q2_K-pack")));
    const QString out = tmp_.filePath(QStringLiteral("packs/split"));
    w.chooseOutput(out);  // plenty of space: both needs are known
    QCOMPARE(w.step(), ConvertWizard::Options);
    const double needed = w.neededBytes(), shardNeeded = w.shardModeNeededBytes();
    QVERIFY(shardNeeded > 0);
    QVERIFY(shardNeeded < needed);
    // Shards total 12435648 bytes (ls -l), all on the target's file system: the shard mode
    // needs less than the pack by at least the largest shard's share freed on the way.
    QVERIFY(needed - shardNeeded > 1800960);
    QVERIFY(!w.shardModeOffered());  // it fits anyway

    freeValue = static_cast<qint64>((needed + shardNeeded) / 2);  // between the two
    w.chooseOutput(out);
    QCOMPARE(w.step(), ConvertWizard::Space);
    QVERIFY(!w.fits());
    QVERIFY(w.shardModeOffered());
    QVERIFY2(w.error().contains(QString::number(static_cast<qint64>(needed))) &&
                 w.error().contains(QString::number(freeValue)) &&
                 w.error().contains(QString::number(static_cast<qint64>(shardNeeded))),
             qPrintable(w.error()));
    w.start();  // refused: not in the Options step
    QCOMPARE(w.step(), ConvertWizard::Space);
    QVERIFY(w.chooseShardMode());
    QCOMPARE(w.step(), ConvertWizard::Options);
    QVERIFY(w.shardMode());
    QVERIFY(w.deleteSourceAfterVerify());
    QSignalSpy finished(&w, &ConvertWizard::finished);
    w.start();
    QVERIFY(finished.wait(120000));
    QVERIFY2(finished.front().front().toBool(), qPrintable(w.error()));
    QCOMPARE(w.step(), ConvertWizard::Done);
    for (const QString& c : copies) QVERIFY2(!QFileInfo::exists(c), qPrintable(c));
    const moepack::VerifyResult v = moepack::verify_pack(out.toStdString(), {.full = true, .progress = {}});
    QVERIFY2(v.ok, v.message.c_str());

    // Below even the shard mode's need: refused, nothing offered.
    ConvertWizard w2;
    prepare(w2);
    QVERIFY(QFile::copy(kQwen, tmp_.filePath(QStringLiteral("split/one.gguf"))));
    w2.setFreeBytesProbe([](const QString&) -> std::optional<qint64> { return 1000; });
    w2.chooseSource(tmp_.filePath(QStringLiteral("split/one.gguf")));
    QVERIFY(waitFor(w2, ConvertWizard::Space));
    w2.chooseOutput(tmp_.filePath(QStringLiteral("packs/none")));
    QVERIFY(!w2.shardModeOffered());
    QVERIFY(!w2.chooseShardMode());
    QCOMPARE(w2.step(), ConvertWizard::Space);
  }
};

QTEST_GUILESS_MAIN(ConvertWizardTest)
#include "convert_wizard_test.moc"
