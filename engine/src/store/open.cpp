// read_store_spec() and open_store(): a store from its spec ("memory", "sqlite:PATH",
// "redis://HOST:PORT", "redis+unix://PATH"). The SQLite and Redis stores are built only with
// their CMake options (RECOURSE_SQLITE, RECOURSE_REDIS); their openers are declared in
// backends.hpp.
#include <charconv>

#include "recourse/diagnostic.hpp"
#include "store/backends.hpp"

namespace recourse {

StoreSpec read_store_spec(std::string_view spec) {
  StoreSpec s;
  auto malformed = [&](const std::string& what) {
    s.error = "state store " + recourse::quoted(spec) + ": " + what;
    return s;
  };
  auto starts = [&](std::string_view prefix) { return spec.substr(0, prefix.size()) == prefix; };
  if (spec == "memory") return s;
  if (starts("sqlite:")) {
    s.kind = StoreSpec::Kind::Sqlite;
    s.path = spec.substr(7);
    return s.path.empty() ? malformed("no PATH after sqlite:") : s;
  }
  if (starts("redis+unix://")) {
    s.kind = StoreSpec::Kind::RedisUnix;
    s.path = spec.substr(13);
    return s.path.empty() ? malformed("no PATH after redis+unix://") : s;
  }
  if (!starts("redis://")) {
    s.error = "unknown state store " + recourse::quoted(spec) +
              ": expected memory, sqlite:PATH or redis://HOST:PORT";
    return s;
  }
  s.kind = StoreSpec::Kind::Redis;
  const std::string_view rest = spec.substr(8);
  const auto colon = rest.rfind(':');
  s.host = rest.substr(0, colon);
  if (s.host.empty()) return malformed("no HOST after redis://");
  if (colon == std::string_view::npos) return s;
  const std::string_view port = rest.substr(colon + 1);
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), s.port);
  if (ec != std::errc() || end != port.data() + port.size() || s.port < 1 || s.port > 65535)
    return malformed("port " + recourse::quoted(port) + " is not a number in 1..65535");
  return s;
}

StoreResult open_store(std::string_view spec, const StoreOptions& options) noexcept {
  StoreResult r;
  try {
    const StoreSpec s = read_store_spec(spec);
    if (!s.error.empty()) {
      r.error = s.error;
    } else if (s.kind == StoreSpec::Kind::Memory) {
      r.store = std::make_shared<MemoryStore>(options);
    } else if (s.kind == StoreSpec::Kind::Sqlite) {
#ifdef RECOURSE_HAVE_SQLITE
      r = detail::open_sqlite(s.path, options);
#else
      r.error = "this build has no SQLite store (CMake option RECOURSE_SQLITE)";
#endif
    } else {
#ifdef RECOURSE_HAVE_REDIS
      r = detail::open_redis(spec, s, options);
#else
      r.error = "this build has no Redis store (CMake option RECOURSE_REDIS)";
#endif
    }
  } catch (const std::exception& e) {
    r.store.reset();
    r.error = e.what();
  }
  return r;
}

}  // namespace recourse
