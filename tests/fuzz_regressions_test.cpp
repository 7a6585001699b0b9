// Regression tests for what the fuzz targets found (fuzz/README.md). Each crash input is also
// kept as fuzz/corpus/<target>/regression-*, which ctest replays through its target.
#include "support.hpp"

namespace {

bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const std::size_t n = b < 0x80         ? 1
                          : (b >> 5) == 6  ? 2
                          : (b >> 4) == 14 ? 3
                          : (b >> 3) == 30 ? 4
                                           : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n;
  }
  return true;
}

}  // namespace

// fuzz_differential: `arguments = []` bound a reference to values[0] of an empty list (undefined
// behaviour, reported by UBSan) before the checker looked at the key. Reproducer:
// fuzz/corpus/fuzz_grammar/regression-empty-arguments-list.
TEST_CASE("fuzz: an empty arguments list is an empty list", "[fuzz]") {
  const auto p = test::policy(R"(policy "t" {
    tool { arguments = []  idempotent = true }
    rule fix when code == VALIDATION and field in arguments -> repair
    rule other when code == VALIDATION and not field in arguments -> escalate
    default -> stop })");
  const auto e = test::envelope(R"({"code": "VALIDATION", "field": "amount"})");
  const auto c = test::context(R"({"tool": "t", "sideEffect": "none"})");
  CHECK(p.decide(e, c).rule == "other");
  CHECK(recourse::interpret(p, e, c).rule == "other");
  // The context's own list still wins.
  const auto with_args =
      test::context(R"({"tool": "t", "sideEffect": "none", "arguments": ["amount"]})");
  CHECK(p.decide(e, with_args).rule == "fix");
  // Every other setting still takes exactly one value.
  for (const char* text : {"policy \"t\" { limits { attempts = [] } default -> stop }",
                           "policy \"t\" { tool { cost = [] } default -> stop }",
                           "policy \"t\" { breaker { failures = [] } default -> stop }",
                           "policy \"t\" { throttle { max_tokens = [] } default -> stop }"}) {
    const auto ds = test::diagnostics(text);
    INFO(text);
    REQUIRE(!ds.empty());
    CHECK(ds.front().code == "E037");
  }
}

// fuzz_adapters: from_jsonrpc kept a message that was not UTF-8, so the envelope's to_json did
// not read back to the same envelope (JSON carries only UTF-8). Every adapter now gives UTF-8
// strings, as read_envelope does.
TEST_CASE("fuzz: adapters give UTF-8 strings only", "[fuzz]") {
  const std::string bad =
      "Interna\x06\xb2\xad\xa8\x9a\x9b\xd3\xdf\xd3"
      "1 A\xc0\xaf"
      "B";
  const auto checks = [](const recourse::Result<recourse::Adapted>& r) {
    REQUIRE(r.ok());
    const auto& e = r->envelope;
    for (const auto* s : {&e.code, &e.message, &e.field, &e.suggestion, &e.trace_id})
      if (*s) CHECK(valid_utf8(**s));
    const auto back = recourse::read_envelope(recourse::to_json(e));
    REQUIRE(back.ok());
    CHECK((*back).message == e.message);
    CHECK((*back).code == e.code);
  };
  const auto rpc = recourse::from_jsonrpc(-32603, bad, "");
  checks(rpc);
  REQUIRE(rpc->envelope.message);
  CHECK(rpc->envelope.message->find("Interna") == 0);
  CHECK(rpc->envelope.message->find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD
  checks(recourse::from_grpc("UNAVAILABLE", bad, {}));
  checks(recourse::from_transport_error(bad));
  checks(recourse::from_http(503, {{"X-Request-Id", bad}}, bad, std::nullopt));
}
