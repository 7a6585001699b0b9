// `--log FILE` on decide and replay: the decision log, one JSON record a line, appended.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support.hpp"

namespace {

std::string temp_path(const std::string& name) {
  return std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
         "/recourse-cli-log-test-" + name;
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<nlohmann::json> records(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::string command(const std::string& args) {
  return test::cli() + " " + args + " --policy " + test::source_dir() + "/rules/examples";
}

}  // namespace

TEST_CASE("cli: decide --log appends the decision with its inputs", "[cli][log]") {
  const auto env = write("env.json", R"({"code":"RATE_LIMITED","retryable":true,"retryAfterMs":1000,
    "traceId":"req_1"})");
  const auto ctx = write("ctx.json", R"({"tool":"payments.create","sideEffect":"none",
    "attempt":2,"operationId":"op-1"})");
  const auto log = temp_path("decide.jsonl");
  std::remove(log.c_str());
  const std::string args = "decide --envelope " + env + " --context " + ctx + " --log " + log;
  const auto first = test::run(command(args));
  REQUIRE(first.status == 0);
  REQUIRE(test::run(command(args)).status == 0);
  const auto lines = records(log);
  REQUIRE(lines.size() == 2);
  const auto& r = lines[0];
  CHECK(r["policy"] == "payments.create");
  CHECK(r["rule"] == "throttled");
  CHECK(r["route"] == "retry");
  CHECK(r["traceId"] == "req_1");
  CHECK(r["policyHash"].get<std::string>().rfind("sha256:", 0) == 0);
  CHECK(r["input"]["envelope"]["retryAfterMs"] == 1000);
  CHECK(r["input"]["context"]["attempt"] == 2);
  CHECK(r["input"]["context"]["operationId"] == "op-1");
  CHECK(r["result"] == nlohmann::json::parse(first.out));

  const auto unwritable = test::run(command(args + "/no/such/dir/log.jsonl 2>&1"));
  CHECK(unwritable.status == 1);
  CHECK_THAT(unwritable.out, Catch::Contains("cannot write the decision log"));
}

TEST_CASE("cli: replay --log writes one record per decision", "[cli][log]") {
  const auto log = temp_path("replay.jsonl");
  std::remove(log.c_str());
  const std::string trace = test::source_dir() + "/rules/traces/workflow.jsonl";
  const auto r = test::run(command("replay --format json --log " + log + " " + trace));
  REQUIRE(r.status == 0);
  const auto summary = nlohmann::json::parse(r.out);
  const auto lines = records(log);
  REQUIRE(lines.size() == summary["summary"]["decisions"].get<std::size_t>());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    CHECK(lines[i]["result"] == summary["decisions"][i]["decision"]);
    CHECK(lines[i]["tool"] == summary["decisions"][i]["tool"]);
  }
  // The workflow's counts reach the log: the context as decided, not as written in the trace.
  CHECK(lines[3]["input"]["context"]["attempt"] == 4);
}
