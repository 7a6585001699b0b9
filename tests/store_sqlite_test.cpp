// The SQLite store: the conformance suite with clients in separate processes, and writer
// processes killed with SIGKILL mid-run losing no acknowledged ledger entry.
#ifdef RECOURSE_HAVE_SQLITE
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "store_conformance.hpp"
#include "support.hpp"

namespace {

std::shared_ptr<recourse::Store> open(const std::string& path, recourse::StoreOptions o) {
  o.busy_ms = 5000;  // a loaded machine's fsyncs (the ledger's synchronous=FULL)
  auto r = recourse::open_store("sqlite:" + path, o);
  INFO(r.error);
  return r.store;
}

}  // namespace

TEST_CASE("store: the sqlite store conforms, with clients in separate processes",
          "[store][sqlite]") {
  test::TempDir dir;
  const std::string path = dir.path + "/state.db";
  test::conformance(
      {"sqlite", [&](const recourse::StoreOptions& o) { return open(path, o); }, true});
}

TEST_CASE("store: sqlite writers killed with SIGKILL lose no acknowledged ledger entry",
          "[store][sqlite]") {
  test::TempDir dir;
  const std::string path = dir.path + "/ledger.db";
  REQUIRE(open(path, {}));  // creates the schema before the writers race
  constexpr int kWriters = 4;
  // Each writer claims op-<w>-<i>, logs "claimed" once the claim returned, commits it, logs
  // "committed"; a log line is one write(2), so it survives the SIGKILL as the row must.
  const auto results = test::concurrently(
      {"sqlite", nullptr, true}, kWriters,
      [&](int w) {
        auto store = open(path, {});
        const int log = ::open((dir.path + "/log-" + std::to_string(w)).c_str(),
                               O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (!store || log < 0) return 3;
        for (int i = 0;; ++i) {
          const std::string op = "op-" + std::to_string(w) + "-" + std::to_string(i);
          auto e = store->claim(op, "key-" + op, 60000, test::now_ms());
          if (!e) {  // busy past the timeout: not acknowledged, try again
            test::sleep_ms(5);
            continue;
          }
          if (!e->claimed) return 4;
          std::string line = "claimed " + op + "\n";
          if (write(log, line.data(), line.size()) < 0) return 5;
          auto c = store->transition(op, recourse::LedgerState::Committed, test::now_ms());
          for (; !c; c = store->transition(op, recourse::LedgerState::Committed, test::now_ms()))
            test::sleep_ms(5);
          if (c->state != recourse::LedgerState::Committed) return 6;
          line = "committed " + op + "\n";
          if (write(log, line.data(), line.size()) < 0) return 5;
        }
      },
      // The writers never end: the time-out kills them (SIGKILL) in the middle of their work.
      1000);
  CHECK(results == std::vector<int>(kWriters, -1));  // killed, not failed

  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  auto query = [&](const std::string& sql) {
    std::vector<std::string> rows;
    sqlite3_exec(
        db, sql.c_str(),
        [](void* out, int n, char** values, char**) {
          std::string row;
          for (int i = 0; i < n; ++i)
            row += std::string(i ? " " : "") + (values[i] ? values[i] : "");
          static_cast<std::vector<std::string>*>(out)->push_back(row);
          return 0;
        },
        &rows, nullptr);
    return rows;
  };
  CHECK(query("PRAGMA integrity_check") == std::vector<std::string>{"ok"});
  std::set<std::string> stored;
  for (const auto& row : query("SELECT operation, state, idempotency_key FROM ledger"))
    stored.insert(row);
  sqlite3_close(db);

  std::size_t claimed = 0, committed = 0;
  for (int w = 0; w < kWriters; ++w) {
    std::ifstream log(dir.path + "/log-" + std::to_string(w));
    std::string kind, op;
    while (log >> kind >> op) {
      const std::string key = " key-" + op;
      if (kind == "claimed") {
        ++claimed;
        INFO(op);
        CHECK((stored.count(op + " pending" + key) || stored.count(op + " committed" + key)));
      } else {
        ++committed;
        INFO(op);
        CHECK(stored.count(op + " committed" + key));
      }
    }
  }
  CHECK(claimed > 0);  // the writers got going before they were killed
  CHECK(committed > 0);
}
#endif
