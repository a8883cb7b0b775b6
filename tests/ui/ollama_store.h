// A one-model Ollama store for the studio's tests, laid out as Ollama writes it
// (ollama/server/modelpath.go, manifest.go): `root`/blobs/sha256-<hex> holding a copy of `gguf`,
// and `root`/manifests/registry.ollama.ai/library/<model>/<tag> naming it as the model layer.
#pragma once

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QString>

namespace moepack::ui::test {

struct OllamaStore {
  QString blob;      // the model's blob (a copy of the GGUF), empty on failure
  QString manifest;  // the manifest's path
};

inline OllamaStore make_ollama_store(const QString& root, const QString& gguf, const QString& model,
                                     const QString& tag) {
  QFile in(gguf);
  if (!in.open(QIODevice::ReadOnly)) return {};
  const QString sha =
      QString::fromLatin1(QCryptographicHash::hash(in.readAll(), QCryptographicHash::Sha256).toHex());
  OllamaStore s;
  s.blob = root + QStringLiteral("/blobs/sha256-") + sha;
  s.manifest = root + QStringLiteral("/manifests/registry.ollama.ai/library/") + model + '/' + tag;
  if (!QDir().mkpath(root + QStringLiteral("/blobs")) || !QFile::copy(gguf, s.blob) ||
      !QDir().mkpath(QFileInfo(s.manifest).absolutePath()))
    return {};
  QFile mf(s.manifest);
  if (!mf.open(QIODevice::WriteOnly)) return {};
  mf.write(QStringLiteral(R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model",)"
                          R"("digest":"sha256:%1","size":%2}]})")
               .arg(sha)
               .arg(QFileInfo(gguf).size())
               .toUtf8());
  return s;
}

}  // namespace moepack::ui::test
