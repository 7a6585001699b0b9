// --state on replay and decide, and `recourse ledger`, against a SQLite file shared by the
// command's processes and this test.
#ifdef RECOURSE_HAVE_SQLITE
#include <fstream>
#include <nlohmann/json.hpp>

#include "store_conformance.hpp"
#include "support.hpp"

namespace {

struct Files : test::TempDir {
  const std::string& dir = path;
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  }
};

std::string recourse_cmd(const std::string& args) {
  return test::cli() + " " + args;
}

}  // namespace

TEST_CASE("cli: replay with a sqlite store decides as in memory", "[cli][state]") {
  Files f;
  const std::string policies = test::source_dir() + "/rules/examples";
  const std::string trace = test::source_dir() + "/rules/traces/workflow.jsonl";
  auto memory = test::run(recourse_cmd("replay --policy " + policies + " " + trace));
  auto sqlite = test::run(recourse_cmd("replay --policy " + policies + " --state sqlite:" + f.dir +
                                       "/state.db " + trace));
  CHECK(sqlite.status == 0);
  CHECK(sqlite.out == memory.out);
  auto bad = test::run(
      recourse_cmd("replay --policy " + policies + " --state mongo://x " + trace + " 2>&1"));
  CHECK(bad.status == 2);  // a malformed spec is a usage error
  CHECK(bad.out.find("error: --state: unknown state store \"mongo://x\"") != std::string::npos);
}

TEST_CASE("cli: decide --state counts across processes and reads the ledger", "[cli][state]") {
  Files f;
  const std::string db = f.dir + "/state.db";
  const std::string policies = test::source_dir() + "/rules/examples";
  const auto envelope = f.write("e.json", R"({"code":"TRANSIENT","retryable":true})");
  const auto context = f.write(
      "c.json",
      R"({"tool":"search.query","operationId":"q-1","workflowId":"w","sideEffect":"none","nowMs":1000})");
  auto decide = [&](const std::string& ctx) {
    auto r = test::run(recourse_cmd("decide -p " + policies + " -e " + envelope + " -c " + ctx +
                                    " --state sqlite:" + db));
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out);
  };
  CHECK(decide(context)["attempt"] == 1);
  CHECK(decide(context)["attempt"] == 2);  // another process, the same operation

  auto store = recourse::open_store("sqlite:" + db).value();
  REQUIRE(store);
  store->claim("pay-1", "key-pay-1", 60000, test::now_ms());
  store->transition("pay-1", recourse::LedgerState::Committed, test::now_ms());
  const auto pay = f.write("p.json", R"({"tool":"payments.create","operationId":"pay-1"})");
  auto d = decide(pay);                   // no sideEffect: the ledger says committed
  CHECK(d["rule"] == "already_charged");  // the policy's own rule on a committed effect

  auto list = test::run(recourse_cmd("ledger --format json --state sqlite:" + db));
  REQUIRE(list.status == 0);
  const auto entries = nlohmann::json::parse(list.out);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0]["operation"] == "pay-1");
  CHECK(entries[0]["state"] == "committed");
  CHECK(entries[0]["idempotencyKey"] == "key-pay-1");
  auto show = test::run(recourse_cmd("ledger --state sqlite:" + db + " pay-1 pay-2"));
  CHECK(show.out.find("pay-1                            committed  key-pay-1") !=
        std::string::npos);
  CHECK(show.out.find("pay-2                            absent") != std::string::npos);
}
TEST_CASE("cli: breaker isolates, opens, shows and resets tools in a shared store",
          "[cli][state]") {
  Files f;
  const std::string db = f.dir + "/state.db", log = f.dir + "/decisions.jsonl";
  const std::string state = " --state sqlite:" + db + " --log " + log + " ";
  auto isolate = test::run(recourse_cmd("breaker" + state + "isolate search.query search.rank"));
  REQUIRE(isolate.status == 0);
  CHECK(isolate.out.find("search.query                     open      yes") != std::string::npos);
  CHECK(isolate.out.find("search.rank                      open      yes") != std::string::npos);
  // Another process (this test) sees the isolation: no probe, however long after.
  auto store = recourse::open_store("sqlite:" + db).value();
  const recourse::BreakerSpec spec{5, 0, 20, 10, 1000, 1000};
  CHECK(store->probe("search.query", "op-1", spec, test::now_ms() + 86'000'000) ==
        recourse::CircuitState::Open);
  auto show = test::run(
      recourse_cmd("breaker --format json --state sqlite:" + db + " show search.query other.tool"));
  REQUIRE(show.status == 0);
  const auto shown = nlohmann::json::parse(show.out);
  REQUIRE(shown.size() == 2);
  CHECK(shown[0]["tool"] == "search.query");
  CHECK(shown[0]["circuit"] == "open");
  CHECK(shown[0]["isolated"] == true);
  CHECK(shown[1]["circuit"] == "closed");  // never recorded
  const std::int64_t before = test::now_ms();
  auto open =
      test::run(recourse_cmd("breaker --format json" + state + "--for-ms 60000 open search.query"));
  REQUIRE(open.status == 0);
  const auto opened = nlohmann::json::parse(open.out)[0];
  CHECK(opened["isolated"] == false);
  CHECK(opened["holdUntilMs"].get<std::int64_t>() >= before + 60000);
  auto reset = test::run(recourse_cmd("breaker --format json" + state + "reset search.query"));
  REQUIRE(reset.status == 0);
  CHECK(nlohmann::json::parse(reset.out)[0]["circuit"] == "closed");
  CHECK(store->tool("search.query", test::now_ms())->circuit == recourse::CircuitState::Closed);
  CHECK(store->tool("search.rank", test::now_ms())->isolated);
  // Each command is in the decision log: who changed which circuit, to what.
  std::ifstream in(log);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  REQUIRE(lines.size() == 4);  // two isolations, an open, a reset; `show` changes nothing
  CHECK(lines[0]["breaker"] == "isolate");
  CHECK(lines[0]["tool"] == "search.query");
  CHECK(lines[0]["store"] == "sqlite:" + db);
  CHECK(lines[0]["health"]["isolated"] == true);
  CHECK(lines[2]["breaker"] == "open");
  CHECK(lines[2]["forMs"] == 60000);
  CHECK(lines[3]["breaker"] == "reset");
  CHECK(lines[3]["health"]["circuit"] == "closed");
  // replay reads such a log: the commands are counted and skipped, not bad lines.
  auto replayed = test::run(recourse_cmd("replay --format json --policy " + test::source_dir() +
                                         "/rules/examples " + log));
  CHECK(replayed.status == 0);
  const auto summary = nlohmann::json::parse(replayed.out)["summary"];
  CHECK(summary["breakerCommands"] == 4);
  CHECK(summary["decisions"] == 0);
  CHECK(summary["badLines"] == 0);
  // --endpoint names the circuit of one target: the tool's own and the other targets' stay.
  auto keyed = test::run(
      recourse_cmd("breaker --format json" + state + "--endpoint eu-west isolate search.query"));
  REQUIRE(keyed.status == 0);
  const auto isolated = nlohmann::json::parse(keyed.out)[0];
  CHECK(isolated["tool"] == "search.query");
  CHECK(isolated["endpoint"] == "eu-west");
  CHECK(isolated["isolated"] == true);
  CHECK(store->tool("search.query@eu-west", test::now_ms())->isolated);
  CHECK_FALSE(store->tool("search.query", test::now_ms())->isolated);
  CHECK_FALSE(store->tool("search.query@us-east", test::now_ms())->isolated);
  auto shown_keyed = test::run(
      recourse_cmd("breaker --state sqlite:" + db + " --endpoint eu-west show search.query"));
  CHECK(shown_keyed.out.find("search.query@eu-west             open      yes") !=
        std::string::npos);
  std::ifstream again(log);
  std::string last;
  for (std::string line; std::getline(again, line);) last = line;
  CHECK(nlohmann::json::parse(last)["endpoint"] == "eu-west");
  auto bad = test::run(recourse_cmd("breaker --state sqlite:" + db + " flip search.query 2>&1"));
  CHECK(bad.status == 2);
  auto none = test::run(recourse_cmd("breaker isolate search.query 2>&1"));  // no --state
  CHECK(none.status == 2);
}
#endif
