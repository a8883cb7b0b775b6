// EngineController / EngineWorker round trips (QSignalSpy) and ChatViewModel over a scripted
// engine: send, stream, stop, regenerate, edit and re-run, persistence, list models checked by
// QAbstractItemModelTester. The real engine is exercised in chat_engine_test.cpp.
#include "ui/chat_view_model.h"

#include <QAbstractItemModelTester>
#include <QFile>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "fake_chat_engine.h"
#include "ui/conversation_store.h"
#include "ui/engine_worker.h"
#include "ui/save_location.h"

using namespace moepack::ui;
using moepack::ui::test::FakeScript;

namespace {
bool loadAndWait(EngineController& e, const QString& path) {
  QSignalSpy st(&e, &EngineController::stateChanged);
  e.load(path, false);
  const bool ok = QTest::qWaitFor(
      [&] { return e.state() == EngineController::Ready || e.state() == EngineController::Failed; }, 10000);
  if (!ok) qWarning() << "engine state" << e.state() << e.error();
  return ok;
}
}  // namespace

class ChatViewModelTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    // QSettings (the model loaded last) in a test folder, not the user's.
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("MoePackTest"));
    QCoreApplication::setApplicationName(QStringLiteral("chat_view_model_test"));
    QSettings().clear();
  }
  void workerStreamsInBatchesAndFinishes() {
    FakeScript script;
    script.extra_tokens = 200;
    script.token_delay_ms = 1;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "model.gguf"));
    QCOMPARE(e.state(), EngineController::Ready);
    QVERIFY(e.telemetry() != nullptr);
    QSignalSpy text(&e, &EngineController::textReady);
    QSignalSpy done(&e, &EngineController::generationFinished);
    QElapsedTimer t;
    t.start();
    GenerationSettings g;
    g.max_tokens = 1000;
    const quint64 id = e.generate({{"user", "hi"}}, g);
    QVERIFY(id != 0);
    QVERIFY(e.generating());
    QCOMPARE(e.generate({{"user", "again"}}, g), quint64(0));  // one at a time
    QVERIFY(done.wait(20000));
    const qint64 ms = t.elapsed();
    QString streamed;
    for (const auto& args : text) {
      QCOMPARE(args.at(0).toULongLong(), id);
      streamed += args.at(1).toString();
    }
    const auto reply = done.at(0).at(0).value<GenerationReply>();
    QCOMPARE(reply.id, id);
    QCOMPARE(streamed, reply.text);
    QVERIFY(reply.text.startsWith("echo: hi w1.0 w1.1"));
    QCOMPARE(reply.stats.generatedTokens, 202);
    QCOMPARE(reply.stats.stopReason, QString("eos"));
    // 202 tokens >= 1 ms apart: at most one signal per 16 ms (+ the final flush).
    QVERIFY2(text.size() <= ms / 16 + 2, qPrintable(QString("%1 signals in %2 ms").arg(text.size()).arg(ms)));
    QVERIFY(text.size() < 202);
    QVERIFY(!e.generating());
    QCOMPARE(e.telemetry()->snapshot().tokens, uint64_t(202));
  }

  void stopEndsTheGenerationEarly() {
    FakeScript script;
    script.extra_tokens = 1000;
    script.token_delay_ms = 5;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "model.gguf"));
    QSignalSpy text(&e, &EngineController::textReady);
    QSignalSpy done(&e, &EngineController::generationFinished);
    GenerationSettings g;
    g.max_tokens = 2000;
    e.generate({{"user", "hi"}}, g);
    QVERIFY(text.wait(5000));
    e.stop();
    QVERIFY(done.wait(5000));
    const auto reply = done.at(0).at(0).value<GenerationReply>();
    QCOMPARE(reply.stats.stopReason, QString("cancelled"));
    QVERIFY(reply.stats.generatedTokens < 1000);
  }

  void loadErrorsAreMessagesAndReloadRecovers() {
    FakeScript script;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "/models/bad.gguf"));
    QCOMPARE(e.state(), EngineController::Failed);
    QVERIFY(e.error().contains("/models/bad.gguf: not a model"));
    QCOMPARE(e.generate({{"user", "x"}}, {}), quint64(0));
    QVERIFY(loadAndWait(e, "/models/good.gguf"));
    QCOMPARE(e.state(), EngineController::Ready);
    QSignalSpy failed(&e, &EngineController::generationFailed);
    e.generate({{"user", "fail"}}, {});
    QVERIFY(failed.wait(5000));
    QCOMPARE(failed.at(0).at(1).toString(), QString("scripted failure"));
    QSignalSpy st(&e, &EngineController::modelLoaded);
    e.reload();
    QVERIFY(st.wait(5000));
  }

  void chatSendRegenerateEditPersist() {
    QTemporaryDir dir;
    const QString dbPath = dir.filePath("chat.sqlite");
    FakeScript script;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "model.gguf"));
    qint64 conv = 0;
    {
      ChatViewModel vm;
      QAbstractItemModelTester t1(vm.messages(), QAbstractItemModelTester::FailureReportingMode::QtTest);
      QAbstractItemModelTester t2(vm.conversations(), QAbstractItemModelTester::FailureReportingMode::QtTest);
      QVERIFY(vm.openDatabase(dbPath));
      vm.setEngine(&e);
      QVERIFY(vm.canSend());
      vm.setSystemPrompt("Be brief.");
      vm.setSamplingValue("temperature", 0.0);
      vm.setSamplingValue("top_k", 1);
      QSignalSpy finished(&vm, &ChatViewModel::replyFinished);
      QVERIFY(vm.send("What does \"salmon\" mean?"));
      QVERIFY(vm.generating());
      QVERIFY(!vm.canSend());
      QVERIFY(!vm.send("second"));
      QVERIFY(finished.wait(5000));
      QCOMPARE(vm.lastError(), QString());
      QCOMPARE(vm.messages()->count(), 2);
      const auto& reply = vm.messages()->at(1);
      QCOMPARE(reply.message.content, QString("echo: What does \"salmon\" mean? w1.0 w1.1 w1.2"));
      QCOMPARE(reply.message.stats.generatedTokens, 5);
      QVERIFY(!reply.streaming);
      QCOMPARE(vm.conversations()->count(), 1);
      QCOMPARE(vm.title(), QString("What does \"salmon\" mean?"));
      conv = vm.currentConversationId();

      QVERIFY(vm.regenerate());
      QVERIFY(finished.wait(5000));
      QCOMPARE(vm.messages()->count(), 2);
      QVERIFY(vm.messages()->at(1).message.content.endsWith("w2.2"));

      QVERIFY(vm.send("and trout?"));
      QVERIFY(finished.wait(5000));
      QCOMPARE(vm.messages()->count(), 4);
      QVERIFY(vm.editMessage(0, "What does \"cod\" mean?"));
      QVERIFY(finished.wait(5000));
      QCOMPARE(vm.messages()->count(), 2);
      QCOMPARE(vm.messages()->at(0).message.content, QString("What does \"cod\" mean?"));
      QVERIFY(vm.messages()->at(1).message.content.startsWith("echo: What does \"cod\" mean?"));
      QVERIFY(!vm.editMessage(1, "assistant rows are not editable"));

      QVERIFY(vm.send("fail"));
      QVERIFY(finished.wait(5000));
      QCOMPARE(vm.lastError(), QString("scripted failure"));
      QCOMPARE(vm.messages()->at(3).error, QString("scripted failure"));
      QVERIFY(vm.lastErrorInReply());  // shown in the bubble, not again below it
      const qint64 failedIn = vm.currentConversationId();
      vm.newConversation();  // the failed reply (never stored) and its error stay behind
      QCOMPARE(vm.lastError(), QString());
      QVERIFY(!vm.lastErrorInReply());
      vm.selectConversation(failedIn);
      QCOMPARE(vm.lastError(), QString());
    }
    // Reload from SQLite: the failed reply was not stored, everything else was.
    ChatViewModel vm2;
    QVERIFY(vm2.openDatabase(dbPath));
    QCOMPARE(vm2.currentConversationId(), conv);
    QCOMPARE(vm2.systemPrompt(), QString("Be brief."));
    QCOMPARE(vm2.sampling().value("temperature").toDouble(), 0.0);
    QCOMPARE(vm2.sampling().value("top_k").toInt(), 1);
    QCOMPARE(vm2.messages()->count(), 3);
    QCOMPARE(vm2.messages()->at(1).message.stats.stopReason, QString("eos"));
    QCOMPARE(vm2.messages()->at(2).message.content, QString("fail"));

    vm2.renameConversation(conv, "Fish");
    QCOMPARE(vm2.title(), QString("Fish"));
    // Export: the dialog suggests the title as a file name in the documents folder (else home);
    // the file written at a chosen URL holds the conversation.
    const QUrl suggested = vm2.suggestedExportFile("md");
    QVERIFY(suggested.isLocalFile());
    QCOMPARE(QFileInfo(suggested.toLocalFile()).fileName(), QString("Fish.md"));
    QCOMPARE(QFileInfo(vm2.suggestedExportFile("json").toLocalFile()).fileName(), QString("Fish.json"));
    vm2.renameConversation(conv, "What is 50% of a/b? #1");
    QCOMPARE(QFileInfo(vm2.suggestedExportFile("md").toLocalFile()).fileName(),
             QString("What is 50 of a b 1.md"));
    QCOMPARE(moepack::ui::export_file_stem(QStringLiteral("..\\t../x")), QString("t.. x"));  // no leading dot
    QCOMPARE(moepack::ui::export_file_stem(QStringLiteral(" ?*: ")), QString("export"));
    QCOMPARE(moepack::ui::export_file_stem(QString(100, QLatin1Char('a'))), QString(80, QLatin1Char('a')));
    // An emoji (two UTF-16 units) across the 80th unit is dropped whole, not halved.
    QCOMPARE(
        moepack::ui::export_file_stem(QString(79, QLatin1Char('a')) + QString::fromUtf8("\xF0\x9F\x90\x9F")),
        QString(79, QLatin1Char('a')));
    const QString exported = dir.filePath("exported.md");
    QCOMPARE(vm2.exportConversation(QUrl::fromLocalFile(exported), "md"), QString());
    QFile md(exported);
    QVERIFY(md.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(md.readAll());
    QVERIFY2(text.contains(QStringLiteral("What does \"cod\" mean?")) &&
                 text.contains(QStringLiteral("Be brief.")),
             qPrintable(text));
    QVERIFY(vm2.exportConversation(QUrl::fromLocalFile(dir.filePath("missing/dir/x.md")), "md")
                .contains("missing/dir"));
    vm2.renameConversation(conv, "Fish");
    vm2.newConversation();
    QCOMPARE(vm2.currentConversationId(), qint64(0));
    QCOMPARE(vm2.messages()->count(), 0);
    vm2.deleteConversation(conv);
    QCOMPARE(vm2.conversations()->count(), 0);
  }

  // A conversation stays with its model: loading another one starts a new chat (the old one is
  // kept in the list), reloading the same one keeps the conversation open.
  void anotherModelStartsANewChat() {
    QTemporaryDir dir;
    FakeScript script;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "a.gguf"));
    ChatViewModel vm;
    QVERIFY(vm.openDatabase(dir.filePath("c.sqlite")));
    vm.setEngine(&e);
    QSignalSpy finished(&vm, &ChatViewModel::replyFinished);
    QVERIFY(vm.send("hi"));
    QVERIFY(finished.wait(5000));
    const qint64 first = vm.currentConversationId();
    QVERIFY(first != 0);
    QCOMPARE(vm.store()->conversation(first)->modelPath, QString("a.gguf"));
    QSignalSpy loaded(&e, &EngineController::modelLoaded);
    e.reload();
    QVERIFY(loaded.wait(5000));
    QCOMPARE(vm.currentConversationId(), first);
    QCOMPARE(vm.messages()->count(), 2);
    e.load("b.gguf", false);
    QVERIFY(loaded.wait(5000));
    QCOMPARE(vm.currentConversationId(), qint64(0));
    QCOMPARE(vm.messages()->count(), 0);
    QCOMPARE(vm.conversations()->count(), 1);
    QVERIFY(vm.send("hello b"));
    QVERIFY(finished.wait(5000));
    QVERIFY(vm.currentConversationId() != first);
    QCOMPARE(vm.store()->conversation(vm.currentConversationId())->modelPath, QString("b.gguf"));
    QCOMPARE(vm.conversations()->count(), 2);
    // The first conversation opened while b is loaded says so, and loading its model (the
    // banner's offer) keeps it open.
    QSignalSpy match(&vm, &ChatViewModel::modelMatchChanged);
    vm.selectConversation(first);
    QVERIFY(vm.otherModelLoaded());
    QCOMPARE(vm.conversationModelPath(), QString("a.gguf"));
    QVERIFY(!match.isEmpty());
    e.load("a.gguf", false);
    QVERIFY(loaded.wait(5000));
    QCOMPARE(vm.currentConversationId(), first);
    QVERIFY(!vm.otherModelLoaded());
    e.load("b.gguf", false);  // from a to b with a's conversation open: a new chat
    QVERIFY(loaded.wait(5000));
    QCOMPARE(vm.currentConversationId(), qint64(0));
    QVERIFY(!vm.otherModelLoaded());
    // Going on with the first conversation on b makes b its model; then a reload of b
    // (settings applied): kept.
    vm.selectConversation(first);
    QVERIFY(vm.otherModelLoaded());
    QVERIFY(vm.send("still here"));
    QVERIFY(!vm.otherModelLoaded());
    QVERIFY(finished.wait(5000));
    QCOMPARE(vm.store()->conversation(first)->modelPath, QString("b.gguf"));
    QCOMPARE(vm.conversationModelPath(), QString("b.gguf"));
    e.reload();
    QVERIFY(loaded.wait(5000));
    QCOMPARE(vm.currentConversationId(), first);
    // A conversation held with a GGUF is the pack's it converts into: loading the GGUF (opened
    // as its pack) keeps it, with no banner, and the pack becomes its model.
    script.convert = true;
    e.load("b.gguf", false);  // opens as "b-pack"
    QVERIFY(loaded.wait(5000));
    QCOMPARE(e.modelPath(), QString("b-pack"));
    QCOMPARE(vm.currentConversationId(), first);
    QVERIFY(!vm.otherModelLoaded());
    QCOMPARE(vm.store()->conversation(first)->modelPath, QString("b-pack"));
    // One whose model is gone says so: no offer to load it.
    vm.store()->setModelPath(first, dir.filePath("deleted.gguf"));
    vm.selectConversation(0);
    vm.newConversation();
    vm.selectConversation(first);
    QVERIFY(vm.otherModelLoaded());
    QVERIFY(!vm.conversationModelAvailable());
    script.convert = false;
    // A new view-model (a restart reopening its conversation) keeps it on the first load.
    ChatViewModel restarted;
    QVERIFY(restarted.openDatabase(dir.filePath("c.sqlite")));
    restarted.selectConversation(first);
    e.load("a.gguf", false);
    restarted.setEngine(&e);
    QVERIFY(loaded.wait(5000));
    QCOMPARE(restarted.currentConversationId(), first);
  }

  void stopKeepsThePartialReply() {
    QTemporaryDir dir;
    FakeScript script;
    script.extra_tokens = 1000;
    script.token_delay_ms = 5;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "model.gguf"));
    ChatViewModel vm;
    QVERIFY(vm.openDatabase(dir.filePath("c.sqlite")));
    vm.setEngine(&e);
    QSignalSpy finished(&vm, &ChatViewModel::replyFinished);
    QVERIFY(vm.send("long"));
    QTRY_VERIFY_WITH_TIMEOUT(vm.messages()->at(1).message.content.size() > 12, 5000);
    QVERIFY(vm.messages()->at(1).streaming);
    vm.stop();
    QVERIFY(finished.wait(5000));
    QCOMPARE(vm.messages()->count(), 2);
    QCOMPARE(vm.messages()->at(1).message.stats.stopReason, QString("cancelled"));
    QCOMPARE(vm.store()->messages(vm.currentConversationId()).size(), size_t(2));
    QVERIFY(vm.canSend());
  }
  // Leaving the conversation whose reply streams and coming back before it ends: the reply
  // goes on into its own row, never into the user's question; deleting that conversation
  // drops the reply without an error.
  void aReplyEndingWhileItsConversationIsLeftOrDeleted() {
    QTemporaryDir dir;
    FakeScript script;
    script.extra_tokens = 1000;
    script.token_delay_ms = 150;  // stop() takes effect at the next word: a window to come back in
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "model.gguf"));
    ChatViewModel vm;
    QVERIFY(vm.openDatabase(dir.filePath("c.sqlite")));
    vm.setEngine(&e);
    QSignalSpy finished(&vm, &ChatViewModel::replyFinished);
    QVERIFY(vm.send("question A"));
    const qint64 a = vm.currentConversationId();
    QTRY_VERIFY_WITH_TIMEOUT(!vm.messages()->at(1).message.content.isEmpty(), 5000);
    const qint64 b = vm.store()->createConversation("B");
    vm.selectConversation(b);
    vm.selectConversation(a);  // the reply goes on meanwhile
    QCOMPARE(vm.messages()->count(), 2);
    QVERIFY(vm.messages()->at(1).streaming);
    QVERIFY(vm.generating());
    vm.stop();
    QVERIFY(finished.wait(5000));
    QCOMPARE(vm.messages()->count(), 2);
    QCOMPARE(vm.messages()->at(0).message.role, QString("user"));
    QCOMPARE(vm.messages()->at(0).message.content, QString("question A"));
    QCOMPARE(vm.messages()->at(1).message.role, QString("assistant"));
    QVERIFY(vm.messages()->at(1).message.content.startsWith("echo: question A"));
    QCOMPARE(vm.messages()->at(1).message.content, vm.store()->messages(a).at(1).content);
    QVERIFY(!vm.messages()->at(1).streaming);

    // Deleted while its reply ends: no error, nothing stored, the app can send again.
    QVERIFY(vm.send("question A2"));
    QTRY_VERIFY_WITH_TIMEOUT(!vm.messages()->at(3).message.content.isEmpty(), 5000);
    vm.deleteConversation(a);
    QVERIFY(finished.wait(5000));
    QVERIFY2(vm.lastError().isEmpty(), qPrintable(vm.lastError()));
    QVERIFY(!vm.store()->conversation(a));
    QVERIFY(vm.canSend());
  }

  // Closing the studio while a reply is written (the view model goes before the engine's last
  // words arrive) keeps what was written, stored as a stopped reply, as Stop does (a break-test
  // found the partial reply lost on Ctrl+Q).
  void closingMidReplyKeepsWhatWasWritten() {
    QTemporaryDir dir;
    FakeScript script;
    script.extra_tokens = 1000;
    script.token_delay_ms = 20;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "model.gguf"));
    qint64 conv = 0;
    QString shown;
    {
      ChatViewModel vm;
      QVERIFY(vm.openDatabase(dir.filePath("c.sqlite")));
      vm.setEngine(&e);
      QVERIFY(vm.send("question"));
      conv = vm.currentConversationId();
      QTRY_VERIFY_WITH_TIMEOUT(vm.messages()->at(1).message.content.size() > 20, 5000);
      QVERIFY(vm.generating());
      shown = vm.messages()->at(1).message.content;
    }  // closed mid-reply
    ChatViewModel again;
    QVERIFY(again.openDatabase(dir.filePath("c.sqlite")));
    const auto stored = again.store()->messages(conv);
    QCOMPARE(stored.size(), 2);
    QCOMPARE(stored.at(1).role, QString("assistant"));
    QVERIFY2(stored.at(1).content.startsWith(shown), qPrintable(stored.at(1).content));
    QCOMPARE(stored.at(1).stats.stopReason, QString("cancelled"));
    QSignalSpy done(&e, &EngineController::generationFinished);  // the engine stops too
    QVERIFY(done.wait(5000) || !e.generating());
  }

  // Switching conversations while a reply is written does not stop it (LM Studio's way): it
  // ends on its own into its conversation (SQLite), whole; the conversation read meanwhile has
  // no Stop of its own and refuses to send, regenerate or edit (one engine) without storing
  // anything; going back shows the reply streaming, then finished.
  void aReplyGoesOnWhileAnotherConversationIsRead() {
    QTemporaryDir dir;
    FakeScript script;
    script.extra_tokens = 40;
    script.token_delay_ms = 25;  // about a second
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "model.gguf"));
    ChatViewModel vm;
    QVERIFY(vm.openDatabase(dir.filePath("c.sqlite")));
    vm.setEngine(&e);
    const qint64 b = vm.store()->createConversation("B");
    vm.store()->appendMessage(b, "user", "question B");
    vm.store()->appendMessage(b, "assistant", "answer B");
    QSignalSpy finished(&vm, &ChatViewModel::replyFinished);
    QVERIFY(vm.send("question A"));
    const qint64 a = vm.currentConversationId();
    QVERIFY(vm.generating() && vm.replying() && !vm.replyElsewhere());
    QTRY_VERIFY_WITH_TIMEOUT(!vm.messages()->at(1).message.content.isEmpty(), 5000);

    vm.selectConversation(b);
    QCOMPARE(vm.currentConversationId(), b);
    QVERIFY(!vm.generating());  // no Stop here
    QVERIFY(vm.replying() && vm.replyElsewhere());
    QCOMPARE(vm.replyConversationId(), a);
    QCOMPARE(vm.replyConversationTitle(), QString("question A"));
    QCOMPARE(vm.messages()->count(), 2);
    QVERIFY(!vm.canSend());
    QVERIFY(!vm.send("question B2"));  // refused: nothing stored, nothing started
    QVERIFY(!vm.regenerate());
    QVERIFY(!vm.editMessage(0, "question B edited"));
    QCOMPARE(vm.store()->messages(b).size(), size_t(2));
    QCOMPARE(vm.store()->messages(b).at(1).content, QString("answer B"));
    QCOMPARE(vm.messages()->count(), 2);
    QVERIFY(!vm.messages()->at(1).streaming);
    QCOMPARE(script.replies.load(), 1);
    // A new chat meanwhile: the reply goes on too.
    vm.newConversation();
    QVERIFY(!vm.generating() && vm.replyElsewhere());
    QCOMPARE(vm.messages()->count(), 0);

    // Back: the reply streams on in its row.
    vm.selectConversation(a);
    QVERIFY(vm.generating() && !vm.replyElsewhere());
    QCOMPARE(vm.messages()->count(), 2);
    QVERIFY(vm.messages()->at(1).streaming);
    const qsizetype sofar = vm.messages()->at(1).message.content.size();
    QTRY_VERIFY_WITH_TIMEOUT(vm.messages()->at(1).message.content.size() > sofar, 5000);
    // ... and away again until it ends: stored whole in its own conversation, not stopped.
    vm.selectConversation(b);
    QVERIFY(finished.wait(10000));
    QCOMPARE(finished.size(), 1);
    QVERIFY(!vm.replying() && !vm.replyElsewhere());
    QVERIFY(vm.canSend());
    QCOMPARE(vm.messages()->count(), 2);
    QCOMPARE(vm.messages()->at(1).message.content, QString("answer B"));
    const auto stored = vm.store()->messages(a);
    QCOMPARE(stored.size(), size_t(2));
    QVERIFY(stored.at(1).content.startsWith("echo: question A w1.0"));
    QVERIFY(stored.at(1).content.endsWith(" w1.39"));
    QCOMPARE(stored.at(1).stats.generatedTokens, 42);
    QCOMPARE(stored.at(1).stats.stopReason, QString("eos"));
    vm.selectConversation(a);
    QCOMPARE(vm.messages()->count(), 2);
    QVERIFY(!vm.messages()->at(1).streaming);
    QCOMPARE(vm.messages()->at(1).message.content, stored.at(1).content);
    // And B can be answered now.
    vm.selectConversation(b);
    QVERIFY(vm.send("question B2"));
    QVERIFY(finished.wait(10000));
    QCOMPARE(vm.store()->messages(b).size(), size_t(4));
  }

  // Without a model (none loaded, a failed load), a conversation held with a model that is still
  // there is offered it; after a failure, not the model that failed (Reload retries that);
  // regenerating is refused.
  void aFailedLoadOffersTheConversationsOwnModel() {
    QTemporaryDir dir;
    FakeScript script;
    EngineController e(test::fake_factory(script), QString());
    const QString own = dir.filePath("own.gguf");
    QFile(own).open(QIODevice::WriteOnly);
    ChatViewModel vm;
    QVERIFY(vm.openDatabase(dir.filePath("c.sqlite")));
    const qint64 c = vm.store()->createConversation("C", {}, {}, own);
    vm.store()->appendMessage(c, "user", "question");
    vm.store()->appendMessage(c, "assistant", "answer");
    const QString bad = dir.filePath("bad.gguf");
    QFile(bad).open(QIODevice::WriteOnly);
    const qint64 d = vm.store()->createConversation("D", {}, {}, bad);
    vm.setEngine(&e);
    vm.selectConversation(c);
    QVERIFY(vm.offerConversationModel());  // no model at all (Empty): its own is offered too
    QVERIFY(loadAndWait(e, bad));
    QCOMPARE(e.state(), EngineController::Failed);
    QVERIFY(vm.offerConversationModel());
    QVERIFY(!vm.canSend());
    QVERIFY(!vm.regenerate());
    QCOMPARE(vm.store()->messages(c).size(), size_t(2));
    vm.selectConversation(d);
    QVERIFY(!vm.offerConversationModel());  // its model is the one that failed
    vm.selectConversation(c);
    QVERIFY(loadAndWait(e, own));
    QCOMPARE(e.state(), EngineController::Ready);
    QCOMPARE(vm.currentConversationId(), c);
    QVERIFY(!vm.offerConversationModel());
    QVERIFY(vm.canSend());
  }

  // A sampling value that is not a finite number leaves the setting as it was.
  void aNonNumericSamplingValueIsIgnored() {
    QTemporaryDir dir;
    ChatViewModel vm;
    QVERIFY(vm.openDatabase(dir.filePath("c.sqlite")));
    const double t = vm.sampling().value("temperature").toDouble();
    vm.setSamplingValue("temperature", std::nan(""));
    QCOMPARE(vm.sampling().value("temperature").toDouble(), t);
    vm.setSamplingValue("max_tokens", QVariant(QString("1,000")));
    vm.setSamplingValue("seed", std::numeric_limits<double>::infinity());
    QVERIFY(std::isfinite(vm.sampling().value("max_tokens").toDouble()));
    QCOMPARE(vm.sampling().value("seed").toDouble(), -1.0);
    vm.setSamplingValue("temperature", 0.25);
    QCOMPARE(vm.sampling().value("temperature").toDouble(), 0.25);
  }

  // The model a load opened is the one the next start opens (QSettings); a path that is gone is
  // not offered.
  void theModelLoadedLastIsRemembered() {
    QTemporaryDir dir;
    const QString model = dir.filePath("remembered.gguf");
    QFile f(model);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    FakeScript script;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, model));
    QCOMPARE(EngineController::lastLoadedModel(), model);
    QVERIFY(loadAndWait(e, "/models/bad.gguf"));  // a failed load changes nothing
    QCOMPARE(EngineController::lastLoadedModel(), model);
    QVERIFY(QFile::remove(model));
    QCOMPARE(EngineController::lastLoadedModel(), QString());
  }

  void unloadFreesTheEngine() {
    FakeScript script;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "model.gguf"));
    QCOMPARE(script.alive.load(), 1);
    QVERIFY(e.telemetry() != nullptr);
    QSignalSpy unloaded(&e, &EngineController::unloaded);
    e.unload();
    QCOMPARE(e.state(), EngineController::Empty);
    QVERIFY(e.telemetry() == nullptr);
    QVERIFY(unloaded.wait(5000));
    QCOMPARE(script.alive.load(), 0);  // nothing holds the engine any more
    QVERIFY(loadAndWait(e, "model.gguf"));  // reload() brings it back
    e.unload();
    QVERIFY(unloaded.wait(5000));
    e.reload();
    QTRY_COMPARE(e.state(), EngineController::Ready);
    QCOMPARE(script.alive.load(), 1);
  }

  // A load asked for while another is still opening wins: the older one's result is never
  // shown, and its engine is destroyed on the engine thread before the newer one opens (two
  // models never share the memory). The same for an unload.
  void aNewerLoadSupersedesOneStillOpening() {
    FakeScript script;
    std::atomic<bool> release{false};
    std::atomic<int> aliveAtSecondOpen{-1};
    QThread* engineThread = nullptr;
    ChatEngineFactory inner = test::fake_factory(script);
    ChatEngineFactory slow = [&](const QString& path, const moepack::EngineSettings& s) {
      if (path.contains(QLatin1String("slow"))) {
        engineThread = QThread::currentThread();
        while (!release.load()) QThread::msleep(5);
      } else {
        aliveAtSecondOpen = script.alive.load();
      }
      return inner(path, s);
    };
    EngineController e(slow, QString());
    QSignalSpy loadedSpy(&e, &EngineController::modelLoaded);
    e.load("/models/slow-A.gguf", false);
    QTRY_VERIFY(engineThread != nullptr);  // A is opening
    e.load("/models/B.gguf", false);
    release = true;
    QTRY_COMPARE(e.state(), EngineController::Ready);
    QCOMPARE(e.modelPath(), QString("/models/B.gguf"));
    QCOMPARE(aliveAtSecondOpen.load(), 0);  // A was gone before B opened
    QCOMPARE(script.alive.load(), 1);
    QTest::qWait(50);
    QCOMPARE(loadedSpy.count(), 1);  // only B was announced
    QCOMPARE(e.modelPath(), QString("/models/B.gguf"));

    // A failing load superseded by another: its error is never shown.
    release = false;
    engineThread = nullptr;
    e.load("/models/slow-bad.gguf", false);
    QTRY_VERIFY(engineThread != nullptr);
    e.load("/models/C.gguf", false);
    release = true;
    QTRY_COMPARE(e.state(), EngineController::Ready);
    QCOMPARE(e.modelPath(), QString("/models/C.gguf"));
    QVERIFY(e.error().isEmpty());

    // An unload while a load opens: the model is never shown and nothing stays in memory.
    release = false;
    engineThread = nullptr;
    QSignalSpy unloaded(&e, &EngineController::unloaded);
    e.load("/models/slow-D.gguf", false);
    QTRY_VERIFY(engineThread != nullptr);
    e.unload();
    release = true;
    QVERIFY(unloaded.wait(5000));
    QTest::qWait(50);
    QCOMPARE(e.state(), EngineController::Empty);
    QCOMPARE(script.alive.load(), 0);
  }

  // While a benchmark holds the memory, a load is only recorded ("waiting"); the release loads
  // the newest request.
  void loadsWaitWhileABenchmarkHoldsTheMemory() {
    FakeScript script;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "/models/A.gguf"));
    e.holdForBenchmark();
    QSignalSpy unloaded(&e, &EngineController::unloaded);
    e.dropModel();  // what the benchmark does
    QVERIFY(unloaded.wait(5000));
    e.load("/models/B.gguf", false);
    QCOMPARE(e.state(), EngineController::Loading);
    QCOMPARE(e.progressPhase(), QString("waiting"));
    QTest::qWait(50);
    QCOMPARE(script.alive.load(), 0);  // nothing opened during the hold
    e.releaseHold(true);
    QTRY_COMPARE(e.state(), EngineController::Ready);
    QCOMPARE(e.modelPath(), QString("/models/B.gguf"));
    // The user's own unload during a hold: neither the waiting load nor the benchmark's reload
    // brings a model back.
    e.holdForBenchmark();
    e.dropModel();
    QVERIFY(unloaded.wait(5000));
    e.load("/models/C.gguf", false);
    QCOMPARE(e.progressPhase(), QString("waiting"));
    e.unload();
    e.releaseHold(true);
    QTest::qWait(50);
    QCOMPARE(e.state(), EngineController::Empty);
    QCOMPARE(script.alive.load(), 0);
    // Nothing asked during a hold and no reload wanted: nothing loads.
    e.holdForBenchmark();
    e.dropModel();
    QVERIFY(unloaded.wait(5000));
    e.releaseHold(false);
    QTest::qWait(50);
    QCOMPARE(e.state(), EngineController::Empty);
    QCOMPARE(script.alive.load(), 0);
  }

  void theEngineThreadYieldsToTheUiThread() {
    FakeScript script;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "model.gguf"));
    const int ui = engineThreadNiceness();
    int engine = -100;
    QVERIFY(QMetaObject::invokeMethod(
        e.worker(), [&] { engine = engineThreadNiceness(); }, Qt::BlockingQueuedConnection));
#ifdef __linux__
    QCOMPARE(engine, std::min(19, ui + kEngineNiceIncrement));
    QCOMPARE(engineThreadNiceness(), ui);  // the UI thread is left alone
#endif
  }

  void aLostGpuOffersARestartThatReopensTheConversation() {
    QTemporaryDir dir;
    const QString dbPath = dir.filePath("chat.sqlite");
    FakeScript script;
    EngineController e(test::fake_factory(script), QString());
    QVERIFY(loadAndWait(e, "model.gguf"));
    qint64 older = 0, lost = 0;
    {
      ChatViewModel vm;
      QVERIFY(vm.openDatabase(dbPath));
      vm.setEngine(&e);
      QSignalSpy finished(&vm, &ChatViewModel::replyFinished);
      QVERIFY(vm.send("hello"));
      QVERIFY(finished.wait(5000));
      older = vm.currentConversationId();
      vm.newConversation();
      QSignalSpy lostSpy(&e, &EngineController::deviceLost);
      QVERIFY(vm.send("gpu-lost"));
      QVERIFY(lostSpy.wait(5000));
      lost = vm.currentConversationId();
      QVERIFY(lost != older && lost > 0);
      QCOMPARE(e.state(), EngineController::DeviceLost);
      QVERIFY(e.restartRequired());
      QVERIFY2(e.error().contains("illegal memory access"), qPrintable(e.error()));
      QVERIFY(e.telemetry() == nullptr);
      QTRY_VERIFY(!vm.generating());
      QVERIFY(!vm.canSend());
      // Nothing can bring the GPU back inside this process: load and generate are refused.
      e.load("model.gguf", false);
      QCOMPARE(e.state(), EngineController::DeviceLost);
      QCOMPARE(e.generate({{"user", "hi"}}, GenerationSettings{}), quint64(0));
      // The restart: this program again, with the conversation to reopen; then quit.
      QString program;
      QStringList args;
      int quits = 0;
      e.setRestarter(
          [&](const QString& p, const QStringList& a) {
            program = p;
            args = a;
            return true;
          },
          [&] { ++quits; });
      QVERIFY(e.restartApplication(lost));
      QCOMPARE(program, QCoreApplication::applicationFilePath());
      const qsizetype at = args.indexOf("--open-conversation");
      QVERIFY(at >= 0 && at + 1 < args.size());
      QCOMPARE(args.at(at + 1).toLongLong(), lost);
      QCOMPARE(args.count("--open-conversation"), 1);
      QCOMPARE(quits, 1);
      // A restarter that cannot start the process: no quit, a message.
      e.setRestarter([](const QString&, const QStringList&) { return false; }, [&] { ++quits; });
      QVERIFY(!e.restartApplication(lost));
      QCOMPARE(quits, 1);
      QVERIFY(e.error().contains("could not be restarted"));
    }
    // The restarted studio opens the database on the conversation it was given, not the most
    // recent one; an unknown id falls back to the most recent.
    for (const qint64 want : {older, lost}) {
      ChatViewModel vm;
      vm.setInitialConversation(want);
      QVERIFY(vm.openDatabase(dbPath));
      QCOMPARE(vm.currentConversationId(), want);
      QVERIFY(vm.messages()->count() >= 1);
    }
    ChatViewModel fallback;
    fallback.setInitialConversation(987654);
    QVERIFY(fallback.openDatabase(dbPath));
    QVERIFY(fallback.currentConversationId() == older || fallback.currentConversationId() == lost);
    QCOMPARE(fallback.currentConversationId(), fallback.conversations()->at(0).id);
  }
};

QTEST_MAIN(ChatViewModelTest)
#include "chat_view_model_test.moc"
