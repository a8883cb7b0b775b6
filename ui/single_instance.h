// One studio per user. The conversation database, the download list and the downloads' .part
// files are written by one process at a time: a second studio would resume the same downloads
// over the first's files. The lock is a QLockFile in the app's data folder, held for the
// process's life; a lock whose process is gone (a crash) is taken over (QLockFile's stale-lock
// rule: the recorded pid no longer runs).
#pragma once

#include <QLockFile>
#include <QString>
#include <memory>

namespace moepack::ui {

// Takes `dir`/moepack-studio.lock, waiting up to `wait_ms` for an instance that is quitting (the
// restart after a lost GPU starts the new process while the old one quits). nullptr when another
// instance keeps it; `why` then says which process holds it (pid, host, application) or what
// failed (the folder cannot be created, the lock file cannot be written), in English: it runs
// before the settings choose the UI language.
std::unique_ptr<QLockFile> acquire_instance_lock(const QString& dir, int wait_ms, QString* why);

// How long a start waits for the lock, in ms: 15 s for the restart after a lost GPU (the old
// process is quitting: it started the new one); none for any other start, which another running
// studio refuses at once (exit 1, no window).
constexpr int instance_lock_wait_ms(bool restart_after_lost_gpu) {
  return restart_after_lost_gpu ? 15000 : 0;
}

}  // namespace moepack::ui
