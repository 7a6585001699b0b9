// fuzz_adapters: raw HTTP, transport, gRPC, MCP and JSON-RPC failures through the adapters
// (adapters.hpp), then decided by the bundled policies.
//
// The first byte picks the entry point; the rest is the raw form:
//   0      from_raw, the protocol named inside the JSON ("protocol": "http", ...)
//   1..4   from_raw for http, grpc, mcp, jsonrpc (the bytes are the JSON raw form)
//   5      from_http: a status line "429\n", header lines "Name: value\n", a blank line, the body
//          (with "Content-Type: text/event-stream" the body is read as server-sent events)
//   6      from_transport_error: the bytes are the error text
//   7      from_grpc: "STATUS\nmessage\n" then metadata lines "name: value\n"
//   8      from_jsonrpc: "CODE\nmessage\n" then the data JSON
//   9      from_mcp: the bytes are the reply JSON
//   10     a gRPC raw form without a status whose grpc-status-details-bin trailer is the bytes,
//          base64 encoded here (padded when the second byte has bit 16): the bounded protobuf
//          reader of google.rpc.Status and its AIP-193 details, whose code is then the status
// Odd second bytes add per-tool mappings (to codes other than TRANSIENT) and tight reader limits.
//
// Properties: never crash, throw or leak; unknown or garbled input never reads as TRANSIENT (a
// TRANSIENT code comes only from a documented row: HTTP 500/502/503/529, a 413 with
// Retry-After, an overloaded_error body, an OAuth server_error or temporarily_unavailable, a
// connection-level transport error, gRPC UNAVAILABLE, or an envelope the server sent that says
// TRANSIENT, an event stream's error event among the bodies); PENDING comes only from a 2xx, an
// envelope or OAuth's authorization_pending; an MCP tool's text never gives a retryable code or
// retryable true; a garbled row is UNKNOWN; the envelope
// keeps the reader's caps (no empty code, field or traceId; strings within their limits; no
// negative retryAfterMs) and round-trips through to_json/read_envelope; the model text stays
// within its limit and valid UTF-8; every decision on the envelope is valid.
#include "fuzz.hpp"

#include "../tests/base64.hpp"

namespace {

std::vector<std::string_view> lines(std::string_view s, std::string_view& rest, std::size_t max) {
  std::vector<std::string_view> out;
  while (out.size() < max) {
    const std::size_t nl = s.find('\n');
    if (nl == std::string_view::npos) {
      out.push_back(s);
      s = {};
      break;
    }
    out.push_back(s.substr(0, nl));
    s.remove_prefix(nl + 1);
    if (out.back().empty()) break;  // a blank line ends the header block
  }
  rest = s;
  return out;
}

recourse::Headers headers_of(const std::vector<std::string_view>& ls, std::size_t from) {
  recourse::Headers h;
  for (std::size_t i = from; i < ls.size(); ++i) {
    if (ls[i].empty()) break;
    const std::size_t colon = ls[i].find(':');
    if (colon == std::string_view::npos)
      h.emplace_back(std::string(ls[i]), "");
    else
      h.emplace_back(std::string(ls[i].substr(0, colon)), std::string(ls[i].substr(colon + 1)));
  }
  return h;
}

std::int64_t to_int(std::string_view s) {
  std::int64_t v = 0;
  bool neg = false;
  std::size_t i = 0;
  if (!s.empty() && s[0] == '-') neg = true, i = 1;
  for (; i < s.size() && i < 18 && s[i] >= '0' && s[i] <= '9'; ++i) v = v * 10 + (s[i] - '0');
  return neg ? -v : v;
}

bool starts(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// The rows that may say TRANSIENT (adapters.hpp), by the mapping label the adapter reports.
bool transient_row(std::string_view mapping) {
  if (starts(mapping, "mcp transport: ")) mapping.remove_prefix(15);
  return mapping == "http 500" || mapping == "http 502" || mapping == "http 503" ||
         mapping == "http 529" ||
         (starts(mapping, "http ") && ends(mapping, " body: overloaded")) ||
         mapping == "http 413 with Retry-After (temporary)" ||
         (starts(mapping, "http 4") && (ends(mapping, " oauth server_error") ||
                                        ends(mapping, " oauth temporarily_unavailable"))) ||
         mapping == "transport connection error" || mapping == "grpc UNAVAILABLE";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int mode = data[0] % 11;
  const bool extras = data[1] & 1;
  const std::string_view raw(reinterpret_cast<const char*>(data) + 2, size - 2);
  recourse::AdapterOptions options;
  if (extras) {
    options.mappings = {{recourse::Protocol::Http, "409", "CONFLICT"},
                        {recourse::Protocol::Http, "overloaded_error", "UNKNOWN"},
                        {recourse::Protocol::Grpc, "UNAVAILABLE", "RATE_LIMITED"},
                        {recourse::Protocol::JsonRpc, "-32001", "TIMEOUT"},
                        {recourse::Protocol::Mcp, "-32002", "FZ_CUSTOM"}};
    if (data[1] & 2) {
      options.limits.max_depth = 4;
      options.limits.max_code_bytes = 8;
      options.limits.max_field_bytes = 8;
      options.limits.max_text_bytes = 16;
      options.limits.max_bytes = 256;
      options.max_raw_bytes = 512;
      options.status_details = {64, 3, 2, 8};
    }
    options.trusted_server = data[1] & 4;
  }
  const std::optional<std::int64_t> now =
      (data[1] & 8) ? std::optional<std::int64_t>(1'700'000'000'000) : std::nullopt;

  std::optional<recourse::Result<recourse::Adapted>> r;
  std::string_view rest;
  switch (mode) {
    case 0:
      r = recourse::from_raw(std::nullopt, raw, now, options);
      break;
    case 1:
    case 2:
    case 3:
    case 4: {
      static const recourse::Protocol ps[] = {recourse::Protocol::Http, recourse::Protocol::Grpc,
                                              recourse::Protocol::Mcp, recourse::Protocol::JsonRpc};
      r = recourse::from_raw(ps[mode - 1], raw, now, options);
      break;
    }
    case 5: {
      const auto ls = lines(raw, rest, 64);
      const int status = static_cast<int>(to_int(ls.empty() ? std::string_view() : ls[0]) % 100000);
      r = recourse::from_http(status, headers_of(ls, 1), rest, now, options);
      break;
    }
    case 6:
      r = recourse::from_transport_error(raw, options);
      break;
    case 7: {
      const auto ls = lines(raw, rest, 64);
      r = recourse::from_grpc(ls.empty() ? "" : ls[0], ls.size() > 1 ? ls[1] : "",
                              headers_of(ls, 2), options);
      break;
    }
    case 8: {
      const auto ls = lines(raw, rest, 2);
      r = recourse::from_jsonrpc(to_int(ls.empty() ? std::string_view() : ls[0]),
                                 ls.size() > 1 ? ls[1] : "", rest, options);
      break;
    }
    case 9:
      r = recourse::from_mcp(raw, options);
      break;
    default:
      r = recourse::from_raw(recourse::Protocol::Grpc,
                             R"({"metadata":{"grpc-status-details-bin":")" +
                                 test::base64(raw, data[1] & 16) + R"("}})",
                             now, options);
      break;
  }

  if (!r->ok()) {
    const std::string where = "mode " + std::to_string(mode) +
                              " input: " + std::string(raw.substr(0, 2000)) +
                              "\nerror: " + r->message();
    FUZZ_CHECK(!r->message().empty() && r->diagnostics()[0].code == "N001", where);
    FUZZ_CHECK(mode <= 4 || mode >= 9, where);  // the typed entry points are always ok
    return 0;
  }
  const recourse::Adapted& adapted = **r;
  const recourse::Envelope& e = adapted.envelope;
  std::string where = "mode " + std::to_string(mode) +
                      " input: " + std::string(raw.substr(0, 2000)) +
                      "\nmapping: " + adapted.mapping + "\nenvelope: " + recourse::to_json(e);
  // Unknown or garbled never reads as TRANSIENT.
  if (e.code == "TRANSIENT")
    FUZZ_CHECK(transient_row(adapted.mapping) || ends(adapted.mapping, " envelope"), where);
  // A pending result is a 2xx's (docs/adapters.md, "Pending"), or the server's own envelope.
  if (e.code == "PENDING")
    FUZZ_CHECK(starts(adapted.mapping, "http 2") || ends(adapted.mapping, " envelope") ||
                   ends(adapted.mapping, " oauth authorization_pending"),
               where);
  // A tool's text (a JSON error object in an isError result) only lowers the risk: never a code
  // a policy retries by itself, never retryable true.
  if (starts(adapted.mapping, "mcp isError text"))
    FUZZ_CHECK(e.code != "TRANSIENT" && e.code != "RATE_LIMITED" && e.code != "TIMEOUT" &&
                   e.code != "PENDING" && e.retryable != std::optional<bool>(true),
               where);
  if (adapted.mapping.find("garbled") != std::string::npos) FUZZ_CHECK(e.code == "UNKNOWN", where);
  // A trailer alone gives a gRPC status row (its code read from the Status, or garbled), or a
  // per-tool override of that row.
  if (mode == 10)
    FUZZ_CHECK(starts(adapted.mapping, "grpc ") || starts(adapted.mapping, "override grpc "),
               where);
  // The reader's caps.
  const recourse::ReaderLimits& l = options.limits;
  FUZZ_CHECK(!e.code || (!e.code->empty() && e.code->size() <= l.max_code_bytes), where);
  FUZZ_CHECK(!e.field || (!e.field->empty() && e.field->size() <= l.max_field_bytes), where);
  FUZZ_CHECK(!e.trace_id || (!e.trace_id->empty() && e.trace_id->size() <= l.max_field_bytes),
             where);
  FUZZ_CHECK(!e.message || e.message->size() <= l.max_text_bytes, where);
  FUZZ_CHECK(!e.suggestion || e.suggestion->size() <= l.max_text_bytes, where);
  FUZZ_CHECK(!e.retry_after_ms || *e.retry_after_ms >= 0, where);
  if (!options.trusted_server) FUZZ_CHECK(!adapted.idempotent, where);
  // Text a model may read.
  const recourse::ModelText m = recourse::model_text(e);
  FUZZ_CHECK(m.text.size() <= 400 && fuzz::valid_utf8(m.text), where + "\nmodel text: " + m.text);
  // The envelope as JSON reads back to itself (strings that are valid UTF-8 only: JSON cannot
  // carry the others).
  const bool utf8 = [&] {
    for (const auto* s : {&e.code, &e.message, &e.field, &e.suggestion, &e.trace_id})
      if (*s && !fuzz::valid_utf8(**s)) return false;
    return true;
  }();
  FUZZ_CHECK(utf8, where);
  recourse::ReaderLimits whole = l;  // the caps stay; the JSON's escapes may outgrow max_bytes
  whole.max_bytes = std::size_t{1} << 20;
  const auto back = recourse::read_envelope(recourse::to_json(e), whole);
  FUZZ_CHECK(back.ok() && (*back).code == e.code && (*back).message == e.message &&
                 (*back).retryable == e.retryable && (*back).field == e.field &&
                 (*back).suggestion == e.suggestion && (*back).retry_after_ms == e.retry_after_ms &&
                 (*back).trace_id == e.trace_id,
             where);
  // Decided by every bundled policy.
  const recourse::Bundle& bundle = fuzz::examples();
  for (const auto& policy : bundle.policies()) {
    recourse::Context c = fuzz::contexts()[data[1] % fuzz::contexts().size()];
    c.tool = std::string(policy.name());
    fuzz::valid_decision(bundle.decide(e, c), bundle.find(c.tool), e, c, where);
    fuzz::same_decision(policy, e, c, where);
  }
  return 0;
}
