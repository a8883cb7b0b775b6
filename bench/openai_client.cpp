// The baseline client (openai_client.h) over Debian's cpp-httplib 0.11 (compiled library, built
// with CPPHTTPLIB_OPENSSL_SUPPORT; the pkg-config flags keep this header in step with it).
#include "bench/openai_client.h"

#include <httplib.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "bench/sse_parser.h"
#include "core/error.h"

namespace moepack::bench {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

void split_seconds(double s, time_t& sec, time_t& usec) {
  sec = static_cast<time_t>(std::floor(s));
  usec = static_cast<time_t>((s - std::floor(s)) * 1e6);
}

std::string clip(std::string_view s, size_t n = 300) {
  return s.size() <= n ? std::string(s) : std::string(s.substr(0, n)) + "...";
}

}  // namespace

struct OpenAiClient::Impl {
  explicit Impl(const std::string& base) : cli(base) {}
  httplib::Client cli;
};

OpenAiClient::OpenAiClient(const std::string& base_url, ClientOptions options) {
  static const std::regex re(R"(^(https?)://([^/?#]+)(/[^?#]*)?$)", std::regex::icase);
  std::smatch m;
  if (!std::regex_match(base_url, m, re)) {
    throw Error("baseline URL " + base_url + ": expected http://HOST[:PORT][/PREFIX] or https://...");
  }
  std::string scheme = m[1].str();
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  base_ = scheme + "://" + m[2].str();
  prefix_ = m[3].str();
  while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
  if (prefix_.size() >= 3 && prefix_.compare(prefix_.size() - 3, 3, "/v1") == 0) prefix_.resize(prefix_.size() - 3);

  impl_ = std::make_unique<Impl>(base_);
  if (!impl_->cli.is_valid()) throw Error("baseline URL " + base_url + ": the HTTP client rejected it");
  impl_->cli.enable_server_certificate_verification(true);
  if (!options.ca_cert_file.empty()) impl_->cli.set_ca_cert_path(options.ca_cert_file);
  time_t sec = 0, usec = 0;
  split_seconds(options.connect_timeout_s, sec, usec);
  impl_->cli.set_connection_timeout(sec, usec);
  split_seconds(options.read_timeout_s, sec, usec);
  impl_->cli.set_read_timeout(sec, usec);
  httplib::Headers headers = {{"Accept", "text/event-stream"}, {"User-Agent", "moepack-bench"}};
  if (!options.api_key.empty()) headers.emplace("Authorization", "Bearer " + options.api_key);
  impl_->cli.set_default_headers(headers);
}

OpenAiClient::~OpenAiClient() = default;

std::string OpenAiClient::endpoint(bool chat) const {
  return base_ + prefix_ + (chat ? "/v1/chat/completions" : "/v1/completions");
}

StreamResult OpenAiClient::complete(const CompletionRequest& request) {
  StreamResult r;
  json body = {{"model", request.model},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"temperature", 0},
               {"max_tokens", request.max_tokens},
               {"ignore_eos", request.ignore_eos}};
  if (request.chat) {
    body["messages"] = json::array({{{"role", "user"}, {"content", request.prompt}}});
  } else {
    body["prompt"] = request.prompt;
  }

  std::optional<Clock::time_point> first, last;
  bool done = false;
  std::string error_body;
  SseParser parser([&](std::string_view data) {
    if (done) return true;  // anything after [DONE] is ignored
    if (data == "[DONE]") {
      done = true;
      return true;
    }
    const json j = json::parse(data, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      r.error = "malformed SSE event ending at byte " + std::to_string(parser.offset()) + ": not a JSON object: " +
                clip(data);
      return false;
    }
    if (j.contains("error")) {
      r.error = "the server reported an error in the stream: " + clip(j["error"].dump());
      return false;
    }
    std::string text;
    if (const auto c = j.find("choices"); c != j.end() && c->is_array()) {
      for (const json& ch : *c) {
        if (!ch.is_object()) continue;
        if (request.chat) {
          if (const auto d = ch.find("delta"); d != ch.end() && d->is_object()) {
            for (const char* key : {"reasoning_content", "content"}) {
              if (const auto t = d->find(key); t != d->end() && t->is_string()) text += t->get<std::string>();
            }
          }
        } else if (const auto t = ch.find("text"); t != ch.end() && t->is_string()) {
          text += t->get<std::string>();
        }
        if (const auto f = ch.find("finish_reason"); f != ch.end() && f->is_string()) r.finish_reason = *f;
      }
    }
    if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
      const auto pt = u->find("prompt_tokens"), ct = u->find("completion_tokens");
      if (pt != u->end() && pt->is_number_unsigned()) r.prompt_tokens = pt->get<uint64_t>();
      if (ct != u->end() && ct->is_number_unsigned()) {
        r.completion_tokens = ct->get<uint64_t>();
        r.usage_reported = true;
      }
    }
    if (!text.empty()) {
      const Clock::time_point now = Clock::now();
      if (!first) first = now;
      last = now;
      ++r.text_chunks;
      r.text += text;
    }
    return true;
  });

  httplib::Request req;
  req.method = "POST";
  req.path = prefix_ + (request.chat ? "/v1/chat/completions" : "/v1/completions");
  req.headers = {{"Content-Type", "application/json"}};
  req.body = body.dump();
  req.response_handler = [&](const httplib::Response& res) {
    r.http_status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (r.http_status != 200) {
      if (error_body.size() < 4096) error_body.append(data, std::min<size_t>(n, 4096 - error_body.size()));
      return true;
    }
    if (parser.feed(std::string_view(data, n))) return true;
    if (r.error.empty()) r.error = "the stream was stopped: " + parser.error();
    return false;
  };

  const Clock::time_point t0 = Clock::now();
  const httplib::Result res = impl_->cli.send(req);
  const Clock::time_point t_end = Clock::now();
  r.total_ms = ms_between(t0, t_end);
  const std::string where = endpoint(request.chat);
  if (!r.error.empty()) {
    r.error = where + ": " + r.error;
    return r;
  }
  if (!res) {
    r.error = where + ": request failed: " + httplib::to_string(res.error());
    return r;
  }
  r.http_status = res->status;
  if (res->status != 200) {
    if (error_body.empty()) error_body = res->body;
    r.error = where + ": HTTP " + std::to_string(res->status) + (error_body.empty() ? "" : ": " + clip(error_body));
    return r;
  }
  if (!parser.finish()) {
    r.error = where + ": " + r.error;
    return r;
  }
  if (!done) {
    r.error = where + ": the stream ended before \"data: [DONE]\" (" + std::to_string(parser.offset()) +
              " bytes; Content-Type " + res->get_header_value("Content-Type") + ")";
    return r;
  }
  if (!first) {
    r.error = where + ": the stream carried no completion text";
    return r;
  }
  if (!r.usage_reported) r.completion_tokens = r.text_chunks;
  r.ttft_ms = ms_between(t0, *first);
  r.decode_ms = ms_between(*first, *last);
  return r;
}

std::string OpenAiClient::first_model_id(std::string& error) {
  const std::string path = prefix_ + "/v1/models";
  const httplib::Result res = impl_->cli.Get(path);
  if (!res) {
    error = base_ + path + ": " + httplib::to_string(res.error());
    return {};
  }
  if (res->status != 200) {
    error = base_ + path + ": HTTP " + std::to_string(res->status);
    return {};
  }
  const json j = json::parse(res->body, nullptr, false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
      j["data"][0].is_object() && j["data"][0].contains("id") && j["data"][0]["id"].is_string()) {
    return j["data"][0]["id"].get<std::string>();
  }
  error = base_ + path + ": no data[0].id in the answer";
  return {};
}

}  // namespace moepack::bench
