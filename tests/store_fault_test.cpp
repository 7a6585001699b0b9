// Store faults (docs/state.md, "Faults"), each against a Redis or a SQLite file the test makes
// itself: every decision made through a faulty store is conservative (no retry on the shared
// budget) and flagged store_unavailable, no command crashes, and no acknowledged ledger entry is
// lost; at open, a store that cannot answer fails the command with one line naming it. Records
// that do not read as their shape are store_unavailable; records of format 0 (before formats)
// are migrated.
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "recourse/state.hpp"
#include "redis_server.hpp"
#include "store/backends.hpp"
#include "store/logic.hpp"
#include "store_conformance.hpp"
#include "support.hpp"

namespace {

using recourse::LedgerState;
using recourse::Route;

// Retries while the shared tokens allow (every TRANSIENT failure takes one, gRFC A6: 20 leave
// room for the runs below); its breaker is the store's (scope shared), so every decision reads
// and writes counters, breaker, tokens and the ledger.
constexpr const char* kPolicy = R"(policy "t" {
  tool { idempotent = true }
  limits { attempts = 5 on_exhausted = degrade }
  breaker { failures = 50 cooldown = 30s scope = shared }
  throttle { max_tokens = 20 }
  rule r when retryable and code != CONTEXT_OVERFLOW -> retry
  default -> stop })";

struct Outcome {
  recourse::Decision decision;
  std::int64_t attempt = 0;
  std::optional<recourse::SideEffect> side_effect;
  bool flagged() const { return (decision.warnings & recourse::kStoreUnavailable) != 0; }
  /// Flagged, and on the fallback bucket of 0 tokens: no retry.
  bool conservative() const {
    return flagged() && decision.route == Route::Degrade && decision.rule == "budget:retry_tokens";
  }
};

// A host's decision cycle over one store (cli/state.cpp's before_decision and after_decision):
// count the attempt and the failure, read the counters, record the failure on the breaker,
// prepare (probe, tokens, the ledger), decide, record the decision.
struct Host {
  explicit Host(std::shared_ptr<recourse::Store> store)
      : workflow(store), health(store), policy(test::policy(kPolicy)) {}
  /// A failed call of `operation`; the side effect is the ledger's unless `side_effect`.
  Outcome decide(const std::string& operation, const char* side_effect = "none") {
    std::string json = R"({"tool":"t","operationId":")" + operation + "\"";
    if (side_effect) json += R"(,"sideEffect":")" + std::string(side_effect) + "\"";
    recourse::Context c = test::context(json + "}");
    const auto e = test::envelope(R"({"code":"TRANSIENT","retryable":true})");
    const std::int64_t now = test::now_ms();
    workflow.record_attempt(c, 1, now);
    workflow.record_failure(c, e);
    workflow.apply(c, now);
    health.record_failure(policy, c, now, &e);
    health.prepare(policy, c, now);
    Outcome out{policy.decide(e, c), c.attempt, c.side_effect};
    workflow.record_decision(c, out.decision);
    health.record_decision(policy, c, out.decision);
    return out;
  }
  recourse::Workflow workflow;
  recourse::Health health;
  recourse::Policy policy;
};

std::string cli(const std::string& args) {
  return "timeout 20 " + test::cli() + " " + args;
}

std::string write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

// The command lines of every command that takes --state, each with its inputs in `dir`; replay
// last (it takes seconds before it opens the store: its trace reader fills a 1 GiB buffer).
std::vector<std::string> state_commands(const std::string& dir) {
  const std::string policies = test::source_dir() + "/rules/examples";
  const std::string e = write(dir + "/e.json", R"({"code":"TRANSIENT","retryable":true})");
  const std::string c =
      write(dir + "/c.json", R"({"tool":"search.query","operationId":"q-1","sideEffect":"none"})");
  return {"decide -p " + policies + " -e " + e + " -c " + c,
          "simulate --runs 1 --ops 1 --policy " + policies + "/search.query.recourse", "ledger",
          "replay " + test::source_dir() + "/rules/traces/workflow.jsonl -p " + policies};
}

// Runs every --state command against `spec` (but replay, unless `replay`): each must exit 1 with
// one line on stderr, the `expected` one.
void every_command_fails(const std::string& dir, const std::string& spec,
                         const std::string& expected, bool replay = false) {
  auto commands = state_commands(dir);
  if (!replay) commands.pop_back();
  for (const auto& command : commands) {
    const auto r = test::run(cli(command + " --state " + spec + " 2>&1 >/dev/null"));
    INFO(command);
    CHECK(r.status == 1);
    CHECK(r.out == expected + "\n");
  }
}

}  // namespace

// ---- the shared record reader ---------------------------------------------------------------

TEST_CASE("faults: the record reader takes only a record of its shape and format",
          "[faults][store]") {
  using recourse::detail::BadRecord;
  using recourse::detail::operation_from_json;
  using recourse::detail::parse_record;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string full = R"("attempts":3,"repairs":0,"repeats":3,"cost":3,"startedMs":5,)"
                           R"("lastFailure":7,"repairPending":false)";
  auto read = [&](const std::string& text) { return operation_from_json(parse_record(text)); };
  for (const std::string& bad :
       {std::string("null"), std::string("{}"), std::string("[3]"), std::string("{not json"), deep,
        "{" + full.substr(13) + "}",                          // no attempts
        "{\"attempts\":4," + full + "}",                      // attempts twice
        "{\"format\":4," + full + ",\"pushbackAttempt\":0}",  // a newer format
        "{\"format\":1,\"extra\":0," + full + "}", "{\"format\":\"1\"," + full + "}",
        "{\"format\":1," + full + ",\"pushbackAttempt\":2}",  // a field format 1 has not
        "{\"format\":2," + full + "}",                        // format 2 without it
        R"({"attempts":"3")" + full.substr(12) + "}", R"({"attempts":-3)" + full.substr(12) + "}",
        R"({"attempts":3.5)" + full.substr(12) + "}",
        R"({"attempts":{"n":3})" + full.substr(12) + "}"}) {
    INFO(bad.substr(0, 80));
    CHECK_THROWS_AS(read(bad), BadRecord);
  }
  CHECK(read("{" + full + "}").attempts == 3);                   // format 0: migrated
  CHECK(read("{\"format\":1," + full + "}").last_failure == 7);  // format 1: migrated
  CHECK(read("{\"format\":1," + full + "}").pushback_attempt == 0);
  CHECK(read("{\"format\":2," + full + ",\"pushbackAttempt\":2}").pushback_attempt == 2);
  const recourse::OperationState op = read("{" + full + "}");
  CHECK(recourse::detail::operation_to_json(op) ==
        R"({"attempts":3,"cost":3,"format":3,"lastFailure":7,"pushbackAttempt":0,)"
        R"("repairPending":false,"repairs":0,"repeats":3,"startedMs":5})");
}

TEST_CASE("faults: a tool record reads without the fields added after its format",
          "[faults][store]") {
  using recourse::detail::BadRecord;
  using recourse::detail::parse_record;
  using recourse::detail::tool_from_json;
  const std::string fields =
      R"("circuit":"open","consecutiveFailures":3,"window":7,"windowCalls":3,"openedMs":5,)"
      R"("probeTaken":false,"probeOperation":"","probeUntilMs":0,"milliTokens":-1)";
  auto read = [&](const std::string& text) { return tool_from_json(parse_record(text)); };
  CHECK(read("{\"format\":1," + fields + "}").hold_until_ms == 0);  // migrated: no hold
  CHECK(read("{" + fields + "}").opened_ms == 5);                   // format 0 too
  CHECK(read("{\"format\":2," + fields + ",\"holdUntilMs\":900}").hold_until_ms == 900);
  CHECK_THROWS_AS(read("{\"format\":2," + fields + "}"), BadRecord);  // format 2 has it
  CHECK_THROWS_AS(read("{\"format\":2," + fields + ",\"holdUntilMs\":\"soon\"}"), BadRecord);
  CHECK_THROWS_AS(read("{\"format\":1," + fields + ",\"holdUntilMs\":9,\"extra\":1}"), BadRecord);
  // Format 3 added `isolated`: absent before (not isolated), required from 3 on.
  CHECK_FALSE(read("{\"format\":2," + fields + ",\"holdUntilMs\":900}").isolated);
  CHECK(read("{\"format\":3," + fields + ",\"holdUntilMs\":0,\"isolated\":true}").isolated);
  CHECK_THROWS_AS(read("{\"format\":3," + fields + ",\"holdUntilMs\":0}"), BadRecord);
  CHECK_THROWS_AS(read("{\"format\":2," + fields + ",\"holdUntilMs\":0,\"isolated\":true}"),
                  BadRecord);
  CHECK_THROWS_AS(read("{\"format\":3," + fields + ",\"holdUntilMs\":0,\"isolated\":1}"),
                  BadRecord);
}

TEST_CASE("faults: Health and Workflow restore only records of their shape", "[faults][state]") {
  recourse::Workflow wf;
  std::string error;
  error = wf.from_json(R"({"version":2,"operations":{"op":{"t":{"attempts":3}}}})").message();
  CHECK_FALSE(error.empty());
  CHECK(error == R"(workflow state: operation "op", tool "t": "repairs" missing)");
  error = wf.from_json(R"({"version":2,"operations":{"op":{"t":null}}})").message();
  CHECK_FALSE(error.empty());
  CHECK(error ==
        "workflow state: operation \"op\", tool \"t\": a record is a JSON object, not null");
  recourse::Health health;
  error = health.from_json(R"({"tools":{"t":{"circuit":"open","circuit":"closed"}}})").message();
  CHECK_FALSE(error.empty());
  CHECK(error == "health state: \"circuit\" twice");
}

// ---- Redis ----------------------------------------------------------------------------------
#ifdef RECOURSE_HAVE_REDIS

TEST_CASE("faults: a redis that does not answer at open fails every --state command in one line",
          "[faults][redis][cli]") {
  test::RedisServer server({"always", true});
  const std::string url = server.tcp_url();
  recourse::StoreOptions o;
  o.timeout_ms = 100;

  kill(server.pid(), SIGSTOP);  // connects (the kernel accepts), never answers
  const std::int64_t start = test::now_ms();
  auto r = recourse::open_store(url, o);
  CHECK_FALSE(r.ok());
  CHECK(r.message() == url + " did not answer within 100 ms");
  CHECK(test::now_ms() - start < 2000);
  every_command_fails(server.dir(), url, "error: --state: " + url + " did not answer within 50 ms",
                      true);
  kill(server.pid(), SIGCONT);

  const auto busy = server.send({"DEBUG", "SLEEP", "3"});  // answers nothing for 3 s
  test::sleep_ms(50);
  r = recourse::open_store(url, o);
  CHECK_FALSE(r.ok());
  CHECK(r.message() == url + " did not answer within 100 ms");
  every_command_fails(server.dir(), url, "error: --state: " + url + " did not answer within 50 ms");

  server.stop(SIGKILL);
  every_command_fails(server.dir(), url,
                      "error: --state: cannot connect to " + url + ": Connection refused");
}

TEST_CASE("faults: a redis stopped, slow, or killed and restarted mid-run", "[faults][redis]") {
  test::RedisServer server;
  recourse::StoreOptions o;
  o.timeout_ms = 100;
  o.down_ms = 200;
  auto store = recourse::open_store(server.url(), o).value();
  REQUIRE(store);
  auto now = [] { return test::now_ms(); };
  REQUIRE(store->claim("paid", "key-paid", 60000, now())->claimed);  // acknowledged
  REQUIRE(store->transition("paid", LedgerState::Committed, now())->state ==
          LedgerState::Committed);
  Host host(store);
  CHECK_FALSE(host.decide("before").flagged());
  CHECK(host.decide("before").decision.route == Route::Retry);

  auto during = [&](const std::string& fault) {
    INFO(fault);
    const Outcome d = host.decide(fault);
    CHECK(d.conservative());
    CHECK(host.decide(fault, nullptr).side_effect == recourse::SideEffect::Unknown);
    CHECK_FALSE(store->claim(fault, "key", 60000, now()));  // not acknowledged
    CHECK_FALSE(store->read("paid", now()));
    CHECK_FALSE(store->entries(100, now()));  // the SCAN path
  };
  auto after = [&](const std::string& fault) {
    INFO(fault);
    test::sleep_ms(o.down_ms + 50);  // the store's own breaker lets calls through again
    const Outcome d = host.decide("after-" + fault);
    CHECK_FALSE(d.flagged());
    CHECK(d.decision.route == Route::Retry);
    CHECK(host.decide("paid", nullptr).side_effect == recourse::SideEffect::Committed);
    const auto entries = store->entries(100, now());
    REQUIRE(entries);
    CHECK(std::any_of(entries->begin(), entries->end(), [](const recourse::LedgerEntry& e) {
      return e.operation == "paid" && e.state == LedgerState::Committed;
    }));
  };

  kill(server.pid(), SIGSTOP);
  during("stopped");
  kill(server.pid(), SIGCONT);
  after("stopped");

  auto busy = server.send({"DEBUG", "SLEEP", "0.6"});
  test::sleep_ms(50);
  during("slow");
  test::sleep_ms(600);
  after("slow");

  const std::int64_t loads = recourse::detail::redis_script_loads(*store);
  server.stop(SIGKILL);
  during("killed");
  server.start();  // from its append-only file: the data is back, the scripts are not
  after("killed");
  CHECK(recourse::detail::redis_script_loads(*store) > loads);  // NOSCRIPT, loaded again
}

namespace {

// One command on a plain connection; requires a reply.
void redis(const test::Connection& c, const std::vector<std::string>& args) {
  test::Argv a(args);
  auto* r =
      static_cast<redisReply*>(redisCommandArgv(c.get(), a.size(), a.argv.data(), a.lens.data()));
  REQUIRE(r);
  freeReplyObject(r);
}

// The fields of a Redis hash, as name=value in name order.
std::string fields(const test::Connection& c, const std::string& key) {
  auto* r = static_cast<redisReply*>(redisCommand(c.get(), "HGETALL %s", key.c_str()));
  REQUIRE(r);
  std::map<std::string, std::string> sorted;
  for (std::size_t i = 0; i + 1 < r->elements; i += 2)
    sorted[r->element[i]->str] = r->element[i + 1]->str;
  freeReplyObject(r);
  std::string out;
  for (const auto& [name, value] : sorted) out += (out.empty() ? "" : " ") + name + "=" + value;
  return out;
}

}  // namespace

TEST_CASE("faults: tampered redis hashes are store_unavailable, format-0 ones are migrated",
          "[faults][redis]") {
  test::RedisServer server;
  auto store = recourse::open_store(server.url()).value();
  REQUIRE(store);
  const auto raw = server.connect();
  const std::int64_t now = test::now_ms();
  const std::string ms = std::to_string(now);
  Host host(store);

  // Each a hash of one kind that does not read as its record: every call on it is unavailable
  // (the decision conservative), and the rest of the store still answers at once.
  struct Tampered {
    const char* name;
    std::string kind;  // of the key: op, tool, quorum or ledger
    std::vector<std::string> fields;
  };
  const std::vector<std::string> op = {"attempts", "3", "repairs", "0", "repeats", "3", "cost", "3",
                                       "started",  ms,  "last",    "7", "pending", "0"};
  auto with = [](std::vector<std::string> fields, std::vector<std::string> more) {
    fields.insert(fields.end(), more.begin(), more.end());
    return fields;
  };
  auto without = [](std::vector<std::string> fields, const std::string& name) {
    for (std::size_t i = 0; i < fields.size(); i += 2)
      if (fields[i] == name) fields.erase(fields.begin() + i, fields.begin() + i + 2);
    return fields;
  };
  const std::vector<Tampered> cases = {
      {"attempts not a number", "op", with(op, {"attempts", "many"})},
      {"attempts negative", "op", with(op, {"attempts", "-5"})},
      {"attempts not whole", "op", with(op, {"attempts", "1.5"})},
      {"attempts missing (format 1)", "op", with(without(op, "attempts"), {"format", "1"})},
      {"a newer format", "op", with(op, {"format", "4", "pushback", "0"})},
      {"isolated not 0 or 1", "tool", {"format", "3", "isolated", "yes"}},
      {"a field format 2 has not", "tool", {"format", "2", "isolated", "1"}},
      {"a format not a number", "op", with(op, {"format", "two"})},
      {"a hold not a time", "tool", {"format", "2", "hold_until", "soon"}},
      {"an unknown field", "op", with(op, {"format", "1", "extra", "0"})},
      {"a field format 1 has not", "op", with(op, {"format", "1", "pushback", "2"})},
      {"pushback missing (format 2)", "op", with(op, {"format", "2"})},
      {"a hash past 2^64", "op", with(op, {"last", "18446744073709551616"})},
      {"a flag not 0 or 1", "op", with(op, {"pending", "yes"})},
      {"tokens not a number", "tool", {"milli", "lots"}},
      {"a circuit not 0..2", "tool", {"circuit", "7"}},
      {"a window not bits", "tool", {"window", "0120"}},
      {"calls past 64", "tool", {"calls", "65"}},
      {"a vote not a time", "quorum", {"format", "1", "w:a", "soon"}},
      {"a ledger state unknown",
       "ledger",
       {"state", "bogus", "key", "k", "updated", "1", "lease", "0"}},
      {"a ledger time not a number",
       "ledger",
       {"state", "committed", "key", "k", "updated", "x", "lease", "0"}},
  };
  for (const auto& t : cases) {
    INFO(t.name);
    const std::string operation = std::string("tampered ") + t.name;
    // Counters are kept per operation and tool (the host's tool is "t"), the ledger per operation.
    const std::string counters = operation + "/t";
    const std::string name = t.kind == "op" ? counters : t.kind == "ledger" ? operation : "t";
    const std::string key = "recourse:{" + name + "}:" + t.kind;
    redis(raw, {"DEL", key});
    redis(raw, with({"HSET", key}, t.fields));
    if (t.kind == "op") CHECK_FALSE(store->count(counters, {}, now));
    if (t.kind == "tool") CHECK_FALSE(store->bucket("t", recourse::BucketEvent::Read, {}, now));
    if (t.kind == "quorum") CHECK_FALSE(store->vote("t", "b", true, 1000, now));
    if (t.kind == "ledger") CHECK_FALSE(store->read(operation, now));
    if (t.kind != "quorum") {
      const Outcome d = host.decide(operation, t.kind == "ledger" ? nullptr : "none");
      INFO(d.decision.rule << " " << d.attempt);
      CHECK(d.conservative());
      if (t.kind == "ledger") CHECK(d.side_effect == recourse::SideEffect::Unknown);
    }
    CHECK(store->bucket("healthy", recourse::BucketEvent::Read, {}, now) == 10000);  // no breaker
    redis(raw, {"DEL", key});
  }

  // Format 0: the hashes of before formats, fields missing where the old scripts wrote none
  // (under today's key of operation "old" and tool "t").
  redis(raw, {"HSET", "recourse:{old/t}:op", "attempts", "3", "repeats", "3", "last", "7",
              "started", ms});
  redis(raw, {"HSET", "recourse:{t}:tool", "milli", "4000"});
  redis(raw, {"HSET", "recourse:{t}:quorum", "a", std::to_string(now + 60000)});
  redis(raw, {"HSET", "recourse:{old-pay}:ledger", "state", "committed", "key", "k", "updated", "1",
              "lease", "0"});
  CHECK(store->count("old/t", {}, now)->attempts == 3);
  CHECK(store->bucket("t", recourse::BucketEvent::Read, {}, now) == 4000);
  CHECK(store->vote("t", "b", true, 60000, now) == 2);  // a's vote and b's
  CHECK(store->read("old-pay", now)->state == LedgerState::Committed);
  const Outcome d = host.decide("old");
  CHECK_FALSE(d.flagged());
  CHECK(d.attempt == 4);
  // Written back as format 3, every field present.
  const std::string old = fields(raw, "recourse:{old/t}:op");
  INFO(old);
  CHECK(old.find("attempts=4 cost=1 format=3 last=") == 0);
  CHECK(old.find(" pending=0 pushback=0 repairs=0 repeats=1 started=" + ms) != std::string::npos);
  CHECK(fields(raw, "recourse:{t}:quorum").find("format=3 w:a=") == 0);
  CHECK(fields(raw, "recourse:{t}:tool").find("format=3") != std::string::npos);
  CHECK(fields(raw, "recourse:{t}:tool").find("isolated=0") != std::string::npos);
  CHECK(fields(raw, "recourse:{t}:tool").find("hold_until=0") != std::string::npos);

  // Format 1: every field of its format, none of format 2's (hold_until reads as 0); a format-1
  // hash missing one of its own fields is still tampered.
  const std::vector<std::string> tool1 = {
      "format", "1", "circuit",  "0", "consecutive", "0", "window", "",    "calls", "0",
      "opened", "0", "probe_op", "",  "probe_until", "0", "milli",  "3000"};
  redis(raw, {"DEL", "recourse:{t1}:tool"});
  redis(raw, with({"HSET", "recourse:{t1}:tool"}, tool1));
  CHECK(store->bucket("t1", recourse::BucketEvent::Read, {}, now) == 3000);
  CHECK(store->tool("t1", now)->hold_until_ms == 0);
  redis(raw, {"DEL", "recourse:{t1}:tool"});
  redis(raw, with({"HSET", "recourse:{t1}:tool"}, without(tool1, "milli")));
  CHECK_FALSE(store->bucket("t1", recourse::BucketEvent::Read, {}, now));
  // Format 1: every field but pushback, which format 2 added; it reads as 0.
  redis(raw, with({"HSET", "recourse:{one/t}:op"}, with(op, {"format", "1"})));
  CHECK(store->count("one/t", {}, now)->pushback_attempt == 0);
  CHECK(host.decide("one").attempt == 4);
  CHECK(fields(raw, "recourse:{one/t}:op").find(" format=3 ") != std::string::npos);
}
#endif

// ---- SQLite ---------------------------------------------------------------------------------
#ifdef RECOURSE_HAVE_SQLITE
namespace {

// A raw connection to the store's file, for tampering (closed at the end of its scope).
struct Raw {
  explicit Raw(const std::string& path) { REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK); }
  ~Raw() { sqlite3_close(db); }
  void exec(const std::string& sql) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    INFO(sql.substr(0, 200) << ": " << (error ? error : ""));
    sqlite3_free(error);
    REQUIRE(rc == SQLITE_OK);
  }
  /// Puts `value` in the state row of `kind` and `key` (alive for a day).
  void state(const std::string& kind, const std::string& key, const std::string& value) {
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO state VALUES (?, ?, ?, ?)", -1, &s,
                               nullptr) == SQLITE_OK);
    sqlite3_bind_text(s, 1, kind.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 4, test::now_ms() + 86400000);
    const int rc = sqlite3_step(s);
    sqlite3_finalize(s);
    REQUIRE(rc == SQLITE_DONE);
  }
  std::string value(const std::string& kind, const std::string& key) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, "SELECT value FROM state WHERE kind = ? AND key = ?", -1, &s, nullptr);
    sqlite3_bind_text(s, 1, kind.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, key.c_str(), -1, SQLITE_TRANSIENT);
    std::string out = sqlite3_step(s) == SQLITE_ROW
                          ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0))
                          : "";
    sqlite3_finalize(s);
    return out;
  }
  sqlite3* db = nullptr;
};

std::shared_ptr<recourse::Store> open_sqlite(const std::string& path, std::int64_t busy_ms = 200) {
  recourse::StoreOptions o;
  o.busy_ms = busy_ms;
  o.down_ms = 100;
  auto r = recourse::open_store("sqlite:" + path, o);
  INFO(r.message());
  REQUIRE(r.ok());
  return r.value();
}

}  // namespace

TEST_CASE("faults: tampered sqlite records are store_unavailable, format-0 ones are migrated",
          "[faults][sqlite]") {
  test::TempDir dir;
  const std::string path = dir.path + "/state.db";
  auto store = open_sqlite(path);
  Raw raw(path);
  Host host(store);
  const std::int64_t now = test::now_ms();
  const std::string ms = std::to_string(now);
  const std::string op = R"("attempts":3,"repairs":0,"repeats":3,"cost":3,"startedMs":)" + ms +
                         R"(,"lastFailure":7,"repairPending":false)";
  const std::string tool = R"("circuit":"closed","consecutiveFailures":0,"window":0,)"
                           R"("windowCalls":0,"openedMs":0,"probeTaken":false,)"
                           R"("probeOperation":"","probeUntilMs":0,"milliTokens":4000)";
  struct Tampered {
    const char* name;
    const char* kind;
    std::string value;
  };
  const std::vector<Tampered> cases = {
      {"null", "operation", "null"},
      {"{}", "operation", "{}"},
      {"[3]", "operation", "[3]"},
      {"not JSON", "operation", "{not json"},
      {"a 100k-deep array", "operation", std::string(100000, '[') + std::string(100000, ']')},
      {"attempts missing", "operation", "{" + op.substr(13) + "}"},
      {"attempts twice", "operation", "{\"attempts\":9," + op + "}"},
      {"a newer format", "operation", "{\"format\":4," + op + ",\"pushbackAttempt\":0}"},
      {"format 2 without pushbackAttempt", "operation", "{\"format\":2," + op + "}"},
      {"format 2 without holdUntilMs", "tool", "{\"format\":2," + tool + "}"},
      {"format 3 without isolated", "tool", "{\"format\":3," + tool + ",\"holdUntilMs\":0}"},
      {"attempts a string", "operation", R"({"attempts":"3")" + op.substr(12) + "}"},
      {"an unknown field", "operation", "{\"format\":1,\"extra\":1," + op + "}"},
      {"a circuit unknown", "tool", "{" + std::string(tool).replace(11, 6, "ajar") + "}"},
      {"tokens below -1", "tool", "{" + tool.substr(0, tool.size() - 4) + "-2000}"},
      {"a vote not a number", "quorum", R"({"format":1,"votes":{"a":"soon"}})"},
  };
  for (const auto& t : cases) {
    INFO(t.name);
    const std::string operation = std::string("tampered ") + t.name;
    const std::string counters = operation + "/t";  // per operation and tool (the host's "t")
    raw.state(t.kind, std::string(t.kind) == "operation" ? counters : "t", t.value);
    if (std::string(t.kind) == "operation") CHECK_FALSE(store->count(counters, {}, now));
    if (std::string(t.kind) == "tool")
      CHECK_FALSE(store->bucket("t", recourse::BucketEvent::Read, {}, now));
    if (std::string(t.kind) == "quorum") CHECK_FALSE(store->vote("t", "b", true, 1000, now));
    if (std::string(t.kind) != "quorum") CHECK(host.decide(operation).conservative());
    CHECK(store->bucket("healthy", recourse::BucketEvent::Read, {}, now) == 10000);  // no breaker
    raw.exec("DELETE FROM state WHERE key <> 'healthy'");
  }

  // A ledger row whose columns are not its record's.
  raw.exec("INSERT INTO ledger VALUES ('bad-state', 'bogus', 'k', 1, 0, 9e15)");
  raw.exec("INSERT INTO ledger VALUES ('bad-time', 'committed', 'k', 'soon', 0, 9e15)");
  for (const char* operation : {"bad-state", "bad-time"}) {
    INFO(operation);
    CHECK_FALSE(store->read(operation, now));
    const Outcome d = host.decide(operation, nullptr);
    CHECK(d.side_effect == recourse::SideEffect::Unknown);
    CHECK(d.flagged());
  }
  CHECK_FALSE(store->entries(100, now));
  raw.exec("DELETE FROM ledger");

  // Format 0: the records of before formats (today's fields, no "format"), under today's key of
  // operation "old" and tool "t".
  raw.state("operation", "old/t", "{" + op + "}");
  raw.state("tool", "t", "{" + tool + "}");
  raw.state("quorum", "t", R"({"a":)" + std::to_string(now + 60000) + "}");
  CHECK(store->count("old/t", {}, now)->attempts == 3);
  CHECK(store->bucket("t", recourse::BucketEvent::Read, {}, now) == 4000);
  CHECK(store->vote("t", "b", true, 60000, now) == 2);
  const Outcome d = host.decide("old");
  CHECK_FALSE(d.flagged());
  CHECK(d.attempt == 4);
  CHECK(raw.value("operation", "old/t").find(R"({"attempts":4,"cost":4,"format":3,)") == 0);
  CHECK(raw.value("quorum", "t").find("{\"format\":3,\"votes\":{\"a\":") == 0);
  // Format 1: a tool record without holdUntilMs (format 2 added it) is migrated, not tampered.
  raw.state("tool", "t1", "{\"format\":1," + tool + "}");
  CHECK(store->bucket("t1", recourse::BucketEvent::Read, {}, now) == 4000);
  CHECK(store->tool("t1", now)->hold_until_ms == 0);
  // Format 1: every field but pushbackAttempt, which format 2 added; it reads as 0.
  raw.state("operation", "one/t", "{\"format\":1," + op + "}");
  CHECK(store->count("one/t", {}, now)->pushback_attempt == 0);
  CHECK(host.decide("one").attempt == 4);
  CHECK(raw.value("operation", "one/t").find(R"("format":3,)") != std::string::npos);
}

TEST_CASE("faults: a tampered sqlite record read by decide is flagged and not retried",
          "[faults][sqlite][cli]") {
  test::TempDir dir;
  const std::string db = dir.path + "/state.db";
  const std::string decide = state_commands(dir.path)[0] + " --state sqlite:" + db;
  auto run = [&] {
    const auto r = test::run(cli(decide));
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out);
  };
  for (int i = 1; i <= 3; ++i) CHECK(run()["attempt"] == i);
  Raw(db).exec("UPDATE state SET value = '{}' WHERE kind = 'operation'");
  const auto d = run();
  CHECK(d["route"] == "degrade");  // search.query's on_exhausted: the fallback has no tokens
  CHECK(d["rule"] == "budget:retry_tokens");
  CHECK(d["warnings"].dump().find("store_unavailable") != std::string::npos);
}

TEST_CASE("faults: a sqlite file locked or truncated", "[faults][sqlite]") {
  test::TempDir dir;
  const std::string path = dir.path + "/state.db";
  auto store = open_sqlite(path, 50);
  auto now = [] { return test::now_ms(); };
  REQUIRE(store->claim("paid", "key-paid", 60000, now())->claimed);
  REQUIRE(store->transition("paid", LedgerState::Committed, now())->state ==
          LedgerState::Committed);
  auto host = std::make_unique<Host>(store);
  CHECK_FALSE(host->decide("before").flagged());

  SECTION("locked by another writer") {
    auto locker = std::make_unique<Raw>(path);
    locker->exec("BEGIN IMMEDIATE");
    locker->exec("INSERT OR REPLACE INTO state VALUES ('x', 'x', '{}', 0)");
    // Reads still work beside the writer (WAL); every write waits busy_ms and fails.
    for (const char* operation : {"locked-1", "locked-2"}) {
      INFO(operation);
      const Outcome d = host->decide(operation);
      CHECK(d.conservative());
      CHECK(d.attempt == 1);
    }
    CHECK_FALSE(store->claim("new", "key", 60000, now()));  // not acknowledged
    const auto r = test::run(
        cli(state_commands(dir.path)[0] + " --state sqlite:" + path + " 2>&1 >/dev/null"));
    CHECK(r.status == 1);  // at open: one line naming the file
    CHECK(r.out == "error: --state: sqlite:" + path + ": database is locked\n");
    locker.reset();  // rolled back
    test::sleep_ms(150);
    CHECK_FALSE(host->decide("after").flagged());
    const Outcome again = host->decide("locked-1");  // the store lost its first attempt
    CHECK(again.flagged());
    CHECK(again.attempt == 2);  // the local count
    CHECK(store->read("paid", now())->state == LedgerState::Committed);
  }
  SECTION("truncated") {
    host.reset();
    store.reset();  // closes the file: its WAL is checkpointed into it
    std::filesystem::resize_file(path, 4096);
    auto r = recourse::open_store("sqlite:" + path);
    CHECK_FALSE(r.ok());
    CHECK(r.message() == "sqlite:" + path + ": database disk image is malformed");
    // The file opens and then fails its first statement: the failed open closes the connection
    // it made, so SQLite holds no more memory than before it.
    const sqlite3_int64 before = sqlite3_memory_used();
    CHECK_FALSE(recourse::open_store("sqlite:" + path).ok());
    CHECK(sqlite3_memory_used() == before);
    every_command_fails(dir.path, "sqlite:" + path,
                        "error: --state: sqlite:" + path + ": database disk image is malformed");
  }
}
#endif
