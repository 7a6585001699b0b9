// The Redis store's Lua scripts (redis_scripts.hpp): the record checks and the rules of
// logic.cpp in Lua, each operation's script over one key.
#include "store/redis_scripts.hpp"

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

// The bodies, in RedisScript's order (its comment lists each one's ARGV and reply).
constexpr const char* kBodies[kRedisScripts] = {
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

}  // namespace

const char* redis_script_name(int script) noexcept {
  static constexpr const char* kNames[kRedisScripts] = {"bucket", "outcome",    "probe",   "vote",
                                                        "tool",   "hold",       "control", "count",
                                                        "claim",  "transition", "read"};
  return script >= 0 && script < kRedisScripts ? kNames[script] : "";
}

std::string redis_script_source(int script) {
  return shapes() + kPrelude + kBodies[script];
}

}  // namespace recourse::detail
