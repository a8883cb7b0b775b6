// The download list in the studio's SQLite database (ui/app_database.h), table `downloads` of
// the "library" component (schema step 2, library_schema_steps() in ui/model_library.h), so
// that downloads survive an app restart. One row per file; the shards of one hub pattern share
// `groupId` (the id of the group's first row) and are ordered by `position`.
//
// What the row holds is the list and what the user asked for; the byte-exact resume state
// stays in the Downloader's .part and .part.json sidecar (ui/downloader.h), which the row
// points to through destDir/fileName. `bytesVerified` and `etag` are refreshed on state changes
// and at most every few seconds while bytes arrive (display and diagnostics; the resume offset
// is always the .part's size).
//
// States: the Downloader's state names (ui/downloads_view_model.cpp); on start, rows in
// probing/hashing/downloading/waiting/verifying were interrupted by the restart and resume by
// themselves, paused and failed rows reappear as they were.
//
// Threads: a plain class over one AppDatabase connection, used on the thread that opened it.
// Errors throw moepack::Error with the SQLite message.
#pragma once

#include <QString>
#include <vector>

namespace moepack::ui {

class AppDatabase;

struct DownloadRecord {
  qint64 id = 0;
  qint64 groupId = 0;     // 0: not in a group
  int position = 0;       // order inside the group
  QString url;            // the https:// URL fetched
  QString hubRepo;        // "owner/repo" when it came from the hub, else ""
  QString hubFile;        // the file's path in the repository
  QString destDir;        // the models folder
  QString fileName;       // local name inside destDir (sanitized_file_name)
  qint64 expectedSize = -1;  // bytes; -1 unknown
  QString sha256;         // expected hash (64 hex) or ""
  QString sha256Source;   // "user", "hub listing", "server", "none" or ""
  qint64 bytesVerified = 0;  // bytes in the .part whose hash is accounted for
  QString etag;
  QString state;
  QString error;
  bool convertWhenDone = false;
  qint64 extraBytes = 0;  // counted in the space check (the later pack), bytes
};

class DownloadStore {
 public:
  explicit DownloadStore(AppDatabase& db);  // migrates the "library" component

  std::vector<DownloadRecord> all() const;  // by group, position, id
  qint64 insert(const DownloadRecord& r);   // returns the new id
  // Updates everything but id and added_at. Throws Error if the row does not exist.
  void update(const DownloadRecord& r);
  void remove(qint64 id);
  // Removes every row of group `groupId` (the group's first row's id: rows whose group_id or id
  // is it), finished ones included.
  void removeGroup(qint64 groupId);

 private:
  AppDatabase& db_;
};

}  // namespace moepack::ui
