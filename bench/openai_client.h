// A streaming client for OpenAI-compatible completion endpoints (llama.cpp's llama-server,
// Ollama, SGLang, vLLM): the baselines of `moepack bench` (docs/benchmarks.md, "Baselines").
//
// One request: POST {base}/v1/chat/completions (chat) or {base}/v1/completions (raw) with
//   {"model", "messages" | "prompt", "stream": true, "stream_options": {"include_usage": true},
//    "temperature": 0, "max_tokens": n, "ignore_eos": bool}
// and the Server-sent-events response read as it arrives. Timing (client side, steady clock):
//   t0      the request is handed to the HTTP client (connection set-up included)
//   first   arrival of the first chunk carrying completion text (delta.content,
//           delta.reasoning_content, or text)
//   last    arrival of the last such chunk
//   ttft_ms = first - t0, decode_ms = last - first.
// Token counts: `usage` from any chunk that carries one (the final chunk, with include_usage);
// without usage, completion tokens = text-carrying chunks (llama-server and Ollama send one
// token per chunk) and prompt tokens are unknown (0; the runner substitutes its own count and
// says so).
//
// HTTPS: certificate verification is always on (system CA store, or ca_cert_file when given);
// there is no switch to turn it off. Errors (connection refused, TLS, HTTP status != 200,
// malformed SSE or JSON, an `error` object in the stream, a stream that ends before
// `data: [DONE]`) never throw: they are returned in StreamResult::error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace moepack::bench {

struct CompletionRequest {
  std::string model;  // the "model" field; servers that serve one model ignore it
  std::string prompt;
  bool chat = true;         // /v1/chat/completions with one user message; false: /v1/completions
  int32_t max_tokens = 200;
  bool ignore_eos = true;   // sent as "ignore_eos" (llama-server, vLLM, SGLang honour it)
};

struct StreamResult {
  std::string error;  // empty: success
  int http_status = 0;
  uint64_t prompt_tokens = 0;      // from usage; 0 when the server sent none
  uint64_t completion_tokens = 0;  // from usage, else text-carrying chunks
  bool usage_reported = false;     // the token counts came from a usage object
  uint64_t text_chunks = 0;        // chunks that carried completion text
  double ttft_ms = 0;
  double decode_ms = 0;
  double total_ms = 0;             // t0 to the end of the response
  std::string text;                // the completion text, concatenated
  std::string finish_reason;       // of the last choice that had one
};

struct ClientOptions {
  std::string ca_cert_file;  // PEM bundle for HTTPS; empty: the system's CA store
  std::string api_key;       // sent as "Authorization: Bearer KEY" when not empty
  double connect_timeout_s = 10;
  double read_timeout_s = 600;  // between two reads of the stream
};

class OpenAiClient {
 public:
  // `base_url`: scheme://host[:port][/prefix], scheme http or https; a trailing "/v1" or "/"
  // is dropped. Throws Error for anything else (the URL is named).
  OpenAiClient(const std::string& base_url, ClientOptions options = {});
  ~OpenAiClient();
  OpenAiClient(const OpenAiClient&) = delete;
  OpenAiClient& operator=(const OpenAiClient&) = delete;

  const std::string& base_url() const { return base_; }
  std::string endpoint(bool chat) const;  // the full URL a request goes to

  StreamResult complete(const CompletionRequest& request);
  // GET {base}/v1/models: the first model's id, or "" with `error` set.
  std::string first_model_id(std::string& error);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string base_;    // scheme://host:port
  std::string prefix_;  // path prefix, "" or "/x/y"
};

}  // namespace moepack::bench
