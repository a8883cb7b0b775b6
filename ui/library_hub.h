// Hugging Face-style hub repositories: list a repository's files with their sizes and SHA-256,
// and select the files a name or a shard pattern asks for (one grouped download).
//
// Hub API (the Hugging Face Hub's public REST API; model_info's `siblings[].rfilename`:
// huggingface_hub v0.0.8 release notes, https://github.com/huggingface/huggingface_hub/releases/tag/v0.0.8;
// tree entries `{type, path, size, oid, lfs: {oid, size, pointerSize}}`:
// https://huggingface.co/docs/huggingface.js/hub/interfaces/ListFileEntry):
//   GET {hub}/api/models/{owner}/{repo}                       {"siblings": [{"rfilename": "..."}]}
//   GET {hub}/api/models/{owner}/{repo}/tree/main?recursive=true
//                                                               [{"type": "file", "path", "size",
//                                                                 "lfs": {"oid": sha256 hex, "size"}}]
//   GET {hub}/{owner}/{repo}/resolve/main/{path}              the file (hub_file_url(), ui/downloader.h)
// The LFS oid is the SHA-256 of the file's content (Git LFS spec); a file that is not in LFS
// has no published SHA-256 here (its `oid` is a git blob hash) and is checked against the
// server's header hash, or for size only.
//
// Patterns (shell-style, like huggingface_hub's allow_patterns, fnmatch): `*` any run of
// characters (also '/'), `?` one character, `[abc]` / `[a-z]` / `[!abc]` one of a set; all
// else literal, case-sensitive, matched against the whole repository path. A name without
// wildcards selects exactly that file.
#pragma once

#include <QList>
#include <QNetworkAccessManager>
#include <QObject>
#include <QPointer>
#include <QSslCertificate>
#include <QString>
#include <vector>

class QNetworkReply;

namespace moepack::ui {

struct HubFile {
  QString path;       // path in the repository (rfilename)
  QString localName;  // file name in the models folder (the last path segment, sanitised)
  qint64 size = -1;   // bytes; -1 unknown
  QString sha256;     // lfs.oid (64 lowercase hex) or ""
};

bool hub_pattern_matches(const QString& pattern, const QString& path);

// Parses the two API answers; the listing is siblings' names with size/oid joined from the
// tree. Returns false with *why (naming the field and entry index) on malformed JSON.
bool parse_hub_listing(const QByteArray& modelInfo, const QByteArray& tree, std::vector<HubFile>* out,
                       QString* why);

// The files of `listing` that `pattern` matches, in path order (shard 1 first). Fails (empty
// result, *why) when nothing matches, when a matched path would leave the models folder (a
// "..", "." or empty segment, a backslash, a name sanitized_file_name() refuses) or when two
// matched files would get the same local name. Nothing is selected if any name is refused.
std::vector<HubFile> select_hub_files(const std::vector<HubFile>& listing, const QString& pattern, QString* why);

// Fetches the listing of `repo` ("owner/name") from the hub at `base` (https only), TLS
// verified with the system roots plus `extraCas`. Emits exactly one of listed() / failed().
class HubLister : public QObject {
  Q_OBJECT
 public:
  HubLister(QNetworkAccessManager* nam, QObject* parent = nullptr) : QObject(parent), nam_(nam) {}
  void list(const QString& base, const QString& repo, const QList<QSslCertificate>& extraCas);

 signals:
  void listed(const std::vector<moepack::ui::HubFile>& files);
  void failed(const QString& message);

 private:
  void fetch(const QUrl& url, const std::function<void(const QByteArray&)>& then);
  QNetworkAccessManager* nam_;
  QList<QSslCertificate> cas_;
  QString repo_;
  QByteArray info_;
};

}  // namespace moepack::ui
