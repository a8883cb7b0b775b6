// Resolves models in Ollama's local store to their GGUF blob, without trusting the store.
//
// Store layout (ollama/server/modelpath.go, manifest.go): under the models directory
// ($OLLAMA_MODELS, else ~/.ollama/models)
//   manifests/<host>/<namespace>/<model>/<tag>   JSON manifest (OCI image manifest style)
//   blobs/sha256-<64 lowercase hex>              content-addressed layers
// A name is `[host/][namespace/]model[:tag]`, defaults registry.ollama.ai, library, latest.
// The GGUF is the layer with mediaType "application/vnd.ollama.image.model". Every name part
// is checked against a strict character set and every digest must be `sha256:` + 64 lowercase
// hex digits, so no name or manifest can make us open a path outside the store.
#pragma once

#include <cstdint>
#include <string>

namespace moepack {

struct OllamaModel {
  std::string name;           // normalised "host/namespace/model:tag"
  std::string manifest_path;  // absolute path of the manifest
  std::string blob_path;      // path of the GGUF blob
  std::string digest;         // "sha256:<hex>"
  uint64_t size = 0;          // layer size from the manifest, bytes (checked against the file)
};

// The models directory: $OLLAMA_MODELS, else $HOME/.ollama/models.
std::string ollama_models_dir();

// True if `s` has the shape of an Ollama model name (and is not an existing file path).
bool ollama_looks_like_name(const std::string& s);

// The four parts of an Ollama model's name, defaults filled in.
struct OllamaName {
  std::string host = "registry.ollama.ai";
  std::string ns = "library";  // namespace
  std::string model;
  std::string tag = "latest";
};
// Splits a name `[host/][namespace/]model[:tag]` or a manifest path
// `.../manifests/<host>/<namespace>/<model>/<tag>` into its parts (the path's last four
// components; nothing is read). Throws Error for a name that does not have the shape of one
// (ollama_looks_like_name) or a manifest path with fewer than four components after "manifests/".
OllamaName ollama_parse_name(const std::string& name_or_manifest);
// True if `path` is a file inside some ".../manifests/..." tree.
bool ollama_is_manifest_path(const std::string& path);

// Resolves a model name or a manifest path. `models_dir` empty = ollama_models_dir(); for a
// manifest path the store root is derived from the path. Throws Error / FormatError naming
// the manifest and field on any problem (unknown model, bad digest, missing blob, size mismatch).
OllamaModel ollama_resolve(const std::string& name_or_manifest, const std::string& models_dir = "");

// True for "sha256:" followed by exactly 64 lowercase hex digits.
bool ollama_valid_digest(const std::string& digest);

}  // namespace moepack
