// ConversationStore: persistence across reopen, schema migration from version 1, cascade
// delete, truncation for edit/regenerate, and the Markdown / JSON exports (hand-checked text).
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include "core/error.h"
#include "ui/app_database.h"
#include "ui/conversation_store.h"
#include "ui/sampling_json.h"

using namespace moepack::ui;

class ConversationStoreTest : public QObject {
  Q_OBJECT
 private slots:
  void persistsAndReloads() {
    QTemporaryDir dir;
    const QString path = dir.filePath("db.sqlite");
    qint64 id = 0;
    {
      AppDatabase db(path);
      ConversationStore store(db);
      QCOMPARE(db.version("conversations"), 2);
      id = store.createConversation("Words", "Be brief.", QJsonObject{{"temperature", 0.0}}, "/m/x.gguf");
      store.appendMessage(id, "user", QString::fromUtf8("What does \"salmon\" mean? — 鲑鱼"));
      ReplyStats s{12, 30, 85.5, 400.0, 31.25, "eos"};
      store.appendMessage(id, "assistant", "A fish.", s);
    }
    AppDatabase db(path);
    ConversationStore store(db);
    const auto cs = store.conversations();
    QCOMPARE(cs.size(), size_t(1));
    QCOMPARE(cs[0].title, QString("Words"));
    QCOMPARE(cs[0].systemPrompt, QString("Be brief."));
    QCOMPARE(cs[0].modelPath, QString("/m/x.gguf"));
    QCOMPARE(cs[0].sampling.value("temperature").toDouble(), 0.0);
    const auto ms = store.messages(id);
    QCOMPARE(ms.size(), size_t(2));
    QCOMPARE(ms[0].role, QString("user"));
    QCOMPARE(ms[0].content, QString::fromUtf8("What does \"salmon\" mean? — 鲑鱼"));
    QCOMPARE(ms[1].position, 1);
    QCOMPARE(ms[1].stats, (ReplyStats{12, 30, 85.5, 400.0, 31.25, "eos"}));
  }

  void migratesFromVersionOne() {
    QTemporaryDir dir;
    const QString path = dir.filePath("db.sqlite");
    {
      AppDatabase db(path);
      db.migrate("conversations", ConversationStore::schemaSteps().mid(0, 1));
      QSqlQuery q(db.db());
      QVERIFY(q.exec("INSERT INTO conversations(title, created_ms, updated_ms) VALUES('old', 1, 1)"));
      QVERIFY(q.exec("INSERT INTO messages(conversation_id, position, role, content, created_ms) "
                     "VALUES(1, 0, 'user', 'hi', 1)"));
    }
    AppDatabase db(path);
    QCOMPARE(db.version("conversations"), 1);
    ConversationStore store(db);
    QCOMPARE(db.version("conversations"), 2);
    const auto ms = store.messages(1);
    QCOMPARE(ms.size(), size_t(1));
    QCOMPARE(ms[0].content, QString("hi"));
    QCOMPARE(ms[0].stats, ReplyStats{});
  }

  void refusesANewerSchema() {
    QTemporaryDir dir;
    const QString path = dir.filePath("db.sqlite");
    {
      AppDatabase db(path);
      QStringList steps = ConversationStore::schemaSteps();
      steps << "CREATE TABLE future(x)";
      db.migrate("conversations", steps);
    }
    AppDatabase db(path);
    QVERIFY_THROWS_EXCEPTION(moepack::Error, ConversationStore{db});
  }

  // A file that is not an SQLite database: an error naming it and what to do, no connection
  // left behind, and the file untouched.
  void aFileThatIsNoDatabaseIsNamed() {
    QTemporaryDir dir;
    const QString path = dir.filePath("chat.sqlite");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    const QByteArray junk = QByteArray("this is not SQLite\n").repeated(300);
    f.write(junk);
    f.close();
    const QStringList before = QSqlDatabase::connectionNames();
    try {
      moepack::ui::AppDatabase db(path);
      QFAIL("a text file opened as a database");
    } catch (const moepack::Error& e) {
      const QString m = QString::fromUtf8(e.what());
      QVERIFY2(m.contains(path) && m.contains(QStringLiteral("cannot be used")) &&
                   m.contains(QStringLiteral("move it aside")),
               qPrintable(m));
    }
    QCOMPARE(QSqlDatabase::connectionNames(), before);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), junk);
  }

  void editTruncateRenameDelete() {
    AppDatabase db(":memory:");
    ConversationStore store(db);
    const qint64 a = store.createConversation("a");
    const qint64 b = store.createConversation("b");
    for (int i = 0; i < 4; ++i) store.appendMessage(a, i % 2 ? "assistant" : "user", QString::number(i));
    store.truncate(a, 2);
    auto ms = store.messages(a);
    QCOMPARE(ms.size(), size_t(2));
    QCOMPARE(ms.back().content, QString("1"));
    QCOMPARE(store.appendMessage(a, "user", "again") > 0, true);
    QCOMPARE(store.messages(a).back().position, 2);
    store.updateMessage(ms[1].id, "edited", ReplyStats{1, 2, 3, 4, 5, "length"});
    QCOMPARE(store.messages(a)[1].content, QString("edited"));
    store.renameConversation(b, "bee");
    QCOMPARE(store.conversation(b)->title, QString("bee"));
    QCOMPARE(store.conversations().front().id, b);  // most recently updated first
    store.removeConversation(a);
    QVERIFY(!store.conversation(a).has_value());
    QSqlQuery q(db.db());
    QVERIFY(q.exec("SELECT COUNT(*) FROM messages"));
    QVERIFY(q.next());
    QCOMPARE(q.value(0).toInt(), 0);  // cascade
    QVERIFY_THROWS_EXCEPTION(moepack::Error, store.appendMessage(b, "robot", "x"));  // role check
  }

  void exportsMarkdownAndJson() {
    QTemporaryDir dir;
    AppDatabase db(":memory:");
    ConversationStore store(db);
    const qint64 id = store.createConversation("Salmon", "You are a helpful assistant.",
                                               QJsonObject{{"temperature", 0.0}}, "demo.gguf");
    store.appendMessage(id, "user", "What does \"salmon\" mean?");
    store.appendMessage(id, "assistant", "A fish.\n\n```\ncode\n```", ReplyStats{20, 5, 12.0, 100.0, 50.0, "eos"});
    const QString mdPath = dir.filePath("c.md");
    store.exportMarkdown(id, mdPath);
    QFile md(mdPath);
    QVERIFY(md.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(md.readAll()),
             QString("# Salmon\n\nModel: `demo.gguf`\n\n> **System:** You are a helpful assistant.\n\n"
                     "### User\n\nWhat does \"salmon\" mean?\n\n### Assistant\n\nA fish.\n\n```\ncode\n```\n\n"
                     "*20 prompt tokens · 5 tokens · TTFT 12 ms · prefill 100.0 tok/s · decode 50.0 tok/s*\n\n"));
    const QString jsonPath = dir.filePath("c.json");
    store.exportJson(id, jsonPath);
    QFile js(jsonPath);
    QVERIFY(js.open(QIODevice::ReadOnly));
    const QJsonObject o = QJsonDocument::fromJson(js.readAll()).object();
    QCOMPARE(o.value("format").toString(), QString("moepack-conversation"));
    QCOMPARE(o.value("title").toString(), QString("Salmon"));
    QCOMPARE(o.value("sampling").toObject().value("temperature").toDouble(), 0.0);
    const QJsonArray msgs = o.value("messages").toArray();
    QCOMPARE(msgs.size(), 2);
    QCOMPARE(msgs[1].toObject().value("stats").toObject().value("generated_tokens").toInt(), 5);
    QVERIFY(!msgs[0].toObject().contains("stats"));
    QVERIFY_THROWS_EXCEPTION(moepack::Error, store.exportJson(id, dir.filePath("no/such/dir/c.json")));
  }

  // A reply stopped after its first token has no decode rate (it needs two tokens): the line
  // leaves it out rather than print "decode 0.0 tok/s".
  void statsLineLeavesOutAnUndefinedDecodeRate() {
    QCOMPARE(formatStatsPlain(ReplyStats{7, 1, 30.0, 233.3, 0.0, "cancelled"}),
             QString("7 prompt tokens · 1 token · TTFT 30 ms · prefill 233.3 tok/s"));
    QCOMPARE(formatStatsPlain(ReplyStats{1, 1, 30.0, 33.3, 0.0, "cancelled"}),
             QString("1 prompt token · 1 token · TTFT 30 ms · prefill 33.3 tok/s"));
    QCOMPARE(formatStatsPlain(ReplyStats{7, 2, 30.0, 233.3, 12.5, "cancelled"}),
             QString("7 prompt tokens · 2 tokens · TTFT 30 ms · prefill 233.3 tok/s · decode 12.5 tok/s"));
  }

  void samplingJsonRoundTripsAndClamps() {
    GenerationSettings g;
    g.sampling.temperature = 0.0f;
    g.sampling.top_k = 1;
    g.sampling.seed = 42;
    g.max_tokens = 64;
    const GenerationSettings r = generation_from_json(generation_to_json(g));
    QCOMPARE(r.sampling.temperature, 0.0f);
    QCOMPARE(r.sampling.top_k, 1);
    QCOMPARE(r.sampling.seed, uint64_t(42));
    QCOMPARE(r.max_tokens, 64);
    const GenerationSettings c = generation_from_json(QJsonObject{{"temperature", 99.0}, {"seed", -1}, {"max_tokens", 0}});
    QCOMPARE(c.sampling.temperature, 5.0f);
    QCOMPARE(c.sampling.seed, uint64_t(0xFFFFFFFF));
    QCOMPARE(c.max_tokens, 1);
  }
};

QTEST_GUILESS_MAIN(ConversationStoreTest)
#include "conversation_store_test.moc"
