// Downloader against a real HTTPS server on loopback (tests/ui/https_test_server.py) whose
// certificate is issued at test time by a throw-away CA (openssl CLI). The CA reaches the
// Downloader only as its extra CA; without it the download must fail verification. Each case
// drives one fault of the server (see the script's modes) and checks the file on disk against
// the content the test wrote and its SHA-256 computed here.
#include "ui/downloader.h"

#include <QAbstractItemModelTester>
#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QProcess>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/app_database.h"
#include "ui/convert_wizard.h"
#include "ui/downloads_view_model.h"
#include "ui/library_download_store.h"
#include "ui/library_hub.h"
#include "ui/model_library.h"

using moepack::ui::DownloadRequest;
using moepack::ui::Downloader;

namespace {
QByteArray randomBytes(qsizetype n, quint32 seed) {
  QByteArray b(n, Qt::Uninitialized);
  QRandomGenerator g(seed);
  for (qsizetype i = 0; i < n; ++i) b[i] = static_cast<char>(g.generate() & 0xff);
  return b;
}
QString sha(const QByteArray& b) {
  return QString::fromLatin1(QCryptographicHash::hash(b, QCryptographicHash::Sha256).toHex());
}
QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}
bool writeAll(const QString& path, const QByteArray& data) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  QFile f(path);
  return f.open(QIODevice::WriteOnly) && f.write(data) == data.size();
}
const QString kDs2Dir = QStringLiteral(MOEPACK_SHARED_DIR "/fixtures/deepseek2-tiny");
QString ds2Shard(int i) { return QStringLiteral("deepseek2-tiny-Q2_K-0000%1-of-00003.gguf").arg(i); }
constexpr qint64 kDs2SplitBytes = 8393856 + 2240832 + 1800960;  // ls -l of the three Q2_K shards
constexpr qint64 kHuge = qint64{1} << 30;                         // sparse .part for the hash cancel
}  // namespace

class DownloaderTest : public QObject {
  Q_OBJECT

  QTemporaryDir work_;
  QString root_, certs_, log_;
  QProcess server_;
  int port_ = 0;
  QByteArray a_, a2_, big_;
  QNetworkAccessManager nam_;

  bool openssl(const QStringList& args) {
    QProcess p;
    p.setWorkingDirectory(certs_);
    p.start(QStringLiteral("openssl"), args);
    if (!p.waitForFinished(60000) || p.exitCode() != 0) {
      qWarning() << "openssl" << args << p.readAllStandardError();
      return false;
    }
    return true;
  }
  QUrl url(const QString& path) const { return QUrl(QStringLiteral("https://127.0.0.1:%1%2").arg(port_).arg(path)); }
  QString dest() const { return work_.filePath(QStringLiteral("models")); }

  // A fresh models folder per case.
  void cleanDest() {
    QDir(dest()).removeRecursively();
    QDir().mkpath(dest());
  }
  std::unique_ptr<Downloader> make(bool withCa = true) {
    auto d = std::make_unique<Downloader>(&nam_);
    if (withCa) d->addCaBundle(certs_ + QStringLiteral("/ca.pem"));
    d->setRetryPolicy(3, 20, 200);
    return d;
  }
  static bool run(Downloader& d, const DownloadRequest& r, int timeoutMs = 30000) {
    QSignalSpy done(&d, &Downloader::finished);
    d.start(r);
    if (done.isEmpty() && !done.wait(timeoutMs)) return false;
    return done.front().front().toBool();
  }
  DownloadRequest req(const QString& path, const QString& name = QStringLiteral("a.bin")) const {
    DownloadRequest r;
    r.url = url(path);
    r.destDir = dest();
    r.fileName = name;
    return r;
  }
  QStringList logLines(const QString& path) const {
    QStringList out;
    for (const QByteArray& line : readAll(log_).split('\n')) {
      const QJsonObject o = QJsonDocument::fromJson(line).object();
      if (o.value(QStringLiteral("path")).toString() == path)
        out << o.value(QStringLiteral("method")).toString() + ' ' + o.value(QStringLiteral("range")).toString() +
                   ' ' + o.value(QStringLiteral("if_range")).toString();
    }
    return out;
  }
  // The sidecar a previous run would have left (the documented format).
  void seedPart(const QString& name, const QUrl& u, const QByteArray& prefix, const QString& etag, qint64 size) {
    QVERIFY(writeAll(dest() + '/' + name + QStringLiteral(".part"), prefix));
    const QJsonObject o{{QStringLiteral("url"), u.toString()},
                        {QStringLiteral("etag"), etag},
                        {QStringLiteral("expected_size"), size}};
    QVERIFY(writeAll(dest() + '/' + name + QStringLiteral(".part.json"), QJsonDocument(o).toJson()));
  }

 private slots:
  void initTestCase() {
    QVERIFY(work_.isValid());
    root_ = work_.filePath(QStringLiteral("www"));
    certs_ = work_.filePath(QStringLiteral("certs"));
    log_ = work_.filePath(QStringLiteral("requests.log"));
    QDir().mkpath(root_);
    QDir().mkpath(certs_);
    // CA, then a server certificate for 127.0.0.1 / localhost signed by it.
    QVERIFY(openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=MoePack Test CA",
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"}));
    QVERIFY(openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                     "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"}));
    QVERIFY(writeAll(certs_ + QStringLiteral("/ext.cnf"),
                     "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                     "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n"));
    QVERIFY(openssl({"x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                     "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf"}));
    a_ = randomBytes(300 * 1024 + 17, 1);
    a2_ = randomBytes(200 * 1024 + 5, 2);
    big_ = randomBytes(1024 * 1024, 3);
    QVERIFY(writeAll(root_ + QStringLiteral("/a.bin"), a_));
    QVERIFY(writeAll(root_ + QStringLiteral("/a.bin.v2"), a2_));
    QVERIFY(writeAll(root_ + QStringLiteral("/big.bin"), big_));
    QVERIFY(writeAll(root_ + QStringLiteral("/My Model.bin"), a2_));
    QVERIFY(QFile::copy(kDs2Dir + QStringLiteral("/deepseek2-tiny-Q4_K_M.gguf"),
                        root_ + QStringLiteral("/ds2-q4.gguf")));
    // Hub repository test/ds2: the three Q2_K shards of the fixture, a README (not in LFS) and
    // another quantisation the pattern must not pick.
    QVERIFY(QDir().mkpath(root_ + QStringLiteral("/hub/test/ds2")));
    for (int i = 1; i <= 3; ++i)
      QVERIFY(QFile::copy(kDs2Dir + '/' + ds2Shard(i), root_ + QStringLiteral("/hub/test/ds2/") + ds2Shard(i)));
    QVERIFY(writeAll(root_ + QStringLiteral("/hub/owner/repo/a.bin"), a_));
    QVERIFY(writeAll(root_ + QStringLiteral("/hub/slowhub/pair/p-00001-of-00002.gguf"), a_));
    QVERIFY(writeAll(root_ + QStringLiteral("/hub/slowhub/pair/p-00002-of-00002.gguf"), a2_));
    for (int i = 1; i <= 3; ++i)
      QVERIFY(writeAll(root_ + QStringLiteral("/hub/slowhub/trio/t-0000%1-of-00003.gguf").arg(i), i == 2 ? a2_ : a_));
    QVERIFY(writeAll(root_ + QStringLiteral("/hub/test/ds2/README.md"), "# ds2\n"));
    QVERIFY(writeAll(root_ + QStringLiteral("/hub/test/ds2/deepseek2-tiny-Q4_K_M.gguf"), a_));
    // Listings a real hub would not send: a wrong LFS hash, a name that climbs out.
    const auto listing = [](const QString& path, qint64 size, const QString& hash) {
      return QJsonObject{{QStringLiteral("path"), path}, {QStringLiteral("size"), size}, {QStringLiteral("sha256"), hash}};
    };
    QVERIFY(writeAll(root_ + QStringLiteral("/hub/test/badhash.listing.json"),
                     QJsonDocument(QJsonArray{listing(QStringLiteral("a.bin"), a_.size(), sha(a2_))}).toJson()));
    QVERIFY(writeAll(root_ + QStringLiteral("/hub/test/evil.listing.json"),
                     QJsonDocument(QJsonArray{listing(QStringLiteral("../x.gguf"), a_.size(), sha(a_)),
                                              listing(QStringLiteral("ok.gguf"), a_.size(), sha(a_))})
                         .toJson()));
    // Sparse: the server hashes it once (cached), the Downloader's prefix hash is cancelled.
    QFile huge(root_ + QStringLiteral("/huge.bin"));
    QVERIFY(huge.open(QIODevice::WriteOnly) && huge.resize(kHuge));
    huge.close();
    const QString portFile = work_.filePath(QStringLiteral("port"));
    const QString python = QFileInfo::exists(QStringLiteral("/usr/bin/python3")) ? QStringLiteral("/usr/bin/python3")
                                                                                 : QStringLiteral("python3");
    server_.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    server_.start(python, {QStringLiteral(MOEPACK_SOURCE_DIR "/tests/ui/https_test_server.py"), "--root", root_,
                           "--cert", certs_ + "/server.pem", "--key", certs_ + "/server.key", "--port-file",
                           portFile, "--log", log_});
    QVERIFY(server_.waitForStarted());
    QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(portFile), 20000);
    port_ = readAll(portFile).toInt();
    QVERIFY(port_ > 0);
  }
  void cleanupTestCase() {
    server_.kill();
    server_.waitForFinished();
  }
  void init() { cleanDest(); }

  void plainDownloadIsVerifiedAgainstTheServersHash() {
    auto d = make();
    QSignalSpy progress(d.get(), &Downloader::progress);
    QVERIFY2(run(*d, req(QStringLiteral("/plain/a.bin"))), qPrintable(d->error()));
    QCOMPARE(d->state(), Downloader::State::Finished);
    QCOMPARE(d->hashSource(), QStringLiteral("server"));
    QCOMPARE(d->sha256(), sha(a_));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a_);
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/a.bin.part")));
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/a.bin.part.json")));
    QVERIFY(!progress.isEmpty());
    QCOMPARE(progress.back().at(0).toLongLong(), qint64{a_.size()});
    qint64 last = 0;  // monotonic
    for (const auto& p : progress) {
      QVERIFY(p.at(0).toLongLong() >= last);
      last = p.at(0).toLongLong();
    }
  }

  void hubPathWithTheUsersHash() {
    QString why;
    const QUrl u = moepack::ui::hub_file_url(url(QStringLiteral("/hub")).toString(), QStringLiteral("owner/repo"),
                                             QStringLiteral("a.bin"), &why);
    QVERIFY2(u.isValid(), qPrintable(why));
    QCOMPARE(u.path(), QStringLiteral("/hub/owner/repo/resolve/main/a.bin"));
    QCOMPARE(moepack::ui::hub_file_url(QStringLiteral("https://huggingface.co"), QStringLiteral("o/r"),
                                       QStringLiteral("sub/m-00001-of-00002.gguf"))
                 .toString(),
             QStringLiteral("https://huggingface.co/o/r/resolve/main/sub/m-00001-of-00002.gguf"));
    auto d = make();
    DownloadRequest r = req(QString());
    r.url = u;
    r.fileName.clear();  // from the URL
    r.expectedSha256 = sha(a_).toUpper();
    QVERIFY2(run(*d, r), qPrintable(d->error()));
    QCOMPARE(d->hashSource(), QStringLiteral("user"));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a_);
  }

  void withoutTheExtraCaTlsVerificationFails() {
    // Its own network manager: a kept-alive connection verified for an earlier case is reused
    // by Qt across requests of one manager and would skip the handshake.
    QNetworkAccessManager fresh;
    auto d = std::make_unique<Downloader>(&fresh);
    d->setRetryPolicy(3, 20, 200);
    QVERIFY(!run(*d, req(QStringLiteral("/plain/a.bin"))));
    QCOMPARE(d->state(), Downloader::State::Failed);
    QVERIFY2(d->error().contains(QStringLiteral("TLS")), qPrintable(d->error()));
    QCOMPARE(d->retries(), 0);  // a certificate problem is not retried
    QVERIFY(QDir(dest()).isEmpty());
  }

  void cutBodyIsResumedWithRange() {
    auto d = make();
    QVERIFY2(run(*d, req(QStringLiteral("/truncate-100000/a.bin"))), qPrintable(d->error()));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a_);
    QCOMPARE(d->sha256(), sha(a_));
    QVERIFY(d->retries() >= 1);
    const QStringList log = logLines(QStringLiteral("/truncate-100000/a.bin"));
    // HEAD, GET (cut after 100000 bytes), HEAD, GET from byte 100000 with If-Range.
    QCOMPARE(log.size(), 4);
    QVERIFY2(log[3].startsWith(QStringLiteral("GET bytes=100000- \"") + sha(a_)), qPrintable(log.join('|')));
  }

  void resumeAfterAnAppRestart() {
    {
      auto d = make();
      d->setRetryPolicy(0, 10, 10);  // the "app" dies with the cut
      QVERIFY(!run(*d, req(QStringLiteral("/truncate-65536/a.bin"))));
      QCOMPARE(QFileInfo(dest() + QStringLiteral("/a.bin.part")).size(), qint64{65536});
      QVERIFY(QFileInfo::exists(dest() + QStringLiteral("/a.bin.part.json")));
      QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/a.bin")));
    }
    auto d = make();  // a new process would do the same: the sidecar says where to go on
    QVERIFY2(run(*d, req(QStringLiteral("/truncate-65536/a.bin"))), qPrintable(d->error()));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a_);
    QVERIFY(logLines(QStringLiteral("/truncate-65536/a.bin")).last().startsWith(QStringLiteral("GET bytes=65536-")));
  }

  // A weak ETag is never sent as If-Range (a server would answer every resume with the whole
  // file): the resume is a plain range, and the 206's ETag is checked instead.
  void aWeakEtagResumesWithoutIfRange() {
    auto d = make();
    QVERIFY2(run(*d, req(QStringLiteral("/weak-truncate-100000/a.bin"))), qPrintable(d->error()));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a_);
    QCOMPARE(d->restarts(), 0);
    const QStringList log = logLines(QStringLiteral("/weak-truncate-100000/a.bin"));
    QVERIFY2(log.last() == QStringLiteral("GET bytes=100000- "), qPrintable(log.join('|')));
  }

  // No size from the HEAD: a complete .part gets a 416 whose "bytes */SIZE" says it is whole.
  void aRangePastTheEndGivesTheSizeWhereTheHeadDidNot() {
    const QUrl u = url(QStringLiteral("/no-length/a.bin"));
    seedPart(QStringLiteral("a.bin"), u, a_, sha(a_), -1);
    auto d = make();
    QVERIFY2(run(*d, req(QStringLiteral("/no-length/a.bin"))), qPrintable(d->error()));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a_);
    QCOMPARE(d->restarts(), 0);
  }

  // Installed by a run that stopped before the list recorded the end (the sidecar is removed
  // only after that): the row finishes without a request, the file kept as it is.
  void aFileInstalledBeforeAStopFinishesItsRow() {
    const QUrl u = url(QStringLiteral("/plain/a.bin"));
    seedPart(QStringLiteral("a.bin"), u, a_, sha(a_), a_.size());
    QVERIFY(QFile::rename(dest() + QStringLiteral("/a.bin.part"), dest() + QStringLiteral("/a.bin")));
    const qsizetype before = logLines(QStringLiteral("/plain/a.bin")).size();
    auto d = make();
    QVERIFY2(run(*d, req(QStringLiteral("/plain/a.bin"))), qPrintable(d->error()));
    QCOMPARE(logLines(QStringLiteral("/plain/a.bin")).size(), before);
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a_);
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/a.bin.part.json")));
    // Another size at the final path is someone else's file: refused, as before.
    cleanDest();
    seedPart(QStringLiteral("a.bin"), u, a_, sha(a_), a_.size());
    QVERIFY(QFile::remove(dest() + QStringLiteral("/a.bin.part")));
    QVERIFY(writeAll(dest() + QStringLiteral("/a.bin"), "theirs"));
    auto d2 = make();
    QVERIFY(!run(*d2, req(QStringLiteral("/plain/a.bin"))));
    QVERIFY2(d2->error().contains(QStringLiteral("already exists")), qPrintable(d2->error()));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), QByteArray("theirs"));
  }

  void serverIgnoringRangeRestartsFromZero() {
    const QUrl u = url(QStringLiteral("/ignore-range/a.bin"));
    seedPart(QStringLiteral("a.bin"), u, a_.left(50000), sha(a_), a_.size());
    auto d = make();
    QVERIFY2(run(*d, req(QStringLiteral("/ignore-range/a.bin"))), qPrintable(d->error()));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a_);  // not 50000 bytes too many
    QCOMPARE(d->restarts(), 1);
    QVERIFY(logLines(QStringLiteral("/ignore-range/a.bin")).last().startsWith(QStringLiteral("GET bytes=50000-")));
  }

  void rangeNotSatisfiableMeansCompleteOrRestart() {
    // The whole file is already in the .part: 416, then it is verified and installed.
    const QUrl u = url(QStringLiteral("/plain/a.bin"));
    seedPart(QStringLiteral("a.bin"), u, a_, sha(a_), a_.size());
    auto d = make();
    QVERIFY2(run(*d, req(QStringLiteral("/plain/a.bin"))), qPrintable(d->error()));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a_);
    QCOMPARE(d->restarts(), 0);
    QVERIFY(logLines(QStringLiteral("/plain/a.bin")).last().startsWith(
        QStringLiteral("GET bytes=%1-").arg(a_.size())));
    // A .part longer than the file cannot be resumed: it is discarded, not trusted.
    cleanDest();
    seedPart(QStringLiteral("a.bin"), u, a_ + QByteArray(100, 'z'), sha(a_), a_.size() + 100);
    auto d2 = make();
    QVERIFY2(run(*d2, req(QStringLiteral("/plain/a.bin"))), qPrintable(d2->error()));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a_);
    QCOMPARE(d2->restarts(), 1);
  }

  void changedEtagRestartsWithTheNewFile() {
    // If-Range carries the old ETag; the server has a new version and answers 200.
    const QUrl u = url(QStringLiteral("/etag-change/a.bin"));
    seedPart(QStringLiteral("a.bin"), u, a_.left(70000), sha(a_), a_.size());
    auto d = make();
    QVERIFY2(run(*d, req(QStringLiteral("/etag-change/a.bin"))), qPrintable(d->error()));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a2_);
    QCOMPARE(d->sha256(), sha(a2_));  // verified against the new version's hash
    QCOMPARE(d->restarts(), 1);
    // The HEAD already shows the change: the .part is dropped before any GET.
    cleanDest();
    seedPart(QStringLiteral("a.bin"), u, a_.left(70000), sha(a_), a_.size());
    auto d2 = make();
    QVERIFY2(run(*d2, req(QStringLiteral("/etag-change/a.bin"))), qPrintable(d2->error()));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a2_);
    QVERIFY(logLines(QStringLiteral("/etag-change/a.bin")).last().startsWith(QStringLiteral("GET  ")));
  }

  void wrongHashIsKeptAsideNeverInstalled() {
    auto d = make();
    QVERIFY(!run(*d, req(QStringLiteral("/wrong-hash/a.bin"))));
    QVERIFY2(d->error().contains(QStringLiteral("SHA-256 mismatch")), qPrintable(d->error()));
    QVERIFY(d->error().contains(dest() + QStringLiteral("/a.bin.corrupt")));
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/a.bin")));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin.corrupt")), a_);
    // The user's hash is checked the same way.
    cleanDest();
    auto d2 = make();
    DownloadRequest r = req(QStringLiteral("/plain/a.bin"));
    r.expectedSha256 = sha(a2_);
    QVERIFY(!run(*d2, r));
    QVERIFY(QFileInfo::exists(dest() + QStringLiteral("/a.bin.corrupt")));
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/a.bin")));
    // Cancelling the failed row deletes the copy kept aside (a large model's would stay unseen).
    d2->cancel();
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/a.bin.corrupt")));
  }

  void notEnoughSpaceIsRefusedBeforeWriting() {
    auto d = make();
    d->setFreeBytesProbe([](const QString&) -> std::optional<qint64> { return 1000; });
    QVERIFY(!run(*d, req(QStringLiteral("/plain/a.bin"))));
    QVERIFY2(d->error().contains(QStringLiteral("needed (%1 bytes)").arg(a_.size())) &&
                 d->error().contains(QStringLiteral("free (1000 bytes)")) &&
                 d->error().contains(QLocale().formattedDataSize(a_.size(), 1, QLocale::DataSizeIecFormat) +
                                     QStringLiteral(" needed")),
             qPrintable(d->error()));
    QVERIFY(QDir(dest()).isEmpty());
    // The real probe (QStorageInfo) with a pack estimate no disk has ("convert when done").
    auto d2 = make();
    DownloadRequest r = req(QStringLiteral("/plain/a.bin"));
    r.extraBytesNeeded = qint64{1} << 60;
    QVERIFY(!run(*d2, r));
    QVERIFY2(d2->error().contains(QStringLiteral("not enough space")), qPrintable(d2->error()));
    QVERIFY(QDir(dest()).isEmpty());
  }

  void slowServerCancelAndPause() {
    auto d = make();
    QSignalSpy progress(d.get(), &Downloader::progress);
    QSignalSpy done(d.get(), &Downloader::finished);
    d->start(req(QStringLiteral("/slow-50/big.bin"), QStringLiteral("big.bin")));
    QTRY_VERIFY_WITH_TIMEOUT(d->bytesDone() > 0, 10000);
    QVERIFY(d->bytesDone() < big_.size());
    QElapsedTimer t;
    t.start();
    d->cancel();
    QCOMPARE(d->state(), Downloader::State::Cancelled);
    QVERIFY(t.elapsed() < 1000);
    QCOMPARE(done.size(), 1);
    QVERIFY(QDir(dest()).isEmpty());

    auto p = make();
    p->start(req(QStringLiteral("/slow-20/big.bin"), QStringLiteral("big.bin")));
    QTRY_VERIFY_WITH_TIMEOUT(p->bytesDone() > 0, 10000);
    p->pause();
    QCOMPARE(p->state(), Downloader::State::Paused);
    const qint64 kept = QFileInfo(dest() + QStringLiteral("/big.bin.part")).size();
    QCOMPARE(kept, p->bytesDone());
    QVERIFY(p->rateBytesPerSecond() >= 0);
    QSignalSpy pdone(p.get(), &Downloader::finished);
    p->resume();
    QVERIFY(pdone.wait(30000));
    QVERIFY2(pdone.front().front().toBool(), qPrintable(p->error()));
    QCOMPARE(readAll(dest() + QStringLiteral("/big.bin")), big_);
    QVERIFY(logLines(QStringLiteral("/slow-20/big.bin")).last().startsWith(QStringLiteral("GET bytes=%1-").arg(kept)));
  }

  // A file that appears at the final path while the download runs (the path was free when it
  // was queued) is never replaced: the install fails naming both paths, the other file keeps its
  // bytes and the verified .part is kept.
  void fileAppearingAtTheFinalPathIsNotOverwritten() {
    auto d = make();
    QSignalSpy done(d.get(), &Downloader::finished);
    d->start(req(QStringLiteral("/slow-20/big.bin"), QStringLiteral("big.bin")));
    QTRY_VERIFY_WITH_TIMEOUT(d->bytesDone() > 0, 10000);
    QVERIFY(d->bytesDone() < big_.size());
    const QString finalPath = dest() + QStringLiteral("/big.bin");
    const QString partPath = finalPath + QStringLiteral(".part");
    const QByteArray theirs = "the user's own big.bin, not to be replaced\n";
    QVERIFY(writeAll(finalPath, theirs));
    QVERIFY(done.wait(60000));
    QCOMPARE(done.front().front().toBool(), false);
    QCOMPARE(d->state(), Downloader::State::Failed);
    QVERIFY2(d->error().contains(finalPath), qPrintable(d->error()));
    QVERIFY2(d->error().contains(partPath), qPrintable(d->error()));
    QVERIFY2(d->error().contains(QStringLiteral("already exists")), qPrintable(d->error()));
    QCOMPARE(readAll(finalPath), theirs);
    QCOMPARE(readAll(partPath), big_);  // verified, complete and kept
  }

  void downloadsViewModelListsProgressAndInstalls() {
    moepack::ui::DownloadsViewModel vm;
    QAbstractItemModelTester tester(vm.downloads(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    vm.setModelsFolder(dest());
    vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
    vm.setHubBaseUrl(url(QStringLiteral("/hub")).toString());
    QSignalSpy installed(&vm, &moepack::ui::DownloadsViewModel::downloadFinished);
    QSignalSpy errors(&vm, &moepack::ui::DownloadsViewModel::errorOccurred);
    vm.add(QStringLiteral("owner/repo"), QStringLiteral("a.bin"), QString(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(vm.downloads()->rowCount(), 1, 10000);  // after the hub listing
    QTRY_COMPARE_WITH_TIMEOUT(installed.size(), 1, 30000);
    QCOMPARE(installed.front().front().toString(), dest() + QStringLiteral("/a.bin"));
    const QModelIndex i = vm.downloads()->index(0);
    QCOMPARE(vm.downloads()->data(i, moepack::ui::DownloadListModel::StateRole).toString(), QStringLiteral("finished"));
    QCOMPARE(vm.downloads()->data(i, moepack::ui::DownloadListModel::BytesDoneRole).toDouble(), double(a_.size()));
    // The hash came from the repository listing (lfs.oid), not from the response header.
    QCOMPARE(vm.downloads()->data(i, moepack::ui::DownloadListModel::HashSourceRole).toString(),
             QStringLiteral("hub listing"));
    vm.add(QStringLiteral("owner/.."), QStringLiteral("a.bin"), QString(), 0);  // refused, no row
    QCOMPARE(errors.size(), 1);
    QCOMPARE(vm.downloads()->rowCount(), 1);
    // A pasted URL with an encoded space: kept encoded, downloaded as "My Model.bin".
    vm.add(url(QStringLiteral("/plain/My%20Model.bin")).toString(QUrl::FullyEncoded), QString(), QString(),
           0);
    QTRY_COMPARE_WITH_TIMEOUT(installed.size(), 2, 30000);
    QVERIFY2(errors.size() == 1, qPrintable(errors.last().front().toString()));
    QCOMPARE(readAll(dest() + QStringLiteral("/My Model.bin")), a2_);
    // Clearing the ended rows empties the list; a failed one stays.
    vm.add(url(QStringLiteral("/plain/missing.bin")).toString(), QString(), QString(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(errors.size(), 2, 30000);  // HTTP 404
    QCOMPARE(vm.downloads()->rowCount(), 3);
    vm.clearEnded();
    QCOMPARE(vm.downloads()->rowCount(), 1);
    QCOMPARE(
        vm.downloads()->data(vm.downloads()->index(0), moepack::ui::DownloadListModel::StateRole).toString(),
        QStringLiteral("failed"));
  }

  // A hub that cannot be reached (nothing listens on its port) is said so, by name, without a
  // meaningless "HTTP 0".
  void anUnreachableHubIsSaidSo() {
    quint16 port = 0;
    {
      QTcpServer probe;
      QVERIFY(probe.listen(QHostAddress::LocalHost));
      port = probe.serverPort();
    }  // closed: connections to the port are refused
    moepack::ui::DownloadsViewModel vm;
    vm.setModelsFolder(dest());
    vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
    vm.setHubBaseUrl(QStringLiteral("https://127.0.0.1:%1/hub").arg(port));
    QSignalSpy errors(&vm, &moepack::ui::DownloadsViewModel::errorOccurred);
    vm.add(QStringLiteral("owner/repo"), QStringLiteral("a.bin"), QString(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(errors.size(), 1, 10000);
    const QString error = errors.front().front().toString();
    QVERIFY2(error.contains(QStringLiteral("could not reach 127.0.0.1: ")) &&
                 !error.contains(QStringLiteral("HTTP 0")),
             qPrintable(error));
    QCOMPARE(vm.downloads()->rowCount(), 0);
  }

  void namesCannotEscapeTheModelsFolder() {
    using moepack::ui::sanitized_file_name;
    for (const char* bad : {"", ".", "..", "../x.gguf", "/etc/passwd", "a/b.gguf", "a\\b.gguf", ".hidden",
                            "x.gguf.part", "x.corrupt", "c:x", "a\nb"}) {
      QVERIFY2(sanitized_file_name(QString::fromUtf8(bad)).isEmpty(), bad);
    }
    QCOMPARE(sanitized_file_name(QStringLiteral("model-00001-of-00002.gguf")),
             QStringLiteral("model-00001-of-00002.gguf"));
    QVERIFY(!moepack::ui::hub_file_url(QStringLiteral("https://h"), QStringLiteral("o/.."), QStringLiteral("x")).isValid());
    QVERIFY(!moepack::ui::hub_file_url(QStringLiteral("https://h"), QStringLiteral("o/r"), QStringLiteral("../x")).isValid());
    QVERIFY(!moepack::ui::hub_file_url(QStringLiteral("http://h"), QStringLiteral("o/r"), QStringLiteral("x")).isValid());
    auto d = make();
    QVERIFY(!run(*d, req(QStringLiteral("/plain/a.bin"), QStringLiteral("../evil.bin"))));
    QVERIFY(!QFileInfo::exists(work_.filePath(QStringLiteral("evil.bin"))));
    // An encoded separator in the URL decodes to a name with a separator: refused too.
    DownloadRequest r = req(QString());
    r.url = QUrl(url(QStringLiteral("/plain/")).toString() + QStringLiteral("..%2Fevil.bin"), QUrl::StrictMode);
    r.fileName.clear();
    QVERIFY(!run(*d, r));
    QVERIFY2(d->error().contains(QStringLiteral("refused")), qPrintable(d->error()));
    QVERIFY(!QFileInfo::exists(work_.filePath(QStringLiteral("evil.bin"))));
    // Plain http is refused outright.
    DownloadRequest h = req(QStringLiteral("/plain/a.bin"));
    h.url.setScheme(QStringLiteral("http"));
    QVERIFY(!run(*d, h));
    QVERIFY(d->error().contains(QStringLiteral("https")));
  }

  void shardPatternsAndListing() {
    using moepack::ui::hub_pattern_matches;
    QVERIFY(hub_pattern_matches(QStringLiteral("*Q2_K*.gguf"), QStringLiteral("m-Q2_K-00001-of-00003.gguf")));
    QVERIFY(!hub_pattern_matches(QStringLiteral("*Q2_K*.gguf"), QStringLiteral("m-Q4_K_M.gguf")));
    QVERIFY(hub_pattern_matches(QStringLiteral("model-Q2_K-0000?-of-00003.gguf"),
                                QStringLiteral("model-Q2_K-00003-of-00003.gguf")));
    QVERIFY(!hub_pattern_matches(QStringLiteral("model-Q2_K-0000?-of-00003.gguf"),
                                 QStringLiteral("model-Q2_K-00010-of-00003.gguf")));
    QVERIFY(hub_pattern_matches(QStringLiteral("*.gguf"), QStringLiteral("sub/x.gguf")));  // fnmatch: * crosses '/'
    QVERIFY(hub_pattern_matches(QStringLiteral("m-[0-9].gguf"), QStringLiteral("m-7.gguf")));
    QVERIFY(!hub_pattern_matches(QStringLiteral("m-[!0-9].gguf"), QStringLiteral("m-7.gguf")));
    QVERIFY(!hub_pattern_matches(QStringLiteral("a.gguf"), QStringLiteral("aXgguf")));  // '.' is literal
    QVERIFY(!hub_pattern_matches(QStringLiteral("a.gguf"), QStringLiteral("a.gguf.part")));  // whole path

    std::vector<moepack::ui::HubFile> files;
    QString why;
    const auto obj = [](std::initializer_list<std::pair<QString, QJsonValue>> kv) {
      QJsonObject o;
      for (const auto& [k, v] : kv) o.insert(k, v);
      return o;
    };
    const auto json = [](const QJsonValue& v) {
      return v.isArray() ? QJsonDocument(v.toArray()).toJson() : QJsonDocument(v.toObject()).toJson();
    };
    const QByteArray info = json(obj({{QStringLiteral("siblings"),
                                       QJsonArray{obj({{QStringLiteral("rfilename"), QStringLiteral("b-00002-of-00002.gguf")}}),
                                                  obj({{QStringLiteral("rfilename"), QStringLiteral("b-00001-of-00002.gguf")}}),
                                                  obj({{QStringLiteral("rfilename"), QStringLiteral("README.md")}}),
                                                  obj({{QStringLiteral("rfilename"), QStringLiteral("q/b-00001-of-00002.gguf")}})}}}));
    const auto file = [&](const QString& path, const QJsonValue& size, const QJsonValue& oid) {
      QJsonObject o = obj({{QStringLiteral("type"), QStringLiteral("file")}, {QStringLiteral("path"), path},
                           {QStringLiteral("size"), size}});
      if (!oid.isUndefined()) o.insert(QStringLiteral("lfs"), obj({{QStringLiteral("oid"), oid}, {QStringLiteral("size"), size}}));
      return o;
    };
    const QByteArray tree = json(QJsonArray{file(QStringLiteral("b-00001-of-00002.gguf"), 10, sha(a_).toUpper()),
                                            file(QStringLiteral("b-00002-of-00002.gguf"), 20, QJsonValue::Undefined),
                                            obj({{QStringLiteral("type"), QStringLiteral("directory")},
                                                 {QStringLiteral("path"), QStringLiteral("q")}})});
    QVERIFY2(moepack::ui::parse_hub_listing(info, tree, &files, &why), qPrintable(why));
    QCOMPARE(files.size(), size_t{4});
    auto chosen = moepack::ui::select_hub_files(files, QStringLiteral("b-0000?-of-00002.gguf"), &why);
    QCOMPARE(chosen.size(), size_t{2});
    QCOMPARE(chosen[0].path, QStringLiteral("b-00001-of-00002.gguf"));  // shard order
    QCOMPARE(chosen[0].size, qint64{10});
    QCOMPARE(chosen[0].sha256, sha(a_));  // lower-cased
    QCOMPARE(chosen[1].sha256, QString());  // not in LFS: no published SHA-256
    // "*b-00001*" also matches q/b-00001...: two files with one local name are refused.
    QVERIFY(moepack::ui::select_hub_files(files, QStringLiteral("*b-00001*"), &why).empty());
    QVERIFY2(why.contains(QStringLiteral("narrower")), qPrintable(why));
    QVERIFY(moepack::ui::select_hub_files(files, QStringLiteral("*.bin"), &why).empty());
    QVERIFY(why.contains(QStringLiteral("no file")));
    // Malformed answers name the field and the entry.
    QVERIFY(!moepack::ui::parse_hub_listing(info, json(QJsonArray{file(QStringLiteral("x"), QStringLiteral("big"), QJsonValue::Undefined)}),
                                            &files, &why));
    QVERIFY2(why.contains(QStringLiteral("tree entry 0")) && why.contains(QStringLiteral("size")), qPrintable(why));
    QVERIFY(!moepack::ui::parse_hub_listing(info, json(QJsonArray{file(QStringLiteral("x"), 1, QStringLiteral("abc"))}),
                                            &files, &why));
    QVERIFY2(why.contains(QStringLiteral("lfs.oid")), qPrintable(why));
    QVERIFY(!moepack::ui::parse_hub_listing("{", tree, &files, &why));
    QVERIFY2(why.contains(QStringLiteral("offset")), qPrintable(why));
  }

  // owner/repo + pattern: three shards listed by the hub, downloaded as one group, verified
  // against the listing's SHA-256, reported once (one library entry for the split set), then
  // handed to the convert wizard, which builds the pack.
  void hubShardPatternIsOneGroupDownloadedThenConverted() {
    moepack::ui::DownloadsViewModel vm;
    QAbstractItemModelTester tester(vm.downloads(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    vm.setModelsFolder(dest());
    vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
    vm.setHubBaseUrl(url(QStringLiteral("/hub")).toString());
    vm.setDatabasePath(work_.filePath(QStringLiteral("group.sqlite")));
    moepack::ui::ConvertWizard wizard;
    wizard.setDirectIo(false);
    wizard.setSafetyMarginBytes(0);
    vm.setConvertWizard(&wizard);
    QSignalSpy installed(&vm, &moepack::ui::DownloadsViewModel::downloadFinished);
    QSignalSpy started(&vm, &moepack::ui::DownloadsViewModel::conversionStarted);
    QSignalSpy converted(&wizard, &moepack::ui::ConvertWizard::finished);
    QSignalSpy errors(&vm, &moepack::ui::DownloadsViewModel::errorOccurred);
    vm.addDownload(QStringLiteral("test/ds2"), QStringLiteral("*Q2_K-0000?-of-00003.gguf"), QString(), true);
    QTRY_COMPARE_WITH_TIMEOUT(vm.downloads()->rowCount(), 3, 10000);
    const auto role = [&](int row, int r) { return vm.downloads()->data(vm.downloads()->index(row), r); };
    using L = moepack::ui::DownloadListModel;
    for (int row = 0; row < 3; ++row) {
      QCOMPARE(role(row, L::NameRole).toString(), ds2Shard(row + 1));
      QCOMPARE(role(row, L::GroupSizeRole).toInt(), 3);
      QCOMPARE(role(row, L::PositionRole).toInt(), row + 1);
    }
    QTRY_VERIFY2_WITH_TIMEOUT(!installed.isEmpty(), qPrintable(errors.isEmpty() ? QString() : errors.front().front().toString()),
                              60000);
    QCOMPARE(installed.size(), 1);  // one report for the set
    QCOMPARE(installed.front().front().toString(), dest() + '/' + ds2Shard(1));
    qint64 total = 0;
    for (int i = 1; i <= 3; ++i) {
      QCOMPARE(readAll(dest() + '/' + ds2Shard(i)), readAll(kDs2Dir + '/' + ds2Shard(i)));
      QCOMPARE(role(i - 1, L::HashSourceRole).toString(), QStringLiteral("hub listing"));
      total += QFileInfo(dest() + '/' + ds2Shard(i)).size();
    }
    QCOMPARE(total, kDs2SplitBytes);
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/deepseek2-tiny-Q4_K_M.gguf")));
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/README.md")));
    {  // the finished group left the download list
      moepack::ui::AppDatabase db(work_.filePath(QStringLiteral("group.sqlite")));
      QCOMPARE(moepack::ui::DownloadStore(db).all().size(), size_t{0});
      moepack::ui::ModelLibrary lib(db, dest());
      const auto e = lib.addPath(installed.front().front().toString());
      QCOMPARE(e.kind, QStringLiteral("split"));
      QCOMPARE(e.files.size(), 3);
      QCOMPARE(lib.entries().size(), size_t{1});
    }
    // The hand-off: source = shard 1, output <models>/deepseek2-tiny-Q2_K-pack, started, built.
    QTRY_COMPARE_WITH_TIMEOUT(started.size(), 1, 30000);
    QCOMPARE(started.front().at(0).toString(), dest() + '/' + ds2Shard(1));
    QCOMPARE(started.front().at(1).toString(), dest() + QStringLiteral("/deepseek2-tiny-Q2_K-pack"));
    QVERIFY(converted.wait(120000));
    QVERIFY2(converted.front().front().toBool(), qPrintable(wizard.error()));
    QCOMPARE(wizard.step(), moepack::ui::ConvertWizard::Done);
    QVERIFY(QFileInfo::exists(dest() + QStringLiteral("/deepseek2-tiny-Q2_K-pack/manifest.json")));
    QVERIFY2(errors.isEmpty(), qPrintable(errors.isEmpty() ? QString() : errors.front().front().toString()));
  }

  void convertWhenDoneCountsThePackInTheSpaceCheck() {
    moepack::ui::DownloadsViewModel vm;
    vm.setModelsFolder(dest());
    vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
    vm.setHubBaseUrl(url(QStringLiteral("/hub")).toString());
    vm.setFreeBytesProbe([](const QString&) -> std::optional<qint64> { return 20000000; });
    QSignalSpy errors(&vm, &moepack::ui::DownloadsViewModel::errorOccurred);
    // 12435648 bytes of shards fit in 20000000; with the pack (as large again) they do not.
    vm.addDownload(QStringLiteral("test/ds2"), QStringLiteral("*Q2_K*.gguf"), QString(), true);
    QVERIFY(errors.wait(10000));
    const QString msg = errors.front().front().toString();
    QVERIFY2(msg.contains(QStringLiteral("needed (%1 bytes)").arg(2 * kDs2SplitBytes)) &&
                 msg.contains(QStringLiteral("free (20000000 bytes)")),
             qPrintable(msg));
    QVERIFY(msg.contains(QStringLiteral("Expert Pack")));
    QCOMPARE(vm.downloads()->rowCount(), 0);
    QVERIFY(QDir(dest()).isEmpty());
    // Without "convert when done" the same files fit; each file's own check at its HEAD (the
    // later shards counted) passes too.
    QSignalSpy installed(&vm, &moepack::ui::DownloadsViewModel::downloadFinished);
    vm.addDownload(QStringLiteral("test/ds2"), QStringLiteral("*Q2_K*.gguf"), QString(), false);
    QVERIFY(installed.wait(60000));
    QCOMPARE(vm.downloads()->rowCount(), 3);
    QCOMPARE(errors.size(), 1);
    // A URL of unknown size: the Downloader counts the pack as the file again at its HEAD.
    auto d = make();
    d->setFreeBytesProbe([this](const QString&) -> std::optional<qint64> { return a_.size() + 10; });
    DownloadRequest r = req(QStringLiteral("/plain/a.bin"));
    r.countPack = true;
    QVERIFY(!run(*d, r));
    QVERIFY2(d->error().contains(QStringLiteral("needed (%1 bytes)").arg(2 * a_.size())) &&
                 d->error().contains(QStringLiteral("free (%1 bytes)").arg(a_.size() + 10)),
             qPrintable(d->error()));
  }

  // Downloads already in the list take space they have not written yet: a new one that fits
  // only if they did not is refused, naming how much they will still take.
  void theSpaceCheckCountsTheDownloadsUnderWay() {
    moepack::ui::DownloadsViewModel vm;
    vm.setModelsFolder(dest());
    vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
    vm.setHubBaseUrl(url(QStringLiteral("/hub")).toString());
    const qint64 free = a_.size() + a2_.size() + 1000;  // the pair fits, and a.bin alone would
    vm.setFreeBytesProbe([free](const QString&) -> std::optional<qint64> { return free; });
    QSignalSpy errors(&vm, &moepack::ui::DownloadsViewModel::errorOccurred);
    vm.addDownload(QStringLiteral("slowhub/pair"), QStringLiteral("p-*.gguf"), QString(), false);
    QTRY_VERIFY_WITH_TIMEOUT(vm.downloads()->rowCount() == 2, 10000);
    vm.pause(0);  // paused or queued, both files will still be written
    const double done = vm.downloads()
                            ->data(vm.downloads()->index(0), moepack::ui::DownloadListModel::BytesDoneRole)
                            .toDouble();
    if (done > static_cast<double>(a_.size() - 1000)) QSKIP("the slow file finished before the pause");
    vm.addDownload(QStringLiteral("owner/repo"), QStringLiteral("a.bin"), QString(), false);
    QVERIFY(errors.wait(10000));
    const QString msg = errors.front().front().toString();
    QVERIFY2(msg.contains(QStringLiteral("the downloads already in the list will still take")),
             qPrintable(msg));
    QCOMPARE(vm.downloads()->rowCount(), 2);
    vm.cancel(0);
  }

  void hubListingHashIsVerifiedAndTraversalRefused() {
    moepack::ui::DownloadsViewModel vm;
    vm.setModelsFolder(dest());
    vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
    vm.setHubBaseUrl(url(QStringLiteral("/hub")).toString());
    QSignalSpy errors(&vm, &moepack::ui::DownloadsViewModel::errorOccurred);
    // The listing's lfs.oid is another file's hash; the server's own ETag is right. The listing
    // wins: the file is kept aside, not installed.
    vm.addDownload(QStringLiteral("test/badhash"), QStringLiteral("a.bin"), QString(), false);
    QVERIFY(errors.wait(30000));
    QVERIFY2(errors.front().front().toString().contains(QStringLiteral("SHA-256 mismatch (expected %1 from the hub listing")
                                                            .arg(sha(a2_))),
             qPrintable(errors.front().front().toString()));
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/a.bin")));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin.corrupt")), a_);
    // A listed name with "..": nothing is queued, nothing is written outside the models folder.
    for (const QString& pattern : {QStringLiteral("*.gguf"), QStringLiteral("../x.gguf")}) {
      errors.clear();
      const int rows = vm.downloads()->rowCount();
      vm.addDownload(QStringLiteral("test/evil"), pattern, QString(), false);
      QVERIFY(errors.wait(10000));
      QVERIFY2(errors.front().front().toString().contains(QStringLiteral("refused '../x.gguf'")),
               qPrintable(errors.front().front().toString()));
      QCOMPARE(vm.downloads()->rowCount(), rows);
    }
    QVERIFY(!QFileInfo::exists(work_.filePath(QStringLiteral("x.gguf"))));
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/ok.gguf")));
    // A plain http:// (or other) address is refused as such, not read as a repository name.
    for (const QString& address :
         {QStringLiteral("http://example.org/m.gguf"), QStringLiteral("ftp://example.org/m.gguf")}) {
      errors.clear();
      const int rows = vm.downloads()->rowCount();
      vm.addDownload(address, QString(), QString(), false);
      QCOMPARE(errors.size(), 1);
      const QString e = errors.front().front().toString();
      QVERIFY2(e.contains(address) && e.contains(QStringLiteral("only https://")) &&
                   !e.contains(QStringLiteral("owner/repository")),
               qPrintable(e));
      QCOMPARE(vm.downloads()->rowCount(), rows);
    }
    // An unknown repository is a clear error.
    errors.clear();
    vm.addDownload(QStringLiteral("test/nope"), QStringLiteral("*.gguf"), QString(), false);
    QVERIFY(errors.wait(10000));
    QVERIFY2(errors.front().front().toString().contains(QStringLiteral("HTTP 404")),
             qPrintable(errors.front().front().toString()));
  }

  // The app dies mid-transfer (view-model destroyed); a new one on the same database finds the
  // row, resumes with Range from the .part and verifies the whole file.
  void downloadListSurvivesARestart() {
    const QString dbPath = work_.filePath(QStringLiteral("restart.sqlite"));
    const QString path = QStringLiteral("/slow-40/big.bin");
    {
      moepack::ui::DownloadsViewModel vm;
      vm.setModelsFolder(dest());
      vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
      vm.setDatabasePath(dbPath);
      vm.addDownload(url(path).toString(), QString(), QString(), false);
      QCOMPARE(vm.downloads()->rowCount(), 1);
      QTRY_VERIFY_WITH_TIMEOUT(vm.downloads()->at(0)->bytesDone() > 100 * 1024, 20000);
      QVERIFY(vm.downloads()->at(0)->bytesDone() < big_.size());
    }  // "crash": nothing but the destructors run
    {
      moepack::ui::AppDatabase db(dbPath);
      const auto rows = moepack::ui::DownloadStore(db).all();
      QCOMPARE(rows.size(), size_t{1});
      QCOMPARE(rows[0].state, QStringLiteral("downloading"));
      QCOMPARE(rows[0].url, url(path).toString());
      QCOMPARE(rows[0].fileName, QStringLiteral("big.bin"));
      QCOMPARE(rows[0].expectedSize, qint64{big_.size()});
      QCOMPARE(rows[0].etag, sha(big_));
    }
    const qint64 partBytes = QFileInfo(dest() + QStringLiteral("/big.bin.part")).size();
    QVERIFY(partBytes > 0 && partBytes < big_.size());
    moepack::ui::DownloadsViewModel vm;
    vm.setModelsFolder(dest());
    vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
    QSignalSpy installed(&vm, &moepack::ui::DownloadsViewModel::downloadFinished);
    vm.setDatabasePath(dbPath);  // restores the row and resumes it
    QCOMPARE(vm.downloads()->rowCount(), 1);
    QVERIFY(installed.wait(60000));
    QCOMPARE(readAll(dest() + QStringLiteral("/big.bin")), big_);
    QCOMPARE(vm.downloads()->at(0)->sha256(), sha(big_));
    // The GET after the restart asked for the rest only: fewer bytes than the file.
    const QString last = logLines(path).last();
    QVERIFY2(last.startsWith(QStringLiteral("GET bytes=%1- \"%2\"").arg(partBytes).arg(sha(big_))), qPrintable(last));
    QVERIFY(big_.size() - partBytes < big_.size());
    moepack::ui::AppDatabase db(dbPath);
    QCOMPARE(moepack::ui::DownloadStore(db).all().size(), size_t{0});

    // A paused download reappears paused and does not start by itself.
    {
      moepack::ui::DownloadsViewModel p;
      p.setModelsFolder(dest());
      p.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
      p.setDatabasePath(dbPath);
      p.addDownload(url(QStringLiteral("/slow-40/a.bin")).toString(), QString(), QString(), false);
      QTRY_VERIFY_WITH_TIMEOUT(p.downloads()->at(0)->bytesDone() > 0, 20000);
      p.pause(0);
    }
    moepack::ui::DownloadsViewModel again;
    again.setModelsFolder(dest());
    again.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
    again.setDatabasePath(dbPath);
    QCOMPARE(again.downloads()->rowCount(), 1);
    QCOMPARE(again.downloads()->at(0)->state(), Downloader::State::Paused);
    QCOMPARE(again.downloads()->at(0)->bytesDone(), QFileInfo(dest() + QStringLiteral("/a.bin.part")).size());
    QSignalSpy done(&again, &moepack::ui::DownloadsViewModel::downloadFinished);
    again.resume(0);
    QVERIFY(done.wait(60000));
    QCOMPARE(readAll(dest() + QStringLiteral("/a.bin")), a_);
  }

  // Cancel while the prefix of a 1 GiB .part is being hashed (a resume): returns at once, the
  // GUI thread never waits for the worker.
  void cancelWhileHashingALargePartReturnsPromptly() {
    const QUrl u = url(QStringLiteral("/plain/huge.bin"));
    QFile part(dest() + QStringLiteral("/huge.bin.part"));
    QVERIFY(part.open(QIODevice::WriteOnly) && part.resize(kHuge));
    part.close();
    const QJsonObject o{{QStringLiteral("url"), u.toString()},
                        {QStringLiteral("etag"), QString()},
                        {QStringLiteral("expected_size"), kHuge}};
    QVERIFY(writeAll(dest() + QStringLiteral("/huge.bin.part.json"), QJsonDocument(o).toJson()));
    auto d = make();
    QSignalSpy hashing(d.get(), &Downloader::hashProgress);
    d->start(req(QStringLiteral("/plain/huge.bin"), QStringLiteral("huge.bin")));
    QTRY_VERIFY_WITH_TIMEOUT(d->state() == Downloader::State::Hashing, 60000);  // the server hashes 1 GiB first
    QTRY_VERIFY_WITH_TIMEOUT(!hashing.isEmpty(), 10000);
    QCOMPARE(d->state(), Downloader::State::Hashing);
    QCOMPARE(hashing.back().at(1).toLongLong(), kHuge);
    const qint64 hashed = d->hashedBytes();
    QVERIFY(hashed > 0);
    QElapsedTimer t;
    t.start();
    d->cancel();
    const qint64 ms = t.elapsed();
    qInfo("cancel during the prefix hash returned after %lld ms (%lld of %lld bytes hashed)", ms, hashed, kHuge);
    QVERIFY2(ms < 250, qPrintable(QString::number(ms)));
    QVERIFY(hashed < kHuge);
    QCOMPARE(d->state(), Downloader::State::Cancelled);
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/huge.bin.part")));
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/huge.bin")));
  }

  // A group interrupted in its first file: after the restart the first file resumes, the second
  // follows, and the group is reported once.
  void groupContinuesAfterARestart() {
    const QString dbPath = work_.filePath(QStringLiteral("group-restart.sqlite"));
    const auto setUp = [&](moepack::ui::DownloadsViewModel& vm) {
      vm.setModelsFolder(dest());
      vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
      vm.setHubBaseUrl(url(QStringLiteral("/hub")).toString());
      vm.setDatabasePath(dbPath);
    };
    {
      moepack::ui::DownloadsViewModel vm;
      setUp(vm);
      vm.addDownload(QStringLiteral("slowhub/pair"), QStringLiteral("p-0000?-of-00002.gguf"), QString(), false);
      QTRY_COMPARE_WITH_TIMEOUT(vm.downloads()->rowCount(), 2, 10000);
      QTRY_VERIFY_WITH_TIMEOUT(vm.downloads()->at(0)->bytesDone() > 0, 20000);
      QVERIFY(vm.downloads()->at(0)->bytesDone() < a_.size());
      QCOMPARE(vm.downloads()->at(1)->state(), Downloader::State::Idle);  // queued behind shard 1
    }
    moepack::ui::DownloadsViewModel vm;
    QSignalSpy installed(&vm, &moepack::ui::DownloadsViewModel::downloadFinished);
    setUp(vm);
    QCOMPARE(vm.downloads()->rowCount(), 2);
    QTRY_COMPARE_WITH_TIMEOUT(installed.size(), 1, 60000);
    QCOMPARE(installed.front().front().toString(), dest() + QStringLiteral("/p-00001-of-00002.gguf"));
    QCOMPARE(readAll(dest() + QStringLiteral("/p-00001-of-00002.gguf")), a_);
    QCOMPARE(readAll(dest() + QStringLiteral("/p-00002-of-00002.gguf")), a2_);
    const QStringList log = logLines(QStringLiteral("/hub/slowhub/pair/resolve/main/p-00001-of-00002.gguf"));
    QVERIFY2(log.last().startsWith(QStringLiteral("GET bytes=")) && !log.last().startsWith(QStringLiteral("GET bytes=0-")),
             qPrintable(log.join('|')));
    moepack::ui::AppDatabase db(dbPath);
    QCOMPARE(moepack::ui::DownloadStore(db).all().size(), size_t{0});
  }

  // Cancelling a group whose first file is finished removes the whole group from the list: after
  // a restart nothing is listed, reported or handed to the converter. A list an older version
  // left (only the finished first shard of a 3-shard set) is not reported either.
  void cancelledGroupIsNotReportedAfterARestart() {
    const QString dbPath = work_.filePath(QStringLiteral("group-cancel.sqlite"));
    const auto setUp = [&](moepack::ui::DownloadsViewModel& vm) {
      vm.setModelsFolder(dest());
      vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
      vm.setHubBaseUrl(url(QStringLiteral("/hub")).toString());
      vm.setDatabasePath(dbPath);
    };
    const QString first = dest() + QStringLiteral("/t-00001-of-00003.gguf");
    {
      moepack::ui::DownloadsViewModel vm;
      QSignalSpy installed(&vm, &moepack::ui::DownloadsViewModel::downloadFinished);
      QSignalSpy queued(&vm, &moepack::ui::DownloadsViewModel::conversionQueued);
      setUp(vm);
      vm.addDownload(QStringLiteral("slowhub/trio"), QStringLiteral("t-0000?-of-00003.gguf"), QString(), true);
      QTRY_COMPARE_WITH_TIMEOUT(vm.downloads()->rowCount(), 3, 10000);
      QTRY_COMPARE_WITH_TIMEOUT(vm.downloads()->at(0)->state(), Downloader::State::Finished, 30000);
      QVERIFY(vm.downloads()->at(1)->state() != Downloader::State::Finished);
      QCOMPARE(readAll(first), a_);
      vm.cancel(1);
      QTRY_COMPARE_WITH_TIMEOUT(vm.downloads()->at(1)->state(), Downloader::State::Cancelled, 5000);
      QTRY_COMPARE_WITH_TIMEOUT(vm.downloads()->at(2)->state(), Downloader::State::Cancelled, 5000);
      QVERIFY(installed.isEmpty());
      QVERIFY(queued.isEmpty());
    }
    {
      moepack::ui::AppDatabase db(dbPath);
      QCOMPARE(moepack::ui::DownloadStore(db).all().size(), size_t{0});
    }
    {
      moepack::ui::DownloadsViewModel vm;
      QSignalSpy installed(&vm, &moepack::ui::DownloadsViewModel::downloadFinished);
      QSignalSpy queued(&vm, &moepack::ui::DownloadsViewModel::conversionQueued);
      setUp(vm);
      QCOMPARE(vm.downloads()->rowCount(), 0);
      QTest::qWait(300);
      QVERIFY(installed.isEmpty());
      QVERIFY(queued.isEmpty());
    }
    // The list an older version left behind: the group's finished first row only.
    {
      moepack::ui::AppDatabase db(dbPath);
      moepack::ui::DownloadStore store(db);
      moepack::ui::DownloadRecord r;
      r.url = url(QStringLiteral("/hub/slowhub/trio/resolve/main/t-00001-of-00003.gguf")).toString();
      r.hubRepo = QStringLiteral("slowhub/trio");
      r.hubFile = QStringLiteral("t-00001-of-00003.gguf");
      r.destDir = dest();
      r.fileName = QStringLiteral("t-00001-of-00003.gguf");
      r.expectedSize = a_.size();
      r.state = QStringLiteral("finished");
      r.convertWhenDone = true;
      r.id = store.insert(r);
      r.groupId = r.id;
      store.update(r);
    }
    moepack::ui::DownloadsViewModel vm;
    QSignalSpy installed(&vm, &moepack::ui::DownloadsViewModel::downloadFinished);
    QSignalSpy queued(&vm, &moepack::ui::DownloadsViewModel::conversionQueued);
    QSignalSpy errors(&vm, &moepack::ui::DownloadsViewModel::errorOccurred);
    setUp(vm);
    QTest::qWait(300);
    QVERIFY(installed.isEmpty());
    QVERIFY(queued.isEmpty());
    QString why;
    for (const auto& e : errors)
      if (e.front().toString().contains(QStringLiteral("incomplete"))) why = e.front().toString();
    QVERIFY2(why.contains(dest() + QStringLiteral("/t-00002-of-00003.gguf")), qPrintable(why));
    QVERIFY2(why.contains(dest() + QStringLiteral("/t-00003-of-00003.gguf")), qPrintable(why));
    moepack::ui::AppDatabase db(dbPath);
    QCOMPARE(moepack::ui::DownloadStore(db).all().size(), size_t{0});
  }

  // Convert when done with a wizard that finds no room for the pack: the refusal names both
  // numbers and nothing is converted; the download itself stays installed.
  void handOffRefusedForSpaceIsReported() {
    moepack::ui::DownloadsViewModel vm;
    vm.setModelsFolder(dest());
    vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
    vm.setHubBaseUrl(url(QStringLiteral("/hub")).toString());
    moepack::ui::ConvertWizard wizard;
    wizard.setSafetyMarginBytes(0);
    wizard.setFreeBytesProbe([](const QString&) -> std::optional<qint64> { return 1000; });
    vm.setConvertWizard(&wizard);
    QSignalSpy refused(&vm, &moepack::ui::DownloadsViewModel::conversionRefused);
    QSignalSpy started(&vm, &moepack::ui::DownloadsViewModel::conversionStarted);
    vm.addDownload(QStringLiteral("test/ds2"), QStringLiteral("*Q2_K*.gguf"), QString(), true);
    QTRY_COMPARE_WITH_TIMEOUT(refused.size(), 1, 60000);
    QCOMPARE(refused.front().at(0).toString(), dest() + '/' + ds2Shard(1));
    const QString msg = refused.front().at(1).toString();
    QVERIFY2(msg.contains(QStringLiteral("%1 bytes").arg(qint64(wizard.neededBytes()))) &&
                 msg.contains(QStringLiteral("1000 bytes")),
             qPrintable(msg));
    QCOMPARE(wizard.step(), moepack::ui::ConvertWizard::Space);
    QCOMPARE(started.size(), 0);
    QVERIFY(!QFileInfo::exists(dest() + QStringLiteral("/deepseek2-tiny-Q2_K-pack/manifest.json")));
    QVERIFY(QFileInfo::exists(dest() + '/' + ds2Shard(3)));
    // Another "convert when done" download finishing meanwhile waits: the wizard keeps the
    // refused source for its dialog. Closing that dialog hands the wizard on.
    QSignalSpy installed(&vm, &moepack::ui::DownloadsViewModel::downloadFinished);
    vm.addDownload(url(QStringLiteral("/plain/ds2-q4.gguf")).toString(), QString(), QString(), true);
    QVERIFY(installed.wait(60000));
    QTest::qWait(200);
    QCOMPARE(wizard.source(), dest() + '/' + ds2Shard(1));
    vm.resumeConversions();
    QTRY_COMPARE_WITH_TIMEOUT(wizard.source(), dest() + QStringLiteral("/ds2-q4.gguf"), 10000);
  }
};

QTEST_GUILESS_MAIN(DownloaderTest)
#include "downloader_test.moc"
