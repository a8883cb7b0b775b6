// Session::load: model, backend, tokenizer and chat template from one path. Kept apart from
// session.cpp because it pulls in the model loader and every backend (make_backend); the
// session's unit tests link session.cpp with a scripted backend and nothing else.
#include <optional>

#include "core/backend_factory.h"
#include "core/model_source.h"
#include "core/routing_recorder.h"
#include "core/session.h"

namespace moepack {

std::unique_ptr<Session> Session::load(const std::string& path_or_name, const EngineSettings& settings) {
  std::shared_ptr<const ModelSource> model = ModelSource::open(path_or_name);
  Tokenizer tokenizer = Tokenizer::from_gguf(model->metadata());
  std::string tpl = model->metadata().get_string("tokenizer.chat_template").value_or(std::string());
  std::unique_ptr<Backend> backend = make_backend(model, settings);
  // The backend's routing observer owns the recorder; the trace is complete when the backend
  // (the session) is destroyed.
  if (!settings.trace_path.empty()) RoutingRecorder::attach(*backend, settings.trace_path, *model);
  return std::make_unique<Session>(std::move(model), std::move(backend), std::move(tokenizer), std::move(tpl),
                                   settings);
}

}  // namespace moepack
