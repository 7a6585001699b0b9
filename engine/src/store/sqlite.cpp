// The SQLite store: one host, many processes (https://sqlite.org/wal.html, /lang_transaction.html).
//
// Every operation is one transaction: BEGIN IMMEDIATE for every operation that may write (the
// write lock is taken up front, so two processes never both read the old value), a deferred
// BEGIN for reads. WAL lets readers run beside the one writer; a busy timeout waits for it.
// Tool and operation state are JSON rows of `state` on a connection with synchronous=NORMAL
// (lost on power loss, never on a crash); the ledger has its own table and connection with
// synchronous=FULL, so a committed claim survives power loss too. Rows carry expires_ms (the
// TTL): expired rows read as absent and are purged now and then. The store applies the
// rules of logic.hpp to the row it loaded, read by its one record reader: a row that does
// not read as its record (BadRecord) fails that call alone, and is left as it is.
#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "source/sources.hpp"
#include "store/backends.hpp"
#include "store/logic.hpp"

namespace recourse::detail {
namespace {

// One connection with its prepared statements; errors throw std::runtime_error.
class Connection {
 public:
  Connection(const std::string& path, const StoreOptions& o, const char* synchronous) {
    if (sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error("cannot open " + path + ": " + why);
    }
    // A file that opens may still fail its first statement (not a database, truncated); the
    // destructor does not run for a constructor that throws, so the connection is closed here.
    try {
      sqlite3_busy_timeout(db_, static_cast<int>(o.busy_ms));
      exec("PRAGMA journal_mode=WAL");
      exec((std::string("PRAGMA synchronous=") + synchronous).c_str());
    } catch (...) {
      sqlite3_close(db_);
      throw;
    }
  }
  ~Connection() {
    for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
    sqlite3_close(db_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void exec(const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string why = error ? error : sqlite3_errmsg(db_);
      sqlite3_free(error);
      throw std::runtime_error(why);
    }
  }
  /// The statement for `sql` (prepared once), reset, with `args` bound (text or integers).
  template <typename... Args>
  sqlite3_stmt* bind(const char* sql, const Args&... args) {
    sqlite3_stmt*& s = statements_[sql];
    if (!s && sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK)
      throw std::runtime_error(sqlite3_errmsg(db_));
    sqlite3_reset(s);
    int i = 0;
    (bind_one(s, ++i, args), ...);
    return s;
  }
  /// Steps a statement: true with a row, false when done.
  bool step(sqlite3_stmt* s) {
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) throw std::runtime_error(sqlite3_errmsg(db_));
    return false;
  }
  /// Runs `body` in one transaction (BEGIN IMMEDIATE when it may write); rolls back on error.
  template <typename Body>
  auto transaction(bool write, Body body) {
    exec(write ? "BEGIN IMMEDIATE" : "BEGIN");
    try {
      auto result = body();
      reset_all();
      exec("COMMIT");
      return result;
    } catch (...) {
      reset_all();
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

 private:
  // A statement stepped to a row and never reset keeps its read snapshot past COMMIT; the next
  // BEGIN IMMEDIATE would then fail at once with SQLITE_BUSY(_SNAPSHOT) instead of waiting.
  void reset_all() {
    for (auto& [sql, stmt] : statements_) sqlite3_reset(stmt);
  }
  void bind_one(sqlite3_stmt* s, int i, std::string_view v) {
    sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind_one(sqlite3_stmt* s, int i, std::int64_t v) { sqlite3_bind_int64(s, i, v); }
  sqlite3* db_ = nullptr;
  std::map<const char*, sqlite3_stmt*> statements_;
};

std::string column(sqlite3_stmt* s, int i) {
  const auto* text = sqlite3_column_text(s, i);
  return text ? reinterpret_cast<const char*>(text) : "";
}

class SqliteStore final : public Store {
 private:
  static std::int64_t wall_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // Runs `body` under the store's lock and its own breaker: nullopt on any error, and while the
  // breaker is open after one. A bad record fails only its call: the breaker stays closed.
  template <typename Body>
  auto guarded(Body body) noexcept -> std::optional<decltype(body())> {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::int64_t now = wall_ms();
    if (now < down_until_) return std::nullopt;
    try {
      return body();
    } catch (const BadRecord&) {
      return std::nullopt;
    } catch (const std::exception&) {
      down_until_ = now + options_.down_ms;
      return std::nullopt;
    }
  }

  // The live record of `kind` and `key`, parsed (parse_record); nullopt when there is none.
  std::optional<nlohmann::json> load(const char* kind, std::string_view key, std::int64_t now,
                                     int max_depth = 1) {
    sqlite3_stmt* s =
        state_.bind("SELECT value FROM state WHERE kind = ? AND key = ? AND expires_ms > ?",
                    std::string_view(kind), key, now);
    if (!state_.step(s)) return std::nullopt;
    return parse_record(column(s, 0), max_depth);
  }

  // Saves a row; every 1024th save also purges the rows expired by the caller's clock (the one
  // their expiry was computed with: wall clock, or a replayed trace's).
  void save(const char* kind, std::string_view key, const std::string& value, std::int64_t now,
            std::int64_t expires) {
    if (++saves_ % 1024 == 0)
      state_.step(state_.bind("DELETE FROM state WHERE expires_ms <= ?", now));
    state_.step(
        state_.bind("INSERT INTO state VALUES (?, ?, ?, ?) ON CONFLICT(kind, key) DO UPDATE SET "
                    "value = excluded.value, expires_ms = excluded.expires_ms",
                    std::string_view(kind), key, std::string_view(value), expires));
  }

  // Loads a tool's row, applies `f` (-> {changed, result}) and saves it when changed.
  template <typename F>
  auto update_tool(std::string_view tool, std::int64_t now, bool write, F f) noexcept {
    return guarded([&] {
      return state_.transaction(write, [&] {
        auto record = load("tool", tool, now);
        ToolHealth h = record ? tool_from_json(*record) : ToolHealth{};
        auto [changed, result] = f(h);
        if (changed) save("tool", tool, tool_to_json(h), now, now + options_.state_ttl_ms);
        return result;
      });
    });
  }

  // The columns of a ledger row as its record, types kept (a tampered column of the wrong type
  // reads as a bad record), then the operation.
  static constexpr const char* kEntryColumns =
      "json_object('state', state, 'idempotencyKey', idempotency_key, 'updatedMs', updated_ms, "
      "'leaseUntilMs', lease_until_ms), operation";
  static LedgerEntry entry(sqlite3_stmt* s) {
    LedgerEntry e = ledger_from_json(parse_record(column(s, 0)));
    e.operation = column(s, 1);
    return e;
  }

  // Loads a ledger row, applies `f` (-> {changed, claimed}) and saves it when changed; returns
  // the entry as it reads.
  template <typename F>
  std::optional<LedgerEntry> update_entry(std::string_view operation, std::int64_t now, bool write,
                                          F f) noexcept {
    return guarded([&] {
      return ledger_.transaction(write, [&] {
        static const std::string sql = std::string("SELECT ") + kEntryColumns +
                                       " FROM ledger WHERE operation = ? AND expires_ms > ?";
        sqlite3_stmt* s = ledger_.bind(sql.c_str(), operation, now);
        LedgerEntry e = ledger_.step(s) ? entry(s) : LedgerEntry{};
        e.operation = std::string(operation);
        const auto [changed, claimed] = f(e);
        if (changed && ++saves_ % 1024 == 0)
          ledger_.step(ledger_.bind("DELETE FROM ledger WHERE expires_ms <= ?", now));
        if (changed)
          ledger_.step(ledger_.bind("INSERT OR REPLACE INTO ledger VALUES (?, ?, ?, ?, ?, ?)",
                                    operation, std::string_view(to_string(e.state)),
                                    std::string_view(e.idempotency_key), e.updated_ms,
                                    e.lease_until_ms, now + options_.ledger_ttl_ms));
        LedgerEntry out = view(e, now);
        out.claimed = claimed;
        return out;
      });
    });
  }

 public:
  SqliteStore(const std::string& path, const StoreOptions& o)
      : path_(path), options_(o), state_(path, o, "NORMAL"), ledger_(path, o, "FULL") {
    state_.transaction(true, [&] {
      state_.exec(
          "CREATE TABLE IF NOT EXISTS state(kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT "
          "NOT NULL, expires_ms INTEGER NOT NULL, PRIMARY KEY(kind, key)) WITHOUT ROWID");
      state_.exec(
          "CREATE TABLE IF NOT EXISTS ledger(operation TEXT PRIMARY KEY, state TEXT NOT NULL, "
          "idempotency_key TEXT NOT NULL, updated_ms INTEGER NOT NULL, lease_until_ms INTEGER "
          "NOT NULL, expires_ms INTEGER NOT NULL) WITHOUT ROWID");
      return 0;
    });
  }

  std::optional<std::int64_t> bucket(std::string_view tool, BucketEvent event,
                                     const BucketSpec& spec, std::int64_t now) noexcept override {
    return update_tool(tool, now, event != BucketEvent::Read, [&](ToolHealth& h) {
      return std::pair(event != BucketEvent::Read, apply_bucket(h, event, spec));
    });
  }
  std::optional<CircuitState> outcome(std::string_view tool, std::string_view operation,
                                      bool failed, const BreakerSpec& spec,
                                      std::int64_t now) noexcept override {
    return update_tool(tool, now, true, [&](ToolHealth& h) {
      return std::pair(true, apply_outcome(h, operation, failed, spec, now));
    });
  }
  std::optional<CircuitState> probe(std::string_view tool, std::string_view operation,
                                    const BreakerSpec& spec, std::int64_t now) noexcept override {
    return update_tool(tool, now, true, [&](ToolHealth& h) {
      const std::int64_t lease = h.probe_until_ms;
      const CircuitState c = apply_probe(h, operation, spec, now);
      return std::pair(h.probe_until_ms != lease, c);
    });
  }
  std::optional<CircuitState> hold(std::string_view tool, std::int64_t wait_ms,
                                   std::int64_t now) noexcept override {
    return update_tool(tool, now, true,
                       [&](ToolHealth& h) { return std::pair(true, apply_hold(h, wait_ms, now)); });
  }
  std::optional<ToolHealth> control(std::string_view tool, BreakerCommand command,
                                    std::int64_t wait_ms, std::int64_t now) noexcept override {
    return update_tool(tool, now, true, [&](ToolHealth& h) {
      apply_control(h, command, wait_ms, now);
      return std::pair(true, h);
    });
  }
  std::optional<std::int64_t> vote(std::string_view tool, std::string_view worker, bool open,
                                   std::int64_t vote_ms, std::int64_t now) noexcept override {
    return guarded([&] {
      return state_.transaction(true, [&] {
        auto record = load("quorum", tool, now, 2);
        auto votes = record ? votes_from_json(*record) : std::map<std::string, std::int64_t>{};
        const std::int64_t live = apply_vote(votes, worker, open, vote_ms, now);
        save("quorum", tool, votes_to_json(votes), now, now + options_.state_ttl_ms);
        return live;
      });
    });
  }
  std::optional<ToolHealth> tool(std::string_view tool, std::int64_t now) noexcept override {
    return update_tool(tool, now, false, [](ToolHealth& h) { return std::pair(false, h); });
  }
  std::optional<OperationState> count(std::string_view operation, const CountEvent& event,
                                      std::int64_t now) noexcept override {
    const bool write = event.kind != CountEvent::Read;
    return guarded([&] {
      return state_.transaction(write, [&] {
        OperationState op;
        if (event.kind == CountEvent::Success) {  // drops the counters, read or not
          state_.step(
              state_.bind("DELETE FROM state WHERE kind = 'operation' AND key = ?", operation));
          return op;
        }
        if (auto record = load("operation", operation, now)) op = operation_from_json(*record);
        apply_count(op, event, now);
        if (write)
          save("operation", operation, operation_to_json(op), now, now + options_.state_ttl_ms);
        return op;
      });
    });
  }
  std::optional<LedgerEntry> claim(std::string_view operation, std::string_view key,
                                   std::int64_t lease_ms, std::int64_t now) noexcept override {
    return update_entry(operation, now, true, [&](LedgerEntry& e) {
      const bool claimed = apply_claim(e, key, lease_ms, now);
      return std::pair(claimed, claimed);
    });
  }
  std::optional<LedgerEntry> transition(std::string_view operation, LedgerState to,
                                        std::int64_t now) noexcept override {
    return update_entry(operation, now, true, [&](LedgerEntry& e) {
      return std::pair(apply_transition(e, to, now), false);
    });
  }
  std::optional<LedgerEntry> read(std::string_view operation, std::int64_t now) noexcept override {
    return update_entry(operation, now, false,
                        [](LedgerEntry&) { return std::pair(false, false); });
  }
  std::optional<std::vector<LedgerEntry>> entries(std::size_t limit,
                                                  std::int64_t now) noexcept override {
    return guarded([&] {
      return ledger_.transaction(false, [&] {
        std::vector<LedgerEntry> out;
        static const std::string sql = std::string("SELECT ") + kEntryColumns +
                                       " FROM ledger WHERE expires_ms > ? ORDER BY operation "
                                       "LIMIT ?";
        sqlite3_stmt* s = ledger_.bind(
            sql.c_str(), now, static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
        while (ledger_.step(s)) out.push_back(view(entry(s), now));
        return out;
      });
    });
  }
  std::string name() const override { return "sqlite:" + path_; }

 private:
  std::string path_;
  StoreOptions options_;
  std::mutex mutex_;
  Connection state_, ledger_;
  std::int64_t down_until_ = 0;
  std::uint64_t saves_ = 0;
};

// Why SQLite must not open `path`, or empty when it may: a regular file (symbolic links
// followed), or nothing yet in a directory that exists. Anything else is refused before SQLite
// opens it, since SQLite would put its -journal or -wal file beside a device or a FIFO
// (sqlite:/dev/null leaves /dev/null-journal) before it fails.
std::string unusable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return S_ISREG(st.st_mode) ? "" : not_regular(st.st_mode);
  if (errno != ENOENT) return std::string("cannot be opened: ") + std::strerror(errno);
  if (::lstat(path.c_str(), &st) == 0) return "is a symbolic link to nothing";
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (::stat(dir.empty() ? "." : dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return "cannot be created: no directory " + dir.string();
  return {};
}

}  // namespace

StoreResult open_sqlite(const std::string& path, const StoreOptions& options) {
  StoreResult r;
  if (path.empty()) {
    r.error = "sqlite: needs a path (sqlite:PATH)";
    return r;
  }
  if (const std::string why = unusable(path); !why.empty()) {
    r.error = "sqlite:" + path + ": " + why;
    return r;
  }
  try {
    r.store = std::make_shared<SqliteStore>(path, options);
  } catch (const std::exception& e) {
    r.error = "sqlite:" + path + ": " + e.what();
  }
  return r;
}

}  // namespace recourse::detail
