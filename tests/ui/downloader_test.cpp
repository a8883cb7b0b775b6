// Downloader against a real HTTPS server on loopback (tests/ui/https_test_server.py) whose
// certificate is issued at test time by a throw-away CA (openssl CLI). The CA reaches the
// Downloader only as its extra CA; without it the download must fail verification. Each case
// drives one fault of the server (see the script's modes) and checks the file on disk against
// the content the test wrote and its SHA-256 computed here.
#include <QAbstractItemModelTester>
#include <QCryptographicHash>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QProcess>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/downloader.h"
#include "ui/downloads_view_model.h"

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
  QFile f(path);
  return f.open(QIODevice::WriteOnly) && f.write(data) == data.size();
}
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
  }

  void notEnoughSpaceIsRefusedBeforeWriting() {
    auto d = make();
    d->setFreeBytesProbe([](const QString&) -> std::optional<qint64> { return 1000; });
    QVERIFY(!run(*d, req(QStringLiteral("/plain/a.bin"))));
    QVERIFY2(d->error().contains(QStringLiteral("%1 bytes needed, 1000 bytes free").arg(a_.size())),
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

  void downloadsViewModelListsProgressAndInstalls() {
    moepack::ui::DownloadsViewModel vm;
    QAbstractItemModelTester tester(vm.downloads(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    vm.setModelsFolder(dest());
    vm.setCaBundlePath(certs_ + QStringLiteral("/ca.pem"));
    vm.setHubBaseUrl(url(QStringLiteral("/hub")).toString());
    QSignalSpy installed(&vm, &moepack::ui::DownloadsViewModel::downloadFinished);
    QSignalSpy errors(&vm, &moepack::ui::DownloadsViewModel::errorOccurred);
    vm.add(QStringLiteral("owner/repo"), QStringLiteral("a.bin"), QString(), 0);
    QCOMPARE(vm.downloads()->rowCount(), 1);
    QVERIFY(installed.wait(30000));
    QCOMPARE(installed.front().front().toString(), dest() + QStringLiteral("/a.bin"));
    const QModelIndex i = vm.downloads()->index(0);
    QCOMPARE(vm.downloads()->data(i, moepack::ui::DownloadListModel::StateRole).toString(), QStringLiteral("finished"));
    QCOMPARE(vm.downloads()->data(i, moepack::ui::DownloadListModel::BytesDoneRole).toDouble(), double(a_.size()));
    QCOMPARE(vm.downloads()->data(i, moepack::ui::DownloadListModel::HashSourceRole).toString(), QStringLiteral("server"));
    vm.add(QStringLiteral("owner/.."), QStringLiteral("a.bin"), QString(), 0);  // refused, no row
    QCOMPARE(errors.size(), 1);
    QCOMPARE(vm.downloads()->rowCount(), 1);
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
};

QTEST_GUILESS_MAIN(DownloaderTest)
#include "downloader_test.moc"
