// `recourse fuzz` (cli/fuzz.cpp) and `assert sequence` bounds: the bundled policies keep every
// property under attack, the example policy's declared bounds are broken with the shortest
// sequence, the written trace replays to the same decisions, and the output is deterministic.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "recourse/tooling.hpp"
#include "support.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("recourse fuzz: the bundled policies keep every property", "[fuzz-command]") {
  for (const char* dir :
       {"/rules/examples", "/rules/bench/hardened.recourse", "/rules/bench/actionable.recourse"}) {
    const auto r =
        test::run(test::cli() + " fuzz --sequences 400 " + test::source_dir() + dir + " 2>&1");
    INFO(r.out);
    CHECK(r.status == 0);
    CHECK(r.out.find(", 0 broken") != std::string::npos);
    CHECK(r.out.find("E140") == std::string::npos);
  }
}

TEST_CASE("recourse fuzz: --seconds is each policy's, and an unattacked policy is no pass",
          "[fuzz-command]") {
  // A shared time limit was spent on the first policy: the others reported 0 sequences and
  // "0 properties broken", exit 0.
  const std::string dir = test::source_dir() + "/rules/examples";
  const auto r = test::run(test::cli() + " fuzz " + dir + " --seconds 0.2 2>&1");
  INFO(r.out);
  CHECK(r.status == 0);
  std::istringstream lines(r.out);
  std::string line;
  std::size_t summaries = 0;
  while (std::getline(lines, line)) {
    const auto at = line.find(" sequences, ");
    if (at == std::string::npos) continue;
    ++summaries;
    const auto name = line.find(": ");
    CHECK(std::stoull(line.substr(name + 2, at - name - 2)) > 0);
    CHECK(line.find(" decisions, 8 properties checked, 0 broken") != std::string::npos);
  }
  CHECK(summaries == 6);  // rules/examples: six files of one policy each
  CHECK(r.out.find("warning") == std::string::npos);

  // Declared bounds are properties checked too.
  const auto bounds =
      test::run(test::cli() + " fuzz --sequences 10 " + test::source_dir() + "/examples/fuzz 2>&1");
  CHECK(bounds.out.find("calendar.book: 10 sequences, ") != std::string::npos);
  CHECK(bounds.out.find(" decisions, 10 properties checked, ") != std::string::npos);

  const std::string none = test::cli() + " fuzz " + dir + " --tool payments.create --seconds 0";
  const auto out = test::run(none + " 2>/dev/null");
  CHECK(out.status == 1);
  CHECK(out.out == "payments.create: 0 sequences, 0 decisions, 8 properties checked, 0 broken\n");
  CHECK(test::run(none + " 2>&1 >/dev/null").out ==
        "warning: policy \"payments.create\" got no sequence in 0s: nothing was checked (raise "
        "--seconds or give --sequences)\n");
}

TEST_CASE("recourse fuzz: declared bounds broken, with a trace that replays", "[fuzz-command]") {
  const fs::path out = fs::temp_directory_path() / ("recourse-fuzz-" + std::to_string(getpid()));
  fs::remove_all(out);
  const std::string policy = test::source_dir() + "/examples/fuzz";
  const auto r = test::run(test::cli() + " fuzz --sequences 2000 --format json --out " +
                           out.string() + " " + policy);
  INFO(r.out);
  CHECK(r.status == 1);
  const json records = json::parse(r.out);
  REQUIRE(records.size() == 2);
  std::map<std::string, json> by_property;
  for (const auto& v : records) by_property[v["property"]] = v;
  REQUIRE(by_property.count("total_wait <= 20s"));
  REQUIRE(by_property.count("calls_after TIMEOUT <= 2"));
  const json& wait = by_property["total_wait <= 20s"];
  CHECK(wait["code"] == "E140");
  CHECK(wait["line"] == 12);
  CHECK(wait["file"].get<std::string>().find("calendar.book.recourse") != std::string::npos);
  CHECK(wait["trace"].size() >= 1);

  // Each record's witness is its last call as data: `recourse decide` on its envelope and its
  // context (the state the decision saw written in, no workflow) takes its route, and the trace
  // fed back to `recourse replay` ends with that decision.
  for (const auto& v : records) {
    INFO(v.dump());
    REQUIRE(v.contains("envelope"));
    REQUIRE(v.contains("context"));
    REQUIRE(v.contains("route"));
    CHECK_FALSE(v["context"].contains("workflowId"));
    CHECK(v["context"]["attempt"] == v["trace"].size());  // the workflow's count, written in
    const fs::path envelope = out.string() + "-envelope.json", context = out.string() + "-ctx.json";
    std::ofstream(envelope) << v["envelope"].dump();
    std::ofstream(context) << v["context"].dump();
    const auto decided = test::run(test::cli() + " decide --policy " + policy + " --envelope " +
                                   envelope.string() + " --context " + context.string());
    REQUIRE(decided.status == 0);
    CHECK(json::parse(decided.out)["route"] == v["route"]);
    const fs::path fed = out.string() + "-trace.jsonl";
    std::ofstream trace(fed);
    for (const auto& line : v["trace"]) trace << line.get<std::string>() << "\n";
    trace.close();
    const auto replayed =
        test::run(test::cli() + " replay --format json --policy " + policy + " " + fed.string());
    REQUIRE(replayed.status == 0);
    const json last = json::parse(replayed.out)["decisions"].back()["decision"];
    CHECK(last["route"] == v["route"]);
    CHECK(last["attempt"] == v["context"]["attempt"]);
    CHECK(json::parse(decided.out)["delayMs"] == last["delayMs"]);
    for (const auto& f : {envelope, context, fed}) fs::remove(f);
  }

  // The trace written for each violation replays through the same policy to the decisions that
  // break the bound.
  std::size_t traces = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    ++traces;
    const auto replay = test::run(test::cli() + " replay --format json --policy " + policy + " " +
                                  entry.path().string());
    INFO(entry.path().string() << "\n" << replay.out);
    REQUIRE(replay.status == 0);
    const json decisions = json::parse(replay.out)["decisions"];
    std::int64_t waited = 0, after_timeout = 0;
    bool timeout = false;
    const std::string trace = read_file(entry.path());
    std::istringstream lines(trace);
    std::string line;
    for (const auto& d : decisions) {
      std::getline(lines, line);
      const json event = json::parse(line);
      const bool calls = d["decision"]["route"] == "retry";
      if (calls) waited += d["decision"]["delayMs"].get<std::int64_t>();
      timeout = timeout || event["envelope"].value("code", json()) == "TIMEOUT";
      if (timeout && calls) ++after_timeout;
    }
    CHECK((waited > 20000 || after_timeout > 2));
  }
  CHECK(traces == records.size());  // one trace per broken property
  fs::remove_all(out);
}

TEST_CASE("recourse fuzz: the same seed and count give the same report", "[fuzz-command]") {
  const std::string command =
      test::cli() + " fuzz --sequences 300 --seed 7 " + test::source_dir() + "/examples/fuzz";
  const auto a = test::run(command);
  const auto b = test::run(command);
  CHECK(a.status == 1);
  CHECK(a.out == b.out);
  const auto other = test::run(test::cli() + " fuzz --sequences 300 --seed 8 " +
                               test::source_dir() + "/examples/fuzz");
  CHECK(other.out != a.out);
}

TEST_CASE("recourse fuzz: limits are checked", "[fuzz-command]") {
  const auto r =
      test::run(test::cli() + " fuzz --max-length 0 " + test::source_dir() + "/examples/fuzz 2>&1");
  CHECK(r.status == 2);
  CHECK(r.out.find("--max-length") != std::string::npos);
  const auto negative =
      test::run(test::cli() + " fuzz --sequences -5 " + test::source_dir() + "/examples/fuzz 2>&1");
  CHECK(negative.status == 2);
  const auto unknown = test::run(test::cli() + " fuzz --sequences 5 --tool nosuch " +
                                 test::source_dir() + "/examples/fuzz 2>&1");
  CHECK(unknown.status == 1);
  CHECK(unknown.out.find("no policy \"nosuch\"") != std::string::npos);
}

TEST_CASE("assert sequence: metrics, codes and limits are checked", "[fuzz-command]") {
  auto codes = [](const std::string& bounds) {
    std::vector<std::string> out;
    for (const auto& d : test::diagnostics("policy \"p\" {\n" + bounds + "  default -> stop\n}\n"))
      out.push_back(d.code + ":" + d.message);
    return out;
  };
  CHECK(codes("  assert sequence total_wait <= 2m\n  assert sequence calls_after TIMEOUT <= 2\n")
            .empty());
  CHECK(codes("  assert sequence total_wiat <= 2m\n") ==
        std::vector<std::string>{"E032:unknown sequence metric 'total_wiat'"});
  CHECK(codes("  assert sequence calls_after <= 2\n") ==
        std::vector<std::string>{"E032:calls_after needs the code it counts from"});
  CHECK(codes("  assert sequence calls TIMEOUT <= 2\n") ==
        std::vector<std::string>{"E032:only calls_after takes a code"});
  CHECK(codes("  assert sequence calls_after TIMEOUTS <= 2\n") ==
        std::vector<std::string>{"E011:unknown code 'TIMEOUTS'"});
  CHECK(codes("  assert sequence total_wait <= 2\n").at(0).rfind("E025:", 0) == 0);
  CHECK(codes("  assert sequence calls <= 0\n") ==
        std::vector<std::string>{
            "E032:calls is at least 1 (the first call): a bound below cannot hold"});

  const auto p = test::policy(
      "policy \"p\" {\n  assert sequence calls_after TIMEOUT <= 2\n  default -> stop\n}\n");
  const auto info = recourse::info(p);
  REQUIRE(info.bounds.size() == 1);
  CHECK(info.bounds[0].metric == "calls_after");
  CHECK(info.bounds[0].code == "TIMEOUT");
  CHECK(info.bounds[0].limit == 2);
  CHECK(info.bounds[0].line == 2);

  std::vector<recourse::Diagnostic> ds;
  const std::string text =
      "policy \"p\" {\n  assert   sequence total_wait<=2m\n  default -> stop\n}\n";
  CHECK(test::format_into(text, ds) ==
        "policy \"p\" {\n  assert sequence total_wait <= 2m\n  default -> stop\n}\n");
}

TEST_CASE("recourse fuzz: the report in fuzz/README.md is the command's", "[fuzz-command]") {
  const std::string readme = read_file(test::source_dir() + "/fuzz/README.md");
  const std::string command = "$ build/recourse fuzz examples/fuzz --sequences 2000 --out fuzz-out";
  const auto begin = readme.find(command);
  REQUIRE(begin != std::string::npos);
  const auto end = readme.find("```", begin);
  const std::string documented =
      readme.substr(begin + command.size() + 1, end - begin - command.size() - 1);

  // Run as documented, in a scratch directory holding a copy of examples/fuzz.
  const fs::path dir =
      fs::temp_directory_path() / ("recourse-fuzz-doc-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "examples");
  fs::copy(test::source_dir() + "/examples/fuzz", dir / "examples" / "fuzz");
  const auto r = test::run("cd " + dir.string() + " && " + test::cli() +
                           " fuzz examples/fuzz --sequences 2000 --out fuzz-out");
  fs::remove_all(dir);
  CHECK(r.status == 1);
  // The README cuts trace lines longer than 150 characters.
  std::istringstream in(r.out);
  std::string line, shown;
  while (std::getline(in, line))
    shown +=
        (line.rfind("    {", 0) == 0 && line.size() > 150 ? line.substr(0, 150) + " ..." : line) +
        "\n";
  CHECK(shown == documented);
}
