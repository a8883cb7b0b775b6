// Incremental parser of a text/event-stream body (WHATWG HTML "Server-sent events", 9.2.6),
// as OpenAI-compatible servers stream completions: `data: {json}\n\n` ... `data: [DONE]\n\n`.
//
// Bytes arrive in arbitrary pieces (TCP reads); feed() buffers an incomplete line. Lines end
// in LF, CRLF or CR. A line "data:VALUE" (one optional space after the colon) appends VALUE
// to the event's data (joined with "\n"); a line starting with ':' is a comment; other fields
// (event, id, retry) are ignored; an empty line dispatches the event if it has data.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace moepack::bench {

class SseParser {
 public:
  // Called once per dispatched event with its data; return false to stop parsing (feed()
  // then returns false too).
  using OnEvent = std::function<bool(std::string_view data)>;

  // A line, or an event's data, longer than this stops the parser (a server that never ends a line
  // would otherwise make the client buffer without limit): 16 MiB, far above any completion chunk.
  static constexpr size_t kMaxLineBytes = size_t{16} << 20;

  explicit SseParser(OnEvent on_event, size_t max_line_bytes = kMaxLineBytes)
      : on_event_(std::move(on_event)), max_line_(max_line_bytes) {}

  // Parses `bytes`. Returns false if the callback asked to stop, or a line or an event's data grew past
  // max_line_bytes (error() then says so).
  bool feed(std::string_view bytes);
  // Why the parser stopped on its own ("" if it did not, or the callback stopped it).
  const std::string& error() const { return error_; }
  // End of stream: a final line without its terminator is processed and a pending event with
  // data is dispatched (the specification drops it; servers that close without a blank line
  // exist, and the caller decides whether the stream was complete). Returns false if the
  // callback asked to stop.
  bool finish();
  // Bytes consumed so far (for error messages).
  size_t offset() const { return offset_; }

 private:
  bool line(std::string_view l);
  bool dispatch();

  OnEvent on_event_;
  size_t max_line_;
  std::string error_;
  std::string pending_;  // an incomplete line
  std::string data_;     // the current event's data
  bool has_data_ = false;
  bool last_was_cr_ = false;
  bool stopped_ = false;
  size_t offset_ = 0;
};

}  // namespace moepack::bench
