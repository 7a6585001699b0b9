// fuzz_grammar: arbitrary bytes as policy text.
//
// Properties: parse, check and compile never crash, hang or leak (the sanitizers and libFuzzer's
// -timeout and leak checker watch); every diagnostic has a stable code and a position inside the
// text; compiling is deterministic (the same text gives the same hashes); whatever compiles is
// formatted by recourse::format (`recourse fmt`), compiles again to the same hashes, and
// formatting the result changes nothing; and the compiled table and the reference interpreter
// decide alike on inputs drawn around the policy's own constants, every decision valid
// (fuzz.hpp).
#include <cctype>

#include "fuzz.hpp"
#include "lines.hpp"

namespace {

// The canonical text `recourse fmt` writes (recourse/tooling.hpp). fuzz_grammar checks that it
// compiles to the same tables (same hashes) and that formatting it again changes nothing.
std::string formatted(const std::string& text) {
  auto out = recourse::format(text, "fuzz.recourse");
  if (!out.ok()) {
    std::string why;
    for (const auto& d : out.diagnostics()) why += recourse::to_text(d);
    fuzz::fail("a policy that compiles does not format", text + "\n" + why);
  }
  return *out;
}

void check_diagnostics(const std::string& text, const std::vector<recourse::Diagnostic>& ds) {
  // Lines end where the parser says they do (lines.hpp: "\n", "\r\n" or a lone "\r").
  const std::uint32_t lines = recourse::grammar::Lines(text).count();
  for (const auto& d : ds) {
    const bool code_ok = d.code.size() == 4 &&
                         std::string("EWC").find(d.code[0]) != std::string::npos &&
                         std::isdigit(static_cast<unsigned char>(d.code[1])) &&
                         std::isdigit(static_cast<unsigned char>(d.code[2])) &&
                         std::isdigit(static_cast<unsigned char>(d.code[3]));
    FUZZ_CHECK(code_ok, recourse::to_text(d));
    FUZZ_CHECK(!d.message.empty(), recourse::to_text(d));
    FUZZ_CHECK(d.line <= lines, recourse::to_text(d));
    FUZZ_CHECK(d.offset <= text.size(), recourse::to_text(d));
    (void)recourse::to_text(d);
  }
  (void)recourse::to_json(ds);
}

std::vector<std::string> hashes(const recourse::Result<recourse::Bundle>& r) {
  std::vector<std::string> out;
  if (r.ok())
    for (const auto& p : r->policies()) out.emplace_back(p.hash());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Mostly the bitset matcher (filling a large direct-indexed table is slow under the
  // sanitizers); the default options for one input in four.
  recourse::CompileOptions options;
  if (recourse::detail::fnv1a(text) & 3) options.direct_table_max_entries = 1024;
  const recourse::Result<recourse::Bundle> r =
      recourse::compile({{"fuzz.recourse", text}}, options);
  check_diagnostics(text, r.diagnostics());
  FUZZ_CHECK(r.ok() == !recourse::has_errors(r.diagnostics()), text);
  if (!r.ok()) return 0;

  // Deterministic: the same text, the same tables.
  FUZZ_CHECK(hashes(recourse::compile({{"again.recourse", text}}, options)) == hashes(r), text);
  const std::string canonical = formatted(text);
  const auto again = recourse::compile({{"formatted.recourse", canonical}}, options);
  FUZZ_CHECK(again.ok() && hashes(again) == hashes(r), text + "\n--- formatted ---\n" + canonical);
  FUZZ_CHECK(formatted(canonical) == canonical, canonical);

  // Inputs come from a generator seeded by the text, not from the text's bytes.
  std::uint64_t seed = recourse::detail::fnv1a(text);
  for (const recourse::Policy& policy : r->policies()) {
    FUZZ_CHECK(!policy.dump().empty(), text);
    const auto compiled = fuzz::compiled_of(policy);
    const fuzz::Pools pools = fuzz::pools_of(compiled->spec);
    const std::uint8_t seed_bytes[8] = {
        static_cast<std::uint8_t>(seed),       static_cast<std::uint8_t>(seed >> 8),
        static_cast<std::uint8_t>(seed >> 16), static_cast<std::uint8_t>(seed >> 24),
        static_cast<std::uint8_t>(seed >> 32), static_cast<std::uint8_t>(seed >> 40),
        static_cast<std::uint8_t>(seed >> 48), static_cast<std::uint8_t>(seed >> 56)};
    fuzz::Source gen(seed_bytes, sizeof seed_bytes);
    for (int i = 0; i < 24; ++i) {
      recourse::Envelope e;
      recourse::Context c;
      fuzz::draw_input(gen, pools, compiled->spec, e, c);
      fuzz::same_decision(policy, e, c, text);
      fuzz::valid_decision(policy.decide(e, c), &policy, e, c, text);
      if (i == 0) {
        const auto x = recourse::explain(policy, e, c);
        FUZZ_CHECK(x.decision.route == policy.decide(e, c).route, text);
      }
    }
    seed = recourse::detail::splitmix64(seed);
  }
  return 0;
}
