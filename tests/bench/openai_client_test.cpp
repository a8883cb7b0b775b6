// The baseline client (bench/openai_client.h) against tests/bench/openai_stub_server.py on
// loopback: token counts from usage and from chunks, TTFT and decode time against the
// server's known delays (tolerances below), and every failure mode as a clear error.
#include "bench/openai_client.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench/report_json.h"
#include "core/error.h"
#include "tests/bench/stub_server.h"

namespace moepack::bench {
namespace {

using test::StubServer;

// The stub sleeps kPrefill before the first token and kToken between tokens. The machine is
// shared, so measured times may exceed these by scheduling delays: lower bounds are tight
// (sleeps never end early; 5 ms for timer granularity), upper bounds allow 250 ms of noise.
constexpr double kPrefill = 0.30, kToken = 0.06;
constexpr double kSlackMs = 250;

CompletionRequest request(int32_t n, bool chat = true) {
  CompletionRequest r;
  r.model = "stub-model";
  r.prompt = "one two three four five";  // 5 words: the stub's prompt_tokens
  r.chat = chat;
  r.max_tokens = n;
  return r;
}

std::vector<std::string> delays(const std::string& mode = "ok") {
  return {"--prefill-delay", std::to_string(kPrefill), "--token-delay", std::to_string(kToken), "--mode", mode};
}

TEST(OpenAiClient, UrlForms) {
  EXPECT_EQ(OpenAiClient("http://127.0.0.1:8080").endpoint(true), "http://127.0.0.1:8080/v1/chat/completions");
  EXPECT_EQ(OpenAiClient("http://127.0.0.1:8080/v1/").endpoint(false), "http://127.0.0.1:8080/v1/completions");
  EXPECT_EQ(OpenAiClient("HTTPS://example.org/api/v1").endpoint(true), "https://example.org/api/v1/chat/completions");
  EXPECT_THROW(OpenAiClient("ftp://example.org"), Error);
  EXPECT_THROW(OpenAiClient("127.0.0.1:8080"), Error);
}

TEST(OpenAiClient, ChatStreamTimingAndUsage) {
  StubServer s(delays());
  ASSERT_NE(s.port(), 0);
  OpenAiClient c(s.url());
  const int n = 8;
  const StreamResult r = c.complete(request(n));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.http_status, 200);
  EXPECT_TRUE(r.usage_reported);
  EXPECT_EQ(r.prompt_tokens, 5u);
  EXPECT_EQ(r.completion_tokens, 8u);
  EXPECT_EQ(r.text_chunks, 8u);  // the role-only chunk carries no text and is not a token
  EXPECT_EQ(r.text, "tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7 ");
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_GE(r.ttft_ms, kPrefill * 1000 - 5);
  EXPECT_LE(r.ttft_ms, kPrefill * 1000 + kSlackMs);
  const double expected_decode_ms = (n - 1) * kToken * 1000;  // 7 gaps between 8 tokens
  EXPECT_GE(r.decode_ms, expected_decode_ms - 5);
  EXPECT_LE(r.decode_ms, expected_decode_ms + kSlackMs);
  EXPECT_GE(r.total_ms, r.ttft_ms + r.decode_ms);

  // Rates as the report computes them: prompt / ttft and (n - 1) / decode time.
  const nlohmann::json j = baseline_result_json(r, 999);
  EXPECT_EQ(j["prompt_tokens_source"], "usage");
  EXPECT_DOUBLE_EQ(j["prefill_tps"].get<double>(), 5 / (r.ttft_ms / 1000));
  EXPECT_DOUBLE_EQ(j["decode_tps"].get<double>(), 7 / (r.decode_ms / 1000));
  // Against the server's delays: 1 / 0.06 s = 16.7 tokens/s at most.
  EXPECT_LE(j["decode_tps"].get<double>(), 7 / ((expected_decode_ms - 5) / 1000));
  EXPECT_GE(j["decode_tps"].get<double>(), 7 / ((expected_decode_ms + kSlackMs) / 1000));
}

TEST(OpenAiClient, RawCompletionsEndpoint) {
  const std::filesystem::path log =
      std::filesystem::temp_directory_path() / ("moepack-stub-log-" + std::to_string(::getpid()));
  std::filesystem::remove(log);
  std::vector<std::string> args = delays();
  args.insert(args.end(), {"--log", log.string()});
  StubServer s(args);
  ASSERT_NE(s.port(), 0);
  OpenAiClient c(s.url());
  const StreamResult r = c.complete(request(3, false));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.text, "tok0 tok1 tok2 ");
  EXPECT_EQ(r.completion_tokens, 3u);
  // The request the server saw: what the published method asks for.
  std::FILE* f = std::fopen(log.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[4096] = {};
  ASSERT_NE(std::fgets(buf, sizeof buf, f), nullptr);
  std::fclose(f);
  std::filesystem::remove(log);
  const nlohmann::json seen = nlohmann::json::parse(buf);
  EXPECT_EQ(seen["path"], "/v1/completions");
  EXPECT_EQ(seen["body"]["prompt"], "one two three four five");
  EXPECT_EQ(seen["body"]["stream"], true);
  EXPECT_EQ(seen["body"]["temperature"], 0);
  EXPECT_EQ(seen["body"]["max_tokens"], 3);
  EXPECT_EQ(seen["body"]["ignore_eos"], true);
  EXPECT_EQ(seen["body"]["stream_options"]["include_usage"], true);
}

TEST(OpenAiClient, WithoutUsageCountsChunks) {
  StubServer s(delays("no-usage"));
  ASSERT_NE(s.port(), 0);
  OpenAiClient c(s.url());
  const StreamResult r = c.complete(request(5));
  ASSERT_EQ(r.error, "");
  EXPECT_FALSE(r.usage_reported);
  EXPECT_EQ(r.completion_tokens, 5u);
  EXPECT_EQ(r.prompt_tokens, 0u);
  const nlohmann::json j = baseline_result_json(r, 42);
  EXPECT_EQ(j["prompt_tokens"], 42);
  EXPECT_EQ(j["prompt_tokens_source"], "moepack");
  EXPECT_EQ(j["completion_tokens_source"], "chunks");
}

TEST(OpenAiClient, FirstModelId) {
  StubServer s(delays());
  ASSERT_NE(s.port(), 0);
  OpenAiClient c(s.url() + "/v1");
  std::string err;
  EXPECT_EQ(c.first_model_id(err), "stub-model");
  EXPECT_EQ(err, "");
}

TEST(OpenAiClient, ServerDownIsAnError) {
  int port = 0;
  {
    StubServer s(delays());  // a port that was free a moment ago and is closed now
    port = s.port();
  }
  ASSERT_NE(port, 0);
  OpenAiClient c("http://127.0.0.1:" + std::to_string(port));
  const StreamResult r = c.complete(request(4));
  EXPECT_NE(r.error.find("request failed"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("127.0.0.1:" + std::to_string(port) + "/v1/chat/completions"), std::string::npos) << r.error;
}

TEST(OpenAiClient, Http500IsAnErrorWithTheBody) {
  StubServer s(delays("http500"));
  ASSERT_NE(s.port(), 0);
  const StreamResult r = OpenAiClient(s.url()).complete(request(4));
  EXPECT_EQ(r.http_status, 500);
  EXPECT_NE(r.error.find("HTTP 500"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("stub failure"), std::string::npos) << r.error;
}

TEST(OpenAiClient, MalformedEventIsAnError) {
  StubServer s(delays("malformed"));
  ASSERT_NE(s.port(), 0);
  const StreamResult r = OpenAiClient(s.url()).complete(request(6));
  EXPECT_NE(r.error.find("malformed SSE event"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("{this is not json"), std::string::npos) << r.error;
}

TEST(OpenAiClient, MissingDoneIsAnError) {
  StubServer s(delays("no-done"));
  ASSERT_NE(s.port(), 0);
  const StreamResult r = OpenAiClient(s.url()).complete(request(3));
  EXPECT_NE(r.error.find("[DONE]"), std::string::npos) << r.error;
}

TEST(OpenAiClient, ErrorEventIsAnError) {
  StubServer s(delays("error-event"));
  ASSERT_NE(s.port(), 0);
  const StreamResult r = OpenAiClient(s.url()).complete(request(6));
  EXPECT_NE(r.error.find("stub error event"), std::string::npos) << r.error;
}

// HTTPS with a self-signed certificate for 127.0.0.1: refused without its CA (verification is
// always on), accepted with --ca-cert.
TEST(OpenAiClient, HttpsVerifiesCertificates) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("moepack-tls-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                          "-addext subjectAltName=IP:127.0.0.1 -keyout " + key + " -out " + cert + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl could not make a certificate: " << cmd;
  std::vector<std::string> args = delays();
  args.insert(args.end(), {"--cert", cert, "--key", key});
  StubServer s(args);
  ASSERT_NE(s.port(), 0);
  const StreamResult refused = OpenAiClient(s.url("https")).complete(request(2));
  EXPECT_NE(refused.error.find("SSL"), std::string::npos) << refused.error;
  ClientOptions o;
  o.ca_cert_file = cert;
  const StreamResult ok = OpenAiClient(s.url("https"), o).complete(request(2));
  EXPECT_EQ(ok.error, "");
  EXPECT_EQ(ok.completion_tokens, 2u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moepack::bench
