// Adapters, event streams: the error event of a `text/event-stream` body (HTML Living Standard,
// "Server-sent events", section 9.2.6 "Interpreting an event stream"), handed to the HTTP
// adapter as the JSON error body it carries.
//
// Input: the body's bytes, already within ReaderLimits::max_bytes. Output: the error event's
// body as a DOM (json.hpp), or nullopt with a warning. One pass over the bytes; each event's
// data is parsed as JSON once, and only while no error event has been found, so the work is
// linear in the body. The providers' error events are in docs/adapters.md, "Event streams".
#include "adapters/protocols.hpp"
#include "adapters/text.hpp"

namespace recourse::detail::adapt {
namespace {

// Calls `on_event(type, data)` for each event the stream dispatches, in order, until it returns
// true. Section 9.2.6: one leading U+FEFF is skipped; lines end at CRLF, LF or CR; a line
// starting with ':' is a comment; a line is split at its first ':' into field and value (one
// space after the colon dropped; no colon: the whole line is the field, the value empty);
// `event` sets the type, each `data` appends its value and a LF; an empty line dispatches the
// event when its data is not empty (the last LF removed; no type: "message"). What follows the
// last empty line (an unfinished event or line) is discarded, as the standard says.
template <typename F>
void each_event(std::string_view s, F&& on_event) {
  if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);
  std::string type, data;
  while (true) {
    const std::size_t end = s.find_first_of("\r\n");
    if (end == std::string_view::npos) return;
    const std::string_view line = s.substr(0, end);
    s.remove_prefix(end + (s.substr(end, 2) == "\r\n" ? 2 : 1));
    if (line.empty()) {
      if (!data.empty()) {
        data.pop_back();
        if (on_event(std::string_view(type.empty() ? "message" : type), std::string_view(data)))
          return;
      }
      type.clear();
      data.clear();
      continue;
    }
    if (line.front() == ':') continue;
    const std::size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value =
        colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "event") {
      type = std::string(value);
    } else if (field == "data") {
      data += value;
      data += '\n';
    }
  }
}

// The JSON error body an event carries, or nullopt when it is no error event: an `error` event
// (Anthropic; OpenAI's Responses API), or data whose `type` is "error", or data with an `error`
// object (OpenAI's chat completions), read as they are; a `response.failed` event (OpenAI's
// Responses API), as {"error": response.error}.
std::optional<json> error_body(std::string_view type, json data) {
  const std::string* data_type = str(data, "type");
  const bool failed = type == "response.failed" || (data_type && *data_type == "response.failed");
  if (failed) {
    const auto response = data.find("response");
    if (response != data.end() && response->is_object()) {
      const auto error = response->find("error");
      if (error != response->end() && error->is_object()) return json{{"error", *error}};
    }
    return data;
  }
  const auto error = data.find("error");
  if (type == "error" || (data_type && *data_type == "error") ||
      (error != data.end() && error->is_object()))
    return data;
  return std::nullopt;
}

}  // namespace

bool is_event_stream(const Headers& headers) {
  const HeaderValue type = header(headers, "Content-Type");
  if (!type.present || type.repeated) return false;
  const std::string_view value = type.value;
  const std::string_view media = trim(value.substr(0, value.find(';')));
  return iequals(media, "text/event-stream");
}

std::optional<json> stream_error(Builder& b, std::string_view stream) {
  std::optional<json> found;
  std::size_t events = 0;
  each_event(stream, [&](std::string_view type, std::string_view data) {
    ++events;
    const std::string_view text = trim(data);
    const bool object = !text.empty() && text.front() == '{';
    Parsed parsed;
    if (object) parsed = parse_json(text, b.options().limits.max_bytes, b.options().limits);
    if (parsed.ok && parsed.value.is_object()) {
      found = error_body(type, std::move(parsed.value));
    } else if (type == "error" || type == "response.failed") {
      b.warn("malformed", "message",
             "the event stream's " + std::string(type) +
                 " event carries no JSON object; read as absent");
    }
    return found.has_value();
  });
  if (!found)
    b.warn("no_error_event", "code",
           "the event stream (" + std::to_string(events) +
               " events) has no error event; the body is read as text");
  return found;
}

}  // namespace recourse::detail::adapt
