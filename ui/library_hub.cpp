#include "ui/library_hub.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkReply>
#include <QRegularExpression>
#include <QSet>
#include <algorithm>
#include <map>

#include "ui/downloader.h"

namespace moepack::ui {

namespace {

// fnmatch without FNM_PATHNAME, as a regular expression over the whole path.
QRegularExpression patternRegex(const QString& pattern) {
  QString re;
  re.reserve(pattern.size() * 2 + 8);
  for (qsizetype i = 0; i < pattern.size(); ++i) {
    const QChar c = pattern[i];
    if (c == '*') {
      re += QStringLiteral(".*");
    } else if (c == '?') {
      re += '.';
    } else if (c == '[') {
      const qsizetype close = pattern.indexOf(']', i + 2);
      if (close < 0) {
        re += QStringLiteral("\\[");
        continue;
      }
      QString set = pattern.mid(i + 1, close - i - 1);
      QString cls = QStringLiteral("[");
      if (set.startsWith('!')) {
        cls += '^';
        set = set.mid(1);
      }
      for (const QChar s : set) {
        if (s == '\\' || s == '^' || s == '[' || s == ']') cls += '\\';
        cls += s;
      }
      re += cls + ']';
      i = close;
    } else {
      re += QRegularExpression::escape(QString(c));
    }
  }
  return QRegularExpression(QStringLiteral("\\A(?:") + re + QStringLiteral(")\\z"),
                            QRegularExpression::DotMatchesEverythingOption);
}

bool isHex64(const QString& s) {
  static const QRegularExpression re(QStringLiteral("^[0-9a-f]{64}$"));
  return re.match(s).hasMatch();
}

}  // namespace

bool hub_pattern_matches(const QString& pattern, const QString& path) {
  return patternRegex(pattern).match(path).hasMatch();
}

bool parse_hub_listing(const QByteArray& modelInfo, const QByteArray& tree, std::vector<HubFile>* out,
                       QString* why) {
  auto reject = [&](const QString& reason) {
    if (why) *why = reason;
    return false;
  };
  QJsonParseError err{};
  const QJsonDocument info = QJsonDocument::fromJson(modelInfo, &err);
  if (err.error != QJsonParseError::NoError || !info.isObject())
    return reject(QObject::tr("the hub's model info is not a JSON object (offset %1: %2)")
                      .arg(err.offset)
                      .arg(err.errorString()));
  const QJsonValue sib = info.object().value(QStringLiteral("siblings"));
  if (!sib.isArray()) return reject(QObject::tr("the hub's model info has no \"siblings\" array"));
  const QJsonDocument t = QJsonDocument::fromJson(tree, &err);
  if (err.error != QJsonParseError::NoError || !t.isArray())
    return reject(QObject::tr("the hub's tree listing is not a JSON array (offset %1: %2)")
                      .arg(err.offset)
                      .arg(err.errorString()));
  std::map<QString, HubFile> byPath;
  const QJsonArray entries = t.array();
  for (qsizetype i = 0; i < entries.size(); ++i) {
    const QJsonObject e = entries[i].toObject();
    if (e.value(QStringLiteral("type")).toString() != QLatin1String("file")) continue;
    HubFile f;
    f.path = e.value(QStringLiteral("path")).toString();
    if (f.path.isEmpty()) return reject(QObject::tr("tree entry %1 has no \"path\"").arg(i));
    const QJsonValue size = e.value(QStringLiteral("size"));
    if (!size.isDouble() || size.toDouble() < 0)
      return reject(QObject::tr("tree entry %1 (%2): \"size\" is not a non-negative number").arg(i).arg(f.path));
    f.size = size.toInteger();
    const QJsonObject lfs = e.value(QStringLiteral("lfs")).toObject();
    if (!lfs.isEmpty()) {
      const QString oid = lfs.value(QStringLiteral("oid")).toString().toLower();
      if (!isHex64(oid))
        return reject(QObject::tr("tree entry %1 (%2): \"lfs.oid\" is not 64 hex digits").arg(i).arg(f.path));
      f.sha256 = oid;
    }
    byPath[f.path] = f;
  }
  out->clear();
  const QJsonArray siblings = sib.toArray();
  for (qsizetype i = 0; i < siblings.size(); ++i) {
    const QString name = siblings[i].toObject().value(QStringLiteral("rfilename")).toString();
    if (name.isEmpty()) return reject(QObject::tr("siblings[%1] has no \"rfilename\"").arg(i));
    const auto it = byPath.find(name);
    HubFile f = it != byPath.end() ? it->second : HubFile{};
    f.path = name;
    out->push_back(f);
  }
  return true;
}

std::vector<HubFile> select_hub_files(const std::vector<HubFile>& listing, const QString& pattern, QString* why) {
  auto reject = [&](const QString& reason) {
    if (why) *why = reason;
    return std::vector<HubFile>{};
  };
  if (pattern.trimmed().isEmpty()) return reject(QObject::tr("no file name or pattern given"));
  const QRegularExpression re = patternRegex(pattern.trimmed());
  std::vector<HubFile> out;
  QSet<QString> names;
  for (const HubFile& f : listing) {
    if (!re.match(f.path).hasMatch()) continue;
    for (const QString& seg : f.path.split('/')) {
      if (seg.isEmpty() || seg == QLatin1String(".") || seg == QLatin1String("..") || seg.contains('\\'))
        return reject(QObject::tr("refused '%1' from the hub listing: it would leave the models folder").arg(f.path));
    }
    QString reason;
    HubFile s = f;
    s.localName = sanitized_file_name(f.path.section('/', -1), &reason);
    if (s.localName.isEmpty()) return reject(QObject::tr("refused '%1' from the hub listing: %2").arg(f.path, reason));
    if (names.contains(s.localName))
      return reject(QObject::tr("'%1' matches two files named %2; use a narrower pattern").arg(pattern, s.localName));
    names.insert(s.localName);
    out.push_back(s);
  }
  if (out.empty()) return reject(QObject::tr("no file in the repository matches '%1'").arg(pattern));
  std::sort(out.begin(), out.end(), [](const HubFile& a, const HubFile& b) { return a.path < b.path; });
  return out;
}

void HubLister::fetch(const QUrl& url, const std::function<void(const QByteArray&)>& then) {
  QNetworkReply* reply = nam_->get(https_request(url, cas_));
  connect(reply, &QNetworkReply::finished, this, [this, reply, url, then] {
    reply->deleteLater();
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (reply->error() == QNetworkReply::SslHandshakeFailedError) {
      emit failed(tr("TLS verification failed for %1: %2").arg(url.host(), reply->errorString()));
      return;
    }
    if (status == 401 || status == 403 || status == 404) {
      emit failed(tr("the hub has no public repository %1 (HTTP %2 for %3)")
                      .arg(repo_)
                      .arg(status)
                      .arg(url.toDisplayString()));
      return;
    }
    // No HTTP status: the hub was not reached (name lookup, refused, timed out); "HTTP 0" said
    // nothing to a user.
    if (status == 0 && reply->error() != QNetworkReply::NoError) {
      emit failed(tr("could not reach %1: %2").arg(url.host(), reply->errorString()));
      return;
    }
    if (reply->error() != QNetworkReply::NoError || status != 200) {
      emit failed(tr("listing %1 failed: HTTP %2 %3").arg(url.toDisplayString()).arg(status).arg(reply->errorString()));
      return;
    }
    then(reply->readAll());
  });
}

void HubLister::list(const QString& base, const QString& repo, const QList<QSslCertificate>& extraCas) {
  cas_ = extraCas;
  repo_ = repo;
  QString why;
  // hub_file_url validates base and repo; the API URLs are built from the same parts.
  if (!hub_file_url(base, repo, QStringLiteral("x"), &why).isValid()) {
    QMetaObject::invokeMethod(this, [this, why] { emit failed(why); }, Qt::QueuedConnection);
    return;
  }
  QUrl info(base);
  QString path = info.path();
  if (path.endsWith('/')) path.chop(1);
  info.setPath(path + QStringLiteral("/api/models/") + repo);
  QUrl tree = info;
  tree.setPath(info.path() + QStringLiteral("/tree/main"));
  tree.setQuery(QStringLiteral("recursive=true"));
  fetch(info, [this, tree](const QByteArray& infoBody) {
    info_ = infoBody;
    fetch(tree, [this](const QByteArray& treeBody) {
      std::vector<HubFile> files;
      QString reason;
      if (!parse_hub_listing(info_, treeBody, &files, &reason)) {
        emit failed(tr("hub listing of %1: %2").arg(repo_, reason));
        return;
      }
      emit listed(files);
    });
  });
}

}  // namespace moepack::ui
