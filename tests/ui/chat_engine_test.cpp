// The chat stack over the real engine (moepack::Session, CPU backend) on the bundled demo
// model: the GGUF is converted to an Expert Pack by the worker (progress signals), the reply
// streamed into ChatViewModel equals the engine's greedy output and the model's README
// (llama.cpp greedy, Q4_K_M), stop mid-stream keeps a prefix, regenerate is deterministic under
// greedy sampling, and the conversation reloads from SQLite.
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "core/expert_pack.h"
#include "core/session.h"
#include "ollama_store.h"
#include "ui/chat_view_model.h"
#include "ui/conversation_store.h"
#include "ui/engine_worker.h"
#include "ui/session_engine.h"
#include "ui/settings_view_model.h"

using namespace moepack::ui;

namespace {
const QString kDemo = QStringLiteral(MOEPACK_SOURCE_DIR "/resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf");
// The qwen3moe fixture and its SHA-256 (fixtures/SHA256SUMS).
const QString kQwen =
    QStringLiteral(MOEPACK_SHARED_DIR "/fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf");
const QString kQwenSha = QStringLiteral("99683a6d73f41cbce6e1c7cad755017f774b5492c9e4ad61ba3d635873089c73");
const QString kQuestion = QStringLiteral("What does \"salmon\" mean?");
// resources/models/tiny-dsv3-wordnet/README.md, "Reference outputs (llama.cpp, greedy)", Q4_K_M.
const QString kSalmon = QStringLiteral(
    "salmon (noun): any of various large food and game fishes of northern waters; usually migrate from salt to "
    "fresh water to spawn.");

moepack::EngineSettings smallCache() {
  moepack::EngineSettings s;
  s.backend = "cpu";
  s.cache_vram_mib = 4;  // 4 MiB of 128 KiB experts: the cache evicts while the model talks
  s.cache_vram_reserve_mib = 0;
  s.n_ctx = 512;
  return s;
}
}  // namespace

class ChatEngineTest : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::unique_ptr<EngineController> engine_;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    // The studio's settings (SettingsViewModel) in a test location, at their defaults.
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("MoePackTest"));
    QCoreApplication::setApplicationName(QStringLiteral("chat_engine_test"));
    QSettings().clear();
    engine_ = std::make_unique<EngineController>(&open_session_engine, dir_.filePath("packs"));
    engine_->setEngineSettings(smallCache());
    QSignalSpy progress(engine_.get(), &EngineController::progressChanged);
    engine_->load(kDemo, true);
    QTRY_VERIFY_WITH_TIMEOUT(engine_->state() != EngineController::Loading, 180000);
    QVERIFY2(engine_->state() == EngineController::Ready, qPrintable(engine_->error()));
    QVERIFY(engine_->info().isPack);
    QVERIFY(engine_->modelPath().startsWith(dir_.filePath("packs")));
    QVERIFY(progress.size() >= 2);  // conversion phases, then "open"
    QVERIFY(engine_->info().cacheSlots > 0);
    QCOMPARE(engine_->info().topK, 4u);
    QCOMPARE(engine_->info().moeLayers, 5u);
  }

  void streamedReplyEqualsTheEngineGreedyOutput() {
    // The oracle: the same pack through Session directly.
    auto session = moepack::Session::load(engine_->modelPath().toStdString(), smallCache());
    moepack::GenerateOptions o;
    o.max_tokens = 100;
    o.sampling.temperature = 0;
    const auto direct = session->chat({{"user", kQuestion.toStdString()}}, o);
    QCOMPARE(QString::fromStdString(direct.text), kSalmon);

    ChatViewModel vm;
    QVERIFY(vm.openDatabase(dir_.filePath("chat.sqlite")));
    vm.setEngine(engine_.get());
    vm.setSamplingValue("temperature", 0);
    vm.setSamplingValue("max_tokens", 100);
    QString streamed;
    connect(engine_.get(), &EngineController::textReady, this, [&](quint64, const QString& t) { streamed += t; });
    QSignalSpy finished(&vm, &ChatViewModel::replyFinished);
    QVERIFY(vm.send(kQuestion));
    QVERIFY(finished.wait(60000));
    disconnect(engine_.get(), &EngineController::textReady, this, nullptr);
    QCOMPARE(vm.lastError(), QString());
    QCOMPARE(streamed, kSalmon);
    const auto& reply = vm.messages()->at(1).message;
    QCOMPARE(reply.content, kSalmon);
    QCOMPARE(reply.stats.generatedTokens, static_cast<int>(direct.tokens.size()));
    QCOMPARE(reply.stats.promptTokens, static_cast<int>(direct.prompt_tokens.size()));
    QCOMPARE(reply.stats.stopReason, QString("eos"));
    QVERIFY(reply.stats.ttftMs > 0);
    QVERIFY(reply.stats.decodeTps > 0);
    // The cache worked and evicted (4 MiB < the pack's experts).
    const auto snap = engine_->telemetry()->snapshot();
    QVERIFY(snap.cache_misses > 0);
    QVERIFY(snap.cache_evictions > 0);
    QVERIFY(snap.tokens >= static_cast<uint64_t>(direct.tokens.size()));

    // Regenerate: greedy, so the same reply again.
    QVERIFY(vm.regenerate());
    QVERIFY(finished.wait(60000));
    QCOMPARE(vm.messages()->count(), 2);
    QCOMPARE(vm.messages()->at(1).message.content, kSalmon);

    // Reload from SQLite.
    const qint64 conv = vm.currentConversationId();
    ChatViewModel vm2;
    QVERIFY(vm2.openDatabase(dir_.filePath("chat.sqlite")));
    QCOMPARE(vm2.currentConversationId(), conv);
    QCOMPARE(vm2.messages()->count(), 2);
    QCOMPARE(vm2.messages()->at(0).message.content, kQuestion);
    QCOMPARE(vm2.messages()->at(1).message.content, kSalmon);
    QCOMPARE(vm2.messages()->at(1).message.stats, reply.stats);
  }

  void stopMidStreamKeepsAPrefix() {
    ChatViewModel vm;
    QVERIFY(vm.openDatabase(dir_.filePath("stop.sqlite")));
    vm.setEngine(engine_.get());
    vm.setSamplingValue("temperature", 0);
    engine_->worker()->batchIntervalMs = 0;  // every piece is a signal: stop after the first
    QSignalSpy finished(&vm, &ChatViewModel::replyFinished);
    // Stop from the engine thread itself when the first piece is emitted (a direct connection),
    // so the stop lands mid-stream however loaded the machine is.
    auto c = connect(
        engine_->worker(), &EngineWorker::textReady, engine_->worker(), [&] { engine_->stop(); },
        Qt::DirectConnection);
    QVERIFY(vm.send(kQuestion));
    QVERIFY(finished.wait(60000));
    disconnect(c);
    engine_->worker()->batchIntervalMs = 16;
    const auto& reply = vm.messages()->at(1).message;
    QCOMPARE(reply.stats.stopReason, QString("cancelled"));
    QVERIFY(!reply.content.isEmpty());
    QVERIFY2(kSalmon.startsWith(reply.content), qPrintable(reply.content));
    QVERIFY(reply.content.size() < kSalmon.size());
    // Stored as it was shown.
    QCOMPARE(vm.store()->messages(vm.currentConversationId()).back().content, reply.content);
  }

  // A damaged copy of the pack (one flipped byte in each of layer 0's experts, sizes unchanged):
  // with the studio's default settings the reply stops with an error naming experts.bin and the
  // expert; with verify_pack_sha256 off the same copy answers, so the setting is what caught it.
  void aDamagedPackStopsTheReplyByDefault() {
    const QString copy = dir_.filePath(QStringLiteral("damaged"));
    QVERIFY(QDir().mkpath(copy));
    for (const QString& f : QDir(engine_->modelPath()).entryList(QDir::Files)) {
      QVERIFY(QFile::copy(engine_->modelPath() + "/" + f, copy + "/" + f));
      QFile::setPermissions(copy + "/" + f, QFile::ReadOwner | QFile::WriteOwner);
    }
    {
      const moepack::ExpertPack pack = moepack::ExpertPack::open(copy.toStdString());
      QFile bin(QString::fromStdString(pack.experts_path()));
      QVERIFY(bin.open(QIODevice::ReadWrite));
      for (uint32_t e = 0; e < pack.layout().layers.front().n_experts; ++e) {
        QVERIFY(bin.seek(static_cast<qint64>(pack.expert_offset(0, e)) + 100));
        char b = 0;
        QVERIFY(bin.getChar(&b));
        QVERIFY(bin.seek(static_cast<qint64>(pack.expert_offset(0, e)) + 100));
        QVERIFY(bin.putChar(static_cast<char>(b ^ 0x5a)));
      }
    }
    SettingsViewModel settings;  // the studio's defaults (initTestCase)
    QVERIFY(settings.values().value(QStringLiteral("verify_pack_sha256")).toBool());
    for (const bool verify : {true, false}) {
      moepack::EngineSettings es = settings.engineSettings();
      es.backend = "cpu";
      es.direct_io = false;  // the temporary folder's file system may lack O_DIRECT
      es.cache_vram_mib = 4;
      es.cache_vram_reserve_mib = 0;
      es.verify_pack_sha256 = verify;
      if (verify) QCOMPARE(es.verify_pack_sha256, settings.engineSettings().verify_pack_sha256);
      EngineController e(&open_session_engine, dir_.filePath(QStringLiteral("packs5")));
      e.setEngineSettings(es);
      e.load(copy, true);
      QTRY_VERIFY_WITH_TIMEOUT(e.state() != EngineController::Loading, 60000);
      QVERIFY2(e.state() == EngineController::Ready, qPrintable(e.error()));
      ChatViewModel vm;
      QVERIFY(vm.openDatabase(dir_.filePath(QStringLiteral("damaged.sqlite"))));
      vm.setEngine(&e);
      vm.setSamplingValue("temperature", 0);
      vm.setSamplingValue("max_tokens", 8);
      QSignalSpy finished(&vm, &ChatViewModel::replyFinished);
      QSignalSpy failed(&e, &EngineController::generationFailed);
      QVERIFY(vm.send(kQuestion));
      QTRY_VERIFY_WITH_TIMEOUT(!vm.generating(), 60000);
      if (verify) {
        QCOMPARE(failed.size(), 1);
        const QString err = vm.lastError();
        QVERIFY2(err.contains(QStringLiteral("experts.bin")) && err.contains(QStringLiteral("of layer 0")) &&
                     err.contains(QStringLiteral("fails its SHA-256 check")),
                 qPrintable(err));
      } else {
        QCOMPARE(failed.size(), 0);
        QCOMPARE(vm.lastError(), QString());
      }
    }
  }

  // An Ollama model (manifest and blob without a ".gguf" suffix) is converted as a GGUF file is,
  // into a pack named after the model and tag; a file named *.gguf that is not one is not.
  void anOllamaModelIsConvertedToo() {
    const test::OllamaStore store = test::make_ollama_store(dir_.filePath(QStringLiteral("ollama")), kQwen,
                                                            QStringLiteral("tiny"), QStringLiteral("q4"));
    QVERIFY(!store.blob.isEmpty());
    QCOMPARE(QFileInfo(store.blob).fileName(), QStringLiteral("sha256-") + kQwenSha);  // fixtures/SHA256SUMS
    const QString blob = store.blob, manifest = store.manifest;
    EngineController e(&open_session_engine, dir_.filePath(QStringLiteral("packs3")));
    e.setEngineSettings(smallCache());
    e.load(manifest, true);
    QTRY_VERIFY_WITH_TIMEOUT(e.state() != EngineController::Loading, 180000);
    QVERIFY2(e.state() == EngineController::Ready, qPrintable(e.error()));
    QVERIFY(e.info().isPack);
    QCOMPARE(QFileInfo(e.modelPath()).canonicalFilePath(),
             QFileInfo(dir_.filePath(QStringLiteral("packs3/tiny-q4"))).canonicalFilePath());
    QCOMPARE(e.info().topK, 2u);  // fixtures/README.md, qwen3moe-tiny: 8 experts, top-2

    // The pack serves its source under any folder name (an earlier build's naming): nothing is
    // converted again.
    const QString renamed = dir_.filePath(QStringLiteral("packs3/named-by-an-older-build"));
    // Unloads, gives the blob a modification time `seconds` from now, loads the manifest again.
    const auto reloadWithTheBlobTouched = [&](int seconds) {
      e.unload();
      QTRY_VERIFY_WITH_TIMEOUT(e.state() == EngineController::Empty, 10000);
      {
        QFile b(blob);
        QVERIFY(b.open(QIODevice::ReadWrite));
        QVERIFY(b.setFileTime(QDateTime::currentDateTimeUtc().addSecs(seconds),
                              QFileDevice::FileModificationTime));
      }
      e.load(manifest, true);
      QTRY_VERIFY_WITH_TIMEOUT(e.state() != EngineController::Loading, 180000);
    };
    e.unload();
    QTRY_VERIFY_WITH_TIMEOUT(e.state() == EngineController::Empty, 10000);
    QVERIFY(QDir().rename(dir_.filePath(QStringLiteral("packs3/tiny-q4")), renamed));
    e.load(manifest, true);
    QTRY_VERIFY_WITH_TIMEOUT(e.state() != EngineController::Loading, 180000);
    QVERIFY2(e.state() == EngineController::Ready, qPrintable(e.error()));
    QCOMPARE(QFileInfo(e.modelPath()).canonicalFilePath(), QFileInfo(renamed).canonicalFilePath());
    QVERIFY(!QFileInfo::exists(dir_.filePath(QStringLiteral("packs3/tiny-q4"))));
    // The source changed since (a new modification time): that pack is not its pack any more,
    // so a new one is built under the model's name, and the old one is left as it was.
    reloadWithTheBlobTouched(60);
    QVERIFY2(e.state() == EngineController::Ready, qPrintable(e.error()));
    QCOMPARE(QFileInfo(e.modelPath()).canonicalFilePath(),
             QFileInfo(dir_.filePath(QStringLiteral("packs3/tiny-q4"))).canonicalFilePath());
    QVERIFY(QFileInfo::exists(renamed + QStringLiteral("/manifest.json")));
    // Changed once more: both packs are of earlier versions; the one under the model's name is
    // kept, and the message says what to do in the studio (not the CLI's --overwrite).
    reloadWithTheBlobTouched(120);
    QCOMPARE(e.state(), EngineController::Failed);
    QVERIFY2(e.error().contains(QStringLiteral("packs3/tiny-q4 already holds a finished Expert Pack")) &&
                 e.error().contains(QStringLiteral("Remove it in the Library")) &&
                 !e.error().contains(QStringLiteral("--overwrite")),
             qPrintable(e.error()));
    QVERIFY(QFileInfo::exists(dir_.filePath(QStringLiteral("packs3/tiny-q4/manifest.json"))));

    // A model kept where its own pack would go (the packs folder's <name>/dense.gguf) is refused
    // before anything is written, in the studio's words (no CLI output directory to choose).
    QVERIFY(QDir().mkpath(dir_.filePath(QStringLiteral("packs5/dense"))));
    const QString inPlace = dir_.filePath(QStringLiteral("packs5/dense/dense.gguf"));
    QVERIFY(QFile::copy(kDemo, inPlace));
    const qint64 size = QFileInfo(inPlace).size();
    EngineController g(&open_session_engine, dir_.filePath(QStringLiteral("packs5")));
    g.load(inPlace, true);
    QTRY_VERIFY_WITH_TIMEOUT(g.state() != EngineController::Loading, 60000);
    QCOMPARE(g.state(), EngineController::Failed);
    QVERIFY2(g.error().contains(QStringLiteral("dense.gguf is the source model itself")) &&
                 g.error().contains(QStringLiteral("Expert Pack folder in the Settings")) &&
                 !g.error().contains(QStringLiteral("output directory")),
             qPrintable(g.error()));
    QCOMPARE(QFileInfo(inPlace).size(), size);

    QFile fake(dir_.filePath(QStringLiteral("fake.gguf")));
    QVERIFY(fake.open(QIODevice::WriteOnly));
    fake.write("PK\x03\x04 not a model");
    fake.close();
    EngineController f(&open_session_engine, dir_.filePath(QStringLiteral("packs4")));
    f.load(fake.fileName(), true);
    QTRY_VERIFY_WITH_TIMEOUT(f.state() != EngineController::Loading, 10000);
    QCOMPARE(f.state(), EngineController::Failed);
    QVERIFY2(f.error().contains(QStringLiteral("fake.gguf")), qPrintable(f.error()));
    QVERIFY(!QFileInfo::exists(dir_.filePath(QStringLiteral("packs4/fake"))));  // nothing was built
  }

  // Two models with one file name (the same demo GGUF in two folders, as two checkouts have it):
  // the first's pack holds the name, so the second converts into "<name>-2" and loads, and the
  // first's pack is left as it was; loading either again finds its own pack.
  void anotherModelsPackUnderTheNameGivesTheNextName() {
    const QString packs = dir_.filePath(QStringLiteral("packs5"));
    QVERIFY(QDir().mkpath(dir_.filePath(QStringLiteral("a"))) &&
            QDir().mkpath(dir_.filePath(QStringLiteral("b"))));
    const QString first = dir_.filePath(QStringLiteral("a/tiny.gguf")),
                  second = dir_.filePath(QStringLiteral("b/tiny.gguf"));
    QVERIFY(QFile::copy(kQwen, first) && QFile::copy(kQwen, second));
    EngineController e(&open_session_engine, packs);
    e.setEngineSettings(smallCache());
    const auto loads = [&](const QString& model, const QString& pack) {
      e.load(model, true);
      QTRY_VERIFY_WITH_TIMEOUT(e.state() != EngineController::Loading, 180000);
      QVERIFY2(e.state() == EngineController::Ready, qPrintable(e.error()));
      QCOMPARE(QFileInfo(e.modelPath()).canonicalFilePath(), QFileInfo(pack).canonicalFilePath());
      e.unload();
      QTRY_VERIFY_WITH_TIMEOUT(e.state() == EngineController::Empty, 10000);
    };
    loads(first, packs + QStringLiteral("/tiny"));
    const QByteArray firstManifest = [&] {
      QFile m(packs + QStringLiteral("/tiny/manifest.json"));
      return m.open(QIODevice::ReadOnly) ? m.readAll() : QByteArray();
    }();
    QVERIFY(!firstManifest.isEmpty());
    loads(second, packs + QStringLiteral("/tiny-2"));
    loads(first, packs + QStringLiteral("/tiny"));
    loads(second, packs + QStringLiteral("/tiny-2"));
    QFile m(packs + QStringLiteral("/tiny/manifest.json"));
    QVERIFY(m.open(QIODevice::ReadOnly));
    QCOMPARE(m.readAll(), firstManifest);

    // Another source's interrupted build under the name (its build-state.json names another
    // plan, no manifest): kept as it is, the model goes to the next name.
    const QString otherPacks = dir_.filePath(QStringLiteral("packs6"));
    QVERIFY(QDir().mkpath(otherPacks + QStringLiteral("/tiny")));
    const QByteArray state =
        R"({"format":"moepack-build-state","version":1,"plan_id":"another-plan","build_id":"0123456789abcdef0123456789abcdef"})";
    for (const auto& [name, bytes] : {std::pair{QStringLiteral("build-state.json"), state},
                                      std::pair{QStringLiteral("experts.bin"), QByteArray(8192, 'x')}}) {
      QFile f(otherPacks + QStringLiteral("/tiny/") + name);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(bytes);
    }
    EngineController other(&open_session_engine, otherPacks);
    other.setEngineSettings(smallCache());
    other.load(first, true);
    QTRY_VERIFY_WITH_TIMEOUT(other.state() != EngineController::Loading, 180000);
    QVERIFY2(other.state() == EngineController::Ready, qPrintable(other.error()));
    QCOMPARE(QFileInfo(other.modelPath()).canonicalFilePath(),
             QFileInfo(otherPacks + QStringLiteral("/tiny-2")).canonicalFilePath());
    QFile kept(otherPacks + QStringLiteral("/tiny/build-state.json"));
    QVERIFY(kept.open(QIODevice::ReadOnly));
    QCOMPARE(kept.readAll(), state);
    QCOMPARE(QFileInfo(otherPacks + QStringLiteral("/tiny/experts.bin")).size(), 8192);
  }

  void aBadModelIsAMessageNotACrash() {
    EngineController e(&open_session_engine, dir_.filePath("packs2"));
    e.load(dir_.filePath("missing.gguf"), true);
    QTRY_VERIFY_WITH_TIMEOUT(e.state() != EngineController::Loading, 10000);
    QCOMPARE(e.state(), EngineController::Failed);
    QVERIFY2(e.error().contains("missing.gguf"), qPrintable(e.error()));
  }
};

QTEST_GUILESS_MAIN(ChatEngineTest)
#include "chat_engine_test.moc"
