// docs/tutorial.md is run as written. Every fenced block of it is one step, in order:
//  - ```LANG file=PATH: the block is the whole text of PATH (relative to a fresh directory);
//  - ```LANG file=PATH line=N: the block replaces line N of PATH;
//  - a ```recourse file=... step leaves a policy that is `recourse fmt`'s output;
//  - ```console: each `$ COMMAND` line is run by sh in that directory, with `recourse` on PATH
//    being the built CLI; the lines under it, up to the next `$` line, are its output (stdout and
//    stderr), compared exactly after the directory's path is written as `.`; its exit status is
//    0, or N when the command ends with `# exits N`.
// Any other block fails the test, so no command in the tutorial goes unchecked.
// README.md's ```console blocks are run the same way, from a directory holding rules/ and
// build/recourse.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

namespace fs = std::filesystem;

struct Step {
  std::size_t line = 0;  // 1-based line of the opening fence in docs/tutorial.md
  std::string info;      // the fence's info string
  std::vector<std::string> lines;
};

std::vector<Step> steps(const std::string& markdown) {
  std::vector<Step> out;
  std::istringstream in(markdown);
  std::string line;
  bool in_fence = false;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (!in_fence) {
      if (line.rfind("```", 0) != 0) continue;
      in_fence = true;
      out.push_back({number, test::trim(line.substr(3)), {}});
    } else if (line == "```") {
      in_fence = false;
    } else {
      out.back().lines.push_back(line);
    }
  }
  INFO("docs/tutorial.md ends inside a fenced block");
  REQUIRE_FALSE(in_fence);
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return text;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// A fresh directory for the tutorial (`work`) and one holding `recourse` (`bin`); removed after.
struct Sandbox {
  fs::path root = fs::temp_directory_path() / ("recourse-tutorial-" + std::to_string(getpid()));
  fs::path work = root / "work";
  fs::path bin = root / "bin";
  Sandbox() {
    fs::remove_all(root);
    fs::create_directories(work);
    fs::create_directories(bin);
    fs::create_symlink(test::cli(), bin / "recourse");
  }
  ~Sandbox() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

void write_file(const Sandbox& box, const Step& step, const std::smatch& m) {
  const fs::path path = box.work / m[1].str();
  std::vector<std::string> lines = step.lines;
  if (m[2].matched) {  // line=N: replace one line of the file
    std::istringstream in(test::read_file(path.string()));
    std::vector<std::string> file;
    for (std::string l; std::getline(in, l);) file.push_back(l);
    const std::size_t n = std::stoul(m[2].str());
    REQUIRE(n >= 1);
    REQUIRE(n <= file.size());
    file.erase(file.begin() + static_cast<std::ptrdiff_t>(n - 1));
    file.insert(file.begin() + static_cast<std::ptrdiff_t>(n - 1), lines.begin(), lines.end());
    lines = file;
  }
  std::ofstream out(path, std::ios::binary);
  REQUIRE(out.good());
  out << joined(lines);
  // A policy the tutorial writes is fmt's output, as every example of the docs is.
  if (step.info.rfind("recourse ", 0) == 0) {
    INFO("docs/tutorial.md:" << step.line << ": " << m[1].str() << " is not fmt's output");
    CHECK(recourse::format(joined(lines), path.string()).value() == joined(lines));
  }
}

// Runs each `$ COMMAND` line of a console step in `dir` with `bin` first on PATH, and checks
// that it prints the lines under it (the directory's path written `.`) and exits with 0, or N
// when it ends with `# exits N`. Returns the commands run.
std::vector<std::string> run_console(const Step& step, const fs::path& dir, const fs::path& bin) {
  static const std::regex exits(R"((.*?)\s+# exits ([0-9]+))");
  REQUIRE(!step.lines.empty());
  std::vector<std::string> commands;
  for (std::size_t i = 0; i < step.lines.size();) {
    INFO("line " << step.line + 1 + i << ": " << step.lines[i]);
    REQUIRE(step.lines[i].rfind("$ ", 0) == 0);
    std::string command = step.lines[i].substr(2);
    int status = 0;
    std::smatch m;
    if (std::regex_match(command, m, exits)) {
      status = std::stoi(m[2].str());
      command = m[1].str();
    }
    std::vector<std::string> expected;
    for (++i; i < step.lines.size() && step.lines[i].rfind("$ ", 0) != 0; ++i)
      expected.push_back(step.lines[i]);
    const test::Run run = test::run("cd '" + dir.string() + "' && PATH='" + bin.string() +
                                    "':\"$PATH\" && (" + command + ") 2>&1");
    std::string out = run.out;
    replace_all(out, dir.string(), ".");
    CHECK(out == joined(expected));
    CHECK(run.status == status);
    commands.push_back(command);
  }
  return commands;
}

}  // namespace

TEST_CASE("every command in docs/tutorial.md prints what the tutorial shows", "[docs]") {
  static const std::regex file_tag(R"([a-z]+ file=([^ ]+)(?: line=([0-9]+))?)");
  const Sandbox box;
  std::set<std::string> subcommands;
  std::size_t commands = 0;
  for (const Step& step : steps(test::read_file(test::source_dir() + "/docs/tutorial.md"))) {
    INFO("docs/tutorial.md:" << step.line << ": ```" << step.info);
    std::smatch m;
    if (std::regex_match(step.info, m, file_tag)) {
      write_file(box, step, m);
      continue;
    }
    REQUIRE(step.info == "console");
    for (const std::string& command : run_console(step, box.work, box.bin)) {
      ++commands;
      if (command.rfind("recourse ", 0) == 0)
        subcommands.insert(command.substr(9, command.find(' ', 9) - 9));
    }
  }
  // The tutorial keeps showing each step of an author's work.
  CHECK(commands >= 10);
  for (const char* sub : {"check", "test", "fmt", "diff", "decide", "explain"}) {
    INFO("no `recourse " << sub << "` in docs/tutorial.md");
    CHECK(subcommands.count(sub) == 1);
  }
}

TEST_CASE("every console run in README.md prints what the README shows", "[docs]") {
  // Run from a directory holding the repository's rules/ and examples/, build/recourse, and the
  // older version of payments.create the README's diff compares (two attempts instead of three).
  const Sandbox box;
  fs::create_directories(box.work / "build");
  fs::create_symlink(test::cli(), box.work / "build" / "recourse");
  fs::create_directory_symlink(fs::path(test::source_dir()) / "rules", box.work / "rules");
  fs::create_directory_symlink(fs::path(test::source_dir()) / "examples", box.work / "examples");
  std::string before =
      test::read_file(test::source_dir() + "/rules/examples/payments.create.recourse");
  const auto at = before.find("attempts        = 3");  // aligned with retry_after_max
  REQUIRE(at != std::string::npos);
  before.replace(at, 19, "attempts        = 2");
  std::ofstream(box.work / "payments.create.before", std::ios::binary) << before;
  std::set<std::string> subcommands;
  for (const Step& step : steps(test::read_file(test::source_dir() + "/README.md"))) {
    if (step.info != "console") continue;
    INFO("README.md:" << step.line);
    for (const std::string& command : run_console(step, box.work, box.bin))
      subcommands.insert(command.substr(0, command.find(' ', 15)));
  }
  CHECK(subcommands == std::set<std::string>{"build/recourse diff", "build/recourse fuzz",
                                             "build/recourse replay"});
}
