// The SQLite store: the conformance suite with clients in separate processes, and writer
// processes killed with SIGKILL mid-run losing no acknowledged ledger entry.
#ifdef RECOURSE_HAVE_SQLITE
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "store_conformance.hpp"
#include "support.hpp"

namespace {

std::shared_ptr<recourse::Store> open(const std::string& path, recourse::StoreOptions o) {
  o.busy_ms = 5000;  // a loaded machine's fsyncs (the ledger's synchronous=FULL)
  auto r = recourse::open_store("sqlite:" + path, o);
  INFO(r.message());
  return r.value();
}

}  // namespace

TEST_CASE("store: the sqlite store conforms, with clients in separate processes",
          "[store][sqlite]") {
  test::TempDir dir;
  const std::string path = dir.path + "/state.db";
  test::conformance(
      {"sqlite", [&](const recourse::StoreOptions& o) { return open(path, o); }, true});
}

TEST_CASE("store: sqlite refuses a path that is not a regular file, leaving nothing beside it",
          "[store][sqlite]") {
  test::TempDir dir;
  const std::string fifo = dir.path + "/fifo", directory = dir.path + "/dir",
                    device = dir.path + "/null", dangling = dir.path + "/dangling";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE(::mkdir(directory.c_str(), 0700) == 0);
  REQUIRE(::symlink((dir.path + "/nowhere").c_str(), dangling.c_str()) == 0);
  // A character device like /dev/null, made in the temp directory (root only; else left out).
  const bool have_device = ::mknod(device.c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0;
  if (!have_device) WARN("mknod: " << std::strerror(errno) << "; the device case is left out");
  const struct {
    std::string path, error;
  } refused[] = {
      {fifo, "is a FIFO, not a regular file"},
      {directory, "is a directory"},
      {device, "is a character device, not a regular file"},
      {dangling, "is a symbolic link to nothing"},
      {dir.path + "/no/such/dir/state.db",
       "cannot be created: no directory " + dir.path + "/no/such/dir"},
  };
  for (const auto& r : refused) {
    if (r.path == device && !have_device) continue;
    INFO(r.path);
    const auto opened = recourse::open_store("sqlite:" + r.path);
    CHECK_FALSE(opened.ok());
    CHECK(opened.message() == "sqlite:" + r.path + ": " + r.error);
  }
  for (const char* suffix : {"-journal", "-wal", "-shm"})
    for (const auto& r : refused) CHECK(::access((r.path + suffix).c_str(), F_OK) != 0);
  CHECK(::access((dir.path + "/nowhere").c_str(), F_OK) != 0);
  CHECK(open(dir.path + "/new.db", {}));  // a file yet to be made is fine
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
