// Session::load: model, backend, tokenizer and chat template from one path. Kept apart from
// session.cpp because it pulls in the model loader and every backend (make_backend); the
// session's unit tests link session.cpp with a scripted backend and nothing else.
#include <sys/stat.h>

#include <cerrno>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "core/backend_factory.h"
#include "core/error.h"
#include "core/expert_pack.h"
#include "core/model_source.h"
#include "core/routing_recorder.h"
#include "core/session.h"
#include "core/sha256.h"

namespace moepack {
namespace {

void verify_dense_weights(const ExpertPack& pack) {
  static std::mutex m;
  static std::set<std::string> verified;  // path, size, mtime, expected digest
  struct stat st {};
  const std::string path = pack.dense_path();
  if (::stat(path.c_str(), &st) != 0) throw IoError(path, "stat", errno);
  const std::string key = path + '\n' + std::to_string(st.st_size) + '\n' +
                          std::to_string(st.st_mtim.tv_sec) + '.' + std::to_string(st.st_mtim.tv_nsec) +
                          '\n' + pack.manifest().dense.sha256;
  {
    std::lock_guard<std::mutex> g(m);
    if (verified.count(key) != 0) return;
  }
  const std::string got = to_hex(sha256_file(path));
  if (got != pack.manifest().dense.sha256) {
    throw Error(path + " fails its SHA-256 check: manifest " + pack.manifest().dense.sha256 + ", read " +
                got + " (the pack is damaged: moepack verify " + pack.dir() +
                " --full names what else; convert the "
                "model again)");
  }
  std::lock_guard<std::mutex> g(m);
  verified.insert(key);
}

}  // namespace

std::unique_ptr<Session> Session::load(const std::string& path_or_name, const EngineSettings& settings) {
  std::shared_ptr<const ModelSource> model = ModelSource::open(path_or_name);
  // verify_pack_sha256 checks each expert on its first read; the dense weights (dense.gguf, read
  // once at load) are checked here, whole, against the manifest: once per process for a file of
  // the same size and modification time (a settings reload does not hash it again).
  if (settings.verify_pack_sha256 && model->is_pack()) verify_dense_weights(*model->pack());
  Tokenizer tokenizer = Tokenizer::from_gguf(model->metadata());
  std::string tpl = model->metadata().get_string("tokenizer.chat_template").value_or(std::string());
  std::string backend_note;
  std::unique_ptr<Backend> backend = make_backend(model, settings, &backend_note);
  // The backend's routing observer and the session share the recorder: Session::close_trace completes
  // the trace (reporting a failure), the session's destruction otherwise.
  std::shared_ptr<RoutingRecorder> recorder;
  if (!settings.trace_path.empty()) recorder = RoutingRecorder::attach(*backend, settings.trace_path, *model);
  auto session = std::make_unique<Session>(std::move(model), std::move(backend), std::move(tokenizer),
                                           std::move(tpl), settings);
  session->backend_note_ = std::move(backend_note);
  session->recorder_ = std::move(recorder);
  return session;
}

}  // namespace moepack
