// Server-sent events parsing (sse_parser.h).
#include "bench/sse_parser.h"

namespace moepack::bench {

bool SseParser::feed(std::string_view bytes) {
  if (stopped_) return false;
  for (char c : bytes) {
    ++offset_;
    if (c == '\n' && last_was_cr_) {  // the LF of a CRLF: the line already ended at CR
      last_was_cr_ = false;
      continue;
    }
    last_was_cr_ = c == '\r';
    if (c == '\n' || c == '\r') {
      const std::string l = std::move(pending_);
      pending_.clear();
      if (!line(l)) {
        stopped_ = true;
        return false;
      }
    } else {
      if (pending_.size() >= max_line_) {
        error_ = "a line longer than " + std::to_string(max_line_) + " bytes (at byte " + std::to_string(offset_) +
                 " of the stream)";
        stopped_ = true;
        return false;
      }
      pending_ += c;
    }
  }
  return true;
}

bool SseParser::finish() {
  if (stopped_) return false;
  if (!pending_.empty()) {
    const std::string l = std::move(pending_);
    pending_.clear();
    if (!line(l)) return !(stopped_ = true);
  }
  if (has_data_ && !dispatch()) return !(stopped_ = true);
  return true;
}

bool SseParser::line(std::string_view l) {
  if (l.empty()) return has_data_ ? dispatch() : true;
  if (l.front() == ':') return true;  // comment
  const size_t colon = l.find(':');
  const std::string_view field = l.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view{} : l.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (data_.size() + value.size() + 1 > max_line_) {
      error_ = "an event's data longer than " + std::to_string(max_line_) + " bytes (at byte " +
               std::to_string(offset_) + " of the stream)";
      return false;
    }
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  }
  return true;
}

bool SseParser::dispatch() {
  const std::string d = std::move(data_);
  data_.clear();
  has_data_ = false;
  return on_event_(d);
}

}  // namespace moepack::bench
