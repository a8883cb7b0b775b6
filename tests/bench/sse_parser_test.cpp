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

// A server that never ends a line (or an event) stops the parser at the limit instead of filling the
// memory (a reviewer's endless "data: " line took the bench client to 4 GB before the sixtieth session).
TEST(SseParser, LinesAndEventsPastTheLimitStopIt) {
  std::vector<std::string> events;
  const auto collect = [&](std::string_view d) {
    events.emplace_back(d);
    return true;
  };
  SseParser ok(collect, 16);
  EXPECT_TRUE(ok.feed("data: 0123456789\n\n"));  // a line of exactly 16 bytes
  EXPECT_EQ(events, std::vector<std::string>{"0123456789"});
  EXPECT_TRUE(ok.error().empty());

  SseParser endless(collect, 16);
  EXPECT_TRUE(endless.feed("data: 0123456789"));
  EXPECT_FALSE(endless.feed("x"));  // the 17th byte of one line
  EXPECT_EQ(endless.error(), "a line longer than 16 bytes (at byte 17 of the stream)");
  EXPECT_FALSE(endless.feed("\n\n"));  // stopped for good

  events.clear();
  SseParser long_event(collect, 16);
  EXPECT_FALSE(long_event.feed("data: 01234567\ndata: 89abcdef\n\n"));  // 8 + 1 + 8 bytes of data
  EXPECT_EQ(long_event.error(), "an event's data longer than 16 bytes (at byte 30 of the stream)");
  EXPECT_TRUE(events.empty());
}

}  // namespace
}  // namespace moepack::bench
