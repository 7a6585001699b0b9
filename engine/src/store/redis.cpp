// The Redis store: a fleet of processes on many hosts sharing one Redis (https://redis.io/docs/
// interact/programmability/eval-intro/). hiredis 0.14 (Debian 12), using only the API it shares
// with hiredis 1.x: redisConnect*WithTimeout, redisSetTimeout, redisCommandArgv, freeReplyObject.
//
// Each operation is one Lua script over one key, so it is atomic; the scripts are loaded once
// (SCRIPT LOAD), called by EVALSHA and loaded again when the server answers NOSCRIPT (a restart
// or a failover empties its script cache). Time comes from the server's TIME inside the script,
// so the fleet shares one clock; the caller's now_ms is ignored. Tokens are integer
// milli-tokens (Redis truncates Lua numbers to integers in replies), the 64-call breaker window
// is a string of '0'/'1' (a Lua number holds 53 bits), the failure hash a decimal string. Every
// key gets a TTL (PEXPIRE) and a hash tag, recourse:{<tool or operation>}:<kind>, so a cluster
// keeps each script's key in one slot. The rules are those of logic.cpp; the scripts are in
// redis_scripts.cpp.
//
// Every hash is a record of store_logic's record_fields() plus `format` (kRecordFormat): the
// scripts check each one they load against those shapes (put in the prelude as SHAPES, with
// SINCE the format that added a field) and write every field back. A hash without `format`
// (format 0) may lack fields, and one of an older format lacks the fields added since; both
// read as their defaults. A bad hash fails its script with a BADRECORD error, which fails that
// call alone. A tool's quorum votes are the fields w:<worker> beside `format` (format 0: the bare
// workers).
//
// Every command has a short timeout (StoreOptions::timeout_ms); after a failure the store's own
// breaker fails calls fast for down_ms, then reconnects. The connection is dropped on any I/O
// error or timeout, and nothing is sent on it after that. The ledger is enabled only when the
// server runs with appendonly yes and appendfsync always (checked at connect).
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <stdexcept>

#include "store/backends.hpp"
#include "store/logic.hpp"
#include "store/redis_scripts.hpp"

namespace recourse::detail {
namespace {

// Whether `r` is a script's BADRECORD error: one record is bad, the server is fine.
bool bad_record(const redisReply* r) {
  return r->type == REDIS_REPLY_ERROR &&
         std::string_view(r->str, r->len).substr(0, 10) == "BADRECORD ";
}

using Reply = std::unique_ptr<redisReply, void (*)(void*)>;

std::int64_t integer(const redisReply* r) {
  if (r->type == REDIS_REPLY_INTEGER) return r->integer;
  if (r->type == REDIS_REPLY_STRING) return std::stoll(std::string(r->str, r->len));
  throw std::runtime_error("unexpected reply");
}

std::string text(const redisReply* r) {
  if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)
    throw std::runtime_error("unexpected reply");
  return std::string(r->str, r->len);
}

const redisReply* element(const redisReply* r, std::size_t i) {
  if (r->type != REDIS_REPLY_ARRAY || i >= r->elements) throw std::runtime_error("short reply");
  return r->element[i];
}

// Blocks SIGPIPE in this thread while it talks to the server, so writing to a dead server fails
// with an error instead of killing the host; a SIGPIPE raised meanwhile is consumed.
class NoSigpipe {
 public:
  NoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~NoSigpipe() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE)) {
      const timespec zero{0, 0};
      sigtimedwait(&pipe_, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
};

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class RedisStore final : public Store {
 private:
  static CircuitState circuit(const redisReply* r) {
    const std::int64_t c = integer(r);
    if (c < 0 || c > 2) throw std::runtime_error("bad circuit");
    return static_cast<CircuitState>(c);
  }
  // A tool's health from the tool and control scripts' reply (Lua's health()).
  static ToolHealth tool_health(const redisReply* r) {
    ToolHealth h;
    h.circuit = circuit(element(r, 0));
    h.consecutive_failures = integer(element(r, 1));
    const std::string window = text(element(r, 2));
    for (std::size_t i = 0; i < window.size() && i < 64; ++i)
      if (window[i] == '1') h.window |= std::uint64_t{1} << i;
    h.window_calls = integer(element(r, 3));
    h.opened_ms = integer(element(r, 4));
    h.probe_operation = text(element(r, 5));
    h.probe_until_ms = integer(element(r, 6));
    h.probe_taken = h.probe_until_ms > 0;
    h.milli_tokens = integer(element(r, 7));
    h.hold_until_ms = integer(element(r, 8));
    h.isolated = integer(element(r, 9)) != 0;
    return h;
  }
  static std::string key(const char* kind, std::string_view name) {
    return "recourse:{" + std::string(name) + "}:" + kind;
  }
  std::string ttl() const {
    return std::to_string(std::max<std::int64_t>(1, options_.state_ttl_ms));
  }
  std::string ledger_ttl() const {
    return std::to_string(std::max<std::int64_t>(1, options_.ledger_ttl_ms));
  }

  std::optional<LedgerEntry> ledger(RedisScript script, std::string_view operation,
                                    std::vector<std::string> args) noexcept {
    if (!ledger_refusal.empty()) return std::nullopt;
    return call(script, key("ledger", operation), std::move(args), [&](const redisReply* r) {
      LedgerEntry e;
      e.operation = std::string(operation);
      const std::string state = text(element(r, 0));
      e.state = state == "absent"    ? LedgerState::Absent
                : state == "unknown" ? LedgerState::Unknown
                                     : ledger_state(state);
      e.idempotency_key = text(element(r, 1));
      e.updated_ms = integer(element(r, 2));
      e.lease_until_ms = integer(element(r, 3));
      e.claimed = integer(element(r, 4)) != 0;
      return e;
    });
  }

  // Connects (within timeout_ms); the first time, checks the ledger's durability and loads the
  // scripts. Throws on failure, naming the server (the context is dropped).
  void connect() {
    const timeval tv{static_cast<time_t>(options_.timeout_ms / 1000),
                     static_cast<suseconds_t>(options_.timeout_ms % 1000 * 1000)};
    ctx_ = unix_path_.empty() ? redisConnectWithTimeout(host_.c_str(), port_, tv)
                              : redisConnectUnixWithTimeout(unix_path_.c_str(), tv);
    if (!ctx_ || ctx_->err) {
      const std::string why = ctx_ ? ctx_->errstr : "out of memory";
      drop();
      throw std::runtime_error("cannot connect to " + url_ + ": " + why);
    }
    if (redisSetTimeout(ctx_, tv) != REDIS_OK) {
      drop();
      throw std::runtime_error("cannot set a timeout on " + url_);
    }
    if (!checked_) {
      checked_ = true;
      auto fsync = raw({"CONFIG", "GET", "appendfsync"});
      auto aof = raw({"CONFIG", "GET", "appendonly"});
      auto value = [](const Reply& r) {
        const bool found = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                           r->element[1]->type == REDIS_REPLY_STRING;
        return found ? text(r->element[1]) : std::string("?");
      };
      if (value(aof) != "yes" || value(fsync) != "always")
        ledger_refusal = "ledger disabled: " + url_ + " runs with appendonly " + value(aof) +
                         " and appendfsync " + value(fsync) +
                         " (the ledger needs appendonly yes and appendfsync always)";
    }
    if (shas_[0].empty())  // once: after a restart, NOSCRIPT loads each script again
      for (int i = 0; i < kRedisScripts; ++i) load(i);
  }

  void load(int i) {
    auto r = raw({"SCRIPT", "LOAD", sources_[i]});
    if (r->type != REDIS_REPLY_STRING)
      throw std::runtime_error("SCRIPT LOAD failed on " + url_ + ": " +
                               std::string(r->str ? r->str : "", r->len));
    shas_[i] = text(r.get());
    ++script_loads;
  }

  void drop() {
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
  }

  // One command on the live connection: its reply, never null. Throws, naming the server, when
  // there is no connection or on an I/O error or a timeout (the connection is dropped then:
  // hiredis leaves it unusable).
  Reply raw(const std::vector<std::string>& args) {
    if (!ctx_) throw std::runtime_error("not connected to " + url_);
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data()));
    const int error = errno;
    if (!r) {
      const bool timeout = ctx_->err == REDIS_ERR_IO && (error == EAGAIN || error == EWOULDBLOCK);
      const std::string why =
          timeout ? "did not answer within " + std::to_string(options_.timeout_ms) + " ms"
                  : std::string("failed: ") + ctx_->errstr;
      drop();
      throw std::runtime_error(url_ + " " + why);
    }
    return Reply(r, freeReplyObject);
  }

  // A command under the lock and the store's breaker: reconnects when the connection is gone
  // and the breaker allows; an empty Reply on failure (the breaker opens).
  Reply command(const std::vector<std::string>& args) {
    std::lock_guard<std::mutex> lock(mutex_);
    return guarded([&] { return raw(args); });
  }

  template <typename Body>
  Reply guarded(Body body) {
    const std::int64_t now = wall_ms();
    if (now < down_until_) return Reply(nullptr, freeReplyObject);
    NoSigpipe no_sigpipe;
    try {
      if (!ctx_) connect();
      Reply r = body();
      if (r->type == REDIS_REPLY_ERROR && !bad_record(r.get()))
        throw std::runtime_error("command failed");
      return r;
    } catch (const std::exception&) {
      drop();
      down_until_ = now + options_.down_ms;
      return Reply(nullptr, freeReplyObject);
    }
  }

  // EVALSHA of one script on one key, loading it again on NOSCRIPT; `parse` reads the reply.
  // nullopt when the store cannot answer or the record is bad (BADRECORD).
  template <typename Parse>
  auto call(RedisScript script, const std::string& key, std::vector<std::string> args,
            Parse parse) noexcept -> std::optional<decltype(parse(nullptr))> {
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      Reply r = guarded([&] {
        std::vector<std::string> argv = {"EVALSHA", shas_[script], "1", key};
        argv.insert(argv.end(), args.begin(), args.end());
        Reply reply = raw(argv);
        if (reply->type == REDIS_REPLY_ERROR &&
            std::string_view(reply->str, reply->len).substr(0, 8) == "NOSCRIPT") {
          load(script);
          argv[1] = shas_[script];
          reply = raw(argv);
        }
        return reply;
      });
      if (!r || bad_record(r.get())) return std::nullopt;
      return parse(r.get());
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

 public:
  RedisStore(std::string_view url, const StoreSpec& spec, const StoreOptions& o)
      : url_(url), host_(spec.host), port_(spec.port), options_(o) {
    if (spec.kind == StoreSpec::Kind::RedisUnix) unix_path_ = spec.path;
    for (int i = 0; i < kRedisScripts; ++i) sources_[i] = redis_script_source(i);
    std::lock_guard<std::mutex> lock(mutex_);
    NoSigpipe no_sigpipe;
    try {
      connect();
    } catch (...) {
      drop();  // the destructor of a store whose constructor threw never runs
      throw;
    }
  }
  ~RedisStore() override {
    if (ctx_) redisFree(ctx_);
  }

  /// Whether the ledger is enabled, and why not.
  std::string ledger_refusal;

  std::optional<std::int64_t> bucket(std::string_view tool, BucketEvent event,
                                     const BucketSpec& spec, std::int64_t) noexcept override {
    return call(kBucket, key("tool", tool),
                {std::to_string(static_cast<int>(event)), std::to_string(spec.max_milli),
                 std::to_string(spec.ratio_milli), ttl()},
                integer);
  }
  std::optional<CircuitState> outcome(std::string_view tool, std::string_view operation,
                                      bool failed, const BreakerSpec& b,
                                      std::int64_t) noexcept override {
    return call(kOutcome, key("tool", tool),
                {std::string(operation), failed ? "1" : "0", std::to_string(b.failures),
                 std::to_string(b.ratio_milli), std::to_string(b.window),
                 std::to_string(b.min_calls), ttl()},
                circuit);
  }
  std::optional<CircuitState> probe(std::string_view tool, std::string_view operation,
                                    const BreakerSpec& b, std::int64_t) noexcept override {
    return call(kProbe, key("tool", tool),
                {std::string(operation), std::to_string(b.cooldown_ms),
                 std::to_string(b.probe_lease_ms), ttl()},
                circuit);
  }
  std::optional<std::int64_t> vote(std::string_view tool, std::string_view worker, bool open,
                                   std::int64_t vote_ms, std::int64_t) noexcept override {
    return call(kVote, key("quorum", tool),
                {std::string(worker), open ? "1" : "0", std::to_string(vote_ms), ttl()}, integer);
  }
  std::optional<ToolHealth> tool(std::string_view tool, std::int64_t) noexcept override {
    return call(kTool, key("tool", tool), {}, tool_health);
  }
  std::optional<ToolHealth> control(std::string_view tool, BreakerCommand command,
                                    std::int64_t wait_ms, std::int64_t) noexcept override {
    return call(kControl, key("tool", tool),
                {std::to_string(static_cast<int>(command)),
                 std::to_string(std::clamp<std::int64_t>(wait_ms, 0, kMaxHoldMs)), ttl()},
                tool_health);
  }
  std::optional<CircuitState> hold(std::string_view tool, std::int64_t wait_ms,
                                   std::int64_t) noexcept override {
    return call(kHold, key("tool", tool),
                {std::to_string(std::clamp<std::int64_t>(wait_ms, 0, kMaxHoldMs)), ttl()}, circuit);
  }
  std::optional<OperationState> count(std::string_view operation, const CountEvent& e,
                                      std::int64_t) noexcept override {
    return call(
        kCount, key("op", operation),
        {std::to_string(static_cast<int>(e.kind)), std::to_string(e.cost),
         std::to_string(e.failure), e.repair ? "1" : "0", ttl(), std::to_string(e.pushback)},
        [](const redisReply* r) {
          OperationState op;
          op.attempts = integer(element(r, 0));
          op.repairs = integer(element(r, 1));
          op.repeats = integer(element(r, 2));
          op.cost = integer(element(r, 3));
          op.started_ms = integer(element(r, 4));
          op.last_failure = std::stoull(text(element(r, 5)));
          op.repair_pending = integer(element(r, 6)) != 0;
          op.pushback_attempt = integer(element(r, 7));
          return op;
        });
  }
  std::optional<LedgerEntry> claim(std::string_view operation, std::string_view idempotency_key,
                                   std::int64_t lease_ms, std::int64_t) noexcept override {
    return ledger(kClaim, operation,
                  {std::string(idempotency_key), std::to_string(lease_ms), ledger_ttl()});
  }
  std::optional<LedgerEntry> transition(std::string_view operation, LedgerState to,
                                        std::int64_t) noexcept override {
    return ledger(kTransition, operation, {to_string(to), ledger_ttl()});
  }
  std::optional<LedgerEntry> read(std::string_view operation, std::int64_t) noexcept override {
    return ledger(kRead, operation, {});
  }
  std::optional<std::vector<LedgerEntry>> entries(std::size_t limit,
                                                  std::int64_t now) noexcept override {
    if (!ledger_refusal.empty()) return std::nullopt;
    std::vector<std::string> keys;
    std::string cursor = "0";
    try {
      do {  // SCAN: keys of the ledger, a batch at a time
        auto batch = command({"SCAN", cursor, "MATCH", "recourse:{*}:ledger", "COUNT", "1000"});
        if (!batch) return std::nullopt;
        cursor = text(element(batch.get(), 0));
        const redisReply* found = element(batch.get(), 1);
        for (std::size_t i = 0; i < found->elements; ++i) keys.push_back(text(element(found, i)));
      } while (cursor != "0");
    } catch (const std::exception&) {  // a reply not of SCAN's shape
      return std::nullopt;
    }
    std::sort(keys.begin(), keys.end());
    std::vector<LedgerEntry> out;
    for (const std::string& k : keys) {
      if (out.size() >= limit) break;
      auto e = read(std::string_view(k).substr(10, k.size() - 10 - 8), now);
      if (!e) return std::nullopt;
      if (e->state != LedgerState::Absent) out.push_back(*e);
    }
    return out;
  }
  std::string name() const override { return url_; }

  /// Scripts loaded (at connect and after NOSCRIPT).
  std::int64_t script_loads = 0;

 private:
  std::string url_, host_, unix_path_;
  int port_;
  StoreOptions options_;
  std::string sources_[kRedisScripts], shas_[kRedisScripts];
  std::mutex mutex_;
  redisContext* ctx_ = nullptr;
  std::int64_t down_until_ = 0;
  bool checked_ = false;
};

}  // namespace

StoreResult open_redis(std::string_view url, const StoreSpec& spec, const StoreOptions& options) {
  StoreResult r;
  try {
    auto store = std::make_shared<RedisStore>(url, spec, options);
    if (!store->ledger_refusal.empty()) r.warnings.push_back(store->ledger_refusal);
    r.store = std::move(store);
  } catch (const std::exception& e) {
    r.error = e.what();  // names the server
  }
  return r;
}

std::int64_t redis_script_loads(const Store& store) {
  const auto* redis = dynamic_cast<const RedisStore*>(&store);
  return redis ? redis->script_loads : -1;
}

}  // namespace recourse::detail
