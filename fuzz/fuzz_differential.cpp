// fuzz_differential: the input bytes build a random valid policy (every item and setting the
// language has, conditions nested with and/or/not/parentheses over every attribute and test
// form) and then random inputs around its constants; the compiled table, the reference
// interpreter and the model of docs/language.md (tests/oracle.hpp) must agree on every one, and
// every decision must be valid (fuzz.hpp).
//
// The generator writes only valid policies, so a policy that does not compile is a failure too,
// except for what random rules may break: the invariants (E101-E103: compiled again with them
// waived), `hit unique` overlaps (E106: `hit first` instead), a missing default the rules do not
// make up for (E016: `default -> stop` added), and the size limits (E093, E094: skipped).
#include "fuzz.hpp"

namespace {

using recourse::detail::AttrInfo;
using T = recourse::detail::Type;

// The attributes a rule may name: the catalogue's (model/model.hpp), so a new attribute is
// fuzzed as soon as it exists; `field in arguments` is a test form of `field` (below).
const std::vector<AttrInfo>& attrs() {
  static const std::vector<AttrInfo> all = [] {
    std::vector<AttrInfo> out;
    for (const AttrInfo& a : recourse::detail::kAttributes)
      if (!a.internal &&
          a.name != recourse::detail::info(recourse::detail::Attr::FieldInArguments).name)
        out.push_back(a);
    return out;
  }();
  return all;
}

const std::vector<std::string> kBuiltin = {
    "TRANSIENT", "RATE_LIMITED",   "TIMEOUT",          "VALIDATION", "PERMISSION", "NOT_FOUND",
    "CONFLICT",  "QUOTA_EXCEEDED", "CONTEXT_OVERFLOW", "UNKNOWN",    "PENDING"};

struct Duration {
  std::string text;
  std::int64_t ms;
};

class Gen {
 public:
  explicit Gen(fuzz::Source& src) : s_(src) {}

  std::string policy() {
    std::string out = s_.coin() ? "version 1\n" : "";
    out += "policy \"fz.tool\" {\n";
    std::vector<std::string> items;
    if (s_.below(3)) items.push_back(tool());
    items.push_back(limits());
    if (s_.below(4) == 0) items.push_back(breaker());
    if (s_.below(4) == 0) items.push_back(throttle());
    if (s_.coin()) items.push_back(backoff());
    if (s_.below(3) == 0) {
      std::string c = "  codes {";
      for (std::size_t i = 0, n = 1 + s_.below(3); i < n; ++i) {
        codes_.push_back("FZ_" + std::to_string(i));
        c += (i && s_.coin() ? ", " : " ") + codes_.back();
      }
      items.push_back(c + " }");
    }
    for (std::size_t i = 0, n = s_.below(3); i < n; ++i) items.push_back(map(i));
    if (s_.below(3) == 0) {
      static const char* hits[] = {"first", "safest", "unique"};
      items.push_back(std::string("  hit ") + hits[s_.below(3)]);
    }
    const std::size_t rules = s_.below(8);
    for (std::size_t i = 0; i < rules; ++i) {
      std::string r = "  rule r" + std::to_string(i);
      if (s_.below(6)) r += " when " + cond(3);
      items.push_back(r + " -> " + route());
    }
    // A default is optional when the rules provably decide every input (else E016).
    if (rules == 0 || s_.below(4)) items.push_back("  default -> " + route());
    // Items may come in any order; rules keep theirs.
    if (s_.coin()) std::swap(items.front(), items[s_.below(items.size())]);
    for (const auto& i : items) out += i + "\n";
    return out + "}\n";
  }

 private:
  Duration duration(bool positive) {
    static const std::vector<Duration> common = {
        {"1ms", 1},      {"50ms", 50},    {"250ms", 250}, {"1s", 1000},  {"1.5s", 1500},
        {"2s", 2000},    {"5s", 5000},    {"30s", 30000}, {"1m", 60000}, {"2m", 120000},
        {"1h", 3600000}, {"0.5m", 30000}, {"20s", 20000}, {"100ms", 100}};
    if (s_.below(4)) return s_.pick(common);
    const std::int64_t ms = static_cast<std::int64_t>(s_.below(100000)) + (positive ? 1 : 0);
    return {std::to_string(ms) + "ms", ms};
  }
  std::string count(std::int64_t lo, std::int64_t hi) {
    return std::to_string(
        lo + static_cast<std::int64_t>(s_.below(static_cast<std::size_t>(hi - lo + 1))));
  }
  std::string str() {
    static const std::vector<std::string> pool = {"amount", "currency", "x",  "fz.tool",
                                                  "",       "query",    "a b"};
    return "\"" + (s_.below(4) ? s_.pick(pool) : args_.empty() ? "q" : s_.pick(args_)) + "\"";
  }
  std::string code() {
    if (!codes_.empty() && s_.below(3) == 0) return s_.pick(codes_);
    return s_.pick(kBuiltin);
  }

  std::string constant(const AttrInfo& a) {
    switch (a.type) {
      case T::Code:
        return code();
      case T::Bool:
        return s_.coin() ? "true" : "false";
      case T::Enum:
        return std::string(a.values[s_.below(a.value_count)]);
      case T::String:
        return s_.below(5) ? str() : std::string(s_.coin() ? "amount" : "fz_tool");
      case T::Duration: {
        if (s_.below(6) == 0) return "-" + duration(true).text;
        return duration(false).text;
      }
      case T::Count:
        return s_.below(5) ? count(-2, 12) : count(0, 2000000);
    }
    return "x";
  }

  std::string test() {
    const AttrInfo& a = attrs()[s_.below(attrs().size())];
    const std::string name(a.name);
    std::vector<int> forms = {0, 1};                                      // compare ==/!=, in list
    if (a.type == T::Duration || a.type == T::Count) forms.push_back(2);  // ordering
    if (a.type == T::Bool || a.type == T::String) forms.push_back(3);     // bare
    if (a.untrusted) forms.push_back(4);                                  // is absent/present
    if (name == "field") forms.push_back(5);                              // in arguments
    switch (forms[s_.below(forms.size())]) {
      case 0:
        return name + (s_.coin() ? " == " : " != ") + constant(a);
      case 1: {
        std::string l = name + " in [";
        for (std::size_t i = 0, n = 1 + s_.below(3); i < n; ++i) l += (i ? ", " : "") + constant(a);
        return l + "]";
      }
      case 2: {
        static const char* ops[] = {" < ", " <= ", " > ", " >= "};
        return name + ops[s_.below(4)] + constant(a);
      }
      case 3:
        return name;
      case 4:
        return name + (s_.coin() ? " is absent" : " is present");
      default:
        return "field in arguments";
    }
  }

  std::string unary(int depth) {
    const std::size_t r = s_.below(8);
    if (depth > 0 && r == 0) return "not " + unary(depth - 1);
    if (depth > 0 && r == 1) return "(" + cond(depth - 1) + ")";
    return test();
  }

  std::string cond(int depth) {
    std::string c = unary(depth);
    for (std::size_t i = 0, n = s_.below(3); i < n; ++i)
      c += (s_.coin() ? " and " : " or ") + unary(depth);
    return c;
  }

  std::string reason() { return s_.coin() ? " \"why\"" : ""; }

  std::string route() {
    static const char* routes[] = {"retry",   "repair",   "authorize", "replace",
                                   "degrade", "escalate", "stop"};
    // Retries and repairs more often: they are what the guards act on.
    const std::size_t r = s_.below(10);
    const std::string kind = r < 3 ? "retry" : r < 5 ? "repair" : routes[s_.below(7)];
    if (kind == "replace") return "replace \"other.tool\"" + reason();
    if (kind == "degrade")
      return "degrade" + (s_.coin() ? std::string(" \"cache\"") + reason() : reason());
    return kind + reason();
  }

  std::string tool() {
    std::string t = "  tool {";
    if (s_.coin()) t += std::string(" idempotent = ") + (s_.coin() ? "true" : "false");
    if (s_.coin()) {
      static const std::vector<std::string> names = {"amount", "currency", "query", "x", "path"};
      t += " arguments = [";
      for (std::size_t i = 0, n = s_.below(4); i < n; ++i) {
        args_.push_back(s_.pick(names));
        t += (i ? ", " : "") + (s_.coin() ? args_.back() : "\"" + args_.back() + "\"");
      }
      t += "]";
    }
    if (s_.coin()) t += std::string(" idempotency_keys = ") + (s_.coin() ? "true" : "false");
    if (s_.below(3) == 0) t += " cost = " + count(0, 5);
    if (s_.below(3) == 0) t += " verify = \"verify.tool\"";
    if (s_.below(3) == 0) {
      t += " fallback = \"fallback.tool\"";
      fallback_ = true;
    }
    return t + " }";
  }

  std::string final_route() {
    std::vector<std::string> r = {"stop", "escalate", "degrade", "authorize"};
    if (fallback_) r.push_back("replace");
    return s_.pick(r);
  }

  std::string limits() {
    std::string l = "  limits {";
    if (s_.coin()) l += " attempts = " + count(1, 10);
    if (s_.coin()) l += " repairs = " + count(0, 10);
    if (s_.below(3) == 0) l += " repeats = " + count(1, 10);
    if (s_.below(3) == 0) l += " cost = " + (s_.coin() ? count(1, 20) : count(1, 1000000000));
    if (s_.coin()) l += " retry_after_max = " + duration(true).text;
    if (s_.coin()) l += " deadline = " + duration(true).text;
    if (s_.below(3) == 0) l += " try_timeout = " + duration(true).text;
    if (s_.below(3) == 0) l += " min_delay = " + duration(false).text;
    if (s_.below(3) == 0) l += " on_exhausted = " + final_route();
    if (s_.below(3) == 0) l += " on_open = " + final_route();
    return l + " }";
  }

  std::string breaker() {
    std::string b = "  breaker {";
    if (s_.coin()) b += " failures = " + count(1, 10);
    if (s_.coin()) b += " ratio = " + std::string(s_.coin() ? "0.5" : "1");
    std::int64_t window = 20;
    if (s_.coin()) {
      window = 1 + static_cast<std::int64_t>(s_.below(64));
      b += " window = " + std::to_string(window);
      b += " min_calls = " + count(1, window);
    } else if (s_.coin()) {
      b += " min_calls = " + count(1, window);
    }
    if (s_.coin() || b == "  breaker {") b += " cooldown = " + duration(true).text;
    if (s_.below(3) == 0) b += " probe_lease = " + duration(true).text;
    if (s_.below(3) == 0) b += " counts = [" + code() + ", " + code() + "]";
    return b + " }";
  }

  std::string throttle() {
    static const std::vector<std::string> v = {"0.1", "0.5", "1", "10", "1000"};
    std::string t = "  throttle {";
    if (s_.coin()) t += " max_tokens = " + s_.pick(v);
    if (s_.coin() || t == "  throttle {") t += " token_ratio = " + s_.pick(v);
    return t + " }";
  }

  std::string backoff() {
    static const char* kinds[] = {"constant", "linear", "exponential"};
    static const char* jitters[] = {"none", "full", "equal", "decorrelated"};
    const std::string kind = kinds[s_.below(3)];
    std::string b = "  backoff " + kind;
    std::int64_t base = 250;
    if (s_.coin()) {
      const Duration d = duration(true);
      base = d.ms;
      b += " base " + d.text;
    }
    if (kind == "exponential" && s_.coin())
      b += std::string(" factor ") + (s_.coin() ? "2" : s_.coin() ? "1.5" : "100");
    if (s_.coin()) {
      Duration d = duration(true);
      if (d.ms < base)
        d = {std::to_string(base + static_cast<std::int64_t>(s_.below(50000))) + "ms", 0};
      b += " max " + d.text;
    }
    if (s_.coin()) b += std::string(" jitter ") + jitters[s_.below(4)];
    return b;
  }

  std::string map(std::size_t i) {
    // Distinct keys per line number, so no (protocol, key) is mapped twice.
    static const char* grpc[] = {"UNAVAILABLE", "ABORTED", "INTERNAL", "NOT_FOUND"};
    switch (s_.below(4)) {
      case 0:
        return "  map http " + std::to_string(400 + i) + " -> " + code();
      case 1:
        return "  map http \"fz_error_" + std::to_string(i) + "\" -> " + code();
      case 2:
        return std::string("  map grpc ") + grpc[i % 4] + " -> " + code();
      default:
        return std::string("  map ") + (s_.coin() ? "jsonrpc" : "mcp") + " -3200" +
               std::to_string(i) + " -> " + code();
    }
  }

  fuzz::Source& s_;
  std::vector<std::string> codes_;
  std::vector<std::string> args_;
  bool fallback_ = false;
};

std::string waivers_for(const std::vector<recourse::Diagnostic>& ds, bool& only_invariants,
                        bool& too_big, bool& hit_first) {
  std::string w;
  hit_first = false;
  only_invariants = true;
  too_big = false;
  for (const auto& d : ds) {
    if (d.severity != recourse::Severity::Error) continue;
    if (d.code == "E101" && w.find("retry_after_commit") == std::string::npos)
      w += "  waive retry_after_commit \"fuzz\"\n";
    else if (d.code == "E102" && w.find("unsafe_resend") == std::string::npos)
      w += "  waive unsafe_resend \"fuzz\"\n";
    else if (d.code == "E103" && w.find("context_overflow_retry") == std::string::npos)
      w += "  waive context_overflow_retry \"fuzz\"\n";
    else if (d.code == "E093" || d.code == "E094")
      too_big = true;
    else if (d.code == "E106")  // `hit unique` with overlapping rules: try them in file order
      hit_first = true;
    else if (d.code == "E016" && w.find("default") == std::string::npos)  // rules leave a gap
      w += "  default -> stop\n";
    else if (d.code != "E101" && d.code != "E102" && d.code != "E103" && d.code != "E106" &&
             d.code != "E016")
      only_invariants = false;
  }
  return w;
}

std::string all_text(const std::vector<recourse::Diagnostic>& ds) {
  std::string s;
  for (const auto& d : ds) s += recourse::to_text(d);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Source src(data, size);
  // Both table strategies: the bitset matcher, and the direct-indexed array up to its default
  // size (filling a large array is slow under the sanitizers, so now and then only).
  recourse::CompileOptions options;
  const std::size_t strategy = src.below(4);
  options.direct_table_max_entries = strategy < 2    ? 0
                                     : strategy == 2 ? 4096
                                                     : options.direct_table_max_entries;
  Gen gen(src);
  std::string text = gen.policy();
  auto r = recourse::compile({{"fuzz.recourse", text}}, options);
  // At most two more tries: invariants waived, `hit unique` made `hit first`, a default added.
  for (int attempt = 0; !r.ok(); ++attempt) {
    bool only_invariants = false, too_big = false, hit_first = false;
    const std::string waive = waivers_for(r.diagnostics(), only_invariants, too_big, hit_first);
    if (too_big) return 0;
    if (!only_invariants || attempt == 3)
      fuzz::fail("a generated policy does not compile", text + "\n" + all_text(r.diagnostics()));
    text.insert(text.rfind('}'), waive);
    if (hit_first) text.replace(text.find("hit unique"), 10, "hit first");
    r = recourse::compile({{"fuzz.recourse", text}}, options);
  }
  FUZZ_CHECK(r->policies().size() == 1, text);
  const recourse::Policy& policy = r->policies().front();
  const auto compiled = fuzz::compiled_of(policy);
  const fuzz::Pools pools = fuzz::pools_of(compiled->spec);
  for (int i = 0; i < 64; ++i) {
    recourse::Envelope e;
    recourse::Context c;
    fuzz::draw_input(src, pools, compiled->spec, e, c);
    fuzz::same_decision(policy, e, c, text);
    fuzz::valid_decision(r->decide(e, c), r->find(c.tool), e, c, text);
  }
  return 0;
}
