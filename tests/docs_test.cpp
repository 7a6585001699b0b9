// docs/language.md stays true: every ```recourse block compiles without errors, and every
// ```recourse-error EXXX block fails to compile with EXXX among its error diagnostics.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "recourse/recourse.hpp"

namespace {

struct DocBlock {
  std::size_t line = 0;  // 1-based line of the opening fence
  std::string info;      // the fence's info string, e.g. "recourse-error E012"
  std::string expected;  // for recourse-error: the code; empty for recourse
  std::string text;
};

std::string read_doc(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trim(std::string s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

// Splits the markdown into fenced blocks whose info string starts with "recourse". Any such
// fence that is neither `recourse` nor `recourse-error EXXX`, or is never closed, fails the test,
// so a typo in a tag cannot silently drop an example.
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

}  // namespace

TEST_CASE("every policy example in docs/language.md compiles as tagged", "[docs]") {
  const std::string path = std::string(RECOURSE_SOURCE_DIR) + "/docs/language.md";
  const auto blocks = recourse_blocks(read_doc(path));
  REQUIRE(blocks.size() >= 5);

  std::size_t ok_blocks = 0, error_blocks = 0;
  for (const auto& block : blocks) {
    const std::string where = "docs/language.md:" + std::to_string(block.line);
    const recourse::CompileResult r = recourse::compile({{where, block.text}});
    INFO(where << " (```" << block.info << ")\n"
               << block.text << "diagnostics:\n"
               << describe(r.diagnostics));
    if (block.expected.empty()) {
      ++ok_blocks;
      CHECK(r.ok());
      CHECK_FALSE(recourse::has_errors(r.diagnostics));
    } else {
      ++error_blocks;
      CHECK_FALSE(r.ok());
      bool found = false;
      for (const auto& d : r.diagnostics)
        if (d.code == block.expected && d.severity == recourse::Severity::Error) found = true;
      CHECK(found);
    }
  }
  // Both kinds must be present, so a change to one tag cannot make half the test vacuous.
  CHECK(ok_blocks > 0);
  CHECK(error_blocks > 0);
}
