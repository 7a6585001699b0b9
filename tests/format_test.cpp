// recourse fmt (recourse/format.hpp): over every bundled policy, the policies of tests/cases and
// the policy examples of docs/*.md, formatting is idempotent, compiles to the same policies (the
// same hashes, or the same diagnostics) and keeps every comment; golden layouts of tricky
// conditions, strings and comment placement; and the `recourse fmt` command.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support.hpp"

namespace {

namespace fs = std::filesystem;

using test::read_file;

// A policy text and where it comes from.
struct Sample {
  std::string name;
  std::string text;
  std::string info;  // a block's fence info string (`recourse-error E001`, ...); "" for a file
};

// Every *.recourse file under rules/ and tests/cases/, and every ```recourse block (including
// ```recourse-error ones and the tutorial's `recourse file=PATH [line=N]` ones) of README.md and
// docs/*.md.
std::vector<Sample> samples() {
  std::vector<Sample> out;
  std::vector<std::string> files;
  for (const char* dir : {"/rules", "/tests/cases"})
    for (const auto& e : fs::recursive_directory_iterator(test::source_dir() + dir))
      if (e.is_regular_file() && e.path().extension() == ".recourse")
        files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) out.push_back({f, read_file(f), ""});
  std::vector<std::string> docs = {test::source_dir() + "/README.md"};
  for (const auto& e : fs::directory_iterator(test::source_dir() + "/docs"))
    if (e.path().extension() == ".md") docs.push_back(e.path().string());
  std::sort(docs.begin(), docs.end());
  for (const auto& d : docs) {
    std::istringstream in(read_file(d));
    std::string line, text, info;
    std::size_t number = 0, start = 0;
    bool inside = false;
    while (std::getline(in, line)) {
      ++number;
      const bool policy_fence =
          line.rfind("```recourse", 0) == 0 && line.rfind("```recourse-decisions", 0) != 0;
      if (!inside && policy_fence) {
        inside = true;
        start = number;
        text.clear();
        info = test::trim(line.substr(3));
      } else if (inside && line.rfind("```", 0) == 0) {
        inside = false;
        out.push_back({d + ":" + std::to_string(start), text, info});
      } else if (inside) {
        text += line + "\n";
      }
    }
  }
  return out;
}

// The comments of policy text, found without the formatter: '#' outside a "string" to the end
// of the line, trailing whitespace removed.
std::vector<std::string> comments(const std::string& text) {
  std::vector<std::string> out;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"' || c == '\n')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '#') {
      std::size_t end = text.find('\n', i);
      if (end == std::string::npos) end = text.size();
      std::string comment = text.substr(i, end - i);
      comment.erase(comment.find_last_not_of(" \t\r\v\f") + 1);
      out.push_back(comment);
      i = end;
    }
  }
  return out;
}

std::string describe(const std::vector<recourse::Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) out += recourse::to_text(d);
  return out;
}

std::string format_ok(const std::string& text) {
  std::vector<recourse::Diagnostic> diagnostics;
  const auto out = test::format_into(text, diagnostics, "test.recourse");
  INFO(describe(diagnostics));
  REQUIRE(out);
  return *out;
}

// What compiling the text gives: each policy's name and hash, or the diagnostics' codes.
std::vector<std::string> outcome(const std::string& text) {
  const auto r = recourse::compile({{"x.recourse", text}});
  std::vector<std::string> out;
  for (const auto& d : r.diagnostics()) out.push_back(d.code);
  if (r.ok())
    for (const auto& p : r->policies())
      out.push_back(std::string(p.name()) + " " + std::string(p.hash()));
  return out;
}

std::string temp_dir() {
  const fs::path dir =
      fs::temp_directory_path() / ("recourse-fmt-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string cmd(const std::string& args) {
  return test::cli() + " fmt " + args;
}

}  // namespace

TEST_CASE("fmt: idempotent, same policies, every comment kept, on every sample", "[fmt]") {
  const auto all = samples();
  REQUIRE(all.size() > 30);
  std::size_t formatted = 0, comment_count = 0;
  for (const auto& s : all) {
    INFO(s.name);
    std::vector<recourse::Diagnostic> diagnostics;
    const auto once = test::format_into(s.text, diagnostics, s.name);
    if (!once) {  // only a file that does not parse is refused, and with its syntax error
      REQUIRE(diagnostics.size() == 1);
      CHECK((diagnostics[0].code == "E001" || diagnostics[0].code == "E092"));
      const auto codes = outcome(s.text);
      CHECK(std::find(codes.begin(), codes.end(), diagnostics[0].code) != codes.end());
      continue;
    }
    ++formatted;
    INFO("formatted:\n" << *once);
    CHECK(format_ok(*once) == *once);
    CHECK(outcome(*once) == outcome(s.text));
    auto before = comments(s.text), after = comments(*once);
    comment_count += before.size();
    CHECK(after.size() == before.size());
    std::sort(before.begin(), before.end());
    std::sort(after.begin(), after.end());
    CHECK(after == before);
  }
  CHECK(formatted > 30);
  CHECK(comment_count > 50);
}

TEST_CASE("fmt: every policy example of README.md and docs/ is fmt's output", "[fmt][docs]") {
  // A block that does not format alone is marked: a `recourse-error` block of the syntax error
  // format reports (E001, E092), or a tutorial step that replaces one line of a file (`line=N`;
  // tutorial_test formats the file it makes). Every other block is its own formatted text.
  std::size_t checked = 0;
  for (const auto& s : samples()) {
    if (s.info.empty() || s.info.find(" line=") != std::string::npos) continue;
    INFO(s.name << " (" << s.info << ")");
    std::vector<recourse::Diagnostic> diagnostics;
    const auto formatted = test::format_into(s.text, diagnostics, s.name);
    if (!formatted) {
      REQUIRE_FALSE(diagnostics.empty());
      CHECK(s.info == "recourse-error " + diagnostics[0].code);
      continue;
    }
    ++checked;
    CHECK(*formatted == s.text);
  }
  CHECK(checked > 40);
}

TEST_CASE("fmt: conditions get the fewest parentheses that keep their meaning", "[fmt]") {
  auto rule = [](const std::string& condition) {
    const std::string out =
        format_ok("policy \"p\" { rule r when " + condition + " -> stop  default -> stop }");
    const auto begin = out.find(" when ") + 6;
    return out.substr(begin, out.find(" -> ") - begin);
  };
  CHECK(rule("not (code == TIMEOUT or retryable)") == "not (code == TIMEOUT or retryable)");
  CHECK(rule("not (retryable and idempotent)") == "not (retryable and idempotent)");
  CHECK(rule("(code == TIMEOUT or retryable) and idempotent") ==
        "(code == TIMEOUT or retryable) and idempotent");
  CHECK(rule("code == TIMEOUT or (retryable and idempotent)") ==
        "code == TIMEOUT or retryable and idempotent");
  CHECK(rule("((code == TIMEOUT))") == "code == TIMEOUT");
  CHECK(rule("(not (retryable))") == "not retryable");
  CHECK(rule("not not retryable") == "not not retryable");
  CHECK(rule("not (not retryable)") == "not not retryable");
  CHECK(rule("retryable or (idempotent or suggestion)") == "retryable or idempotent or suggestion");
  CHECK(rule("(retryable and idempotent) and suggestion") ==
        "retryable and idempotent and suggestion");
  CHECK(rule("not ((a or b) and not (c and (d or e)))") ==
        "not ((a or b) and not (c and (d or e)))");
  CHECK(rule("not field in arguments") == "not field in arguments");
  CHECK(rule("field is absent and suggestion is present") ==
        "field is absent and suggestion is present");
  CHECK(rule("code in [ TIMEOUT,TRANSIENT ]  and field in [ \"a b\" , c,\"\" ]") ==
        "code in [TIMEOUT, TRANSIENT] and field in [\"a b\", c, \"\"]");
  CHECK(rule("elapsed>=1.50s and attempt!=-1 and retry_after<=250ms") ==
        "elapsed >= 1.50s and attempt != -1 and retry_after <= 250ms");
  // Strings are re-escaped: quotes, backslashes, tabs (a raw tab too) and newlines.
  CHECK(rule(R"(field == "say \"hi\" \\ now\tor\nnever" or suggestion == "raw	tab")") ==
        R"(field == "say \"hi\" \\ now\tor\nnever" or suggestion == "raw\ttab")");
}

TEST_CASE("fmt: canonical layout, comments where they belong", "[fmt]") {
  const std::string messy = R"(# file header


version 1   # the language version
# about p
policy "p" {   # p's header
  default -> stop "why \"not\""   # moved last


  tool{idempotent=true arguments=[a,b]}
  limits { attempts = 3   # three
    # the deadline
    deadline = 2m
  }
  breaker {}
  codes { A B, C }
  backoff   exponential base 100ms
      factor 2
  rule r when not (code == TIMEOUT or retryable) and (field in [ "x" , z ] or suggestion is absent) -> retry
  rule long_one when # why
    code == TRANSIENT
    and attempt < 3 -> escalate "a fairly long reason that pushes this rule past the width"
  assert never [retry] when code == PERMISSION
  assert always [stop, escalate] when code == A
  waive context_overflow_retry "tab	and \\ back"
  map http 409 -> A
  map grpc "ABORTED" -> B
  # end of p
}
policy "q" { default -> stop } # after q
# end of file
)";
  const std::string expected = R"(# file header

version 1  # the language version
# about p
policy "p" {  # p's header
  tool { idempotent = true  arguments = [a, b] }
  limits {
    attempts = 3  # three
    # the deadline
    deadline = 2m
  }
  breaker {}
  codes   { A, B, C }
  backoff exponential base 100ms factor 2
  rule r when not (code == TIMEOUT or retryable) and (field in ["x", z] or suggestion is absent)
      -> retry
  # why
  rule long_one when code == TRANSIENT and attempt < 3
      -> escalate "a fairly long reason that pushes this rule past the width"
  assert never retry when code == PERMISSION
  assert always [stop, escalate] when code == A
  waive context_overflow_retry "tab\tand \\ back"
  map http 409 -> A
  map grpc "ABORTED" -> B
  default -> stop "why \"not\""  # moved last
  # end of p
}

policy "q" {
  default -> stop
}  # after q
# end of file
)";
  CHECK(format_ok(messy) == expected);
  CHECK(format_ok(expected) == expected);
  CHECK(comments(format_ok(messy)) == comments(expected));

  SECTION("a line may end at CR LF or a lone CR; the layout ends lines at LF") {
    for (const std::string line_break : {"\r\n", "\r"}) {
      std::string text = messy;
      for (std::size_t i = text.find('\n'); i != std::string::npos;
           i = text.find('\n', i + line_break.size())) {
        text.replace(i, 1, line_break);
      }
      CHECK(format_ok(text) == expected);
    }
  }
  SECTION("a byte-order mark at the start is read and not written") {
    CHECK(format_ok("\xef\xbb\xbf" + messy) == expected);
  }

  SECTION("blank lines between items are kept, runs of them collapsed") {
    const std::string in =
        "policy \"p\" {\n\n  rule a -> retry\n\n\n  rule b -> stop\n  default -> stop\n\n}\n";
    CHECK(format_ok(in) ==
          "policy \"p\" {\n  rule a -> retry\n\n  rule b -> stop\n  default -> stop\n}\n");
  }
  SECTION("a block with a comment inside, or too long for one line, takes one setting a line") {
    CHECK(format_ok("policy \"p\" { codes { A, # first\n B } default -> stop }") ==
          "policy \"p\" {\n  codes {\n    A,  # first\n    B\n  }\n  default -> stop\n}\n");
    std::string args;
    for (int i = 0; i < 12; ++i) args += (i ? ", argument_" : "argument_") + std::to_string(i);
    CHECK(format_ok("policy \"p\" { tool { arguments = [" + args + "] } default -> stop }") ==
          "policy \"p\" {\n  tool {\n    arguments = [" + args + "]\n  }\n  default -> stop\n}\n");
  }
  SECTION("runs of rules, blocks and settings align, as gofmt aligns") {
    // A blank line, an own-line comment, an item of another family or one on more than one
    // line ends a run; a trailing comment does not. Rule d would pass 100 columns padded to
    // `rule eeee`: it stays as it is and splits its run.
    const std::string in = R"(policy "p" {
  tool { idempotent = true }
  limits { attempts = 3 }  # three
  backoff constant base 1s
  throttle {
    max_tokens = 4  # four
    token_ratio = 0.5

    # alone
    max_tokens = 5
  }
  codes { A }
  rule a when code == A -> stop
  rule long_name when code == TIMEOUT -> retry
  rule b -> retry
  # breaks
  rule cc when code == TRANSIENT -> retry
  rule d when code == A and retryable and attempt < 3 and elapsed < 10s and repairs < 2 -> stop "x"
  rule eeee when code == B -> stop
  rule f when code == A -> stop
  map http 409 -> A
  rule g when code == A -> stop

  rule gg when code == B -> stop
  default -> stop
})";
    const std::string out = R"(policy "p" {
  tool    { idempotent = true }
  limits  { attempts = 3 }  # three
  backoff constant base 1s
  throttle {
    max_tokens  = 4  # four
    token_ratio = 0.5

    # alone
    max_tokens = 5
  }
  codes { A }
  rule a         when code == A -> stop
  rule long_name when code == TIMEOUT -> retry
  rule b         -> retry
  # breaks
  rule cc when code == TRANSIENT -> retry
  rule d when code == A and retryable and attempt < 3 and elapsed < 10s and repairs < 2 -> stop "x"
  rule eeee when code == B -> stop
  rule f    when code == A -> stop
  map http 409 -> A
  rule g when code == A -> stop

  rule gg when code == B -> stop
  default -> stop
}
)";
    CHECK(format_ok(in) == out);
    CHECK(format_ok(out) == out);
  }
  SECTION("empty and comment-only files") {
    CHECK(format_ok("") == "");
    CHECK(format_ok("\n\n  \n") == "");
    CHECK(format_ok("# only\n\n\n# comments   \n") == "# only\n\n# comments\n");
    CHECK(format_ok("version 1") == "version 1\n");
    CHECK(format_ok("policy \"p\" {}") == "policy \"p\" {\n}\n");
  }
}

TEST_CASE("fmt: a file that does not parse is not formatted", "[fmt]") {
  std::vector<recourse::Diagnostic> diagnostics;
  CHECK_FALSE(test::format_into("policy \"p\" {\n  rule and -> stop\n}\n", diagnostics, "bad"));
  REQUIRE(diagnostics.size() == 1);
  CHECK(diagnostics[0].code == "E001");
  CHECK(diagnostics[0].file == "bad");
  CHECK(diagnostics[0].line == 2);
  diagnostics.clear();
  std::string deep = "policy \"p\" { rule r when ";
  for (int i = 0; i < 100; ++i) deep += "not ";
  CHECK_FALSE(test::format_into(deep + "retryable -> stop default -> stop }", diagnostics));
  REQUIRE(diagnostics.size() == 1);
  CHECK(diagnostics[0].code == "E092");
}

TEST_CASE("fmt: the command rewrites in place, checks, filters stdin", "[fmt][cli]") {
  const std::string dir = temp_dir();
  const std::string messy =
      "version 1\npolicy \"p\" {  # header\n  rule   r  when retryable"
      " -> retry\n\n\n  default->stop\n}\n";
  const std::string clean = format_ok(messy);
  REQUIRE(clean != messy);
  const std::string a = dir + "/a.recourse", b = dir + "/b.recourse", bad = dir + "/bad.recourse";

  SECTION("--check lists the files that would change, writes nothing, exits 1") {
    write_file(a, messy);
    write_file(b, clean);
    auto r = test::run(cmd("--check " + a + " " + b));
    CHECK(r.status == 1);
    CHECK(r.out == a + "\n");
    CHECK(read_file(a) == messy);
    r = test::run(cmd("--check " + b));
    CHECK(r.status == 0);
    CHECK(r.out.empty());
    r = test::run(cmd("--check " + dir));  // a directory: every *.recourse file below it
    CHECK(r.status == 1);
    CHECK(r.out == a + "\n");
  }
  SECTION("files are rewritten in place; a second run changes nothing") {
    write_file(a, messy);
    auto r = test::run(cmd(a));
    CHECK(r.status == 0);
    CHECK(r.out == a + "\n");
    CHECK(read_file(a) == clean);
    r = test::run(cmd(a));
    CHECK(r.status == 0);
    CHECK(r.out.empty());
    CHECK(test::run(cmd("--check " + a)).status == 0);
  }
  SECTION("- reads stdin and writes stdout") {
    write_file(a, messy);
    auto r = test::run(cmd("- < " + a));
    CHECK(r.status == 0);
    CHECK(r.out == clean);
    CHECK(read_file(a) == messy);
    CHECK(test::run(cmd("--check - < " + a)).status == 1);
  }
  SECTION("a file that does not parse: diagnostics, exit 1, the file untouched") {
    const std::string broken = "policy \"p\" {\n  rule r when -> stop\n}\n";
    write_file(bad, broken);
    write_file(a, messy);
    auto r = test::run(cmd(bad + " " + a + " 2>&1"));
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::Contains(bad + ":2:15: error[E001]"));
    CHECK(read_file(bad) == broken);
    CHECK(read_file(a) == clean);  // the other files are still formatted
    CHECK(test::run(cmd("- < " + bad + " 2>/dev/null")).status == 1);
    CHECK(test::run(cmd("--check " + bad + " 2>/dev/null")).status == 1);
  }
  SECTION("usage") {
    CHECK(test::run(cmd("2>/dev/null")).status == 2);
    CHECK(test::run(cmd(dir + "/missing.recourse 2>/dev/null")).status == 1);
  }
  fs::remove_all(dir);
}

// A valid policy of exactly `size` bytes whose canonical layout is 12 bytes longer: six
// comments at column 0 inside the policy each gain the 2-space indent; the rest (indented
// comments) stays as it is.
std::string growing_policy(std::size_t size) {
  std::string text = "version 1\npolicy \"big\" {\n  rule r when retryable -> retry\n";
  for (int i = 0; i < 6; ++i) text += "# flush left\n";
  const std::string tail = "  default -> stop\n}\n";
  const std::string line = "  # " + std::string(60, 'x') + "\n";
  while (text.size() + line.size() + tail.size() <= size) text += line;
  const std::size_t pad = size - text.size() - tail.size();  // one shorter comment fills it
  REQUIRE(pad >= 4);
  text += "  #" + std::string(pad - 4, 'y') + "\n" + tail;
  REQUIRE(text.size() == size);
  return text;
}

TEST_CASE("fmt: a file its layout would take past the size limit is refused, untouched",
          "[fmt][cli]") {
  const std::size_t limit = recourse::CompileOptions{}.max_source_bytes;
  const std::string text = growing_policy(limit - 8);  // 1,048,568 bytes
  {
    recourse::CompileOptions roomy;
    roomy.max_source_bytes = 2 * limit;
    std::vector<recourse::Diagnostic> diagnostics;
    const auto wide = test::format_into(text, diagnostics, "big.recourse", roomy);
    INFO(describe(diagnostics));
    REQUIRE(wide);
    CHECK(wide->size() == limit + 4);  // the canonical layout exists, 4 bytes over the limit
  }
  std::vector<recourse::Diagnostic> diagnostics;
  CHECK_FALSE(test::format_into(text, diagnostics, "big.recourse"));
  REQUIRE(diagnostics.size() == 1);
  CHECK(diagnostics[0].code == "E090");
  CHECK(diagnostics[0].file == "big.recourse");
  CHECK(diagnostics[0].message ==
        "formatted, the file would be 1048580 bytes; the limit is 1048576");

  const std::string dir = temp_dir();
  const std::string big = dir + "/big.recourse", small = dir + "/small.recourse";
  const std::string messy =
      "version 1\npolicy \"p\" {  rule   r when retryable -> retry\n"
      " default->stop }\n";
  write_file(big, text);
  write_file(small, messy);
  fs::permissions(small, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const std::string refused =
      big + ":1:1: error[E090]: formatted, the file would be 1048580 bytes; the limit is 1048576\n";
  SECTION("in place: refused with exit 1, the file byte for byte as it was; others formatted") {
    auto r = test::run(cmd(big + " " + small + " 2>&1"));
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::StartsWith(refused));
    CHECK_THAT(r.out, Catch::EndsWith(small + "\n"));
    CHECK(read_file(big) == text);
    CHECK(read_file(small) == format_ok(messy));
    CHECK(fs::status(small).permissions() ==
          (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
    std::size_t files = 0;  // no temporary file left behind
    for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
    CHECK(files == 2);
  }
  SECTION("--check and stdin refuse it too") {
    auto r = test::run(cmd("--check " + big + " 2>&1"));
    CHECK(r.status == 1);
    CHECK(r.out == refused +
                       "  help: the file is left as it is; split it, or raise "
                       "CompileOptions::max_source_bytes\n");
    r = test::run(cmd("- < " + big + " 2>/dev/null"));
    CHECK(r.status == 1);
    CHECK(r.out.empty());
  }
  fs::remove_all(dir);
}

TEST_CASE("fmt: a layout that would compile to another table is refused", "[fmt]") {
  const std::string original =
      "policy \"p\" { limits { attempts = 3 } rule r when code == TRANSIENT -> retry default -> "
      "stop }\n"
      "policy \"q\" { default -> stop }\n";
  std::vector<recourse::Diagnostic> diagnostics;
  // Another layout of the same policies passes.
  CHECK(test::verify_into(original, format_ok(original), diagnostics, "v.recourse"));
  CHECK(diagnostics.empty());
  // Another setting is another table.
  std::string changed = original;
  changed.replace(changed.find("attempts = 3"), 12, "attempts = 4");
  const std::string before(test::policy(original.substr(0, original.find('\n'))).hash());
  const std::string after(test::policy(changed.substr(0, changed.find('\n'))).hash());
  CHECK_FALSE(test::verify_into(original, changed, diagnostics, "v.recourse"));
  REQUIRE(diagnostics.size() == 1);
  CHECK(diagnostics[0].code == "E099");
  CHECK(diagnostics[0].file == "v.recourse");
  CHECK(diagnostics[0].message ==
        "internal error while formatting: the formatted text compiles differently (policy \"p\" " +
            before + " before, policy \"p\" " + after + " after)");
  // A lost policy, and a text that no longer compiles, are refused.
  diagnostics.clear();
  CHECK_FALSE(test::verify_into(original, original.substr(0, original.find("policy \"q\"")),
                                diagnostics, "v.recourse"));
  REQUIRE(diagnostics.size() == 1);
  CHECK_THAT(diagnostics[0].message,
             Catch::EndsWith("(policy \"q\" " +
                             std::string(test::policy("policy \"q\" { default -> stop }").hash()) +
                             " before, nothing after)"));
  diagnostics.clear();
  CHECK_FALSE(test::verify_into(original, changed + "policy \"q\" { default -> stop }\n",
                                diagnostics, "v.recourse"));
  CHECK_THAT(diagnostics.at(0).message,
             Catch::Contains("E020: policy \"q\" is defined twice after"));
  // A file that does not compile may be formatted when the layout fails in the same way.
  diagnostics.clear();
  const std::string broken = "policy \"p\" { rule r when code == NOPE -> retry default -> stop }";
  CHECK(test::verify_into(broken, format_ok(broken), diagnostics, "v.recourse"));
  CHECK(diagnostics.empty());
  // The size limit applies to the formatted text.
  recourse::CompileOptions tight;
  tight.max_source_bytes = original.size();
  CHECK_FALSE(test::verify_into(original, original + "\n", diagnostics, "v.recourse", tight));
  CHECK(diagnostics.at(0).code == "E090");
}

TEST_CASE("fmt: every bundled policy is in the canonical layout", "[fmt]") {
  const std::string root = test::source_dir();
  const auto r = test::run(
      cmd("--check " + root + "/rules " + root + "/examples " + root + "/bench/peer/recourse"));
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out.empty());
}

TEST_CASE("format: explain shows a test as fmt prints it, escapes included", "[format]") {
  const std::string text =
      "policy \"p\" {\n  rule r when suggestion == \"say \\\"hi\\\"\\n\\\\\" -> stop\n"
      "  default -> escalate\n}\n";
  std::vector<recourse::Diagnostic> diagnostics;
  const auto formatted = test::format_into(text, diagnostics);
  REQUIRE(formatted);
  CHECK_THAT(*formatted, Catch::Contains("suggestion == \"say \\\"hi\\\"\\n\\\\\""));
  const recourse::Policy p = test::policy(text);
  const auto x = recourse::explain(p, test::envelope(R"({"code":"TRANSIENT","suggestion":"x"})"),
                                   test::context(R"({"tool":"p","sideEffect":"none"})"));
  REQUIRE_FALSE(x.rules.empty());
  REQUIRE_FALSE(x.rules[0].tests.empty());
  CHECK(x.rules[0].tests[0].test == "suggestion == \"say \\\"hi\\\"\\n\\\\\"");
}
