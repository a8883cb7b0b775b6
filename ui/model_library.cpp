#include "ui/model_library.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QSet>
#include <QSqlError>
#include <QSqlQuery>
#include <algorithm>
#include <cmath>
#include <exception>

#include "core/context_memory.h"
#include "core/error.h"
#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/model_config.h"
#include "core/model_summary.h"
#include "core/ollama_store.h"
#include "core/pack_manifest.h"
#include "core/pack_verify.h"
#include "ui/app_database.h"

namespace moepack::ui {

Q_LOGGING_CATEGORY(lcLibrary, "moepack.library")

namespace {

constexpr const char* kBuildStateName = "build-state.json";

QString absClean(const QString& p) { return QDir::cleanPath(QFileInfo(p).absoluteFilePath()); }

// SQLite binds a null QString as NULL; the text columns are NOT NULL.
QString text(const QString& s) { return s.isNull() ? QStringLiteral("") : s; }

[[noreturn]] void sqlFail(const QSqlQuery& q) {
  throw Error("SQLite (library): " + q.lastError().text().toStdString());
}

void fillFromSummary(LibraryEntry& e, const ModelSummary& s) {
  e.architecture = QString::fromStdString(s.architecture);
  if (!s.name.empty()) e.name = QString::fromStdString(s.name);
  e.files.clear();
  for (const auto& f : s.files) e.files << absClean(QString::fromStdString(f));
  e.sizeBytes = static_cast<qint64>(s.file_bytes);
  std::vector<std::pair<std::string, TypeStats>> types(s.by_type.begin(), s.by_type.end());
  std::stable_sort(types.begin(), types.end(),
                   [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
  e.quantTypes.clear();
  for (const auto& t : types) e.quantTypes << QString::fromStdString(t.first);
  e.experts = s.expert_count ? static_cast<int>(*s.expert_count) : 0;
  e.topK = s.expert_used_count ? static_cast<int>(*s.expert_used_count) : 0;
}

// Context memory and dense bytes; an architecture without a context_memory() formula (or
// missing hyperparameters) leaves them 0 = unknown, it is not an error for the library.
void fillContext(LibraryEntry& e, const GgufModel& model, const ModelSummary& s) {
  e.denseBytes = static_cast<qint64>(s.tensor_bytes - std::min(s.tensor_bytes, s.routed_expert_bytes));
  try {
    const ModelConfig cfg = read_model_config(model.primary());
    e.ctxTrain = cfg.n_ctx_train;
    const ContextMemory m = context_memory(cfg);
    e.ctxBytesPerToken = m.bytes_per_token;
    e.ctxFixedBytes = static_cast<qint64>(m.fixed_bytes);
    e.ctxFormula = QString::fromStdString(m.formula);
  } catch (const std::exception& ex) {
    qCInfo(lcLibrary) << "no context memory for" << e.path << ":" << ex.what();
  }
}

LibraryEntry describePack(const QString& dir) {
  LibraryEntry e;
  e.kind = QStringLiteral("pack");
  e.path = absClean(dir);
  e.name = QFileInfo(e.path).fileName();
  e.packPath = e.path;
  const auto [status, detail] = pack_status_of(e.path);
  e.packStatus = status;
  e.statusDetail = detail;
  const QDir d(e.path);
  for (const char* n : {kPackManifestName, kPackExpertsName, kPackDenseName, kBuildStateName}) {
    const QFileInfo fi(d.filePath(QString::fromUtf8(n)));
    if (fi.exists()) {
      e.files << fi.absoluteFilePath();
      e.sizeBytes += fi.size();
    }
  }
  if (status == QLatin1String("ready") || status == QLatin1String("failed-verify")) {
    try {
      const PackManifest m = read_manifest(d.filePath(QString::fromUtf8(kPackManifestName)).toStdString());
      const auto& model = m.model;
      if (model.contains("architecture") && model["architecture"].is_string())
        e.architecture = QString::fromStdString(model["architecture"].get<std::string>());
      if (model.contains("name") && model["name"].is_string() && !model["name"].get<std::string>().empty())
        e.name = QString::fromStdString(model["name"].get<std::string>());
      if (model.contains("expert_count") && model["expert_count"].is_number_unsigned())
        e.experts = static_cast<int>(model["expert_count"].get<uint64_t>());
      if (model.contains("expert_used_count") && model["expert_used_count"].is_number_unsigned())
        e.topK = static_cast<int>(model["expert_used_count"].get<uint64_t>());
    } catch (const std::exception& ex) {
      e.statusDetail = QString::fromUtf8(ex.what());
    }
    // Quant types: the dense part's and the routed experts' (summarize_pack reads the experts
    // from the manifest as the source's stacked tensors), largest share first.
    try {
      const GgufModel dense = GgufModel::open(d.filePath(QString::fromUtf8(kPackDenseName)).toStdString());
      const ModelSummary s =
          summarize_pack(e.path.toStdString(), dense,
                         read_manifest(d.filePath(QString::fromUtf8(kPackManifestName)).toStdString()));
      const QString arch = e.architecture, name = e.name;
      const QStringList files = e.files;
      const qint64 bytes = e.sizeBytes;
      const int experts = e.experts, topK = e.topK;
      fillFromSummary(e, s);
      fillContext(e, dense, s);
      e.architecture = arch.isEmpty() ? e.architecture : arch;
      e.name = name;
      e.files = files;
      e.sizeBytes = bytes;
      e.experts = experts ? experts : e.experts;
      e.topK = topK ? topK : e.topK;
    } catch (const std::exception&) {
      // A pack whose dense.gguf does not parse is already failed-verify.
    }
  }
  return e;
}

LibraryEntry fromRow(const QSqlQuery& q) {
  LibraryEntry e;
  e.id = q.value(0).toLongLong();
  e.kind = q.value(1).toString();
  e.path = q.value(2).toString();
  e.name = q.value(3).toString();
  for (const auto& v : QJsonDocument::fromJson(q.value(4).toByteArray()).array()) e.files << v.toString();
  e.architecture = q.value(5).toString();
  e.sizeBytes = q.value(6).toLongLong();
  e.quantTypes = q.value(7).toString().split(',', Qt::SkipEmptyParts);
  e.experts = q.value(8).toInt();
  e.topK = q.value(9).toInt();
  e.packStatus = q.value(10).toString();
  e.packPath = q.value(11).toString();
  e.statusDetail = q.value(12).toString();
  e.sourcePresent = q.value(13).toBool();
  e.addedAt = QDateTime::fromMSecsSinceEpoch(q.value(14).toLongLong(), Qt::UTC);
  e.ctxBytesPerToken = q.value(15).toDouble();
  e.ctxFixedBytes = q.value(16).toLongLong();
  e.ctxTrain = q.value(17).toLongLong();
  e.denseBytes = q.value(18).toLongLong();
  e.ctxFormula = q.value(19).toString();
  return e;
}

const char* kColumns =
    "id, kind, path, name, files, architecture, size_bytes, quant_types, experts, top_k, pack_status, "
    "pack_path, status_detail, source_present, added_at, ctx_bytes_per_token, ctx_fixed_bytes, ctx_train, "
    "dense_bytes, ctx_formula";

}  // namespace

std::pair<QString, QString> pack_status_of(const QString& dir) {
  const QDir d(dir);
  if (!d.exists(QString::fromUtf8(kPackManifestName))) {
    if (d.exists(QString::fromUtf8(kBuildStateName)) || d.exists(QString::fromUtf8(kPackExpertsName)))
      return {QStringLiteral("building"), QString()};
    return {QStringLiteral("none"), QString()};
  }
  const VerifyResult r = verify_pack(dir.toStdString());
  if (r.ok) return {QStringLiteral("ready"), QString()};
  return {QStringLiteral("failed-verify"), QString::fromStdString(r.message)};
}

LibraryEntry describe_model(const QString& path) {
  const QFileInfo fi(path);
  if (!fi.exists()) throw Error(path.toStdString() + ": no such file or directory");
  if (fi.isDir()) {
    const QDir d(fi.absoluteFilePath());
    if (!d.exists(QString::fromUtf8(kPackManifestName)) && !d.exists(QString::fromUtf8(kBuildStateName)))
      throw Error(path.toStdString() + ": a folder that is not an Expert Pack (no manifest.json); scan it instead");
    return describePack(fi.absoluteFilePath());
  }
  if (fi.fileName() == QLatin1String(kPackManifestName)) return describePack(fi.absolutePath());
  LibraryEntry e;
  const std::string p = fi.absoluteFilePath().toStdString();
  if (ollama_is_manifest_path(p)) {
    const OllamaModel om = ollama_resolve(p);
    e.kind = QStringLiteral("ollama");
    e.path = absClean(QString::fromStdString(om.manifest_path));
    e.name = QString::fromStdString(om.name);
    const GgufModel model = GgufModel::open(om.blob_path);
    const QString name = e.name;
    const ModelSummary s = summarize(model);
    fillFromSummary(e, s);
    fillContext(e, model, s);
    e.name = name;
    return e;
  }
  std::string prefix;
  int no = 0, count = 0;
  const bool split = parse_split_path(p, prefix, no, count);
  const GgufModel model = GgufModel::open(p);
  e.kind = split && count > 1 ? QStringLiteral("split") : QStringLiteral("gguf");
  e.name = fi.completeBaseName();
  const ModelSummary summary = summarize(model);
  fillFromSummary(e, summary);
  fillContext(e, model, summary);
  e.path = e.files.isEmpty() ? absClean(path) : e.files.front();
  if (split) {
    QString base = QFileInfo(QString::fromStdString(prefix)).fileName();
    if (e.name == fi.completeBaseName()) e.name = base;
  }
  return e;
}

QStringList library_schema_steps() {
  return {
      // 1: the models.
      QStringLiteral("CREATE TABLE library_models ("
                     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " kind TEXT NOT NULL CHECK (kind IN ('gguf','split','ollama','pack')),"
                     " path TEXT NOT NULL UNIQUE,"
                     " name TEXT NOT NULL,"
                     " files TEXT NOT NULL,"  // JSON array of absolute paths
                     " architecture TEXT NOT NULL DEFAULT '',"
                     " size_bytes INTEGER NOT NULL DEFAULT 0,"
                     " quant_types TEXT NOT NULL DEFAULT '',"  // comma-separated
                     " experts INTEGER NOT NULL DEFAULT 0,"
                     " top_k INTEGER NOT NULL DEFAULT 0,"
                     " pack_status TEXT NOT NULL DEFAULT 'none'"
                     "  CHECK (pack_status IN ('none','building','ready','failed-verify')),"
                     " pack_path TEXT NOT NULL DEFAULT '',"
                     " status_detail TEXT NOT NULL DEFAULT '',"
                     " source_present INTEGER NOT NULL DEFAULT 1,"
                     " added_at INTEGER NOT NULL)"),  // ms since the epoch, UTC
      // 2: the download list (ui/library_download_store.h), so that it survives a restart.
      QStringLiteral("CREATE TABLE downloads ("
                     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " group_id INTEGER NOT NULL DEFAULT 0,"  // id of the group's first file; 0 = alone
                     " position INTEGER NOT NULL DEFAULT 0,"  // order in the group (shard order)
                     " url TEXT NOT NULL,"
                     " hub_repo TEXT NOT NULL DEFAULT '',"    // owner/repo, '' for a plain URL
                     " hub_file TEXT NOT NULL DEFAULT '',"    // the file's path in the repository
                     " dest_dir TEXT NOT NULL,"
                     " file_name TEXT NOT NULL,"
                     " expected_size INTEGER NOT NULL DEFAULT -1,"  // bytes, -1 unknown
                     " sha256 TEXT NOT NULL DEFAULT '',"
                     " sha256_source TEXT NOT NULL DEFAULT '',"   // user, hub listing, server, none
                     " bytes_verified INTEGER NOT NULL DEFAULT 0,"  // bytes in the .part, hashed
                     " etag TEXT NOT NULL DEFAULT '',"
                     " state TEXT NOT NULL,"
                     " error TEXT NOT NULL DEFAULT '',"
                     " convert_when_done INTEGER NOT NULL DEFAULT 0,"
                     " extra_bytes INTEGER NOT NULL DEFAULT 0,"  // counted in the space check, bytes
                     " added_at INTEGER NOT NULL,"
                     " UNIQUE (dest_dir, file_name))"),
      // 3: attention state memory from the hyperparameters (core/context_memory.h).
      QStringLiteral("ALTER TABLE library_models ADD COLUMN ctx_bytes_per_token REAL NOT NULL DEFAULT 0;"
                     "ALTER TABLE library_models ADD COLUMN ctx_fixed_bytes INTEGER NOT NULL DEFAULT 0;"
                     "ALTER TABLE library_models ADD COLUMN ctx_train INTEGER NOT NULL DEFAULT 0;"
                     "ALTER TABLE library_models ADD COLUMN dense_bytes INTEGER NOT NULL DEFAULT 0;"
                     "ALTER TABLE library_models ADD COLUMN ctx_formula TEXT NOT NULL DEFAULT ''"),
  };
}

qint64 affordable_context_tokens(const LibraryEntry& e, qint64 memoryBytes, qint64 expertCacheBytes) {
  if (e.ctxBytesPerToken <= 0) return -1;
  const double left = static_cast<double>(memoryBytes) - static_cast<double>(expertCacheBytes) -
                      static_cast<double>(e.denseBytes) - static_cast<double>(e.ctxFixedBytes);
  if (left <= 0) return 0;
  qint64 n = static_cast<qint64>(std::floor(left / e.ctxBytesPerToken));
  if (e.ctxTrain > 0) n = std::min(n, e.ctxTrain);
  return n;
}

ModelLibrary::ModelLibrary(AppDatabase& db, QString modelsFolder, QString packsFolder)
    : db_(db),
      modelsFolder_(absClean(modelsFolder)),
      packsFolder_(packsFolder.isEmpty() ? QString() : absClean(packsFolder)) {
  db_.migrate(QStringLiteral("library"), library_schema_steps());
}

std::vector<LibraryEntry> ModelLibrary::entries() const {
  QSqlQuery q(db_.db());
  if (!q.exec(QStringLiteral("SELECT %1 FROM library_models ORDER BY name COLLATE NOCASE, id")
                  .arg(QLatin1String(kColumns))))
    sqlFail(q);
  std::vector<LibraryEntry> out;
  while (q.next()) out.push_back(fromRow(q));
  return out;
}

LibraryEntry ModelLibrary::entry(qint64 id) const {
  QSqlQuery q(db_.db());
  q.prepare(QStringLiteral("SELECT %1 FROM library_models WHERE id = ?").arg(QLatin1String(kColumns)));
  q.addBindValue(id);
  if (!q.exec()) sqlFail(q);
  if (!q.next()) throw Error("the library has no model with id " + std::to_string(id));
  return fromRow(q);
}

LibraryEntry ModelLibrary::upsert(LibraryEntry e) {
  QSqlQuery q(db_.db());
  q.prepare(QStringLiteral(
      "INSERT INTO library_models (kind, path, name, files, architecture, size_bytes, quant_types, experts, "
      "top_k, pack_status, pack_path, status_detail, source_present, added_at, ctx_bytes_per_token, ctx_fixed_bytes, "
      "ctx_train, dense_bytes, ctx_formula) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT(path) DO UPDATE SET kind = excluded.kind, name = excluded.name, files = excluded.files, "
      "architecture = excluded.architecture, size_bytes = excluded.size_bytes, quant_types = excluded.quant_types, "
      "experts = excluded.experts, top_k = excluded.top_k, source_present = excluded.source_present, "
      "ctx_bytes_per_token = excluded.ctx_bytes_per_token, ctx_fixed_bytes = excluded.ctx_fixed_bytes, "
      "ctx_train = excluded.ctx_train, dense_bytes = excluded.dense_bytes, ctx_formula = excluded.ctx_formula, "
      "pack_status = CASE WHEN excluded.kind = 'pack' THEN excluded.pack_status ELSE pack_status END, "
      "pack_path = CASE WHEN excluded.kind = 'pack' THEN excluded.pack_path ELSE pack_path END, "
      "status_detail = CASE WHEN excluded.kind = 'pack' THEN excluded.status_detail ELSE status_detail END"));
  q.addBindValue(e.kind);
  q.addBindValue(e.path);
  q.addBindValue(text(e.name));
  q.addBindValue(QString::fromUtf8(QJsonDocument(QJsonArray::fromStringList(e.files)).toJson(QJsonDocument::Compact)));
  q.addBindValue(text(e.architecture));
  q.addBindValue(e.sizeBytes);
  q.addBindValue(text(e.quantTypes.join(',')));
  q.addBindValue(e.experts);
  q.addBindValue(e.topK);
  q.addBindValue(e.packStatus.isEmpty() ? QStringLiteral("none") : e.packStatus);
  q.addBindValue(text(e.packPath));
  q.addBindValue(text(e.statusDetail));
  q.addBindValue(e.sourcePresent ? 1 : 0);
  q.addBindValue(QDateTime::currentMSecsSinceEpoch());
  q.addBindValue(e.ctxBytesPerToken);
  q.addBindValue(e.ctxFixedBytes);
  q.addBindValue(e.ctxTrain);
  q.addBindValue(e.denseBytes);
  q.addBindValue(text(e.ctxFormula));
  if (!q.exec()) sqlFail(q);
  QSqlQuery id(db_.db());
  id.prepare(QStringLiteral("SELECT id FROM library_models WHERE path = ?"));
  id.addBindValue(e.path);
  if (!id.exec() || !id.next()) sqlFail(id);
  const qint64 rowId = id.value(0).toLongLong();
  // Ends the statement's read transaction before the writes below: left open, their upgrade to a
  // write fails at once with "database is locked" (WAL: busy_timeout does not apply) whenever
  // another connection (the chat's) committed meanwhile.
  id.finish();
  LibraryEntry stored = entry(rowId);
  if (stored.kind == QLatin1String("pack")) linkPackToSources(stored);
  qCInfo(lcLibrary) << "library:" << stored.kind << stored.path << stored.sizeBytes << "bytes";
  return stored;
}

void ModelLibrary::linkPackToSources(const LibraryEntry& pack) {
  if (pack.packStatus != QLatin1String("ready") && pack.packStatus != QLatin1String("failed-verify")) return;
  std::vector<PackSourceFile> sources;
  try {
    sources = read_manifest(QDir(pack.path).filePath(QString::fromUtf8(kPackManifestName)).toStdString()).sources;
  } catch (const std::exception&) {
    return;
  }
  for (const auto& s : sources) {
    const QString src = absClean(QString::fromStdString(s.path));
    // The source row is the one whose files contain this path (shard 1 of a set, or a blob).
    for (const LibraryEntry& e : entries()) {
      if (e.kind == QLatin1String("pack") || !e.files.contains(src)) continue;
      // A source keeps its link to a ready pack when another, not ready, copy names it too (a
      // damaged copy of the pack must not mark the source "failed verify").
      if (pack.packStatus != QLatin1String("ready") && !e.packPath.isEmpty() && e.packPath != pack.path &&
          pack_status_of(e.packPath).first == QLatin1String("ready")) {
        continue;
      }
      QSqlQuery q(db_.db());
      q.prepare(QStringLiteral("UPDATE library_models SET pack_status = ?, pack_path = ?, status_detail = ? "
                               "WHERE id = ?"));
      q.addBindValue(pack.packStatus);
      q.addBindValue(pack.path);
      q.addBindValue(text(pack.statusDetail));
      q.addBindValue(e.id);
      if (!q.exec()) sqlFail(q);
    }
  }
}

LibraryEntry ModelLibrary::addPath(const QString& path) { return upsert(describe_model(path)); }

LibraryEntry ModelLibrary::addOllama(const QString& name, const QString& ollamaDir) {
  const std::string n = name.trimmed().toStdString();
  if (!ollama_looks_like_name(n)) throw Error("'" + n + "' is not an Ollama model name ([host/][namespace/]model[:tag])");
  const OllamaModel om = ollama_resolve(n, ollamaDir.toStdString());
  LibraryEntry e = describe_model(QString::fromStdString(om.manifest_path));
  e.name = QString::fromStdString(om.name);  // "host/namespace/model:tag"
  return upsert(e);
}

ScanResult ModelLibrary::scanFolder(const QString& folder) {
  ScanResult r;
  const QFileInfo root(folder);
  if (!root.isDir()) throw Error(folder.toStdString() + ": not a folder");
  QSet<QString> seen;  // files already covered by an added model (shards of a set)
  QStringList candidates;
  QDirIterator it(root.absoluteFilePath(), QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::NoSymLinks,
                  QDirIterator::Subdirectories);
  while (it.hasNext()) {
    const QString p = it.next();
    const QFileInfo fi = it.fileInfo();
    if (fi.isDir()) {
      const QDir d(p);
      if (d.exists(QString::fromUtf8(kPackManifestName)) || d.exists(QString::fromUtf8(kBuildStateName)))
        candidates << p;
    } else if (fi.suffix().compare(QLatin1String("gguf"), Qt::CaseInsensitive) == 0) {
      // A pack's dense.gguf is part of the pack, not a model of its own.
      const QDir parent = fi.absoluteDir();
      if (fi.fileName() == QLatin1String(kPackDenseName) && parent.exists(QString::fromUtf8(kPackManifestName)))
        continue;
      candidates << p;
    }
  }
  candidates.sort();
  for (const QString& p : candidates) {
    if (seen.contains(absClean(p))) continue;
    try {
      LibraryEntry e = addPath(p);
      for (const QString& f : e.files) seen.insert(f);
      r.added.push_back(std::move(e));
    } catch (const std::exception& ex) {
      QString msg = QString::fromUtf8(ex.what());
      if (!msg.contains(p)) msg = p + QStringLiteral(": ") + msg;
      r.errors << msg;
      qCWarning(lcLibrary) << "scan:" << msg;
    }
  }
  return r;
}

std::vector<LibraryEntry> ModelLibrary::refresh() {
  for (LibraryEntry e : entries()) {
    bool present = !e.files.isEmpty();
    for (const QString& f : e.files) present = present && QFileInfo::exists(f);
    // Rows from before schema step 3 (no hyperparameters read yet): read them now.
    if (present && e.ctxTrain == 0 && e.ctxBytesPerToken == 0) {
      try {
        const LibraryEntry d = describe_model(e.path);
        QSqlQuery c(db_.db());
        c.prepare(QStringLiteral("UPDATE library_models SET ctx_bytes_per_token = ?, ctx_fixed_bytes = ?, "
                                 "ctx_train = ?, dense_bytes = ?, ctx_formula = ? WHERE id = ?"));
        c.addBindValue(d.ctxBytesPerToken);
        c.addBindValue(d.ctxFixedBytes);
        c.addBindValue(d.ctxTrain);
        c.addBindValue(d.denseBytes);
        c.addBindValue(text(d.ctxFormula));
        c.addBindValue(e.id);
        if (!c.exec()) sqlFail(c);
      } catch (const std::exception& ex) {
        qCInfo(lcLibrary) << "refresh: no hyperparameters for" << e.path << ":" << ex.what();
      }
    }
    QString status = e.packStatus, detail = e.statusDetail;
    if (!e.packPath.isEmpty()) {
      std::tie(status, detail) = pack_status_of(e.packPath);
      if (e.kind != QLatin1String("pack") && status == QLatin1String("none")) detail.clear();
    }
    if (e.kind == QLatin1String("pack")) present = QFileInfo(e.path).isDir() && status != QLatin1String("none");
    QSqlQuery q(db_.db());
    q.prepare(QStringLiteral("UPDATE library_models SET source_present = ?, pack_status = ?, status_detail = ? "
                             "WHERE id = ?"));
    q.addBindValue(present ? 1 : 0);
    q.addBindValue(text(status));
    q.addBindValue(text(detail));
    q.addBindValue(e.id);
    if (!q.exec()) sqlFail(q);
  }
  return entries();
}

QString deletion_refusal(const LibraryEntry& e, const QString& modelsFolder, const QString& packsFolder) {
  if (e.kind == QLatin1String("ollama"))
    return QObject::
        tr("the files of Ollama model %1 are shared blobs of Ollama's store; remove it with `ollama rm %1`")
            .arg(e.name);
  // A root that is "/", the home folder or one of its ancestors would let a row delete anything.
  const QString home = QFileInfo(QDir::homePath()).canonicalFilePath();
  const auto root_of = [&](const QString& folder) {
    const QString r = folder.isEmpty() ? QString() : QFileInfo(folder).canonicalFilePath();
    if (r.isEmpty() || r == QLatin1String("/") || home == r || home.startsWith(r + QLatin1Char('/')))
      return QString();
    return r;
  };
  const QString models = root_of(modelsFolder), packs = root_of(packsFolder);
  // A pack the studio converted is a directory right inside the packs folder.
  const bool ownPack = e.kind == QLatin1String("pack") && !packs.isEmpty() &&
                       QFileInfo(QFileInfo(e.path).canonicalFilePath()).absolutePath() == packs;
  for (const QString& f : e.files) {
    const QFileInfo fi(f);
    if (!fi.exists() && !fi.isSymLink()) continue;  // already gone
    // What remove() unlinks is this name in its (resolved) folder, not a symlink's target.
    const QString dir = QFileInfo(fi.absolutePath()).canonicalFilePath();
    const QString unlinked = dir + QLatin1Char('/') + fi.fileName();
    const bool inside =
        (!models.isEmpty() && !dir.isEmpty() && unlinked.startsWith(models + QLatin1Char('/'))) ||
        (ownPack && !dir.isEmpty() && unlinked.startsWith(packs + QLatin1Char('/')));
    if (!inside) {
      QStringList named;
      for (const QString& d : {modelsFolder, packsFolder})
        if (!d.isEmpty()) named << d;
      return QObject::tr("%1 is outside MoePack's folders (%2); MoePack only deletes files there")
          .arg(f, named.join(QStringLiteral(", ")));
    }
  }
  return {};
}

qint64 ModelLibrary::bytesFreedByRemoving(qint64 id, bool deleteFiles) const {
  const LibraryEntry e = entry(id);
  if (!deleteFiles) return 0;
  const QString refusal = deletion_refusal(e, modelsFolder_, packsFolder_);
  if (!refusal.isEmpty()) throw Error(refusal.toStdString());
  qint64 bytes = 0;
  for (const QString& f : e.files) bytes += QFileInfo(f).exists() ? QFileInfo(f).size() : 0;
  return bytes;
}

qint64 ModelLibrary::remove(qint64 id, bool deleteFiles) {
  const LibraryEntry e = entry(id);
  const qint64 bytes = bytesFreedByRemoving(id, deleteFiles);  // throws before anything changes
  if (deleteFiles) {
    QStringList order = e.files;
    // manifest.json first: from then on the directory is no longer a pack.
    std::stable_partition(order.begin(), order.end(),
                          [](const QString& f) { return f.endsWith(QLatin1String("/manifest.json")); });
    for (const QString& f : order) {
      if (QFileInfo::exists(f) && !QFile::remove(f)) throw Error("cannot delete " + f.toStdString());
    }
    if (e.kind == QLatin1String("pack")) QDir().rmdir(e.path);  // only if now empty
  }
  QSqlQuery q(db_.db());
  q.prepare(QStringLiteral("DELETE FROM library_models WHERE id = ?"));
  q.addBindValue(id);
  if (!q.exec()) sqlFail(q);
  if (e.kind == QLatin1String("pack")) {
    QSqlQuery u(db_.db());
    u.prepare(QStringLiteral("UPDATE library_models SET pack_status = 'none', pack_path = '', status_detail = '' "
                             "WHERE pack_path = ?"));
    u.addBindValue(e.path);
    if (!u.exec()) sqlFail(u);
  }
  qCInfo(lcLibrary) << "removed" << e.path << (deleteFiles ? "and its files," : "(files kept),") << bytes
                    << "bytes freed";
  return bytes;
}

}  // namespace moepack::ui
