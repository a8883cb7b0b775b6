// Report arithmetic (bench/report_json.h) on hand-made results with hand-computed values, the
// CSV and HTML views' escaping and shape, --formats parsing and prompt-set validation.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/bench_runner.h"
#include "bench/prompt_set.h"
#include "bench/report_csv.h"
#include "bench/report_html.h"
#include "bench/report_json.h"
#include "core/error.h"

namespace moepack::bench {
namespace {

using nlohmann::json;

json engine_result(uint64_t p, uint64_t c, double prefill_ms, double decode_ms, uint64_t hits, uint64_t misses,
                   uint64_t read) {
  GenerateResult r;
  r.prompt_tokens.assign(p, 1);
  r.tokens.assign(c, 2);
  r.prefill_ms = prefill_ms;
  r.decode_ms = decode_ms;
  r.time_to_first_token_ms = prefill_ms + 1;
  r.stats.cache_hits = hits;
  r.stats.cache_misses = misses;
  r.stats.pack_read_bytes = read;
  r.stats.io_wait_ms = 10;
  r.stats.compute_ms = 30;
  return engine_result_json(r);
}

TEST(Report, EngineResultFormulas) {
  const json j = engine_result(20, 8, 500, 1400, 30, 10, 8000);
  EXPECT_DOUBLE_EQ(j["prefill_tps"].get<double>(), 40.0);  // 20 / 0.5 s
  EXPECT_DOUBLE_EQ(j["decode_tps"].get<double>(), 5.0);    // 7 / 1.4 s
  EXPECT_DOUBLE_EQ(j["hit_rate"].get<double>(), 0.75);     // 30 / 40
  EXPECT_DOUBLE_EQ(j["read_bytes_per_token"].get<double>(), 1000.0);
  EXPECT_EQ(j["completion_tokens"], 8);
  // No cache (GGUF-resident experts): hit rate unknown, not 0.
  EXPECT_TRUE(engine_result(5, 1, 10, 0, 0, 0, 0)["hit_rate"].is_null());
  EXPECT_TRUE(engine_result(5, 1, 10, 0, 0, 0, 0)["decode_tps"].is_null());  // one token: no decode
}

TEST(Report, AggregatesAreRatiosOfSums) {
  const json a = aggregate_results({engine_result(20, 8, 500, 1400, 30, 10, 8000),
                                    engine_result(10, 3, 500, 600, 10, 30, 1000), failed_result_json("boom")});
  EXPECT_EQ(a["requests"], 3);
  EXPECT_EQ(a["failed"], 1);
  EXPECT_EQ(a["prompt_tokens"], 30);
  EXPECT_EQ(a["completion_tokens"], 11);
  EXPECT_DOUBLE_EQ(a["prefill_tps"].get<double>(), 30.0);      // 30 / 1.0 s
  EXPECT_DOUBLE_EQ(a["decode_tps"].get<double>(), 4.5);        // (7 + 2) / 2.0 s
  EXPECT_DOUBLE_EQ(a["hit_rate"].get<double>(), 0.5);          // 40 / 80
  EXPECT_DOUBLE_EQ(a["read_bytes_per_token"].get<double>(), 9000.0 / 11);
  EXPECT_DOUBLE_EQ(a["ssd_gb_per_token"].get<double>(), 9000.0 / 11 / 1e9);
  EXPECT_DOUBLE_EQ(a["io_wait_share"].get<double>(), 0.25);    // 20 / (20 + 60)
  EXPECT_DOUBLE_EQ(a["ttft_ms_mean"].get<double>(), 501.0);
}

TEST(Report, RatiosOursOverBaseline) {
  const json ours = {{"prefill_tps", 30.0}, {"decode_tps", 6.0}, {"ttft_ms", 100.0}};
  const json base = {{"prefill_tps", 10.0}, {"decode_tps", 2.0}, {"ttft_ms", 400.0}};
  const json r = ratio_json(ours, base);
  EXPECT_DOUBLE_EQ(r["prefill_tps"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(r["decode_tps"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(r["ttft_ms"].get<double>(), 0.25);
  EXPECT_TRUE(ratio_json(ours, failed_result_json("x"))["decode_tps"].is_null());
}

json small_report() {
  json rep = {{"schema", kReportSchema},
              {"schema_version", kReportSchemaVersion},
              {"created_utc", "2026-01-01T00:00:00Z"},
              {"moepack", {{"version", "0"}, {"git_commit", "c"}, {"git_describe", "d"}}},
              {"machine", {{"gpus", json::array()}}},
              {"model", {{"name", "m<x>"}, {"path", "/p"}}},
              {"engine", {{"backend", "cpu"}, {"cache_slots", 4}, {"cache_slot_bytes", 4096}}},
              {"run", {{"mode", "chat"}, {"max_tokens", 8}, {"ignore_eos", true}}},
              {"prompt_set", {{"name", "t"}, {"requests", 2}}},
              {"published_results", {{"cfg", {{"cache_vram_mib", 5}, {"a", {{"decode_tok_s", 2.0}, {"hit_rate", 0.5}}},
                                              {"baseline_x", {{"a", {{"decode_tok_s", 1.0}}}}}}}}},
              {"systems", json::array({{{"id", "moepack"}, {"label", "MoePack (cpu)"}},
                                       {{"id", "baseline1"}, {"label", "stub @ http://h"}}})}};
  json r1 = {{"id", "a-1"}, {"dataset", "a"}, {"results", {{"moepack", engine_result(20, 8, 500, 1400, 30, 10, 8000)}}}};
  r1["results"]["baseline1"] = {{"ok", true}, {"prompt_tokens", 20}, {"completion_tokens", 8}, {"ttft_ms", 1000.0},
                                {"prefill_ms", 1000.0}, {"decode_ms", 3500.0}, {"prefill_tps", 20.0}, {"decode_tps", 2.0}};
  json r2 = {{"id", "b,\"2\""}, {"dataset", "b"}, {"results", {{"moepack", engine_result(10, 3, 500, 600, 10, 30, 1000)}}}};
  r2["results"]["baseline1"] = failed_result_json("HTTP 500: <oops>");
  rep["requests"] = json::array({r1, r2});
  finish_report(rep);
  return rep;
}

TEST(Report, FinishFillsAggregatesRatiosAndPublished) {
  const json rep = small_report();
  ASSERT_EQ(rep["aggregates"].size(), 3u);  // a, b, all
  EXPECT_EQ(rep["aggregates"][0]["group"], "a");
  EXPECT_EQ(rep["aggregates"][2]["group"], "all");
  EXPECT_DOUBLE_EQ(rep["requests"][0]["ratios"]["baseline1"]["decode_tps"].get<double>(), 2.5);  // 5 / 2
  EXPECT_TRUE(rep["requests"][1]["ratios"]["baseline1"]["decode_tps"].is_null());
  EXPECT_EQ(rep["aggregates"][2]["results"]["baseline1"]["failed"], 1);
  EXPECT_DOUBLE_EQ(rep["aggregates"][0]["published"]["cfg"]["decode_tok_s"].get<double>(), 2.0);
  EXPECT_EQ(rep["aggregates"][0]["published"]["cfg"]["cache_vram_mib"], 5);
  EXPECT_DOUBLE_EQ(rep["aggregates"][0]["published"]["cfg/baseline_x"]["decode_tok_s"].get<double>(), 1.0);
  EXPECT_TRUE(rep["aggregates"][1]["published"].empty());
}

TEST(Report, CsvRowsAndQuoting) {
  const std::string csv = report_csv(small_report());
  size_t lines = 0;
  for (size_t p = 0; (p = csv.find("\r\n", p)) != std::string::npos; p += 2) ++lines;
  EXPECT_EQ(lines, 1u + 2 * 2 + 3 * 2);  // header, 2 requests x 2 systems, 3 groups x 2 systems
  EXPECT_EQ(csv.rfind("row_type,group,request_id,system,ok,error,prompt_tokens", 0), 0u);
  EXPECT_NE(csv.find("request,b,\"b,\"\"2\"\"\",moepack,true"), std::string::npos) << csv;
  EXPECT_NE(csv.find("HTTP 500: <oops>"), std::string::npos);
}

TEST(Report, HtmlIsSelfContainedAndEscaped) {
  const std::string html = report_html(small_report());
  for (const char* id : {"id=\"summary\"", "id=\"aggregates\"", "id=\"published\"", "id=\"requests\"",
                         "id=\"chart-decode-tps\"", "id=\"chart-hit-rate\"", "id=\"chart-ssd-bytes-per-token\"",
                         "id=\"chart-dataset-decode-tps\"", "id=\"chart-dataset-prefill-tps\"", "id=\"errors\""}) {
    EXPECT_NE(html.find(id), std::string::npos) << id;
  }
  EXPECT_NE(html.find("HTTP 500: &lt;oops&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<oops>"), std::string::npos);
  EXPECT_NE(html.find("m&lt;x&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_NE(html.find("published: cfg"), std::string::npos);
  EXPECT_NE(html.find("<rect class=\"bar\""), std::string::npos);
  // The host-RAM tier's slots (the CUDA backend's cache_ram_mib, sized on the machine): named when
  // the report has some, absent from older reports and from a run without one.
  EXPECT_NE(html.find("4 expert cache slots of"), std::string::npos);
  EXPECT_EQ(html.find("host-RAM tier slots"), std::string::npos);
  nlohmann::json with_tier = small_report();
  with_tier["engine"]["ram_tier_slots"] = 1044;
  EXPECT_NE(report_html(with_tier).find("4 expert cache slots of 4.00 KiB, 1044 host-RAM tier slots"),
            std::string::npos)
      << report_html(with_tier);
  with_tier["engine"]["ram_tier_slots"] = 0;
  EXPECT_EQ(report_html(with_tier).find("host-RAM tier slots"), std::string::npos);
  // Why `auto` ran on the CPU: named, escaped, where the report has it.
  EXPECT_EQ(html.find("Not on the GPU"), std::string::npos);
  nlohmann::json on_cpu = small_report();
  on_cpu["engine"]["backend_note"] = "backend \"cuda\": GPU 0 (<RTX 4090>, compute capability 8.9)";
  EXPECT_NE(report_html(on_cpu).find("<dt>Not on the GPU</dt><dd>backend &quot;cuda&quot;: GPU 0 (&lt;RTX "
                                     "4090&gt;, compute capability 8.9)"),
            std::string::npos)
      << report_html(on_cpu);
}

TEST(Report, TimelineJsonIsColumnar) {
  std::vector<TokenSample> samples(3);
  samples[0] = {0, 2000, 2, 1.5, 8.5};  // index, read_bytes, experts_missed, io_wait_ms, compute_ms
  samples[1] = {1, 0, 0, 0.0, 5.0};
  samples[2] = {2, 4000, 3, 12.0, 8.0};
  const json t = timeline_json(samples, {11.0, std::nan(""), 40.0}, 0);
  EXPECT_EQ(t["first_token"], 0);
  EXPECT_EQ(t["tokens"], 3);
  EXPECT_EQ(t["forward_ms"], json({10.0, 5.0, 20.0}));  // io wait + compute
  EXPECT_EQ(t["io_wait_ms"], json({1.5, 0.0, 12.0}));
  EXPECT_EQ(t["read_bytes"], json({2000, 0, 4000}));
  EXPECT_EQ(t["experts_missed"], json({2, 0, 3}));
  EXPECT_EQ(t["t_ms"], json({11.0, nullptr, 40.0}));  // no text for token 1: no time
  EXPECT_THROW(timeline_json(samples, {1.0}, 0), Error);
}

TEST(Report, HtmlTokenTimeline) {
  json rep = small_report();
  std::vector<TokenSample> samples(3);
  samples[0] = {0, 2000, 2, 1.5, 8.5};
  samples[1] = {1, 0, 0, 0.0, 5.0};
  samples[2] = {2, 4000, 3, 12.0, 8.0};
  rep["requests"][0]["results"]["moepack"]["timeline"] = timeline_json(samples, {11.0, 20.0, 40.0}, 0);
  const std::string html = report_html(rep);
  const size_t at = html.find("<svg class=\"chart\" id=\"chart-token-timeline\"");
  ASSERT_NE(at, std::string::npos);
  const std::string svg = html.substr(at, html.find("</svg>", at) - at);
  // Plot 830 px wide (960 - 60 - 70) from x = 60, 220 px high from y = 30; 3 tokens: x = 60 +
  // 830 / 3 * (i + 0.5). Axis top 20 ms (the max): 10 ms -> y = 140, 5 ms -> 195, 20 ms -> 30.
  EXPECT_NE(svg.find("points=\"198.33,140.00 475.00,195.00 751.67,30.00\""), std::string::npos) << svg;
  // Bars for the two tokens that read (axis top: 4 KB rounds up to 5 KB): 2 KB -> height 88,
  // 4 KB -> 176; none for the token that read nothing.
  EXPECT_NE(svg.find("height=\"88.00\""), std::string::npos);
  EXPECT_NE(svg.find("height=\"176.00\""), std::string::npos);
  EXPECT_EQ(svg.find("height=\"0.00\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"request-start\""), std::string::npos);
  EXPECT_NE(svg.find(">a-1</text>"), std::string::npos);
  // Without timelines (baselines only, old reports) the chart says so instead of drawing.
  EXPECT_NE(report_html(small_report()).find("no per-token data"), std::string::npos);
}

TEST(Report, Formats) {
  const ReportFormats f = parse_formats("html,json");
  EXPECT_TRUE(f.json);
  EXPECT_FALSE(f.csv);
  EXPECT_TRUE(f.html);
  EXPECT_THROW(parse_formats("json,pdf"), Error);
  EXPECT_THROW(parse_formats(""), Error);
}

TEST(PromptSet, ValidatesAndNamesTheField) {
  const json ok = {{"name", "x"}, {"requests", {{{"id", "a"}, {"dataset", "d"}, {"prompt", "p"}}}}};
  EXPECT_EQ(parse_prompt_set(ok, "f.json").requests.size(), 1u);
  json dup = ok;
  dup["requests"].push_back(ok["requests"][0]);
  try {
    parse_prompt_set(dup, "f.json");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "requests[1].id");
  }
  json missing = ok;
  missing["requests"][0].erase("prompt");
  try {
    parse_prompt_set(missing, "f.json");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "requests[0].prompt");
  }
  EXPECT_THROW(parse_prompt_set({{"name", "x"}, {"requests", json::array()}}, "f.json"), FormatError);
}

TEST(PromptSet, DefaultIsThePublishedTen) {
  const PromptSet s = load_prompt_set(default_prompt_set_path());
  ASSERT_EQ(s.requests.size(), 10u);
  EXPECT_EQ(s.requests[0].id, "alpaca-37246");
  EXPECT_EQ(s.datasets(), (std::vector<std::string>{"alpaca", "mmlu"}));
  EXPECT_DOUBLE_EQ(s.published_results["deepseek-v4-flash_rtx5090"]["alpaca"]["decode_tok_s"].get<double>(), 1.992);
}

}  // namespace
}  // namespace moepack::bench
