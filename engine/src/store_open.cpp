// open_store(): a store from its spec ("memory", "sqlite:PATH", "redis://HOST:PORT",
// "redis+unix://PATH"). The SQLite and Redis stores are built only with their CMake options
// (RECOURSE_SQLITE, RECOURSE_REDIS); their openers are declared in store_backends.hpp.
#include "store_backends.hpp"

namespace recourse {

StoreResult open_store(std::string_view spec, const StoreOptions& options) noexcept {
  StoreResult r;
  try {
    auto starts = [&](std::string_view prefix) { return spec.substr(0, prefix.size()) == prefix; };
    if (spec == "memory") {
      r.store = std::make_shared<MemoryStore>(options);
    } else if (starts("sqlite:")) {
#ifdef RECOURSE_HAVE_SQLITE
      r = detail::open_sqlite(std::string(spec.substr(7)), options);
#else
      r.error = "this build has no SQLite store (CMake option RECOURSE_SQLITE)";
#endif
    } else if (starts("redis://") || starts("redis+unix://")) {
#ifdef RECOURSE_HAVE_REDIS
      r = detail::open_redis(spec, options);
#else
      r.error = "this build has no Redis store (CMake option RECOURSE_REDIS)";
#endif
    } else {
      r.error = "unknown state store \"" + std::string(spec) +
                "\": expected memory, sqlite:PATH or redis://HOST:PORT";
    }
  } catch (const std::exception& e) {
    r.store.reset();
    r.error = e.what();
  }
  return r;
}

}  // namespace recourse
