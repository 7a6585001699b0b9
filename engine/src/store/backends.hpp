// The openers of the optional stores (sqlite.cpp, redis.cpp), for open_store().
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "recourse/store.hpp"

namespace recourse::detail {

/// What an opener gives open_store(): a store, or why there is none (`error`, naming the store).
struct StoreResult {
  std::shared_ptr<Store> store;
  std::string error;
  std::vector<std::string> warnings;  ///< e.g. a Redis ledger refused (appendfsync not always)
};

/// Opens (creating when missing) the SQLite database at `path`: WAL, a busy timeout of
/// options.busy_ms, synchronous=FULL on the ledger's connection.
StoreResult open_sqlite(const std::string& path, const StoreOptions& options);

/// Connects to `spec` (a Redis or RedisUnix spec read from `url`, which names it in messages)
/// within options.timeout_ms and loads the scripts. The ledger is enabled only when the server
/// runs with appendonly yes and appendfsync always (a warning says why it is not).
StoreResult open_redis(std::string_view url, const StoreSpec& spec, const StoreOptions& options);

/// Scripts a Redis store has loaded so far (at connect, then after each NOSCRIPT); -1 for other
/// stores. For tests of the reload path.
std::int64_t redis_script_loads(const Store& store);

}  // namespace recourse::detail
