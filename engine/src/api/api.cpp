// The pipeline behind compile(): read -> parse -> check -> compile -> Bundle. All or nothing: any
// error in any source means no Bundle.
#include <fmt/format.h>
#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "analyze/analyze.hpp"
#include "check/check.hpp"
#include "check/inherit.hpp"
#include "compile/compile.hpp"
#include "eval/backoff.hpp"
#include "source/location.hpp"
#include "source/sources.hpp"
#include "table/compiled.hpp"
#include "table/sha256.hpp"

namespace recourse {

namespace detail {

std::shared_ptr<const Compiled> Compiled::make(PolicySpec spec, Table table,
                                               std::int64_t attempt_ceiling,
                                               const SteeringLimits& steering) {
  auto c = std::make_shared<Compiled>();
  c->steering = steering;
  c->spec = std::move(spec);
  c->table = std::move(table);
  c->attempt_ceiling = attempt_ceiling;
  const std::string text = dump(c->table, c->spec, false);
  c->hash = "sha256:" + sha256_hex(text);
  for (std::size_t i = 0; i < c->spec.codes.size(); ++i)
    c->code_ids.emplace(c->spec.codes[i], static_cast<std::int64_t>(i));
  c->seed = splitmix64(fnv1a(c->spec.name));
  c->wanted = bit(Attr::AttemptsLeft) | bit(Attr::TimeLeft) | bit(Attr::CostLeft);
  for (const Column& col : c->table.columns) c->wanted |= bit(col.attr);
  return c;
}

}  // namespace detail

struct BundleBuilder {
  static Bundle make(std::vector<Policy> policies) {
    Bundle b;
    b.policies_ = std::move(policies);
    std::sort(b.policies_.begin(), b.policies_.end(),
              [](const Policy& x, const Policy& y) { return x.name() < y.name(); });
    return b;
  }
  static Policy wrap(std::shared_ptr<const detail::Compiled> c) {
    Policy p;
    p.impl_ = std::move(c);
    return p;
  }
};

namespace {

namespace fs = std::filesystem;

// Drops repeated diagnostics: a base's findings reappear when a policy extending it is checked.
// The first of each stays, in order.
void drop_repeats(std::vector<Diagnostic>& diagnostics) {
  std::set<std::tuple<std::string, std::string, std::uint32_t, std::uint32_t, std::string>> seen;
  std::vector<Diagnostic> kept;
  for (auto& d : diagnostics)
    if (seen.emplace(d.code, d.file, d.line, d.column, d.message).second)
      kept.push_back(std::move(d));
  diagnostics = std::move(kept);
}

}  // namespace

namespace detail {

Result<Bundle> compile_sources(const std::vector<Source>& given, const CompileOptions& options,
                               bool load_bases, bool analyse) {
  std::vector<Diagnostic> diagnostics;
  try {
    Sources refs;
    std::deque<Source> loaded;  // base files read on demand; a deque keeps their addresses
    const std::vector<ast::File> files =
        detail::read_policies(given, options, load_bases, refs, loaded, diagnostics);

    std::vector<Policy> policies;
    std::vector<std::pair<std::string, std::pair<std::string, ast::Pos>>> names;
    for (const ast::File& file : files) {
      for (auto& spec : detail::check(file, refs, options, diagnostics)) {
        for (const auto& [name, where] : names)
          if (name == spec.name) {
            report(diagnostics, refs, spec.pos, Severity::Error, "E020",
                   fmt::format("policy \"{}\" is defined twice", spec.name),
                   fmt::format("first defined at {}:{}", where.first, where.second.line));
          }
        names.push_back({spec.name, {spec.file, spec.pos}});
        auto table = detail::compile(spec, options, refs, diagnostics);
        if (!table) continue;
        auto compiled = detail::Compiled::make(std::move(spec), std::move(*table),
                                               options.attempt_ceiling, options.steering);
        if (analyse) detail::analyze(*compiled, refs, options, diagnostics);
        policies.push_back(BundleBuilder::wrap(std::move(compiled)));
      }
    }
    drop_repeats(diagnostics);
    if (has_errors(diagnostics)) return Result<Bundle>::failure(std::move(diagnostics));
    return {BundleBuilder::make(std::move(policies)), std::move(diagnostics)};
  } catch (const std::exception& e) {
    diagnostics.push_back(
        error_diagnostic("E099", std::string("internal error while compiling: ") + e.what()));
  } catch (...) {
    diagnostics.push_back(
        error_diagnostic("E099", "internal error while compiling: unknown exception"));
  }
  return Result<Bundle>::failure(std::move(diagnostics));
}

}  // namespace detail

Result<Bundle> compile(const std::vector<Source>& sources, const CompileOptions& options) {
  return detail::compile_sources(sources, options, false, options.analyze);
}

Result<Bundle> compile_paths(const std::vector<std::string>& paths, const CompileOptions& options) {
  try {
    std::vector<Source> sources;
    std::vector<Diagnostic> unreadable;  // E000 and E090: the files that were not read
    auto unreadable_path = [&](const std::string& path, std::string why) {
      unreadable.push_back(detail::unreadable(path, std::move(why)));
    };
    std::vector<fs::path> seen;
    auto read = [&](const fs::path& p) {
      std::error_code ec;
      const fs::path canonical = fs::weakly_canonical(p, ec);
      if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) return;  // named twice
      seen.push_back(canonical);
      if (auto text = detail::read_policy_file(p.string(), options, unreadable))
        sources.push_back({p.string(), std::move(*text)});
    };
    for (const auto& path : paths) {
      std::error_code ec;
      if (fs::is_directory(path, ec)) {
        std::vector<fs::path> files;
        for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
          if (it->is_regular_file() && it->path().extension() == ".recourse")
            files.push_back(it->path());
        if (ec) unreadable_path(path, "cannot list directory: " + ec.message());
        std::sort(files.begin(), files.end());
        for (const auto& f : files) read(f);
      } else if (fs::exists(path, ec)) {
        read(path);
      } else {
        unreadable_path(path, "no such file or directory");
      }
    }
    Result<Bundle> out = detail::compile_sources(sources, options, true, options.analyze);
    if (unreadable.empty()) return out;
    std::vector<Diagnostic> all = std::move(out).diagnostics();
    all.insert(all.begin(), unreadable.begin(), unreadable.end());
    return Result<Bundle>::failure(std::move(all));
  } catch (const std::exception& e) {
    return Result<Bundle>::failure(
        error_diagnostic("E099", std::string("internal error while compiling: ") + e.what()));
  } catch (...) {
    return Result<Bundle>::failure(
        error_diagnostic("E099", "internal error while compiling: unknown exception"));
  }
}

}  // namespace recourse
