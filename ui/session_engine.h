// ChatEngine over moepack::Session (core/session.h): the engine the studio really runs.
#pragma once

#include "ui/chat_engine.h"

namespace moepack::ui {

// Opens `path` with Session::load(path, settings); throws Error naming the path.
std::unique_ptr<ChatEngine> open_session_engine(const QString& path, const EngineSettings& settings);

}  // namespace moepack::ui
