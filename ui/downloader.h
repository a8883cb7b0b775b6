// One model download over HTTPS (QNetworkAccessManager), resumable and verified before use.
//
// Files, all in the destination folder (the models folder):
//   <name>.part        the bytes received so far (its size is the resume offset)
//   <name>.part.json   sidecar state {url, etag, expected_size, sha256, sha256_source},
//                      written atomically (temp, fsync, rename) whenever it changes
//   <name>             only after verification passed: size == expected and SHA-256 ==
//                      the user's hash or the server's published hash; installed with
//                      renameat2(RENAME_NOREPLACE) (link + unlink where unsupported) + fsync of
//                      the folder: a file that appeared at <name> meanwhile is never replaced,
//                      the download fails naming both paths and the verified .part is kept
//   <name>.corrupt     a complete file whose hash did not match: kept aside, never installed
//
// Protocol (RFC 9110): a HEAD first gives the size, the ETag and any published hash; then the
// free space is checked (QStorageInfo or an injected probe: needed = remaining bytes + the
// caller's extra bytes, e.g. the estimated pack for "convert when done"). A GET resumes with
// `Range: bytes=N-` and `If-Range: <etag>`:
//   206 with Content-Range starting at N   append
//   200 although a Range was sent          the server ignored it (or If-Range failed): restart
//                                          from 0, truncating the .part (never appended)
//   416                                    the .part is complete: verify it; else restart
//   ETag differs from the recorded one     the file changed: restart from 0
//   body shorter than announced, network   retry with exponential backoff (base * 2^n, capped,
//   errors, 5xx                            at most maxRetries attempts without progress), resume
// SHA-256 is computed while writing. After a resume the existing prefix is hashed first on a
// worker thread (state Hashing, hashProgress() about every 100 ms); pause() and cancel() do not
// wait for it: they raise its cancel flag, which the worker checks between 1 MiB reads, and
// return at once (the worker's result is discarded). The hub publishes the LFS file's SHA-256 as `X-Linked-ETag` (else `ETag`);
// it is used when it is 64 hex digits. An expected hash from the caller (the user, or the hub's
// listing: DownloadRequest::sha256Source) takes precedence. With no hash known the download is checked for size
// only and hashSource() says "none".
//
// TLS: verification is always on (QSslSocket::VerifyPeer); setExtraCaCertificates() adds
// trusted roots (a company proxy, the tests' CA). There is no way to switch it off.
// Names: the local file name is checked by sanitized_file_name(); no name from a URL or the
// caller can leave the destination folder.
#pragma once

#include <QElapsedTimer>
#include <QNetworkRequest>
#include <QFile>
#include <QFutureWatcher>
#include <QLoggingCategory>
#include <QObject>
#include <QPointer>
#include <QSslCertificate>
#include <QTimer>
#include <QUrl>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "core/sha256.h"

class QNetworkAccessManager;
class QNetworkReply;

namespace moepack::ui {

Q_DECLARE_LOGGING_CATEGORY(lcDownload)  // "moepack.download"

struct DownloadRequest {
  QUrl url;                // https only
  QString destDir;         // the models folder
  QString fileName;        // local name; empty = the URL's last path segment (sanitised)
  QString expectedSha256;  // 64 hex digits from the user or the hub listing, or empty
  QString sha256Source = QStringLiteral("user");  // where expectedSha256 came from: "user", "hub listing"
  qint64 extraBytesNeeded = 0;  // added to the space check (later shards, a pack estimate), bytes
  // "Convert when done": the later Expert Pack is counted in the space check as the file's size
  // again (the pack holds the same tensors: experts byte for byte, the dense part re-laid out).
  bool countPack = false;
  qint64 expectedSize = -1;  // bytes, from the hub listing; the server's size must agree (-1: any)
};

// Bytes available to an unprivileged user in `dir` (QStorageInfo); nullopt when unknown.
std::optional<qint64> free_bytes_in(const QString& dir);

// A GET/HEAD request for `url` with TLS peer verification on and `extraCas` added to the
// system's roots; no cache, no content coding, redirects only to equally safe URLs.
QNetworkRequest https_request(const QUrl& url, const QList<QSslCertificate>& extraCas);

// "{base}/{owner}/{repo}/resolve/main/{file}" for a Hugging Face-style hub. `repo` must be
// "owner/name" ([A-Za-z0-9._-], no "." or ".." part); `file` may contain folders but no "..".
// Returns an invalid QUrl and sets *why on a malformed input.
QUrl hub_file_url(const QString& base, const QString& repo, const QString& file, QString* why = nullptr);
// The name as a local file name, or "" (with *why) when it is empty, ".", "..", starts with
// '.', contains '/', '\\', ':' or a control character, or ends in .part/.corrupt/.json.
QString sanitized_file_name(const QString& name, QString* why = nullptr);

class Downloader : public QObject {
  Q_OBJECT
 public:
  enum class State { Idle, Probing, Hashing, Downloading, Waiting, Paused, Verifying, Finished, Failed, Cancelled };
  Q_ENUM(State)

  // Free-bytes probe: bytes available in a folder; nullopt = unknown (the check passes).
  using FreeBytesProbe = std::function<std::optional<qint64>(const QString& dir)>;

  explicit Downloader(QNetworkAccessManager* nam, QObject* parent = nullptr);
  ~Downloader() override;

  void setExtraCaCertificates(const QList<QSslCertificate>& certs) { extraCas_ = certs; }
  // Loads a PEM bundle; returns false (and logs) if it holds no certificate.
  bool addCaBundle(const QString& pemPath);
  void setFreeBytesProbe(FreeBytesProbe probe) { freeBytes_ = std::move(probe); }
  // Retries: at most `maxRetries` consecutive attempts without progress; delay base*2^n ms,
  // capped at maxDelayMs.
  void setRetryPolicy(int maxRetries, int baseDelayMs, int maxDelayMs);

  // Starts (or resumes, if a matching .part exists). Errors end in state Failed with error().
  void start(const DownloadRequest& request);
  // Records the request without touching the network, as restored from the download list:
  // `shown` is Idle (queued), Paused or Failed (with `error`); bytesDone() is the .part's size.
  // resume() then starts it. Returns false (state Failed) on a bad file name.
  bool prepare(const DownloadRequest& request, State shown, const QString& error = {});
  void pause();   // keeps the .part; start() or resume() continues
  void resume();  // start() with the same request (from Paused, Failed, or a prepared Idle)
  void cancel();  // stops and deletes the .part and its sidecar; never waits for the hash worker

  State state() const { return state_; }
  QString error() const { return error_; }
  qint64 bytesDone() const { return done_; }
  qint64 bytesTotal() const { return total_; }  // -1 until known
  double rateBytesPerSecond() const { return rate_; }
  double etaSeconds() const;  // -1 when unknown
  QString finalPath() const;
  QString partPath() const;
  QString corruptPath() const;
  QString hashSource() const { return hashSource_; }  // "user", "hub listing", "server" or "none"
  QString expectedSha256() const;                     // the hash it is checked against, or ""
  QString etag() const { return etag_; }
  const DownloadRequest& request() const { return req_; }
  qint64 hashedBytes() const;                         // of the prefix being hashed (Hashing)
  QString sha256() const { return actualSha_; }       // of the finished file
  int restarts() const { return restarts_; }          // times the .part was discarded
  int retries() const { return retriesTotal_; }

 signals:
  void stateChanged(moepack::ui::Downloader::State state);
  void progress(qint64 done, qint64 total);
  void finished(bool ok);  // Finished (ok), Failed or Cancelled
  void hashProgress(qint64 hashed, qint64 total);  // while Hashing the .part's prefix, bytes

 private:
  void setState(State s);
  void fail(const QString& message);
  void probe();
  void onProbeFinished();
  void hashPrefixThenGet();
  void get();
  void onMetaData();
  void onReadyRead();
  void onGetFinished();
  void scheduleRetry(const QString& why);
  void restartFromZero(const QString& why);
  void verifyAndInstall();
  void writeSidecar();
  bool loadSidecar();
  bool installedEarlier();
  void removePartial();
  void stopHashing();
  QNetworkReply* send(const QByteArray& verb, bool withRange);
  static QString publishedSha(QNetworkReply* reply);

  QNetworkAccessManager* nam_;
  QList<QSslCertificate> extraCas_;
  FreeBytesProbe freeBytes_;
  int maxRetries_ = 5, baseDelayMs_ = 500, maxDelayMs_ = 30000;

  DownloadRequest req_;
  QString name_;
  State state_ = State::Idle;
  QString error_;
  QPointer<QNetworkReply> reply_;
  QFile part_;
  std::unique_ptr<Sha256> hasher_;
  struct HashJob {
    std::atomic<bool> cancel{false};
    std::atomic<qint64> done{0};
  };
  std::shared_ptr<HashJob> hashJob_;
  QTimer hashTimer_;
  QFutureWatcher<std::shared_ptr<Sha256>> prefixWatcher_;
  QTimer retryTimer_;
  QString etag_;
  bool etagWeak_ = false;  // W/"…": never sent as If-Range (a server must not match it there)
  QString serverSha_;
  QString hashSource_;
  QString actualSha_;
  qint64 done_ = 0, total_ = -1;
  qint64 attemptStart_ = 0;  // done_ when the current GET started
  bool rangeSent_ = false;
  bool headersChecked_ = false;
  int failuresWithoutProgress_ = 0;
  int restarts_ = 0, retriesTotal_ = 0;
  int generation_ = 0;  // invalidates callbacks of a superseded attempt
  bool prepared_ = false;  // prepare() recorded a request
  QElapsedTimer rateClock_;
  qint64 rateBytes_ = 0;
  double rate_ = 0;
};

}  // namespace moepack::ui
