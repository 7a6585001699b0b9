// read_store_spec() and open_store(): a store from its spec ("memory", "sqlite:PATH",
// "redis://HOST:PORT", "redis+unix://PATH"). The SQLite and Redis stores are built only with
// their CMake options (RECOURSE_SQLITE, RECOURSE_REDIS); their openers are declared in
// backends.hpp.
#include <charconv>

#include "recourse/diagnostic.hpp"
#include "recourse/result.hpp"
#include "store/backends.hpp"

namespace recourse {

namespace {

Result<StoreSpec> read_spec(std::string_view spec) {
  StoreSpec s;
  auto malformed = [&](const std::string& what) {
    return Result<StoreSpec>::failure(
        error_diagnostic("S001", "state store " + recourse::quoted(spec) + ": " + what));
  };
  auto starts = [&](std::string_view prefix) { return spec.substr(0, prefix.size()) == prefix; };
  if (spec == "memory") return s;
  if (starts("sqlite:")) {
    s.kind = StoreSpec::Kind::Sqlite;
    s.path = spec.substr(7);
    if (s.path.empty()) return malformed("no PATH after sqlite:");
    return s;
  }
  if (starts("redis+unix://")) {
    s.kind = StoreSpec::Kind::RedisUnix;
    s.path = spec.substr(13);
    if (s.path.empty()) return malformed("no PATH after redis+unix://");
    return s;
  }
  if (!starts("redis://"))
    return Result<StoreSpec>::failure(
        error_diagnostic("S001", "unknown state store " + recourse::quoted(spec) +
                                     ": expected memory, sqlite:PATH or redis://HOST:PORT"));
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

// An opener's result as open_store() returns it.
Result<std::shared_ptr<Store>> opened(detail::StoreResult r) {
  if (!r.store) return Result<std::shared_ptr<Store>>::failure(error_diagnostic("S002", r.error));
  std::vector<Diagnostic> warnings;
  for (auto& w : r.warnings) {
    warnings.push_back(error_diagnostic("S003", std::move(w)));
    warnings.back().severity = Severity::Warning;
  }
  return {std::move(r.store), std::move(warnings)};
}

}  // namespace

Result<StoreSpec> read_store_spec(std::string_view spec) noexcept {
  try {
    return read_spec(spec);
  } catch (...) {
    return Result<StoreSpec>::failure(error_diagnostic("S001", "state store spec unreadable"));
  }
}

Result<std::shared_ptr<Store>> open_store(std::string_view spec,
                                          const StoreOptions& options) noexcept {
  using Opened = Result<std::shared_ptr<Store>>;
  try {
    Result<StoreSpec> s = read_store_spec(spec);
    if (!s.ok()) return Opened::failure(std::move(s).diagnostics());
    switch (s->kind) {
      case StoreSpec::Kind::Memory:
        return std::shared_ptr<Store>(std::make_shared<MemoryStore>(options));
      case StoreSpec::Kind::Sqlite:
#ifdef RECOURSE_HAVE_SQLITE
        return opened(detail::open_sqlite(s->path, options));
#else
        return Opened::failure(error_diagnostic(
            "S001", "this build has no SQLite store (CMake option RECOURSE_SQLITE)"));
#endif
      case StoreSpec::Kind::Redis:
      case StoreSpec::Kind::RedisUnix:
#ifdef RECOURSE_HAVE_REDIS
        return opened(detail::open_redis(spec, *s, options));
#else
        return Opened::failure(error_diagnostic(
            "S001", "this build has no Redis store (CMake option RECOURSE_REDIS)"));
#endif
    }
    return Opened::failure(error_diagnostic("S001", "unknown state store kind"));
  } catch (const std::exception& e) {
    return Opened::failure(error_diagnostic("S002", e.what()));
  } catch (...) {
    return Opened::failure(error_diagnostic("S002", "the state store could not be opened"));
  }
}

}  // namespace recourse
