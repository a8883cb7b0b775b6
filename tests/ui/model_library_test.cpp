// ModelLibrary and LibraryViewModel on the real fixtures: what each kind of model is recorded
// as (sizes and structure from the fixtures' README and `ls -l`), folder scans, pack status
// through a real build, and removal that frees exactly the files' bytes and only inside the
// models folder. Everything a test modifies is a copy in a QTemporaryDir.
#include <QAbstractItemModelTester>
#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include "core/error.h"
#include "packbuilder/pack_builder.h"
#include "ui/app_database.h"
#include "ui/library_download_store.h"
#include "ui/library_view_model.h"
#include "ui/model_library.h"

using namespace moepack::ui;

namespace {
const QString kFixtures = QStringLiteral(MOEPACK_SHARED_DIR "/fixtures");
const QString kQwen = kFixtures + QStringLiteral("/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf");
const QString kQwenSha = QStringLiteral("99683a6d73f41cbce6e1c7cad755017f774b5492c9e4ad61ba3d635873089c73");
const QString kDs2Dir = QDir::cleanPath(kFixtures + QStringLiteral("/deepseek2-tiny"));
constexpr qint64 kQwenBytes = 20223488;                    // ls -l
constexpr qint64 kDs2SplitBytes = 8393856 + 2240832 + 1800960;  // the three Q2_K shards

bool copyFile(const QString& from, const QString& to) {
  QDir().mkpath(QFileInfo(to).absolutePath());
  if (!QFile::copy(from, to)) return false;
  return QFile::setPermissions(to, QFile::ReadOwner | QFile::WriteOwner);
}
}  // namespace

class ModelLibraryTest : public QObject {
  Q_OBJECT

 private slots:
  // Sizes in binary units, named as such; below 1 KiB the symbol B, which needs no translation
  // (Qt's own "bytes" stayed English in the Chinese studio).
  void sizesAreWrittenInBinaryUnits() {
    QCOMPARE(LibraryViewModel::formatBytes(0), QStringLiteral("0 B"));
    QCOMPARE(LibraryViewModel::formatBytes(1023), QStringLiteral("1023 B"));
    QCOMPARE(LibraryViewModel::formatBytes(1536), QStringLiteral("1.5 KiB"));
    QCOMPARE(LibraryViewModel::formatBytes(3.0 * 1024 * 1024 * 1024), QStringLiteral("3.0 GiB"));
  }

  void singleFileIsDescribed() {
    QTemporaryDir tmp;
    AppDatabase db(tmp.filePath(QStringLiteral("db.sqlite")));
    ModelLibrary lib(db, tmp.filePath(QStringLiteral("models")));
    const LibraryEntry e = lib.addPath(kQwen);
    QCOMPARE(e.kind, QStringLiteral("gguf"));
    QCOMPARE(e.architecture, QStringLiteral("qwen3moe"));
    QCOMPARE(e.sizeBytes, kQwenBytes);
    QCOMPARE(e.experts, 8);  // README: 8 experts, top-2
    QCOMPARE(e.topK, 2);
    QVERIFY(e.quantTypes.contains(QStringLiteral("mxfp4")));
    QCOMPARE(e.packStatus, QStringLiteral("none"));
    QVERIFY(e.sourcePresent);
    QVERIFY(e.addedAt.isValid());
    // Adding it again updates the row; no duplicate.
    lib.addPath(kQwen);
    QCOMPARE(lib.entries().size(), size_t{1});
  }

  void anyShardAddsTheWholeSplitSet() {
    QTemporaryDir tmp;
    AppDatabase db(tmp.filePath(QStringLiteral("db.sqlite")));
    ModelLibrary lib(db, tmp.filePath(QStringLiteral("models")));
    const LibraryEntry e = lib.addPath(kDs2Dir + QStringLiteral("/deepseek2-tiny-Q2_K-00002-of-00003.gguf"));
    QCOMPARE(e.kind, QStringLiteral("split"));
    QCOMPARE(e.files.size(), 3);
    QCOMPARE(e.path, kDs2Dir + QStringLiteral("/deepseek2-tiny-Q2_K-00001-of-00003.gguf"));
    QCOMPARE(e.sizeBytes, kDs2SplitBytes);
    QCOMPARE(e.architecture, QStringLiteral("deepseek2"));
    QCOMPARE(e.experts, 16);  // README: 16 routed experts, top-4
    QCOMPARE(e.topK, 4);
    QVERIFY(e.quantTypes.contains(QStringLiteral("q2_K")));  // the experts; q6_K may weigh more
    lib.addPath(kDs2Dir + QStringLiteral("/deepseek2-tiny-Q2_K-00003-of-00003.gguf"));
    QCOMPARE(lib.entries().size(), size_t{1});
  }

  void scanFindsEveryModelOnceAndNamesBrokenFiles() {
    QTemporaryDir tmp;
    const QString models = tmp.filePath(QStringLiteral("models"));
    for (int i = 1; i <= 3; ++i) {
      const QString n = QStringLiteral("deepseek2-tiny-Q2_K-0000%1-of-00003.gguf").arg(i);
      QVERIFY(copyFile(kDs2Dir + "/" + n, models + QStringLiteral("/ds2/") + n));
    }
    QVERIFY(copyFile(kQwen, models + QStringLiteral("/qwen.gguf")));
    QFile broken(models + QStringLiteral("/sub/broken.gguf"));
    QDir().mkpath(models + QStringLiteral("/sub"));
    QVERIFY(broken.open(QIODevice::WriteOnly));
    broken.write("GGUF\x03\x00\x00\x00", 8);
    broken.close();
    AppDatabase db(tmp.filePath(QStringLiteral("db.sqlite")));
    ModelLibrary lib(db, models);
    const ScanResult r = lib.scanFolder(models);
    QCOMPARE(r.added.size(), size_t{2});  // the split set once, qwen once
    QCOMPARE(r.errors.size(), 1);
    QVERIFY2(r.errors.front().contains(broken.fileName()), qPrintable(r.errors.front()));
    QCOMPARE(lib.entries().size(), size_t{2});
  }

  void ollamaModelByName() {
    QTemporaryDir tmp;
    const QString store = tmp.filePath(QStringLiteral("ollama"));
    QVERIFY(copyFile(kQwen, store + QStringLiteral("/blobs/sha256-") + kQwenSha));
    const QJsonObject manifest{
        {QStringLiteral("schemaVersion"), 2},
        {QStringLiteral("layers"),
         QJsonArray{QJsonObject{{QStringLiteral("mediaType"), QStringLiteral("application/vnd.ollama.image.model")},
                                {QStringLiteral("digest"), QStringLiteral("sha256:") + kQwenSha},
                                {QStringLiteral("size"), kQwenBytes}}}}};
    const QString mpath = store + QStringLiteral("/manifests/registry.ollama.ai/library/tiny/latest");
    QDir().mkpath(QFileInfo(mpath).absolutePath());
    QFile mf(mpath);
    QVERIFY(mf.open(QIODevice::WriteOnly));
    mf.write(QJsonDocument(manifest).toJson());
    mf.close();
    AppDatabase db(tmp.filePath(QStringLiteral("db.sqlite")));
    ModelLibrary lib(db, tmp.filePath(QStringLiteral("models")));
    const LibraryEntry e = lib.addOllama(QStringLiteral("tiny"), store);
    QCOMPARE(e.kind, QStringLiteral("ollama"));
    QCOMPARE(e.name, QStringLiteral("registry.ollama.ai/library/tiny:latest"));
    QCOMPARE(e.architecture, QStringLiteral("qwen3moe"));
    QCOMPARE(e.sizeBytes, kQwenBytes);
    // Ollama's blobs are shared: the library never deletes them.
    QVERIFY_THROWS_EXCEPTION(moepack::Error, lib.bytesFreedByRemoving(e.id, true));
    QVERIFY_THROWS_EXCEPTION(moepack::Error, lib.addOllama(QStringLiteral("missing"), store));
  }

  void packStatusFollowsTheBuildAndVerify() {
    QTemporaryDir tmp;
    const QString models = tmp.filePath(QStringLiteral("models"));
    const QString src = models + QStringLiteral("/qwen.gguf");
    QVERIFY(copyFile(kQwen, src));
    AppDatabase db(tmp.filePath(QStringLiteral("db.sqlite")));
    ModelLibrary lib(db, models);
    const LibraryEntry source = lib.addPath(src);
    moepack::BuildOptions opt;
    opt.source = src.toStdString();
    opt.out_dir = (models + QStringLiteral("/qwen.pack")).toStdString();
    opt.direct_io = false;
    opt.safety_margin_bytes = 0;
    moepack::build_pack(opt);
    const LibraryEntry pack = lib.addPath(models + QStringLiteral("/qwen.pack"));
    QCOMPARE(pack.kind, QStringLiteral("pack"));
    QCOMPARE(pack.packStatus, QStringLiteral("ready"));
    QCOMPARE(pack.architecture, QStringLiteral("qwen3moe"));
    QCOMPARE(pack.experts, 8);
    // Its types are its source's, in the same order (by bytes): the routed experts' mxfp4
    // (fixtures/README.md, qwen3moe-tiny) among them, not only the dense part's q8_0 and f32.
    QCOMPARE(pack.quantTypes, lib.entry(source.id).quantTypes);
    QVERIFY(pack.quantTypes.contains(QStringLiteral("mxfp4")));
    QCOMPARE(pack.files.size(), 3);  // manifest.json, experts.bin, dense.gguf
    QCOMPARE(lib.entry(source.id).packStatus, QStringLiteral("ready"));  // linked through sources
    QCOMPARE(lib.entry(source.id).packPath, pack.path);

    // A damaged copy of the pack (experts.bin cut short) is a failed-verify row of its own; the
    // source keeps its link to the ready pack.
    const QString copy = tmp.filePath(QStringLiteral("copy.pack"));
    QVERIFY(QDir().mkpath(copy));
    for (const char* f : {"manifest.json", "experts.bin", "dense.gguf"})
      QVERIFY(QFile::copy(models + QStringLiteral("/qwen.pack/") + QLatin1String(f),
                          copy + QLatin1Char('/') + QLatin1String(f)));
    {
      QFile cut(copy + QStringLiteral("/experts.bin"));
      QVERIFY(cut.resize(cut.size() - 4096));
    }
    const LibraryEntry damaged = lib.addPath(copy);
    QCOMPARE(damaged.packStatus, QStringLiteral("failed-verify"));
    QCOMPARE(lib.entry(source.id).packStatus, QStringLiteral("ready"));
    QCOMPARE(lib.entry(source.id).packPath, pack.path);
    lib.remove(damaged.id, false);

    // A truncated experts.bin fails the fast verify; refresh reports it on both rows.
    QFile experts(models + QStringLiteral("/qwen.pack/experts.bin"));
    QVERIFY(experts.resize(experts.size() - 4096));
    lib.refresh();
    QCOMPARE(lib.entry(pack.id).packStatus, QStringLiteral("failed-verify"));
    QVERIFY(lib.entry(pack.id).statusDetail.contains(QStringLiteral("experts.bin")));
    QCOMPARE(lib.entry(source.id).packStatus, QStringLiteral("failed-verify"));

    // The source deleted (as the wizard may do): source_present turns false.
    QVERIFY(QFile::remove(src));
    lib.refresh();
    QVERIFY(!lib.entry(source.id).sourcePresent);
    QVERIFY(lib.entry(pack.id).sourcePresent);

    // Removing the pack with its files frees exactly their bytes and unlinks the source row.
    const qint64 expected = QFileInfo(models + QStringLiteral("/qwen.pack/manifest.json")).size() +
                            QFileInfo(models + QStringLiteral("/qwen.pack/experts.bin")).size() +
                            QFileInfo(models + QStringLiteral("/qwen.pack/dense.gguf")).size();
    QCOMPARE(lib.bytesFreedByRemoving(pack.id, true), expected);
    QCOMPARE(lib.remove(pack.id, true), expected);
    QVERIFY(!QFileInfo::exists(models + QStringLiteral("/qwen.pack")));
    QCOMPARE(lib.entry(source.id).packStatus, QStringLiteral("none"));
  }

  void removeDeletesOnlyInsideTheModelsFolder() {
    QTemporaryDir tmp;
    const QString models = tmp.filePath(QStringLiteral("models"));
    const QString inside = models + QStringLiteral("/a.gguf");
    const QString outside = tmp.filePath(QStringLiteral("elsewhere/b.gguf"));
    QVERIFY(copyFile(kQwen, inside));
    QVERIFY(copyFile(kQwen, outside));
    // A symlink inside the folder pointing outside does not make the target deletable.
    QVERIFY(QFile::link(outside, models + QStringLiteral("/link.gguf")));
    AppDatabase db(tmp.filePath(QStringLiteral("db.sqlite")));
    ModelLibrary lib(db, models);
    const qint64 in = lib.addPath(inside).id;
    const qint64 out = lib.addPath(outside).id;
    QVERIFY_THROWS_EXCEPTION(moepack::Error, lib.remove(out, true));
    QVERIFY(QFileInfo::exists(outside));
    QCOMPARE(lib.entries().size(), size_t{2});  // nothing changed
    QCOMPARE(lib.remove(out, false), qint64{0});  // forgetting it frees nothing
    QVERIFY(QFileInfo::exists(outside));
    QCOMPARE(lib.remove(in, true), kQwenBytes);
    QVERIFY(!QFileInfo::exists(inside));
    QVERIFY(lib.entries().empty());
  }

  // The Expert Packs the studio converts into its packs folder (the Settings' models_folder)
  // may be deleted with their row, as downloads in the models folder may; others may not.
  void removeDeletesPacksInThePacksFolder() {
    QTemporaryDir tmp;
    const QString models = tmp.filePath(QStringLiteral("models"));
    const QString packs = tmp.filePath(QStringLiteral("packs"));
    QVERIFY(QDir().mkpath(models));
    moepack::BuildOptions opt;
    opt.source = kQwen.toStdString();
    opt.out_dir = (packs + QStringLiteral("/qwen")).toStdString();
    opt.direct_io = false;
    opt.safety_margin_bytes = 0;
    moepack::build_pack(opt);
    AppDatabase db(tmp.filePath(QStringLiteral("db.sqlite")));
    {
      ModelLibrary withoutPacks(db, models);
      const LibraryEntry pack = withoutPacks.addPath(packs + QStringLiteral("/qwen"));
      QVERIFY(deletion_refusal(pack, models, {}).contains(QStringLiteral("outside MoePack's folders")));
      QVERIFY_THROWS_EXCEPTION(moepack::Error, withoutPacks.remove(pack.id, true));
      QVERIFY(QFileInfo::exists(packs + QStringLiteral("/qwen/manifest.json")));
    }
    ModelLibrary lib(db, models, packs);
    const LibraryEntry pack = lib.addPath(packs + QStringLiteral("/qwen"));
    QCOMPARE(deletion_refusal(pack, models, packs), QString());
    // Not a sibling folder, not a GGUF put in the packs folder, not through a symlink, and
    // nothing when a folder is "/" or the home folder.
    QVERIFY(!deletion_refusal(pack, models, packs + QStringLiteral("2")).isEmpty());
    QVERIFY(!deletion_refusal(pack, QStringLiteral("/"), QStringLiteral("/")).isEmpty());
    QVERIFY(!deletion_refusal(pack, QDir::homePath(), QDir::homePath()).isEmpty());
    {
      LibraryEntry gguf;
      gguf.kind = QStringLiteral("gguf");
      gguf.files << packs + QStringLiteral("/qwen/dense.gguf");
      QVERIFY(!deletion_refusal(gguf, models, packs).isEmpty());
      // A symlink outside the folders to a file inside: its own name lies outside.
      const QString link = tmp.filePath(QStringLiteral("link.gguf"));
      QVERIFY(QFile::link(packs + QStringLiteral("/qwen/dense.gguf"), link));
      LibraryEntry linked;
      linked.kind = QStringLiteral("gguf");
      linked.files << link;
      QVERIFY(!deletion_refusal(linked, models, packs).isEmpty());
      QVERIFY(!deletion_refusal(linked, packs + QStringLiteral("/qwen"), {}).isEmpty());
      QFile::remove(link);
    }
    qint64 expected = 0;
    for (const char* f : {"manifest.json", "experts.bin", "dense.gguf"})
      expected += QFileInfo(packs + QStringLiteral("/qwen/") + QLatin1String(f)).size();
    QCOMPARE(lib.remove(pack.id, true), expected);
    QVERIFY(!QFileInfo::exists(packs + QStringLiteral("/qwen")));
    QVERIFY(lib.entries().empty());
  }

  void viewModelRunsCommandsOffTheGuiThread() {
    QTemporaryDir tmp;
    const QString models = tmp.filePath(QStringLiteral("models"));
    QVERIFY(copyFile(kQwen, models + QStringLiteral("/qwen.gguf")));
    LibraryViewModel vm;
    vm.setDatabasePath(tmp.filePath(QStringLiteral("db.sqlite")));
    vm.setModelsFolder(models);
    QAbstractItemModelTester tester(vm.models(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy done(&vm, &LibraryViewModel::finishedCommand);
    QSignalSpy errors(&vm, &LibraryViewModel::errorOccurred);
    QSignalSpy removed(&vm, &LibraryViewModel::removed);

    // A drop of two URLs (one a split shard) and a missing file.
    const QString missing = tmp.filePath(QStringLiteral("nope.gguf"));
    vm.addPaths({QUrl::fromLocalFile(models + QStringLiteral("/qwen.gguf")).toString(),
                 QUrl::fromLocalFile(kDs2Dir + QStringLiteral("/deepseek2-tiny-Q2_K-00001-of-00003.gguf")).toString(),
                 missing});
    QVERIFY(vm.busy());  // asynchronous
    QVERIFY(done.wait(30000));
    QVERIFY(!vm.busy());
    QCOMPARE(vm.models()->rowCount(), 2);
    QCOMPARE(errors.size(), 1);
    QVERIFY(errors.front().front().toString().contains(missing));

    const int row = vm.models()->rowOf(vm.models()->entries()[0].id) >= 0 ? 0 : -1;
    QCOMPARE(row, 0);
    // Find qwen's row by name role.
    qint64 qwenId = -1, ds2Id = -1;
    for (int r = 0; r < vm.models()->rowCount(); ++r) {
      const QModelIndex i = vm.models()->index(r);
      const QString kind = vm.models()->data(i, LibraryListModel::KindRole).toString();
      const qint64 id = vm.models()->data(i, LibraryListModel::IdRole).toLongLong();
      (kind == QLatin1String("split") ? ds2Id : qwenId) = id;
    }
    QVERIFY(qwenId > 0 && ds2Id > 0);
    QCOMPARE(vm.bytesFreed(qwenId, true), static_cast<double>(kQwenBytes));
    QCOMPARE(vm.bytesFreed(ds2Id, true), -1.0);  // the fixtures are outside the models folder
    QVERIFY(vm.deleteRefusal(ds2Id).contains(QStringLiteral("outside MoePack's folders")));
    QCOMPARE(vm.bytesFreed(ds2Id, false), 0.0);

    vm.remove(qwenId, true);
    QVERIFY(done.wait(30000));
    QCOMPARE(removed.size(), 1);
    QCOMPARE(removed.front().at(1).toDouble(), static_cast<double>(kQwenBytes));
    QCOMPARE(vm.models()->rowCount(), 1);
    QVERIFY(!QFileInfo::exists(models + QStringLiteral("/qwen.gguf")));

    // State survives: a second view-model on the same database sees the row.
    LibraryViewModel again;
    again.setDatabasePath(tmp.filePath(QStringLiteral("db.sqlite")));
    again.setModelsFolder(models);
    QSignalSpy done2(&again, &LibraryViewModel::finishedCommand);
    again.refresh();
    QVERIFY(done2.wait(30000));
    QCOMPARE(again.models()->rowCount(), 1);
  }

  // A database at library schema version 1 (what the previous MoePack wrote) is migrated: the
  // model row survives, the downloads table and the context columns appear.
  void migrationFromLibraryVersion1() {
    QTemporaryDir tmp;
    const QString path = tmp.filePath(QStringLiteral("db.sqlite"));
    {
      AppDatabase db(path);
      db.migrate(QStringLiteral("library"), {library_schema_steps().front()});  // version 1 only
      QCOMPARE(db.version(QStringLiteral("library")), 1);
      QSqlDatabase d = db.db();
      exec_sql(d, QStringLiteral("INSERT INTO library_models (kind, path, name, files, size_bytes, added_at) "
                                 "VALUES ('gguf', '/m/old.gguf', 'old', '[\"/m/old.gguf\"]', 1234, 0)"));
      const QString qwen = QDir::cleanPath(QFileInfo(kQwen).absoluteFilePath());
      QSqlQuery q(d);
      q.prepare(QStringLiteral("INSERT INTO library_models (kind, path, name, files, size_bytes, added_at) "
                               "VALUES ('gguf', ?, 'qwen', ?, ?, 0)"));
      q.addBindValue(qwen);
      q.addBindValue(QStringLiteral("[\"%1\"]").arg(qwen));
      q.addBindValue(kQwenBytes);
      QVERIFY(q.exec());
      QVERIFY(!d.tables().contains(QStringLiteral("downloads")));
    }
    AppDatabase db(path);
    ModelLibrary lib(db, tmp.filePath(QStringLiteral("models")));
    QCOMPARE(db.version(QStringLiteral("library")), 3);
    const auto rows = lib.entries();
    QCOMPARE(rows.size(), size_t{2});
    QCOMPARE(rows[0].name, QStringLiteral("old"));
    QCOMPARE(rows[0].sizeBytes, qint64{1234});
    QCOMPARE(rows[0].ctxBytesPerToken, 0.0);  // unknown
    QCOMPARE(affordable_context_tokens(rows[0], qint64{1} << 40, 0), qint64{-1});
    QCOMPARE(rows[1].ctxBytesPerToken, 0.0);
    // refresh() reads the hyperparameters of rows that still have their files (qwen: 2048 B,
    // see contextMemoryPerTokenAndAffordableContext); the missing one stays unknown.
    const auto fresh = lib.refresh();
    QCOMPARE(fresh[0].ctxBytesPerToken, 0.0);
    QVERIFY(!fresh[0].sourcePresent);
    QCOMPARE(fresh[1].ctxBytesPerToken, 2048.0);
    QCOMPARE(fresh[1].ctxTrain, qint64{40960});
    // The downloads table works and keeps its rows across connections.
    DownloadStore store(db);
    DownloadRecord r;
    r.url = QStringLiteral("https://h/o/r/resolve/main/m-00001-of-00002.gguf");
    r.hubRepo = QStringLiteral("o/r");
    r.hubFile = QStringLiteral("m-00001-of-00002.gguf");
    r.destDir = tmp.filePath(QStringLiteral("models"));
    r.fileName = QStringLiteral("m-00001-of-00002.gguf");
    r.expectedSize = 5000000000;
    r.sha256 = QString(64, 'a');
    r.sha256Source = QStringLiteral("hub listing");
    r.state = QStringLiteral("downloading");
    r.convertWhenDone = true;
    r.id = store.insert(r);
    QVERIFY(r.id > 0);
    r.groupId = r.id;
    r.bytesVerified = 123456;
    r.etag = QStringLiteral("abc");
    store.update(r);
    QVERIFY_THROWS_EXCEPTION(moepack::Error, store.insert(r));  // the same file twice
    AppDatabase other(path);
    const auto got = DownloadStore(other).all();
    QCOMPARE(got.size(), size_t{1});
    QCOMPARE(got[0].groupId, r.id);
    QCOMPARE(got[0].expectedSize, qint64{5000000000});
    QCOMPARE(got[0].bytesVerified, qint64{123456});
    QCOMPARE(got[0].etag, QStringLiteral("abc"));
    QCOMPARE(got[0].sha256Source, QStringLiteral("hub listing"));
    QVERIFY(got[0].convertWhenDone);
    // A newer schema than this build knows is refused, naming the component.
    QSqlDatabase od = other.db();
    exec_sql(od, QStringLiteral("UPDATE schema_versions SET version = 9 WHERE component = 'library'"));
    try {
      ModelLibrary newer(other, tmp.filePath(QStringLiteral("models")));
      QFAIL("a newer schema was accepted");
    } catch (const moepack::Error& e) {
      QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("library schema version 9 is newer")), e.what());
    }
  }

  // KV cache per token from the hyperparameters, checked by hand against the fixture README:
  // qwen3moe-tiny has 4 blocks, n_head_kv = 2, key_length = value_length = 64, context 40960:
  //   4 x 2 x (64 + 64) x 2 B = 2048 B per token, nothing fixed.
  // Dense bytes (not routed experts), from the README's types and shapes (n_embd 256, vocab
  // 50257, q 512 wide, k/v 128 wide; q8_0 = 34 B per 32 values, f32 = 4 B):
  //   token_embd 50257 x 256/32 x 34 = 13669904; per block attn_q 512x272 + attn_k 128x272 +
  //   attn_v 128x272 + attn_output 256x544 + q/k norms 2x256 + attn/ffn norms 2x1024 + router
  //   8x256x4 = 358912, x4 = 1435648; output_norm 1024; total 15106576.
  void contextMemoryPerTokenAndAffordableContext() {
    QTemporaryDir tmp;
    AppDatabase db(tmp.filePath(QStringLiteral("db.sqlite")));
    ModelLibrary lib(db, tmp.filePath(QStringLiteral("models")));
    const LibraryEntry e = lib.addPath(kQwen);
    QCOMPARE(e.ctxBytesPerToken, 2048.0);
    QCOMPARE(e.ctxFixedBytes, qint64{0});
    QCOMPARE(e.ctxTrain, qint64{40960});
    QCOMPARE(e.denseBytes, qint64{15106576});
    const qint64 cache = qint64{8} << 20;
    // (memory - cache - dense - fixed) / 2048 = (1000 x 2048 + 100) / 2048 -> 1000 tokens.
    QCOMPARE(affordable_context_tokens(e, 15106576 + cache + 2048 * 1000 + 100, cache), qint64{1000});
    QCOMPARE(affordable_context_tokens(e, qint64{1} << 40, cache), qint64{40960});  // capped at context_length
    QCOMPARE(affordable_context_tokens(e, cache, cache), qint64{0});               // no room at all
    // Stored and read back, and through the view-model as the page shows it.
    QCOMPARE(lib.entries().front().ctxBytesPerToken, 2048.0);
    LibraryViewModel vm;
    vm.setDatabasePath(tmp.filePath(QStringLiteral("db.sqlite")));
    vm.setModelsFolder(tmp.filePath(QStringLiteral("models")));
    QSignalSpy done(&vm, &LibraryViewModel::finishedCommand);
    vm.refresh();
    QVERIFY(done.wait(30000));
    QCOMPARE(vm.models()->rowCount(), 1);
    const QModelIndex i = vm.models()->index(0);
    QCOMPARE(vm.models()->data(i, LibraryListModel::CtxBytesPerTokenRole).toDouble(), 2048.0);
    QCOMPARE(vm.affordableContext(e.id, double(15106576 + cache + 2048 * 1000 + 100), double(cache)), 1000.0);
    QCOMPARE(vm.affordableContext(e.id + 99, 1e12, 0), -1.0);
    QVERIFY(vm.memoryBudgetBytes() > 0);  // the physical RAM by default
  }
};

QTEST_GUILESS_MAIN(ModelLibraryTest)
#include "model_library_test.moc"
