// The documentation stays true:
//  - docs/language.md: every ```recourse block compiles without errors, every
//    ```recourse-error EXXX block fails to compile with EXXX among its error diagnostics, and
//    every line of a ```recourse-decisions block is the decision the ```recourse block before it
//    gives;
//  - docs/schema: every file parses as JSON; the decision schema matches what `recourse decide`
//    prints for every failed call of rules/traces/*.jsonl (and the library's no-policy and
//    unreadable-envelope decisions); the context schema accepts every context of those traces;
//    each schema accepts its own examples.
// Schemas are checked by the small validator below (type, enum, const, required, properties,
// additionalProperties, items, minItems, minimum, maximum, minLength, maxLength, pattern, allOf,
// anyOf, not, if/then/else, local $ref); it is no general JSON Schema implementation.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "envelope/steering.hpp"
#include "model/fields.hpp"
#include "model/settings.hpp"
#include "recourse/recourse.hpp"
#include "support.hpp"

namespace {

using json = nlohmann::json;

struct DocBlock {
  std::size_t line = 0;  // 1-based line of the opening fence
  std::string info;      // the fence's info string, e.g. "recourse-error E012"
  std::string expected;  // for recourse-error: the code; empty otherwise
  bool decisions = false;
  std::size_t policy = 0;  // for recourse-decisions: index of the recourse block before it
  std::string text;
};

using test::read_file;
using test::trim;

// Splits the markdown into fenced blocks whose info string starts with "recourse". Any such
// fence that is not `recourse`, `recourse-error EXXX` or `recourse-decisions` (right after a
// `recourse` block), or is never closed, fails the test, so a typo in a tag cannot silently drop
// an example.
std::vector<DocBlock> recourse_blocks(const std::string& markdown) {
  static const std::regex error_tag(R"(recourse-error (E[0-9]{3}))");
  std::vector<DocBlock> blocks;
  std::istringstream in(markdown);
  std::string line;
  std::size_t number = 0;
  bool in_fence = false;
  bool capture = false;
  DocBlock current;
  while (std::getline(in, line)) {
    ++number;
    const std::string t = trim(line);
    if (!in_fence) {
      if (t.rfind("```", 0) != 0) continue;
      in_fence = true;
      const std::string info = trim(t.substr(3));
      capture = info.rfind("recourse", 0) == 0;
      if (!capture) continue;
      current = DocBlock{};
      current.line = number;
      current.info = info;
      std::smatch m;
      if (std::regex_match(info, m, error_tag)) {
        current.expected = m[1];
      } else if (info == "recourse-decisions") {
        current.decisions = true;
        INFO("docs/language.md:" << number << ": recourse-decisions must follow a recourse block");
        REQUIRE(!blocks.empty());
        REQUIRE(blocks.back().info == "recourse");
        current.policy = blocks.size() - 1;
      } else {
        INFO("docs/language.md:" << number << ": unknown fence tag '" << info << "'");
        REQUIRE(info == "recourse");
      }
      continue;
    }
    if (t == "```") {
      in_fence = false;
      if (capture) blocks.push_back(current);
      capture = false;
      continue;
    }
    if (capture) current.text += line + "\n";
  }
  INFO("docs/language.md ends inside a fenced block");
  REQUIRE_FALSE(in_fence);
  return blocks;
}

std::string describe(const std::vector<recourse::Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) out += recourse::to_text(d);
  return out.empty() ? "(no diagnostics)\n" : out;
}

std::vector<DocBlock> language_blocks() {
  return recourse_blocks(read_file(std::string(RECOURSE_SOURCE_DIR) + "/docs/language.md"));
}

// "" when `actual` has everything `expected` says: objects key by key (an expected null: the key
// is absent or null), arrays element by element (each expected element matches some actual
// element), anything else by equality. Otherwise where and how they differ.
std::string difference(const json& expected, const json& actual, const std::string& at) {
  if (expected.is_object()) {
    if (!actual.is_object()) return at + ": expected an object, got " + actual.dump();
    for (const auto& [key, value] : expected.items()) {
      const std::string where = at + "." + key;
      if (!actual.contains(key)) {
        if (value.is_null()) continue;
        return where + ": missing, expected " + value.dump();
      }
      const std::string m = difference(value, actual.at(key), where);
      if (!m.empty()) return m;
    }
    return {};
  }
  if (expected.is_array()) {
    if (!actual.is_array()) return at + ": expected an array, got " + actual.dump();
    for (const auto& e : expected) {
      bool found = false;
      for (const auto& a : actual) found = found || difference(e, a, at).empty();
      if (!found) return at + ": no element matches " + e.dump() + " in " + actual.dump();
    }
    return {};
  }
  if (expected != actual) return at + ": expected " + expected.dump() + ", got " + actual.dump();
  return {};
}

// ---- a small JSON Schema check ----------------------------------------------------------------

class Validator {
 public:
  explicit Validator(json root) : root_(std::move(root)) {}

  std::vector<std::string> errors(const json& value) const {
    std::vector<std::string> out;
    check(value, root_, "$", out);
    return out;
  }

 private:
  static bool has_type(const json& v, const std::string& type) {
    if (type == "integer") return v.is_number_integer();
    if (type == "number") return v.is_number();
    if (type == "string") return v.is_string();
    if (type == "boolean") return v.is_boolean();
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    if (type == "null") return v.is_null();
    FAIL("schema uses unknown type " << type);
    return false;
  }

  static std::size_t utf8_length(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  }

  const json& resolve(const json& schema) const {
    const std::string ref = schema.at("$ref").get<std::string>();
    INFO("only local $ref #/... is supported, got " << ref);
    REQUIRE(ref.rfind("#/", 0) == 0);
    return root_.at(json::json_pointer(ref.substr(1)));
  }

  bool passes(const json& v, const json& s) const {
    std::vector<std::string> scratch;
    check(v, s, "$", scratch);
    return scratch.empty();
  }

  void check(const json& v, const json& s, const std::string& at,
             std::vector<std::string>& out) const {
    auto fail = [&](const std::string& why) {
      out.push_back(at + ": " + why + " (" + v.dump() + ")");
    };
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail("no value is allowed here");
      return;
    }
    if (s.contains("$ref")) check(v, resolve(s), at, out);
    if (s.contains("type")) {
      const json& t = s["type"];
      bool ok = false;
      if (t.is_array()) {
        for (const auto& one : t) ok = ok || has_type(v, one.get<std::string>());
      } else {
        ok = has_type(v, t.get<std::string>());
      }
      if (!ok) return fail("not of type " + t.dump());
    }
    if (s.contains("enum")) {
      bool ok = false;
      for (const auto& e : s["enum"]) ok = ok || e == v;
      if (!ok) fail("not one of " + s["enum"].dump());
    }
    if (s.contains("const") && s["const"] != v) fail("not " + s["const"].dump());
    if (v.is_number()) {
      if (s.contains("minimum") && v.get<double>() < s["minimum"].get<double>())
        fail("below the minimum " + s["minimum"].dump());
      if (s.contains("maximum") && v.get<double>() > s["maximum"].get<double>())
        fail("above the maximum " + s["maximum"].dump());
    }
    if (v.is_string()) {
      const auto& str = v.get_ref<const std::string&>();
      if (s.contains("minLength") && utf8_length(str) < s["minLength"].get<std::size_t>())
        fail("shorter than " + s["minLength"].dump());
      if (s.contains("maxLength") && utf8_length(str) > s["maxLength"].get<std::size_t>())
        fail("longer than " + s["maxLength"].dump());
      if (s.contains("pattern") &&
          !std::regex_search(str, std::regex(s["pattern"].get<std::string>())))
        fail("does not match " + s["pattern"].dump());
    }
    if (v.is_object()) {
      for (const auto& key : s.value("required", json::array()))
        if (!v.contains(key.get<std::string>())) fail("lacks the required key " + key.dump());
      const json properties = s.value("properties", json::object());
      for (const auto& [key, value] : v.items()) {
        if (properties.contains(key))
          check(value, properties[key], at + "." + key, out);
        else if (s.contains("additionalProperties"))
          check(value, s["additionalProperties"], at + "." + key, out);
      }
    }
    if (v.is_array() && s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>())
      fail("fewer than " + s["minItems"].dump() + " items");
    if (v.is_array() && s.contains("items"))
      for (std::size_t i = 0; i < v.size(); ++i)
        check(v[i], s["items"], at + "[" + std::to_string(i) + "]", out);
    for (const auto& sub : s.value("allOf", json::array())) check(v, sub, at, out);
    if (s.contains("anyOf")) {
      bool ok = false;
      for (const auto& sub : s["anyOf"]) ok = ok || passes(v, sub);
      if (!ok) fail("matches none of anyOf");
    }
    if (s.contains("not") && passes(v, s["not"])) fail("matches " + s["not"].dump());
    if (s.contains("if")) {
      if (passes(v, s["if"])) {
        if (s.contains("then")) check(v, s["then"], at, out);
      } else if (s.contains("else")) {
        check(v, s["else"], at, out);
      }
    }
  }

  json root_;
};

std::string schema_path(const std::string& name) {
  return std::string(RECOURSE_SOURCE_DIR) + "/docs/schema/" + name;
}

Validator schema(const std::string& name) {
  return Validator(json::parse(read_file(schema_path(name))));
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// [begin, end) of the value of top-level member `key` of the JSON object in `line`, so the
// envelope reaches `recourse decide` byte for byte, as `recourse replay` reads it.
std::optional<std::pair<std::size_t, std::size_t>> raw_member(const std::string& line,
                                                              const std::string& key) {
  auto string_end = [&](std::size_t i) {  // i at an opening quote; returns past the closing one
    for (++i; i < line.size() && line[i] != '"'; ++i)
      if (line[i] == '\\') ++i;
    return i + 1;
  };
  auto skip_space = [&](std::size_t i) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    return i;
  };
  int depth = 0;
  for (std::size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (c == '"') {
      const std::size_t end = string_end(i);
      const std::size_t colon = skip_space(end);
      if (depth == 1 && colon < line.size() && line[colon] == ':' &&
          line.compare(i + 1, end - i - 2, key) == 0 && end - i - 2 == key.size()) {
        const std::size_t begin = skip_space(colon + 1);
        int d = 0;
        std::size_t j = begin;
        while (j < line.size()) {
          const char k = line[j];
          if (k == '"') {
            j = string_end(j);
            if (d == 0) break;
            continue;
          }
          if (k == '{' || k == '[') ++d;
          if (k == '}' || k == ']') {
            if (d == 0) break;
            if (--d == 0) {
              ++j;
              break;
            }
          }
          if (k == ',' && d == 0) break;
          ++j;
        }
        return std::make_pair(begin, j);
      }
      i = end;
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    ++i;
  }
  return std::nullopt;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("recourse-docs-test-" + std::to_string(getpid()) + "-" + name))
      .string();
}

}  // namespace

TEST_CASE("every policy example in docs/language.md compiles as tagged", "[docs]") {
  const auto blocks = language_blocks();
  REQUIRE(blocks.size() >= 5);

  std::size_t ok_blocks = 0, error_blocks = 0, tests = 0;
  for (const auto& block : blocks) {
    if (block.decisions) continue;
    const std::string where = "docs/language.md:" + std::to_string(block.line);
    const recourse::Result<recourse::Bundle> r = recourse::compile({{where, block.text}});
    INFO(where << " (```" << block.info << ")\n"
               << block.text << "diagnostics:\n"
               << describe(r.diagnostics()));
    if (block.expected.empty()) {
      ++ok_blocks;
      REQUIRE(r.ok());
      CHECK_FALSE(recourse::has_errors(r.diagnostics()));
      for (const auto& policy : r->policies())
        for (const auto& t : recourse::run_tests(policy)) {
          ++tests;
          INFO("test \"" << t.name << "\": expected " << t.expected << ", got " << t.actual);
          CHECK(t.passed);
        }
    } else {
      ++error_blocks;
      CHECK_FALSE(r.ok());
      bool found = false;
      for (const auto& d : r.diagnostics())
        if (d.code == block.expected && d.severity == recourse::Severity::Error) found = true;
      CHECK(found);
    }
  }
  // Both kinds must be present, so a change to one tag cannot make half the test vacuous.
  CHECK(ok_blocks > 0);
  CHECK(error_blocks > 0);
  CHECK(tests >= 3);  // the test blocks of section 16 run too
}

TEST_CASE("the table dump in docs/language.md is the compiler's", "[docs]") {
  // The ```text block after "`recourse compile --dump search.recourse`" is the dump of the
  // ```recourse block between them, compiled as search.recourse.
  const std::string doc = read_file(std::string(RECOURSE_SOURCE_DIR) + "/docs/language.md");
  const auto at = doc.find("`recourse compile --dump search.recourse`");
  REQUIRE(at != std::string::npos);
  auto block = [&](const std::string& fence, std::size_t from) {
    const auto open = doc.find(fence, from);
    REQUIRE(open != std::string::npos);
    const auto start = open + fence.size();
    return std::make_pair(doc.substr(start, doc.find("```", start) - start), start);
  };
  const auto [policy, after] = block("```recourse\n", at);
  const auto [dump, unused] = block("```text\n", after);
  const auto r = recourse::compile({{"search.recourse", policy}});
  REQUIRE(r.ok());
  CHECK(r->policies().front().dump() == dump);
}

TEST_CASE("every documented decision in docs/language.md is the engine's", "[docs]") {
  const auto blocks = language_blocks();
  std::size_t decision_blocks = 0, decisions = 0;
  for (const auto& block : blocks) {
    if (!block.decisions) continue;
    ++decision_blocks;
    const DocBlock& policy = blocks[block.policy];
    const std::string where = "docs/language.md:" + std::to_string(policy.line);
    const recourse::Result<recourse::Bundle> r = recourse::compile({{where, policy.text}});
    INFO(where << "\n" << describe(r.diagnostics()));
    REQUIRE(r.ok());
    const Validator decision_schema = schema("decision.schema.json");
    std::istringstream in(block.text);
    std::string line;
    for (std::size_t number = block.line + 1; std::getline(in, line); ++number) {
      const std::string t = trim(line);
      if (t.empty() || t[0] == '#') continue;
      ++decisions;
      INFO("docs/language.md:" << number << ": " << t);
      const json c = json::parse(t);
      REQUIRE(c.is_object());
      REQUIRE(c.contains("envelope"));
      REQUIRE(c.contains("context"));
      REQUIRE(c.contains("decision"));
      const recourse::Result<recourse::Envelope> e = recourse::read_envelope(c["envelope"].dump());
      REQUIRE(e.ok());
      const recourse::Result<recourse::Context> x = recourse::read_context(c["context"].dump());
      REQUIRE(x.ok());
      const recourse::Decision d = r->decide((*e), (*x));
      const json got = json::parse(recourse::to_json(d, (*e)));
      INFO("decision: " << got.dump());
      CHECK(difference(c["decision"], got, "decision") == "");
      // The reference interpreter agrees, and the decision fits its schema.
      const recourse::Policy* p = r->find((*x).tool);
      REQUIRE(p != nullptr);
      CHECK(json::parse(recourse::to_json(recourse::interpret(*p, (*e), (*x)), (*e))) == got);
      CHECK(joined(decision_schema.errors(got)) == "");
    }
  }
  CHECK(decision_blocks >= 2);
  CHECK(decisions >= 10);
}

TEST_CASE("every file in docs/schema is JSON and accepts its own examples", "[docs]") {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(schema_path(""))) {
    if (!entry.is_regular_file()) continue;
    ++files;
    const std::string name = entry.path().filename().string();
    INFO("docs/schema/" << name);
    CHECK(entry.path().extension() == ".json");
    json s;
    REQUIRE_NOTHROW(s = json::parse(read_file(entry.path().string())));
    REQUIRE(s.is_object());
    CHECK(s.contains("$schema"));
    CHECK(s.value("type", "") == "object");
    CHECK(s.contains("properties"));
    const Validator v(s);
    const json examples = s.value("examples", json::array());
    CHECK(examples.size() >= 1);  // every schema shows at least one document it accepts
    for (const auto& example : examples) {
      INFO("example " << example.dump());
      CHECK(joined(v.errors(example)) == "");
    }
  }
  CHECK(files >= 4);
}

TEST_CASE("the decision schema's routes are the engine's", "[docs]") {
  const json s = json::parse(read_file(schema_path("decision.schema.json")));
  json routes = json::array();
  for (int r = 0; r <= static_cast<int>(recourse::Route::Stop); ++r)
    routes.push_back(recourse::to_string(static_cast<recourse::Route>(r)));
  CHECK(s["properties"]["route"]["enum"] == routes);
}

// A settings row as docs/language.md section 3 writes it, from the settings table.
std::string settings_row(const recourse::detail::SettingDef& def) {
  using K = recourse::detail::ValueKind;
  const std::string range = recourse::detail::range_text(def, 10);
  std::string value;
  switch (def.kind) {
    case K::Flag:
      value = "`true`/`false`";
      break;
    case K::Count:
      value = "count";
      break;
    case K::Duration:
      value = "duration";
      break;
    case K::Number:
      value = "number";
      break;
    case K::Tool:
      value = "`\"tool\"`";
      break;
    case K::Tools:
      value = "`\"tool\"` or `[\"tool\", ...]`";
      break;
    case K::Names:
      value = "list of names or strings";
      break;
    case K::Codes:
      value = "list of codes";
      break;
    case K::Word:
      value = std::string(def.words);
      break;
  }
  if (!range.empty()) value += ", " + range;
  return "| `" + std::string(def.key) + "` | " + value + " | " + std::string(def.default_text) +
         " | " + std::string(def.meaning) + " |";
}

TEST_CASE("each setting's documented default is the engine's", "[docs]") {
  // The dump of a policy whose block gives the setting its documented default, against the
  // dump of one that leaves it out: the same text when the default is the engine's.
  auto dump = [](const std::string& block) {
    const auto r = recourse::compile(
        {{"d.recourse", "policy \"d\" {\n  " + block + "\n  default -> stop\n}\n"}});
    INFO(block);
    REQUIRE(r.ok());
    return r->policies().front().dump();
  };
  std::size_t checked = 0;
  for (const auto& def : recourse::detail::setting_table()) {
    const std::string text(def.default_text);
    // Literal defaults only: `3`, `60s`, `full`; not none, off or a sentence.
    if (!def.show || text.size() < 3 || text.front() != '`' || text.back() != '`' ||
        text.find(' ') != std::string::npos)
      continue;
    const std::string value = text.substr(1, text.size() - 2);
    const std::string block(def.block), key(def.key);
    INFO(block << "." << key << " = " << value);
    if (block == "backoff")
      CHECK(dump("backoff exponential " + key + " " + value) == dump("backoff exponential"));
    else
      CHECK(dump(block + " { " + key + " = " + value + " }") == dump(block + " { }"));
    ++checked;
  }
  CHECK(checked >= 17);  // the literal defaults of the table as it is today
}

TEST_CASE("the diagnostics table lists every code the sources can emit", "[docs]") {
  const std::string reference = read_file(test::source_dir() + "/docs/language.md");
  const std::regex row(R"(\n\| ([EWCNSR][0-9]{3}) \|)");
  std::set<std::string> documented;
  for (std::sregex_iterator it(reference.begin(), reference.end(), row), end; it != end; ++it)
    documented.insert((*it)[1]);
  const std::regex literal(R"re("([EWCNSR][0-9]{3})")re");
  std::set<std::string> emitted;
  for (const char* dir : {"engine", "grammar", "cli"})
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(test::source_dir() + "/" + dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".cpp" && ext != ".hpp") continue;
      const std::string text = read_file(entry.path().string());
      for (std::sregex_iterator it(text.begin(), text.end(), literal), end; it != end; ++it)
        emitted.insert((*it)[1]);
    }
  CHECK(emitted.size() > 40);
  for (const std::string& code : emitted) {
    INFO(code << " is emitted by the sources");
    CHECK(documented.count(code) == 1);
  }
  for (const std::string& code : documented) {
    INFO(code << " is in the diagnostics table");
    CHECK(emitted.count(code) == 1);
  }
}

TEST_CASE("the reference's attribute table lists every attribute with its JSON key", "[docs]") {
  namespace detail = recourse::detail;
  const std::string reference = read_file(test::source_dir() + "/docs/language.md");
  const std::size_t at = reference.find("\n## 4. Attributes\n");
  REQUIRE(at != std::string::npos);
  const std::string section = reference.substr(at, reference.find("\n## 5.", at) - at);
  auto row = [&](std::string_view name) {
    const std::size_t begin = section.find("\n| `" + std::string(name) + "` |");
    return begin == std::string::npos
               ? std::string()
               : section.substr(begin + 1, section.find('\n', begin + 1) - begin - 1);
  };
  for (const detail::AttrInfo& a : detail::kAttributes) {
    INFO(a.name);
    if (!a.internal) CHECK(!row(a.name).empty());
  }
  auto keyed = [&](const char* source) {
    return [&, source](const detail::Field& f, auto) {
      if (!f.attr) return;
      INFO(f.key);
      CHECK(row(detail::info(*f.attr).name).find("`" + std::string(f.key) + "`") !=
            std::string::npos);
      CHECK(row(detail::info(*f.attr).name).find(source) != std::string::npos);
    };
  };
  detail::for_each_envelope_field(keyed("(envelope)"));
  detail::for_each_context_field(keyed("(context)"));
}

TEST_CASE("the reference's steering categories are the detector's", "[docs]") {
  // docs/language.md section 4, "Steering": one row per category, in the table's order, with
  // the name the warnings use and the meaning kSteeringCategories gives.
  const std::string reference = read_file(test::source_dir() + "/docs/language.md");
  const std::size_t at = reference.find("\n| Category | What it finds |\n");
  REQUIRE(at != std::string::npos);
  std::istringstream section(reference.substr(at + 1));
  std::vector<std::string> documented, expected;
  std::string line;
  std::getline(section, line);  // the header
  std::getline(section, line);  // the rule
  while (std::getline(section, line) && line.rfind("| `", 0) == 0) documented.push_back(line);
  for (const auto& c : recourse::detail::kSteeringCategories)
    expected.push_back("| `" + std::string(c.name) + "` | " + std::string(c.meaning) + " |");
  CHECK(documented == expected);
}

TEST_CASE("the reference's settings tables are the settings table", "[docs]") {
  const std::string reference = read_file(test::source_dir() + "/docs/language.md");
  for (const char* block : {"tool", "limits", "backoff", "breaker", "throttle"}) {
    INFO("### " << block);
    const std::size_t at = reference.find(std::string("\n### ") + block + "\n");
    REQUIRE(at != std::string::npos);
    const std::size_t end = reference.find("\n#", at + 1);
    std::istringstream section(reference.substr(at, end - at));
    std::vector<std::string> documented, expected;
    for (std::string line; std::getline(section, line);)
      if (line.rfind("| `", 0) == 0) documented.push_back(line);
    for (const auto* def : recourse::detail::settings_of(block))
      expected.push_back(settings_row(*def));
    CHECK(documented == expected);
  }
}

TEST_CASE("the context schema describes every field the context reader reads", "[docs]") {
  namespace detail = recourse::detail;
  const json properties = json::parse(read_file(schema_path("context.schema.json")))["properties"];
  const std::string reference = read_file(test::source_dir() + "/docs/language.md");
  // 1000000000 as the reference's context table writes it: 1e9.
  const auto power_of_ten = [](std::int64_t v) {
    int exponent = 0;
    for (; v >= 10 && v % 10 == 0; v /= 10) ++exponent;
    return v == 1 ? "1e" + std::to_string(exponent) : std::to_string(v);
  };
  std::set<std::string> keys = {"nextAttemptIdempotencyKey"};  // read, never written
  detail::for_each_context_field([&](const detail::Field& f, auto field) {
    const std::string key(f.key);
    keys.insert(key);
    INFO("context." << key);
    REQUIRE(properties.contains(key));
    const json& p = properties[key];
    using T = detail::unwrapped_t<std::decay_t<decltype(recourse::Context{}.*field)>>;
    if constexpr (std::is_same_v<T, std::int64_t>) {
      CHECK(p["type"] == json::array({"integer", "null"}));
      CHECK(p["minimum"] == f.min);
      CHECK(p["maximum"] == f.max);
      const std::string row = "| `" + key + "` | integer | " + std::to_string(f.min) + " .. " +
                              power_of_ten(f.max) + " |";
      CHECK(reference.find(row) != std::string::npos);
    } else if constexpr (std::is_same_v<T, bool>) {
      CHECK(p["type"] == json::array({"boolean", "null"}));
    } else if constexpr (std::is_enum_v<T>) {
      json names = json::array();
      for (const auto name : detail::Names<T>::kValues) names.push_back(name);
      names.push_back(nullptr);
      CHECK(p["enum"] == names);
    } else if constexpr (std::is_same_v<T, std::string>) {
      CHECK(p["type"].dump().find("string") != std::string::npos);
    } else {
      CHECK(p["type"] == json::array({"array", "null"}));
    }
  });
  for (const auto& [key, unused] : properties.items()) CHECK(keys.count(key) == 1);
}

TEST_CASE("decisions printed for rules/traces validate against docs/schema", "[docs]") {
  const Validator decision_schema = schema("decision.schema.json");
  const Validator context_schema = schema("context.schema.json");
  const std::string examples = test::source_dir() + "/rules/examples";
  const std::string envelope_file = temp_path("envelope.json");
  const std::string context_file = temp_path("context.json");
  std::size_t checked = 0;
  for (const char* name : {"sample.jsonl", "workflow.jsonl"}) {
    const std::string path = test::source_dir() + "/rules/traces/" + name;
    std::istringstream in(read_file(path));
    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number) {
      if (trim(line).empty()) continue;
      INFO(path << ":" << number);
      // As `recourse replay` reads a line: the envelope as written, the line's tool and now
      // filling the context.
      const auto span = raw_member(line, "envelope");
      std::string rest = line;
      if (span) rest.replace(span->first, span->second - span->first, "{}");
      const json entry = json::parse(rest);
      json context = entry.value("context", json::object());
      if (entry.contains("tool") && !context.contains("tool")) context["tool"] = entry["tool"];
      if (entry.contains("now") && !context.contains("nowMs")) context["nowMs"] = entry["now"];
      CHECK(joined(context_schema.errors(context)) == "");
      if (!span) continue;  // a success line
      std::ofstream(envelope_file, std::ios::binary)
          << line.substr(span->first, span->second - span->first);
      std::ofstream(context_file, std::ios::binary) << context.dump();
      const test::Run run =
          test::run(test::cli() + " decide --policy " + examples + " --envelope " + envelope_file +
                    " --context " + context_file + " 2>&1");
      INFO(run.out);
      REQUIRE(run.status == 0);
      json decision;
      REQUIRE_NOTHROW(decision = json::parse(run.out));
      CHECK(joined(decision_schema.errors(decision)) == "");
      ++checked;
    }
  }
  std::remove(envelope_file.c_str());
  std::remove(context_file.c_str());
  CHECK(checked >= 80);

  // The decisions made without a policy or without a readable envelope fit too.
  const auto r = recourse::compile({{"one.recourse", "policy \"one\" { default -> stop }"}});
  REQUIRE(r.ok());
  const recourse::Envelope none;
  const recourse::Context context = test::context(R"({"tool": "other", "sideEffect": "none"})");
  CHECK(joined(decision_schema.errors(
            json::parse(recourse::to_json(r->decide(none, context), none)))) == "");
  CHECK(joined(decision_schema.errors(
            json::parse(recourse::to_json(r->unreadable(context), none)))) == "");
}

TEST_CASE("docs: embedding.md states sizeof(Decision), a plain value", "[docs]") {
  const std::string text = read_file(test::source_dir() + "/docs/embedding.md");
  const std::regex stated(R"(`sizeof\(Decision\)` is (\d+)\s+bytes)");
  std::smatch m;
  REQUIRE(std::regex_search(text, m, stated));
  CHECK(std::stoul(m[1]) == sizeof(recourse::Decision));
  const std::string header = read_file(test::source_dir() + "/engine/include/recourse/policy.hpp");
  CHECK_THAT(header, Catch::Contains("sizeof(Decision) is " + std::string(m[1]) + " bytes"));
}
