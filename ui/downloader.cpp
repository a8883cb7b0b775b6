#include "ui/downloader.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QRegularExpression>
#include <QSslConfiguration>
#include <QStorageInfo>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "core/durable_io.h"
#include "ui/byte_units.h"

namespace moepack::ui {

Q_LOGGING_CATEGORY(lcDownload, "moepack.download")

namespace {

constexpr int kMaxRestarts = 4;  // consecutive discards of the .part before giving up

bool isHex64(const QString& s) {
  static const QRegularExpression re(QStringLiteral("^[0-9a-fA-F]{64}$"));
  return re.match(s).hasMatch();
}

QString unquoteEtag(QString v) {
  v = v.trimmed();
  if (v.startsWith(QLatin1String("W/"))) v = v.mid(2);
  if (v.size() >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.mid(1, v.size() - 2);
  return v;
}

bool isWeakEtag(const QByteArray& raw) { return raw.trimmed().startsWith("W/"); }

bool isTlsError(QNetworkReply::NetworkError e) { return e == QNetworkReply::SslHandshakeFailedError; }

}  // namespace

QString sanitized_file_name(const QString& name, QString* why) {
  auto reject = [&](const QString& reason) {
    if (why) *why = reason;
    return QString();
  };
  if (name.isEmpty()) return reject(QObject::tr("empty file name"));
  if (name == QLatin1String(".") || name == QLatin1String(".."))
    return reject(QObject::tr("'%1' is not a file name").arg(name));
  if (name.startsWith('.')) return reject(QObject::tr("'%1' starts with a dot").arg(name));
  if (name.size() > 255) return reject(QObject::tr("file name longer than 255 characters"));
  for (const QChar c : name) {
    if (c == '/' || c == '\\' || c == ':' || c.unicode() < 0x20 || c.unicode() == 0x7f)
      return reject(QObject::tr("'%1' contains a path separator or control character").arg(name));
  }
  for (const char* suffix : {".part", ".corrupt", ".json"}) {
    if (name.endsWith(QLatin1String(suffix), Qt::CaseInsensitive))
      return reject(QObject::tr("'%1' ends in %2, which MoePack uses for its own files").arg(name, QLatin1String(suffix)));
  }
  return name;
}

QUrl hub_file_url(const QString& base, const QString& repo, const QString& file, QString* why) {
  static const QRegularExpression part(QStringLiteral("^[A-Za-z0-9._-]+$"));
  auto reject = [&](const QString& reason) {
    if (why) *why = reason;
    return QUrl();
  };
  const QStringList rp = repo.split('/');
  if (rp.size() != 2) return reject(QObject::tr("'%1' is not owner/repository").arg(repo));
  for (const QString& p : rp) {
    if (!part.match(p).hasMatch() || p == QLatin1String(".") || p == QLatin1String(".."))
      return reject(QObject::tr("'%1' is not owner/repository").arg(repo));
  }
  const QStringList fp = file.split('/');
  for (const QString& p : fp) {
    if (p.isEmpty() || p == QLatin1String(".") || p == QLatin1String("..") || p.contains('\\'))
      return reject(QObject::tr("'%1' is not a file path inside the repository").arg(file));
  }
  QUrl b(base);
  if (!b.isValid() || b.scheme() != QLatin1String("https"))
    return reject(QObject::tr("the hub address %1 is not an https:// URL").arg(base));
  QString path = b.path();
  if (path.endsWith('/')) path.chop(1);
  b.setPath(path + '/' + rp[0] + '/' + rp[1] + QStringLiteral("/resolve/main/") + fp.join('/'));
  return b;
}

std::optional<qint64> free_bytes_in(const QString& dir) {
  QString d = dir;
  while (!d.isEmpty() && !QFileInfo(d).isDir() && d != QFileInfo(d).absolutePath()) d = QFileInfo(d).absolutePath();
  const QStorageInfo si(d);
  if (!si.isValid() || !si.isReady()) return std::nullopt;
  return si.bytesAvailable();
}

QNetworkRequest https_request(const QUrl& url, const QList<QSslCertificate>& extraCas) {
  QNetworkRequest r(url);
  QSslConfiguration tls = QSslConfiguration::defaultConfiguration();
  if (!extraCas.isEmpty()) tls.addCaCertificates(extraCas);
  tls.setPeerVerifyMode(QSslSocket::VerifyPeer);  // never anything else
  r.setSslConfiguration(tls);
  r.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);
  r.setAttribute(QNetworkRequest::CacheLoadControlAttribute, QNetworkRequest::AlwaysNetwork);
  r.setRawHeader("Accept-Encoding", "identity");  // byte offsets must be the file's
  return r;
}

Downloader::Downloader(QNetworkAccessManager* nam, QObject* parent) : QObject(parent), nam_(nam) {
  freeBytes_ = free_bytes_in;
  retryTimer_.setSingleShot(true);
  connect(&retryTimer_, &QTimer::timeout, this, &Downloader::probe);
  hashTimer_.setInterval(100);
  connect(&hashTimer_, &QTimer::timeout, this, [this] { emit hashProgress(hashedBytes(), done_); });
  connect(&prefixWatcher_, &QFutureWatcher<std::shared_ptr<Sha256>>::finished, this, [this] {
    hashTimer_.stop();
    if (state_ != State::Hashing) return;  // paused or cancelled meanwhile
    emit hashProgress(done_, done_);
    std::shared_ptr<Sha256> h = prefixWatcher_.result();
    if (!h) {
      restartFromZero(tr("the partial file %1 could not be read back").arg(partPath()));
      return;
    }
    hasher_ = std::make_unique<Sha256>(std::move(*h));
    get();
  });
}

Downloader::~Downloader() {
  if (reply_) {
    reply_->disconnect(this);
    reply_->abort();
    reply_->deleteLater();
  }
  if (hashJob_) hashJob_->cancel = true;  // the worker stops within one 1 MiB read
  prefixWatcher_.waitForFinished();
}

void Downloader::stopHashing() {
  hashTimer_.stop();
  if (hashJob_) hashJob_->cancel = true;
}

qint64 Downloader::hashedBytes() const { return hashJob_ ? hashJob_->done.load() : 0; }

QString Downloader::expectedSha256() const {
  if (hashSource_ == QLatin1String("server")) return serverSha_;
  if (hashSource_ == QLatin1String("none")) return {};
  return req_.expectedSha256.toLower();
}

bool Downloader::prepare(const DownloadRequest& request, State shown, const QString& error) {
  req_ = request;
  QString why;
  name_ = sanitized_file_name(req_.fileName, &why);
  if (name_.isEmpty()) {
    fail(tr("refused file name %1: %2").arg(req_.fileName, why));
    return false;
  }
  prepared_ = true;
  error_ = error;
  done_ = QFileInfo(shown == State::Finished ? finalPath() : partPath()).size();
  total_ = shown == State::Finished ? done_ : req_.expectedSize;
  hashSource_ = req_.expectedSha256.isEmpty() ? QString() : req_.sha256Source;
  setState(shown);
  return true;
}

bool Downloader::addCaBundle(const QString& pemPath) {
  const QList<QSslCertificate> certs = QSslCertificate::fromPath(pemPath, QSsl::Pem);
  if (certs.isEmpty()) {
    qCWarning(lcDownload) << "no certificate in CA bundle" << pemPath;
    return false;
  }
  extraCas_ += certs;
  return true;
}

void Downloader::setRetryPolicy(int maxRetries, int baseDelayMs, int maxDelayMs) {
  maxRetries_ = std::max(0, maxRetries);
  baseDelayMs_ = std::max(1, baseDelayMs);
  maxDelayMs_ = std::max(baseDelayMs_, maxDelayMs);
}

QString Downloader::finalPath() const { return QDir(req_.destDir).filePath(name_); }
QString Downloader::partPath() const { return finalPath() + QStringLiteral(".part"); }
QString Downloader::corruptPath() const { return finalPath() + QStringLiteral(".corrupt"); }

double Downloader::etaSeconds() const {
  if (total_ < 0 || rate_ <= 0) return -1;
  return static_cast<double>(total_ - done_) / rate_;
}

void Downloader::setState(State s) {
  if (s == state_) return;
  state_ = s;
  emit stateChanged(s);
}

void Downloader::fail(const QString& message) {
  ++generation_;
  retryTimer_.stop();
  stopHashing();
  if (reply_) {
    reply_->disconnect(this);
    reply_->abort();
    reply_->deleteLater();
  }
  if (part_.isOpen()) part_.close();
  error_ = message;
  qCWarning(lcDownload) << message;
  setState(State::Failed);
  emit finished(false);
}

void Downloader::start(const DownloadRequest& request) {
  if (state_ == State::Probing || state_ == State::Hashing || state_ == State::Downloading ||
      state_ == State::Waiting || state_ == State::Verifying)
    return;
  req_ = request;
  error_.clear();
  done_ = 0;
  total_ = -1;
  etag_.clear();
  serverSha_.clear();
  actualSha_.clear();
  failuresWithoutProgress_ = 0;
  restarts_ = 0;
  rate_ = 0;
  if (!req_.url.isValid() || req_.url.scheme() != QLatin1String("https")) {
    name_.clear();
    fail(tr("only https:// downloads are allowed: %1").arg(req_.url.toDisplayString()));
    return;
  }
  QString why;
  // The URL's last segment is decoded after splitting, so an encoded "%2F" stays a separator
  // inside the name (and is refused) instead of silently picking another segment.
  const QString encPath = req_.url.path(QUrl::FullyEncoded);
  const QString raw = !req_.fileName.isEmpty()
                          ? req_.fileName
                          : QUrl::fromPercentEncoding(encPath.mid(encPath.lastIndexOf('/') + 1).toUtf8());
  name_ = sanitized_file_name(raw, &why);
  if (name_.isEmpty()) {
    fail(tr("refused file name from %1: %2").arg(req_.url.toDisplayString(), why));
    return;
  }
  if (!QDir().mkpath(req_.destDir)) {
    fail(tr("cannot create the models folder %1").arg(req_.destDir));
    return;
  }
  // Belt and braces: the joined path stays directly inside destDir.
  if (QFileInfo(finalPath()).absolutePath() != QFileInfo(req_.destDir).absoluteFilePath()) {
    fail(tr("refused file name %1: it leaves the models folder").arg(raw));
    return;
  }
  if (QFileInfo::exists(finalPath())) {
    if (installedEarlier()) return;
    fail(tr("%1 already exists; remove it first").arg(finalPath()));
    return;
  }
  if (!req_.expectedSha256.isEmpty() && !isHex64(req_.expectedSha256)) {
    fail(tr("the expected SHA-256 '%1' is not 64 hex digits").arg(req_.expectedSha256));
    return;
  }
  if (!loadSidecar()) removePartial();
  probe();
}

void Downloader::resume() {
  if (state_ == State::Paused || state_ == State::Failed || (state_ == State::Idle && prepared_)) start(req_);
}

void Downloader::pause() {
  if (state_ != State::Probing && state_ != State::Hashing && state_ != State::Downloading &&
      state_ != State::Waiting)
    return;
  ++generation_;
  retryTimer_.stop();
  stopHashing();
  if (reply_) {
    reply_->disconnect(this);
    reply_->abort();
    reply_->deleteLater();
  }
  if (part_.isOpen()) {
    part_.flush();
    part_.close();
  }
  setState(State::Paused);
}

void Downloader::cancel() {
  if (state_ == State::Finished || state_ == State::Cancelled || (state_ == State::Idle && !prepared_)) return;
  ++generation_;
  retryTimer_.stop();
  if (reply_) {
    reply_->disconnect(this);
    reply_->abort();
    reply_->deleteLater();
  }
  // Never wait for the hash worker here (GUI thread): it reads on from its own open handle
  // until it sees the flag; unlinking the file under it is harmless.
  stopHashing();
  if (part_.isOpen()) part_.close();
  removePartial();
  QFile::remove(corruptPath());  // a copy kept aside after a failed SHA-256 check goes too
  done_ = 0;
  setState(State::Cancelled);
  emit finished(false);
}

QNetworkReply* Downloader::send(const QByteArray& verb, bool withRange) {
  QNetworkRequest r = https_request(req_.url, extraCas_);
  if (withRange) {
    r.setRawHeader("Range", "bytes=" + QByteArray::number(done_) + "-");
    // A weak validator cannot make a range conditional (RFC 9110 13.1.5): without If-Range the
    // 206's ETag and Content-Range are checked instead (onMetaData).
    if (!etag_.isEmpty() && !etagWeak_) r.setRawHeader("If-Range", '"' + etag_.toUtf8() + '"');
  }
  // head() (not a custom "HEAD"): only then does Qt know that the response has no body.
  QNetworkReply* reply = verb == "HEAD" ? nam_->head(r) : nam_->get(r);
  reply_ = reply;
  return reply;
}

QString Downloader::publishedSha(QNetworkReply* reply) {
  for (const char* h : {"X-Linked-ETag", "ETag"}) {
    const QString v = unquoteEtag(QString::fromLatin1(reply->rawHeader(h)));
    if (isHex64(v)) return v.toLower();
  }
  return {};
}

void Downloader::probe() {
  setState(State::Probing);
  const int gen = generation_;
  QNetworkReply* reply = send("HEAD", false);
  connect(reply, &QNetworkReply::finished, this, [this, reply, gen] {
    reply->deleteLater();
    if (gen != generation_) return;
    reply_ = nullptr;
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (isTlsError(reply->error())) {
      fail(tr("TLS verification failed for %1: %2").arg(req_.url.host(), reply->errorString()));
      return;
    }
    if (status >= 400 && status < 500) {
      fail(tr("HTTP %1 for %2").arg(status).arg(req_.url.toDisplayString()));
      return;
    }
    if (reply->error() != QNetworkReply::NoError || status >= 500 || status == 0) {
      scheduleRetry(reply->errorString());
      return;
    }
    const QString etag = unquoteEtag(QString::fromLatin1(reply->rawHeader("ETag")));
    const QVariant len = reply->header(QNetworkRequest::ContentLengthHeader);
    const qint64 size = len.isValid() ? len.toLongLong() : -1;
    serverSha_ = publishedSha(reply);
    if (done_ > 0 && ((!etag_.isEmpty() && etag != etag_) || (total_ >= 0 && size != total_) || (size >= 0 && done_ > size))) {
      qCInfo(lcDownload) << "the file changed on the server (ETag" << etag_ << "->" << etag << "); restarting";
      removePartial();
      done_ = 0;
      ++restarts_;
    }
    if (req_.expectedSize >= 0 && size >= 0 && size != req_.expectedSize) {
      fail(tr("%1: the server announces %2 bytes, the hub listing %3 bytes").arg(name_).arg(size).arg(req_.expectedSize));
      return;
    }
    etag_ = etag;
    etagWeak_ = isWeakEtag(reply->rawHeader("ETag"));
    total_ = size;
    hashSource_ = !req_.expectedSha256.isEmpty() ? req_.sha256Source
                  : !serverSha_.isEmpty()        ? QStringLiteral("server")
                                                 : QStringLiteral("none");
    if (hashSource_ == QLatin1String("none"))
      qCInfo(lcDownload) << "no SHA-256 known for" << req_.url.toDisplayString() << "- the size alone is checked";
    if (total_ >= 0) {
      const qint64 needed = (total_ - done_) + (req_.countPack ? total_ : 0) + req_.extraBytesNeeded;
      const std::optional<qint64> free = freeBytes_(req_.destDir);
      if (free && *free < needed) {
        fail(tr("not enough space in %1: %2 needed (%3 bytes), %4 free (%5 bytes)")
                 .arg(req_.destDir, format_bytes(static_cast<double>(needed)))
                 .arg(needed)
                 .arg(format_bytes(static_cast<double>(*free)))
                 .arg(*free));
        return;
      }
    }
    writeSidecar();
    if (state_ == State::Failed) return;
    hashPrefixThenGet();
  });
  progress(done_, total_);
}

void Downloader::hashPrefixThenGet() {
  if (done_ == 0) {
    hasher_ = std::make_unique<Sha256>();
    get();
    return;
  }
  setState(State::Hashing);
  const QString path = partPath();
  const qint64 n = done_;
  auto job = std::make_shared<HashJob>();
  hashJob_ = job;
  hashTimer_.start();
  prefixWatcher_.setFuture(QtConcurrent::run([path, n, job]() -> std::shared_ptr<Sha256> {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return nullptr;
    auto h = std::make_shared<Sha256>();
    QByteArray buf(1 << 20, Qt::Uninitialized);
    qint64 left = n;
    while (left > 0) {
      if (job->cancel.load(std::memory_order_relaxed)) return nullptr;
      const qint64 got = f.read(buf.data(), std::min<qint64>(left, buf.size()));
      if (got <= 0) return nullptr;
      h->update(buf.constData(), static_cast<size_t>(got));
      left -= got;
      job->done.fetch_add(got, std::memory_order_relaxed);
    }
    return h;
  }));
}

void Downloader::get() {
  part_.setFileName(partPath());
  // Unbuffered: a failed write (ENOSPC, EIO) is seen at the write that failed, never later as a
  // short file.
  if (!part_.open(QIODevice::ReadWrite | QIODevice::Unbuffered)) {
    fail(tr("cannot open %1: %2").arg(partPath(), part_.errorString()));
    return;
  }
  if (part_.size() != done_ && !part_.resize(done_)) {
    fail(tr("cannot truncate %1: %2").arg(partPath(), part_.errorString()));
    return;
  }
  part_.seek(done_);
  error_.clear();
  attemptStart_ = done_;
  rangeSent_ = done_ > 0;
  headersChecked_ = false;
  rateClock_.start();
  rateBytes_ = 0;
  setState(State::Downloading);
  const int gen = generation_;
  QNetworkReply* reply = send("GET", rangeSent_);
  connect(reply, &QNetworkReply::readyRead, this, [this, gen] {
    if (gen == generation_) onReadyRead();
  });
  connect(reply, &QNetworkReply::finished, this, [this, reply, gen] {
    reply->deleteLater();
    if (gen != generation_) return;
    onGetFinished();
    if (reply_ == reply) reply_ = nullptr;
  });
}

void Downloader::restartFromZero(const QString& why) {
  qCInfo(lcDownload) << "restarting" << name_ << "from byte 0:" << why;
  ++generation_;
  if (reply_) {
    reply_->disconnect(this);
    reply_->abort();
    reply_->deleteLater();
  }
  if (part_.isOpen()) part_.close();
  if (++restarts_ > kMaxRestarts) {
    removePartial();
    fail(tr("gave up on %1 after %2 restarts; last: %3").arg(req_.url.toDisplayString()).arg(kMaxRestarts).arg(why));
    return;
  }
  removePartial();
  done_ = 0;
  etag_.clear();
  total_ = -1;
  probe();
}

void Downloader::onMetaData() {
  if (headersChecked_ || !reply_) return;
  const int status = reply_->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  if (status == 0 || (status >= 300 && status < 400)) return;  // not the final response yet
  headersChecked_ = true;
  const QString etag = unquoteEtag(QString::fromLatin1(reply_->rawHeader("ETag")));
  if (status == 206) {
    static const QRegularExpression cr(QStringLiteral("^bytes (\\d+)-(\\d+)/(\\d+|\\*)$"));
    const auto m = cr.match(QString::fromLatin1(reply_->rawHeader("Content-Range")).trimmed());
    const qint64 from = m.hasMatch() ? m.captured(1).toLongLong() : -1;
    const qint64 size = m.hasMatch() && m.captured(3) != QLatin1String("*") ? m.captured(3).toLongLong() : -1;
    if (!rangeSent_ || from != done_ || (total_ >= 0 && size >= 0 && size != total_) ||
        (!etag.isEmpty() && !etag_.isEmpty() && etag != etag_)) {
      restartFromZero(tr("the server answered a different range or file (Content-Range '%1', ETag '%2')")
                          .arg(QString::fromLatin1(reply_->rawHeader("Content-Range")), etag));
    }
    return;
  }
  if (status == 200) {
    if (rangeSent_) {
      // The server ignored Range, or If-Range found another version: this body is the whole
      // file. Start the .part again from 0; never append it.
      qCInfo(lcDownload) << "server sent the whole file although a range was asked; restarting" << name_
                         << "from byte 0";
      ++restarts_;
      part_.resize(0);
      part_.seek(0);
      done_ = 0;
      attemptStart_ = 0;
      hasher_ = std::make_unique<Sha256>();
      rangeSent_ = false;
      const QVariant len = reply_->header(QNetworkRequest::ContentLengthHeader);
      if (len.isValid()) total_ = len.toLongLong();
      if (!etag.isEmpty() && etag != etag_) {
        etag_ = etag;
        serverSha_ = publishedSha(reply_);
        if (hashSource_ == QLatin1String("server") && serverSha_.isEmpty()) hashSource_ = QStringLiteral("none");
        writeSidecar();
      }
    } else if (!etag.isEmpty() && !etag_.isEmpty() && etag != etag_) {
      restartFromZero(tr("the file changed on the server between HEAD and GET"));
    }
  }
  // 416 and errors are handled when the reply finishes.
}

void Downloader::onReadyRead() {
  if (!reply_) return;
  if (!headersChecked_) onMetaData();
  if (state_ != State::Downloading || !reply_) return;
  const int status = reply_->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  if (status != 200 && status != 206) return;  // error bodies are not file content
  const QByteArray data = reply_->readAll();
  if (data.isEmpty()) return;
  if (total_ >= 0 && done_ + data.size() > total_) {
    restartFromZero(tr("the server sent more than the announced %1 bytes").arg(total_));
    return;
  }
  if (part_.write(data) != data.size()) {
    fail(tr("cannot write %1: %2").arg(partPath(), part_.errorString()));
    return;
  }
  hasher_->update(data.constData(), static_cast<size_t>(data.size()));
  done_ += data.size();
  rateBytes_ += data.size();
  const qint64 ms = rateClock_.elapsed();
  if (ms >= 250) {
    const double inst = static_cast<double>(rateBytes_) * 1000.0 / static_cast<double>(ms);
    rate_ = rate_ <= 0 ? inst : 0.7 * rate_ + 0.3 * inst;
    rateBytes_ = 0;
    rateClock_.restart();
  }
  emit progress(done_, total_);
}

void Downloader::onGetFinished() {
  if (state_ != State::Downloading || !reply_) return;
  QNetworkReply* reply = reply_;
  const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
  if (status == 416) {
    // Nothing to send after byte done_: the .part is complete if its size is the file's.
    if (part_.isOpen()) part_.close();
    // "Content-Range: bytes */N" gives the size where the HEAD did not.
    static const QRegularExpression unsat(QStringLiteral("^bytes \\*/(\\d+)$"));
    const auto m = unsat.match(QString::fromLatin1(reply->rawHeader("Content-Range")).trimmed());
    if (total_ < 0 && m.hasMatch()) total_ = m.captured(1).toLongLong();
    if (total_ >= 0 && done_ == total_) {
      verifyAndInstall();
    } else {
      restartFromZero(tr("the server refused the range from byte %1 (416)").arg(done_));
    }
    return;
  }
  onReadyRead();
  if (state_ != State::Downloading) return;
  if (done_ > attemptStart_) failuresWithoutProgress_ = 0;
  if (isTlsError(reply->error())) {
    fail(tr("TLS verification failed for %1: %2").arg(req_.url.host(), reply->errorString()));
    return;
  }
  if (status >= 400 && status < 500) {
    fail(tr("HTTP %1 for %2").arg(status).arg(req_.url.toDisplayString()));
    return;
  }
  if (reply->error() != QNetworkReply::NoError || status >= 500) {
    scheduleRetry(reply->errorString());
    return;
  }
  if (total_ >= 0 && done_ < total_) {
    scheduleRetry(tr("the body ended at byte %1 of %2").arg(done_).arg(total_));
    return;
  }
  verifyAndInstall();
}

void Downloader::scheduleRetry(const QString& why) {
  ++generation_;
  if (reply_) {
    reply_->disconnect(this);
    reply_->deleteLater();
    reply_ = nullptr;
  }
  if (part_.isOpen()) {
    part_.flush();
    part_.close();
  }
  ++failuresWithoutProgress_;
  if (failuresWithoutProgress_ > maxRetries_) {
    fail(tr("download of %1 failed after %n attempt(s): %2", nullptr, failuresWithoutProgress_)
             .arg(req_.url.toDisplayString(), why));
    return;
  }
  ++retriesTotal_;
  error_ = why;  // shown while waiting: why it retries (cleared when the body flows again)
  const qint64 delay =
      std::min<qint64>(maxDelayMs_, static_cast<qint64>(baseDelayMs_) << std::min(failuresWithoutProgress_ - 1, 20));
  qCInfo(lcDownload) << "retry" << failuresWithoutProgress_ << "of" << maxRetries_ << "in" << delay << "ms:" << why;
  setState(State::Waiting);
  retryTimer_.start(static_cast<int>(delay));
}

void Downloader::verifyAndInstall() {
  setState(State::Verifying);
  if (part_.isOpen()) {
    const bool flushed = part_.flush();
    const int rc = flushed ? ::fsync(part_.handle()) : -1;
    const int err = errno;
    part_.close();
    if (!flushed || rc != 0) {
      // The .part stays as it is: a retry hashes it again from the disk.
      fail(tr("cannot write %1: %2")
               .arg(partPath(), flushed ? QString::fromLocal8Bit(std::strerror(err)) : part_.errorString()));
      return;
    }
  }
  const qint64 size = QFileInfo(partPath()).size();
  if (total_ >= 0 && size != total_) {
    restartFromZero(tr("%1 has %2 bytes, expected %3").arg(partPath()).arg(size).arg(total_));
    return;
  }
  if (!hasher_) hasher_ = std::make_unique<Sha256>();
  actualSha_ = QString::fromStdString(to_hex(hasher_->finish()));
  const QString expected = expectedSha256();
  if (!expected.isEmpty() && expected != actualSha_) {
    QFile::remove(corruptPath());
    const bool kept = QFile::rename(partPath(), corruptPath());
    QFile::remove(partPath() + QStringLiteral(".json"));
    const QString from = hashSource_ == QLatin1String("user")          ? tr("user")
                         : hashSource_ == QLatin1String("hub listing") ? tr("hub listing")
                                                                       : tr("server");
    fail(tr("%1: SHA-256 mismatch (expected %2 from the %3, got %4); %5")
             .arg(name_, expected, from, actualSha_,
                  kept ? tr("the file was kept aside as %1 and not installed").arg(corruptPath())
                       : tr("the file was not installed")));
    return;
  }
  // Atomic install that never replaces a file: renameat2(RENAME_NOREPLACE) of the verified file
  // (link(2) + unlink(2) where the file system or kernel lacks it; link also fails with EEXIST),
  // then the directory entry made durable. The final path was free when the download was queued,
  // but downloads survive restarts, so something may have appeared there since: that file is
  // kept, and so is the verified .part.
  const QByteArray from = QFile::encodeName(partPath());
  const QByteArray to = QFile::encodeName(finalPath());
  int rc = ::renameat2(AT_FDCWD, from.constData(), AT_FDCWD, to.constData(), RENAME_NOREPLACE);
  int err = rc == 0 ? 0 : errno;
  if (rc != 0 && (err == EINVAL || err == ENOSYS)) {
    rc = ::link(from.constData(), to.constData());
    err = rc == 0 ? 0 : errno;
    if (rc == 0 && ::unlink(from.constData()) != 0)
      qCWarning(lcDownload) << "installed" << finalPath() << "but cannot remove" << partPath() << ":"
                            << std::strerror(errno);
  }
  if (rc != 0) {
    if (err == EEXIST) {
      fail(tr("cannot install %1 as %2: %2 already exists and was not replaced; the verified download is kept as %1")
               .arg(partPath(), finalPath()));
    } else {
      fail(tr("cannot rename %1 to %2: %3").arg(partPath(), finalPath(), QString::fromLocal8Bit(std::strerror(err))));
    }
    return;
  }
  try {
    fsync_dir(QFile::encodeName(req_.destDir).toStdString());
  } catch (const std::exception& e) {
    qCWarning(lcDownload) << e.what();
  }
  qCInfo(lcDownload) << "installed" << finalPath() << size << "bytes, sha256" << actualSha_ << "(" << hashSource_
                     << ")";
  setState(State::Finished);
  emit progress(done_, total_);
  emit finished(true);
  // Only now (the list has recorded the end): a process that stops between the rename and
  // here finds the sidecar beside the installed file and finishes the row (start()).
  QFile::remove(partPath() + QStringLiteral(".json"));
}

void Downloader::writeSidecar() {
  const QJsonObject o{
      {QStringLiteral("url"), req_.url.toString(QUrl::FullyEncoded)},
      {QStringLiteral("etag"), etag_},
      {QStringLiteral("expected_size"), total_},
      {QStringLiteral("sha256"), req_.expectedSha256.isEmpty() ? serverSha_ : req_.expectedSha256},
      {QStringLiteral("sha256_source"), hashSource_}};
  try {
    write_file_atomic(QFile::encodeName(req_.destDir).toStdString(),
                      QFile::encodeName(name_ + QStringLiteral(".part.json")).toStdString(),
                      QJsonDocument(o).toJson(QJsonDocument::Indented).toStdString());
  } catch (const std::exception& e) {
    fail(tr("cannot write the download state: %1").arg(QString::fromUtf8(e.what())));
  }
}

// The final file is this download's, installed by a run that stopped before the list recorded
// it: no .part, and the sidecar (removed only after the end was recorded) names this URL and the
// installed file's size. Its SHA-256 was checked before the rename.
bool Downloader::installedEarlier() {
  if (QFileInfo::exists(partPath())) return false;
  QFile f(partPath() + QStringLiteral(".json"));
  if (!f.open(QIODevice::ReadOnly)) return false;
  const QJsonObject o = QJsonDocument::fromJson(f.read(1 << 20)).object();
  const QString url = o.value(QStringLiteral("url")).toString();
  const qint64 size = o.value(QStringLiteral("expected_size")).toInteger(-1);
  if ((url != req_.url.toString(QUrl::FullyEncoded) && url != req_.url.toString()) || size < 0 ||
      QFileInfo(finalPath()).size() != size)
    return false;
  qCInfo(lcDownload) << finalPath() << "was installed by an earlier run; finishing its row";
  done_ = total_ = size;
  hashSource_ = o.value(QStringLiteral("sha256_source")).toString();
  actualSha_ = o.value(QStringLiteral("sha256")).toString();
  setState(State::Finished);
  emit progress(done_, total_);
  emit finished(true);
  QFile::remove(partPath() + QStringLiteral(".json"));
  return true;
}

bool Downloader::loadSidecar() {
  QFile f(partPath() + QStringLiteral(".json"));
  if (!QFileInfo::exists(partPath())) return false;
  if (!f.open(QIODevice::ReadOnly)) return false;
  const QJsonObject o = QJsonDocument::fromJson(f.read(1 << 20)).object();
  const QString url = o.value(QStringLiteral("url")).toString();  // encoded; decoded before 2026-12
  if (url != req_.url.toString(QUrl::FullyEncoded) && url != req_.url.toString()) return false;
  etag_ = o.value(QStringLiteral("etag")).toString();
  total_ = o.value(QStringLiteral("expected_size")).toInteger(-1);
  done_ = QFileInfo(partPath()).size();
  qCInfo(lcDownload) << "resuming" << name_ << "at byte" << done_;
  return true;
}

void Downloader::removePartial() {
  if (part_.isOpen()) part_.close();
  QFile::remove(partPath());
  QFile::remove(partPath() + QStringLiteral(".json"));
}

}  // namespace moepack::ui
