// The store conformance suite, written once (store_test.cpp) and run against every store: gRFC
// A6 token arithmetic, breaker transitions, exactly one probe among concurrent clients, no update
// lost among them, counting, TTL expiry and ledger transitions. Times are real (short cooldowns and
// TTLs), since the Redis store reads its server's clock.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "recourse/store.hpp"

namespace test {

/// A store under test: `open` returns a new client of the same store (a new connection; the same
/// instance for the memory store). With `processes`, concurrent clients run in forked processes.
struct Backend {
  std::string name;
  std::function<std::shared_ptr<recourse::Store>(const recourse::StoreOptions&)> open;
  bool processes = false;
};

/// Runs the whole suite against `backend`.
void conformance(const Backend& backend);

/// Runs fn(i) for i in [0, n) at once: in forked children (their exit codes, 0..255) or threads.
/// A child that has not finished within `timeout_ms` is killed and reads as -1.
std::vector<int> concurrently(const Backend& backend, int n, const std::function<int(int)>& fn,
                              int timeout_ms = 10000);

/// A fresh directory under the system's temp directory, removed with everything in it at the end.
struct TempDir {
  std::string path;
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

/// Wall-clock ms since the epoch (for stores that take the caller's time).
std::int64_t now_ms();
/// Sleeps `ms` milliseconds.
void sleep_ms(std::int64_t ms);

}  // namespace test
