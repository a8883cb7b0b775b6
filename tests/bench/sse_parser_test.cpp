// Server-sent events parsing (bench/sse_parser.h) on hand-written streams, fed whole and split
// at every byte position (TCP may cut anywhere).
#include "bench/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace moepack::bench {
namespace {

std::vector<std::string> parse_split(const std::string& stream, size_t cut) {
  std::vector<std::string> events;
  SseParser p([&](std::string_view d) {
    events.emplace_back(d);
    return true;
  });
  EXPECT_TRUE(p.feed(std::string_view(stream).substr(0, cut)));
  EXPECT_TRUE(p.feed(std::string_view(stream).substr(cut)));
  EXPECT_TRUE(p.finish());
  return events;
}

void expect_events(const std::string& stream, const std::vector<std::string>& want) {
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    EXPECT_EQ(parse_split(stream, cut), want) << "cut at " << cut;
  }
}

TEST(SseParser, OpenAiStream) {
  expect_events("data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n", {"{\"a\":1}", "{\"a\":2}", "[DONE]"});
}

TEST(SseParser, CrLfAndCrLineEnds) {
  expect_events("data: x\r\n\r\ndata: y\r\rdata: z\n\n", {"x", "y", "z"});
}

TEST(SseParser, CommentsOtherFieldsAndMultiLineData) {
  expect_events(": keep-alive\nevent: message\nid: 7\ndata: line1\ndata:line2\n\n", {"line1\nline2"});
}

TEST(SseParser, OnlyOneSpaceAfterTheColonIsDropped) { expect_events("data:  two\n\n", {" two"}); }

TEST(SseParser, BlankLinesWithoutDataDispatchNothing) { expect_events("\n\n: c\n\n\ndata: a\n\n\n\n", {"a"}); }

TEST(SseParser, FinishDispatchesAnUnterminatedEvent) { expect_events("data: a\n\ndata: b", {"a", "b"}); }

TEST(SseParser, CallbackStops) {
  int calls = 0;
  SseParser p([&](std::string_view) { return ++calls < 2; });
  EXPECT_FALSE(p.feed("data: 1\n\ndata: 2\n\ndata: 3\n\n"));
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(p.feed("data: 4\n\n"));
  EXPECT_EQ(calls, 2);
}

TEST(SseParser, OffsetCountsBytes) {
  SseParser p([](std::string_view) { return true; });
  p.feed("data: 1\n\n");
  p.feed("dat");
  EXPECT_EQ(p.offset(), 12u);
}

}  // namespace
}  // namespace moepack::bench
