// fuzz_context: arbitrary bytes as a context (read_context) or as a trace (`recourse replay`'s
// line reader and trace-line parser, cli/io.cpp and cli/trace.cpp), chosen by the first byte.
//
// Properties of the context reader, against an oracle (nlohmann's SAX events over the same text,
// which the reader does not use):
//  - it never crashes; it reads the text exactly when the oracle finds a JSON object with no key
//    given twice in any object and every known integer key (attempt, repairs, elapsedMs,
//    maxAttempts, deadlineMs, lowerRetries, repeats, costSpent, nowMs) absent, null or a whole
//    number in its documented range (docs/language.md section 13, the context schema): a key
//    given twice is "appears more than once", an integer below or above its range (-1, 2^63,
//    1e400, 18446744073709551616) names the key and the range; such a text is refused only for
//    a key of another kind (a string, bool or enum of the wrong type or value), never with an
//    error naming an integer key;
//  - what it reads has the oracle's integers, and to_json(context) reads back to the same JSON.
// Properties of the trace reader:
//  - LineReader gives the input's lines in order, each exactly as written when it is at most the
//    line limit and TooLong (nothing kept) when it is longer, then End; a file larger than the
//    limit on the whole input is refused before its first line;
//  - parse_trace_line never crashes; a line it reads is one JSON object once its envelope or raw
//    form (handed to its reader as written, JSON or not) is taken out; a line that gives a
//    top-level key twice, or whose context gives a key twice or breaks an integer's range, is a
//    bad line (nullopt); a line it reads has the integers its context gave.
#include <sys/mman.h>
#include <unistd.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../cli/trace.hpp"
#include "fuzz.hpp"

namespace {

using json = nlohmann::json;

// The integer keys of the context and their ranges (docs/schema/context.schema.json).
struct Range {
  const char* key;
  std::int64_t min, max;
};
constexpr std::int64_t kCounts = 1'000'000'000, kMs = 1'000'000'000'000'000;
constexpr Range kIntegers[] = {
    {"attempt", 1, kCounts},     {"repairs", 0, kCounts},   {"elapsedMs", 0, kMs},
    {"maxAttempts", 1, kCounts}, {"deadlineMs", 0, kMs},    {"lowerRetries", 0, kCounts},
    {"repeats", 0, kCounts},     {"costSpent", 0, kCounts}, {"nowMs", 0, kMs}};

// What the oracle sees in a JSON text: whether it is one object, whether some object in it gives
// a key twice, and the top-level members (the last value of each).
struct Seen {
  bool object = false;
  bool repeated = false;      // in any object
  bool top_repeated = false;  // in the outermost one
  json top;
};

// SAX handler: keys per open object, and the DOM of the top level from nlohmann's own parser.
class Oracle : public json::json_sax_t {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!keys_.back().insert(k).second) (keys_.size() == 1 ? top_repeated : repeated) = true;
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
  bool repeated = false, top_repeated = false;

 private:
  std::vector<std::set<std::string>> keys_;
};

Seen see(std::string_view text) {
  Seen s;
  if (text.find('\0') != std::string_view::npos) return s;
  Oracle o;
  if (!json::sax_parse(text.begin(), text.end(), &o)) return s;
  s.top = json::parse(text.begin(), text.end(), nullptr, false);
  s.object = s.top.is_object();
  s.top_repeated = o.top_repeated;
  s.repeated = o.repeated || o.top_repeated;
  return s;
}

// Whether the oracle's top-level value of `key` breaks its range (absent and null do not).
bool out_of_range(const json& top, const Range& r) {
  const auto it = top.find(r.key);
  if (it == top.end() || it->is_null()) return false;
  if (it->is_number_unsigned()) {  // min is 0 or 1
    const std::uint64_t v = it->get<std::uint64_t>();
    return v < static_cast<std::uint64_t>(r.min) || v > static_cast<std::uint64_t>(r.max);
  }
  if (!it->is_number_integer()) return true;
  return it->get<std::int64_t>() < r.min || it->get<std::int64_t>() > r.max;
}

// The integers of a context as read, by key.
std::map<std::string, std::int64_t> integers(const recourse::Context& c) {
  return {{"attempt", c.attempt},
          {"repairs", c.repairs},
          {"elapsedMs", c.elapsed_ms},
          {"maxAttempts", c.max_attempts.value_or(-1)},
          {"deadlineMs", c.deadline_ms.value_or(-1)},
          {"lowerRetries", c.lower_retries},
          {"repeats", c.repeats},
          {"costSpent", c.cost_spent},
          {"nowMs", c.now_ms.value_or(-1)}};
}

// Whether the context's reading agrees with the oracle (the properties above); `where` for the
// report. Returns whether the oracle says the text reads.
bool check_context(std::string_view text, const recourse::Result<recourse::Context>& r,
                   const std::string& where) {
  const Seen s = see(text);
  bool valid = s.object && !s.repeated;
  std::string broken;
  if (valid)
    for (const Range& range : kIntegers)
      if (out_of_range(s.top, range)) {
        valid = false;
        broken = range.key;
      }
  if (!valid) {
    // Other keys may be wrong too (a string where a bool goes): the reader refuses either way.
    FUZZ_CHECK(!r.ok() && !r.diagnostics().empty(), where);
    if (s.object && s.repeated)
      FUZZ_CHECK(
          r.diagnostics().front().message.find("appears more than once") != std::string::npos,
          where);
    if (!broken.empty() && !s.repeated) {
      bool named = false;
      for (const auto& e : r.diagnostics())
        named |= e.message.rfind("context." + broken + " must be an integer in [", 0) == 0;
      FUZZ_CHECK(named, where + "\nrange of " + broken);
    }
    return false;
  }
  if (!r.ok()) {  // a string, bool or enum key of the wrong type or value; never an integer key
    for (const auto& e : r.diagnostics())
      for (const Range& range : kIntegers)
        FUZZ_CHECK(e.message.rfind("context." + std::string(range.key) + " ", 0) != 0,
                   where + "\n" + e.message);
    return false;
  }
  const auto read = integers(*r);
  for (const Range& range : kIntegers) {
    const auto it = s.top.find(range.key);
    if (it == s.top.end() || it->is_null()) continue;
    FUZZ_CHECK(read.at(range.key) == it->get<std::int64_t>(), where + "\nkey " + range.key);
  }
  const std::string written = recourse::to_json(*r);
  const recourse::Result<recourse::Context> again = recourse::read_context(written);
  FUZZ_CHECK(again.ok() && recourse::to_json(*again) == written, where + "\nwritten: " + written);
  return true;
}

// The input's lines as LineReader gives them, from a memory file, with a line limit of
// `max_line` and a total of `max_total` bytes.
void check_lines(std::string_view text, std::size_t max_line, std::size_t max_total) {
  const int fd = memfd_create("fuzz_context", 0);
  FUZZ_CHECK(fd >= 0, "memfd_create");
  for (std::size_t at = 0; at < text.size();) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    FUZZ_CHECK(n > 0, "write");
    at += static_cast<std::size_t>(n);
  }
  recourse::cli::LineReader reader(max_line, max_total);
  const bool opened = reader.open("/proc/self/fd/" + std::to_string(fd));
  ::close(fd);
  const std::string where = "input: " + std::string(text.substr(0, 2000)) +
                            "\nmax_line: " + std::to_string(max_line) +
                            ", max_total: " + std::to_string(max_total);
  if (text.size() > max_total) {  // a file is refused before its first line
    FUZZ_CHECK(!opened, where);
    return;
  }
  FUZZ_CHECK(opened, where + "\n" + reader.error());
  std::vector<std::string_view> expected;  // the lines: split at '\n', none after a final one
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    expected.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  std::string line;
  for (const std::string_view want : expected) {
    const auto got = reader.next(line);
    if (want.size() > max_line) {
      FUZZ_CHECK(got == recourse::cli::LineReader::Result::TooLong && line.empty(), where);
    } else {
      FUZZ_CHECK(got == recourse::cli::LineReader::Result::Line && line == want,
                 where + "\nwanted: " + std::string(want) + "\ngot: " + line);
    }
  }
  FUZZ_CHECK(reader.next(line) == recourse::cli::LineReader::Result::End, where);
}

// Each line through the trace-line parser, against the oracle.
void check_trace_line(std::string_view text) {
  const std::string where = "line: " + std::string(text.substr(0, 2000));
  // The parser reports bad lines on stderr; the fuzzer's own reports stay visible.
  std::ostringstream sink;
  std::streambuf* const saved = std::cerr.rdbuf(sink.rdbuf());
  const auto line = recourse::cli::parse_trace_line(std::string(text), "fuzz", fuzz::examples());
  std::cerr.rdbuf(saved);
  const Seen s = see(text);
  if (s.object && s.top_repeated) FUZZ_CHECK(!line, where);  // which tool, which envelope?
  // The envelope or raw form goes to its reader as written (a value that is not JSON is an
  // unreadable envelope, decided as such): the rest of the line must be one object. Members are
  // located by the parser's own walk.
  const auto members = recourse::cli::raw_members(text);
  const auto* given_envelope = recourse::cli::find_member(members, "envelope");
  if (!given_envelope) given_envelope = recourse::cli::find_member(members, "raw");
  std::string rest(text);
  if (given_envelope)
    rest.replace(given_envelope->begin, given_envelope->end - given_envelope->begin, "{}");
  if (line) FUZZ_CHECK(s.object || see(rest).object, where);
  if (!s.object || s.top_repeated || !s.top.contains("context")) return;
  // The context as the line gives it.
  const auto* raw = recourse::cli::find_member(members, "context");
  FUZZ_CHECK(raw != nullptr, where);
  const std::string_view given = text.substr(raw->begin, raw->end - raw->begin);
  const Seen c = see(given);
  bool bad = c.repeated;
  for (const Range& range : kIntegers) bad |= c.object && out_of_range(c.top, range);
  if (bad) FUZZ_CHECK(!line, where + "\ncontext: " + std::string(given));
  if (!line || !c.object) return;
  const auto read = integers(line->context);
  for (const Range& range : kIntegers) {
    const auto it = c.top.find(range.key);
    if (it == c.top.end() || it->is_null()) continue;
    FUZZ_CHECK(read.at(range.key) == it->get<std::int64_t>(), where + "\nkey " + range.key);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (mode % 3) {
    case 0: {
      const recourse::Result<recourse::Context> r = recourse::read_context(text);
      check_context(text, r, "context: " + std::string(text.substr(0, 2000)));
      break;
    }
    case 1: {
      // Small limits, so that lines past them (and inputs past the total) are common.
      const std::size_t max_line = 1 + (mode >> 2) % 64;
      check_lines(text, max_line, (mode & 0x80) ? text.size() + 1 : max_line * 4);
      break;
    }
    default: {
      std::size_t at = 0;
      while (at <= text.size()) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        check_trace_line(text.substr(at, end - at));
        at = end + 1;
      }
    }
  }
  return 0;
}
