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
// keeps each script's key in one slot. The rules are those of logic.cpp.
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

namespace recourse::detail {
namespace {

// The prelude of every script, after the lines `local FORMAT, SHAPES, SINCE = ...` (shapes()). A
// record's fields are text; CHECKS says which text each field type accepts (the Redis encoding
// of store_logic's FieldType), DEFAULTS what a missing field of a format-0 record reads as (a
// type without one is required).
constexpr const char* kPrelude = R"lua(
if redis.replicate_commands then pcall(redis.replicate_commands) end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function whole(s, min, max)
  if #s > 16 or not string.find(s, '^%-?%d+$') then return false end
  local n = tonumber(s)
  return n >= min and n <= max
end
local CHECKS = {
  count = function(s) return whole(s, 0, 2^53) end,
  time = function(s) return whole(s, -2^53, 2^53) end,
  tokens = function(s) return whole(s, -1, 2^53) end,
  calls = function(s) return whole(s, 0, 64) end,
  hash = function(s)
    return string.find(s, '^%d+$') ~= nil and (#s < 20 or (#s == 20 and s <= '18446744073709551615'))
  end,
  flag = function(s) return s == '0' or s == '1' end,
  text = function() return true end,
  circuit = function(s) return s == '0' or s == '1' or s == '2' end,
  window = function(s) return #s <= 64 and string.find(s, '^[01]*$') ~= nil end,
  ledger = function(s) return s == 'pending' or s == 'committed' or s == 'released' end,
}
local DEFAULTS = {count = '0', time = '0', tokens = '-1', calls = '0', hash = '0', flag = '0',
                  text = '', circuit = '0', window = ''}
local function bad(key, why) error({err = 'BADRECORD ' .. key .. ': ' .. why}) end
local function fields(key)
  local h, raw = {}, redis.call('HGETALL', key)
  for i = 1, #raw, 2 do h[raw[i]] = raw[i + 1] end
  local format = h.format
  if format ~= nil and not whole(format, 1, tonumber(FORMAT)) then
    bad(key, 'format ' .. format .. ', not 1 to ' .. FORMAT)
  end
  h.format = nil
  return h, format and tonumber(format), #raw > 0
end
-- The record at `key` ({} when there is none), checked against the fields of SHAPES[kind] its
-- format has: a field missing from a format-0 record, or added after the record's format,
-- reads as its default.
local function load(key, kind)
  local h, format, found = fields(key)
  if not found then return h end
  local shape = SHAPES[kind]
  local function has(f) return format == nil or (SINCE[f] or 1) <= format end
  for f, v in pairs(h) do
    if not shape[f] or not has(f) then bad(key, 'unknown field ' .. f) end
    if not CHECKS[shape[f]](v) then bad(key, f .. ' is not a ' .. shape[f]) end
  end
  for f, t in pairs(shape) do
    if h[f] == nil then
      if (format and has(f)) or not DEFAULTS[t] then bad(key, f .. ' missing') end
      h[f] = DEFAULTS[t]
    end
  end
  return h
end
local function num(h, f, d) return tonumber(h[f] or d) end
local function text(v) if type(v) == 'number' then return string.format('%d', v) end return v end
-- Writes every field of SHAPES[kind] (h's value or the default) and FORMAT.
local function save(key, kind, h, ttl)
  local args = {'format', FORMAT}
  for f, t in pairs(SHAPES[kind]) do
    args[#args + 1] = f
    args[#args + 1] = h[f] ~= nil and text(h[f]) or DEFAULTS[t]
  end
  redis.call('HSET', key, unpack(args))
  redis.call('PEXPIRE', key, ttl)
end
-- A tool's record as the tool and control scripts return it.
local function health(h)
  return {num(h, 'circuit', 0), num(h, 'consecutive', 0), h.window or '', num(h, 'calls', 0),
          num(h, 'opened', 0), h.probe_op or '', num(h, 'probe_until', 0), num(h, 'milli', -1),
          num(h, 'hold_until', 0), num(h, 'isolated', 0)}
end
local function view(h, now, claimed)
  local state = h.state or 'absent'
  if state == 'pending' and now >= num(h, 'lease', 0) then state = 'unknown' end
  return {state, h.key or '', num(h, 'updated', 0), num(h, 'lease', 0), claimed}
end
)lua";

enum Script {
  kBucket,
  kOutcome,
  kProbe,
  kVote,
  kTool,
  kHold,
  kControl,
  kCount,
  kClaim,
  kTransition,
  kRead,
  kScripts
};

// ARGV per script: bucket (event 0 read|1 retry|2 success, max, ratio, ttl); outcome (operation,
// ARGV per script: bucket (event 0 read|1 retry|2 success, max, ratio, ttl); outcome (operation,
// failed 0|1, failures, ratio, window, min_calls, ttl); probe (operation, cooldown, lease, ttl);
// vote (worker, open 0|1, vote_ms, ttl); tool (); hold (wait_ms, ttl); control (command 0
// isolate|1 open|2 reset, wait_ms, ttl); count (kind 0 read|1
// attempt|2 failure|3 decision|4 success, cost, failure hash, repair 0|1, ttl, pushback attempt
// or 0); claim (key, lease, ttl); transition (to, ttl).
constexpr const char* kBodies[kScripts] = {
    R"lua(
local h, max = load(KEYS[1], 'tool'), tonumber(ARGV[2])
local m = num(h, 'milli', -1)
local tokens = m < 0 and max or m
if ARGV[1] == '1' then m = math.max(0, tokens - 1000)
elseif ARGV[1] == '2' and m >= 0 then m = math.min(max, tokens + tonumber(ARGV[3])) end
h.milli = m
if ARGV[1] ~= '0' then save(KEYS[1], 'tool', h, ARGV[4]) end
if m < 0 then return max end
return m
)lua",
    R"lua(
local now, h = now_ms(), load(KEYS[1], 'tool')
if h.isolated == '1' then return 1 end
local width = math.min(tonumber(ARGV[5]), 64)
local function push(bit)
  h.window = string.sub(bit .. (h.window or ''), 1, width)
  h.calls = math.min(width, num(h, 'calls', 0) + 1)
end
if ARGV[2] == '0' then
  h.consecutive = 0; push('0'); h.circuit = 0; h.probe_op = ''; h.probe_until = 0; h.hold_until = 0
elseif num(h, 'circuit', 0) ~= 0 then
  if num(h, 'probe_until', 0) > 0 and (h.probe_op or '') == ARGV[1] then
    h.opened = now; h.probe_op = ''; h.probe_until = 0
  end
else
  h.consecutive = num(h, 'consecutive', 0) + 1; push('1')
  local _, failed = string.gsub(h.window, '1', '')
  local ratio = tonumber(ARGV[4])
  local by_ratio = ratio > 0 and h.calls >= tonumber(ARGV[6]) and failed * 1000 >= ratio * h.calls
  if h.consecutive >= tonumber(ARGV[3]) or by_ratio then h.circuit = 1; h.opened = now end
end
save(KEYS[1], 'tool', h, ARGV[7])
return num(h, 'circuit', 0)
)lua",
    R"lua(
local now, h = now_ms(), load(KEYS[1], 'tool')
if num(h, 'circuit', 0) == 0 then return 0 end
if h.isolated == '1' then return 1 end
local lease = num(h, 'probe_until', 0)
local live = lease > 0 and now < lease
if live and h.probe_op == ARGV[1] then return 2 end
if not live and now - num(h, 'opened', 0) >= tonumber(ARGV[2]) and now >= num(h, 'hold_until', 0) then
  h.probe_op = ARGV[1]; h.probe_until = now + tonumber(ARGV[3])
  save(KEYS[1], 'tool', h, ARGV[4])
  return 2
end
return 1
)lua",
    R"lua(
local now, h, format = now_ms(), fields(KEYS[1])
local votes = {}
for f, v in pairs(h) do
  local worker = f
  if format then worker = string.match(f, '^w:(.*)$') end
  if not worker then bad(KEYS[1], 'unknown field ' .. f) end
  if not CHECKS.time(v) then bad(KEYS[1], f .. ' is not a time') end
  votes[worker] = tonumber(v)
end
if ARGV[2] == '1' then votes[ARGV[1]] = now + tonumber(ARGV[3]) else votes[ARGV[1]] = nil end
local args, live = {'format', FORMAT}, 0
for worker, until_ms in pairs(votes) do
  if until_ms > now then
    live = live + 1; args[#args + 1] = 'w:' .. worker; args[#args + 1] = text(until_ms)
  end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(args))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return live
)lua",
    R"lua(
return health(load(KEYS[1], 'tool'))
)lua",
    R"lua(
local now, h = now_ms(), load(KEYS[1], 'tool')
if num(h, 'circuit', 0) == 0 then h.circuit = 1; h.opened = now end
h.hold_until = math.max(num(h, 'hold_until', 0), now + tonumber(ARGV[1]))
save(KEYS[1], 'tool', h, ARGV[2])
return 1
)lua",
    R"lua(
local now, h = now_ms(), load(KEYS[1], 'tool')
if ARGV[1] == '2' then
  h = {milli = h.milli}
else
  if ARGV[1] == '0' then
    if num(h, 'circuit', 0) == 0 then h.opened = now end
    h.isolated = 1
  else
    h.isolated = 0; h.opened = now; h.hold_until = now + tonumber(ARGV[2])
  end
  h.circuit = 1; h.probe_op = ''; h.probe_until = 0
end
save(KEYS[1], 'tool', h, ARGV[3])
return health(h)
)lua",
    R"lua(
local now, k = now_ms(), ARGV[1]
if k == '4' then  -- a success drops the counters, read or not
  redis.call('DEL', KEYS[1])
  return {0, 0, 0, 0, 0, '0', 0, 0}
end
local h = load(KEYS[1], 'op')
local attempts, repeats = num(h, 'attempts', 0), num(h, 'repeats', 0)
local recorded = attempts > 0 or repeats > 0
if k == '1' then
  if not recorded then h.started = now end
  h.attempts = attempts + 1
  if h.pending == '1' then h.repairs = num(h, 'repairs', 0) + 1 end
  h.pending = '0'; h.cost = num(h, 'cost', 0) + tonumber(ARGV[2])
elseif k == '2' then
  if repeats > 0 and h.last == ARGV[3] then h.repeats = repeats + 1 else h.repeats = 1 end
  h.last = ARGV[3]
elseif k == '3' then
  if recorded then h.pending = ARGV[4] end
  if recorded and ARGV[6] ~= '0' then h.pushback = ARGV[6] end
end
if k ~= '0' then save(KEYS[1], 'op', h, ARGV[5]) end
return {num(h, 'attempts', 0), num(h, 'repairs', 0), num(h, 'repeats', 0), num(h, 'cost', 0),
        num(h, 'started', 0), h.last or '0', h.pending == '1' and 1 or 0, num(h, 'pushback', 0)}
)lua",
    R"lua(
local now, h, claimed = now_ms(), load(KEYS[1], 'ledger'), 0
local state = h.state or 'absent'
if state == 'absent' or state == 'released' then
  if (h.key or '') == '' then h.key = ARGV[1] end
  h.state = 'pending'; h.updated = now; h.lease = now + tonumber(ARGV[2]); claimed = 1
  save(KEYS[1], 'ledger', h, ARGV[3])
end
return view(h, now, claimed)
)lua",
    R"lua(
local now, h = now_ms(), load(KEYS[1], 'ledger')
if h.state == 'pending' and (ARGV[1] == 'committed' or ARGV[1] == 'released') then
  h.state = ARGV[1]; h.updated = now; h.lease = 0
  save(KEYS[1], 'ledger', h, ARGV[2])
end
return view(h, now, 0)
)lua",
    R"lua(
return view(load(KEYS[1], 'ledger'), now_ms(), 0)
)lua"};

// `local FORMAT, SHAPES, SINCE = ...`, the lines before the prelude: the record format, the
// fields of each record kind with their types ({tool = {circuit = 'circuit', ...}, op = ...,
// ...}) and the format that added each field added after format 1 ({hold_until = 2, pushback = 2}).
std::string shapes() {
  std::string lua = "local FORMAT, SHAPES, SINCE = '" + std::to_string(kRecordFormat) + "', {";
  std::string since;
  const std::pair<const char*, RecordKind> kinds[] = {
      {"tool", RecordKind::Tool}, {"op", RecordKind::Operation}, {"ledger", RecordKind::Ledger}};
  for (const auto& [name, kind] : kinds) {
    lua += std::string(name) + " = {";
    for (const RecordField& f : record_fields(kind)) {
      if (!f.redis) continue;
      lua += std::string(f.redis) + " = '" + to_string(f.type) + "', ";
      if (f.since > 1) since += std::string(f.redis) + " = " + std::to_string(f.since) + ", ";
    }
    lua += "}, ";
  }
  return lua + "}, {" + since + "}\n";
}

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

  std::optional<LedgerEntry> ledger(Script script, std::string_view operation,
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
      for (int i = 0; i < kScripts; ++i) load(i);
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
  auto call(Script script, const std::string& key, std::vector<std::string> args,
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
    for (int i = 0; i < kScripts; ++i) sources_[i] = shapes() + kPrelude + kBodies[i];
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
  std::string sources_[kScripts], shas_[kScripts];
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
