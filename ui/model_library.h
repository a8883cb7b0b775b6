// The model library: every model MoePack knows (GGUF files, split sets, Ollama store models,
// Expert Packs), stored in the studio's SQLite database (ui/app_database.h), component
// "library", table `library_models`.
//
// A row is keyed by its primary path: the GGUF file, shard 1 of a split set, the Ollama
// manifest path, or the pack directory. `files` lists every file the model occupies on disk;
// `size_bytes` is their total (apparent size, bytes). `pack_status` of a pack row is its own
// state; of a GGUF/split/Ollama row it is the state of the pack built from it (linked through
// the pack manifest's `sources`, or "none"):
//   none           no pack known
//   building       the pack directory has build-state.json and no manifest.json
//   ready          manifest.json exists and the fast verify (structure, sizes) passes
//   failed-verify  manifest.json exists but the fast verify fails (message in `status_detail`)
// `source_present` is false once any of `files` is gone (deleted by the wizard or the user).
//
// Threads: ModelLibrary is a plain class over one AppDatabase connection; use it on the thread
// that opened that connection (LibraryViewModel opens one per worker job). Every method that
// reads a model file can take seconds on a huge model: never call it on the GUI thread.
// Errors throw moepack::Error with the offending file in the message.
#pragma once

#include <QDateTime>
#include <QLoggingCategory>
#include <QString>
#include <QStringList>
#include <vector>

namespace moepack::ui {

Q_DECLARE_LOGGING_CATEGORY(lcLibrary)  // "moepack.library"

class AppDatabase;

struct LibraryEntry {
  qint64 id = 0;
  QString kind;  // "gguf", "split", "ollama", "pack"
  QString path;  // primary path (see above); for "ollama" the manifest path
  QString name;  // display name: general.name, the Ollama name, or the file/directory name
  QStringList files;
  QString architecture;     // general.architecture ("" if unknown)
  qint64 sizeBytes = 0;     // sum over `files`, bytes
  QStringList quantTypes;   // ggml type names by descending bytes, e.g. {"q4_K", "q6_K", "f32"}
  int experts = 0;          // routed experts per MoE layer (0: not a MoE model)
  int topK = 0;             // experts used per token
  QString packStatus;       // none, building, ready, failed-verify
  QString packPath;         // the pack directory ("" if none)
  QString statusDetail;     // verify message when failed-verify
  bool sourcePresent = true;
  QDateTime addedAt;        // UTC
  // Attention state from the hyperparameters (core/context_memory.h, as `moepack inspect`
  // prints it; llama.cpp's default cache types: F16 rows, F32 states). 0 when unknown (an
  // architecture the engine does not run, or a row added before schema step 3 until re-added).
  double ctxBytesPerToken = 0;  // bytes per token of context (KV cache rows)
  qint64 ctxFixedBytes = 0;     // bytes per sequence whatever its length (windows, recurrent states)
  qint64 ctxTrain = 0;          // context_length the model was trained for, tokens
  qint64 denseBytes = 0;        // tensor bytes that are not routed experts (always resident)
  QString ctxFormula;           // one line, context_memory().formula
};

// Context (tokens) affordable for one sequence when `memoryBytes` hold the dense weights, an
// expert cache of `expertCacheBytes` and the attention state:
//   tokens = floor((memoryBytes - expertCacheBytes - denseBytes - ctxFixedBytes) / ctxBytesPerToken)
// clamped to [0, ctxTrain] (ctxTrain 0: no upper clamp). -1 when ctxBytesPerToken is unknown (0).
qint64 affordable_context_tokens(const LibraryEntry& e, qint64 memoryBytes, qint64 expertCacheBytes);

// Schema steps of the "library" component, shared by every store on its tables (ModelLibrary,
// DownloadStore): 1 library_models; 2 downloads (ui/library_download_store.h); 3 the context
// memory columns of library_models. Steps are never edited; a change is a new step.
QStringList library_schema_steps();

struct ScanResult {
  std::vector<LibraryEntry> added;  // added or updated
  QStringList errors;               // one per file that could not be read, naming it
};

class ModelLibrary {
 public:
  // Migrates the "library" component of `db`. remove(..., deleteFiles = true) deletes files only
  // inside `modelsFolder` (downloads) or `packsFolder` (the Expert Packs the studio converts
  // into: the Settings' models_folder; empty = none).
  ModelLibrary(AppDatabase& db, QString modelsFolder, QString packsFolder = {});

  std::vector<LibraryEntry> entries() const;  // ordered by name, then id
  LibraryEntry entry(qint64 id) const;        // throws Error if unknown

  // Adds (or updates) the model at `path`: a .gguf file, any shard of a split set (the whole
  // set becomes one row), an Ollama manifest file, or an Expert Pack directory (finished or
  // being built). Throws Error naming the path.
  LibraryEntry addPath(const QString& path);
  // Adds an Ollama model by name (`[host/][namespace/]model[:tag]`); `ollamaDir` empty means
  // $OLLAMA_MODELS or ~/.ollama/models.
  LibraryEntry addOllama(const QString& name, const QString& ollamaDir = {});
  // Adds every *.gguf file (one row per split set) and every pack directory below `folder`
  // (recursively, symlinks not followed). Unreadable files are reported, not fatal.
  ScanResult scanFolder(const QString& folder);

  // Re-checks every row: files present, pack status. Returns the updated rows.
  std::vector<LibraryEntry> refresh();

  // Bytes remove(id, deleteFiles) would free: 0 without deleteFiles. Throws Error (with the
  // reason) when the files may not be deleted: an Ollama model (blobs are shared; use
  // `ollama rm`) or any file outside the models and packs folders (deletion_refusal).
  qint64 bytesFreedByRemoving(qint64 id, bool deleteFiles) const;
  // Removes the row; with deleteFiles also its files (a pack: manifest.json first, so a
  // half-deleted pack never loads). Returns the bytes freed.
  qint64 remove(qint64 id, bool deleteFiles);

  const QString& modelsFolder() const { return modelsFolder_; }

 private:
  LibraryEntry upsert(LibraryEntry e);
  void linkPackToSources(const LibraryEntry& pack);

  AppDatabase& db_;
  QString modelsFolder_;
  QString packsFolder_;
};

// Why `e`'s files may not be deleted, or empty when they may. Deletable: files inside
// `modelsFolder` (downloads), and the files of a pack whose directory sits right inside
// `packsFolder` (what the studio converted). Refused: an Ollama model (its blobs are shared), any
// other file, and everything when a folder is "/", the home folder or an ancestor of it. Each
// file is judged by the name remove() unlinks (its folder resolved, the name itself not), so a
// symlink is judged where it lies, not by its target. Files already gone are skipped.
QString deletion_refusal(const LibraryEntry& e, const QString& modelsFolder, const QString& packsFolder);

// Reads what the library stores about the model at `path` (no database). Throws Error.
LibraryEntry describe_model(const QString& path);
// Pack state of `dir`: {status, detail} with status none/building/ready/failed-verify.
std::pair<QString, QString> pack_status_of(const QString& dir);

}  // namespace moepack::ui
