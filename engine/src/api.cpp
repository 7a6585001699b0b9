// The pipeline behind compile(): read -> parse -> check -> compile -> Bundle, and the decision's
// JSON form. All or nothing: any error in any source means no Bundle.
#include <openssl/sha.h>

#include <fmt/format.h>
#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analyze.hpp"
#include "backoff.hpp"
#include "check.hpp"
#include "compile.hpp"
#include "compiled.hpp"
#include "inherit.hpp"
#include "parse.hpp"
#include "recourse/adapters.hpp"
#include "sources.hpp"

namespace recourse {

namespace detail {

std::shared_ptr<const Compiled> Compiled::make(PolicySpec spec, Table table,
                                               std::int64_t attempt_ceiling) {
  auto c = std::make_shared<Compiled>();
  c->spec = std::move(spec);
  c->table = std::move(table);
  c->attempt_ceiling = attempt_ceiling;
  const std::string text = dump(c->table, c->spec, false);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  c->hash = "sha256:";
  for (unsigned char b : digest) c->hash += fmt::format("{:02x}", b);
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
void drop_repeats(std::vector<Diagnostic>& diagnostics) {
  std::vector<Diagnostic> kept;
  for (auto& d : diagnostics)
    if (std::none_of(kept.begin(), kept.end(), [&](const Diagnostic& k) {
          return k.code == d.code && k.file == d.file && k.line == d.line && k.column == d.column &&
                 k.message == d.message;
        }))
      kept.push_back(std::move(d));
  diagnostics = std::move(kept);
}

// The pipeline: parse every source, resolve `extends` (reading base files beside the extending
// file with `load_bases`), check, compile and analyse every policy. All or nothing.
CompileResult compile_all(const std::vector<Source>& given, const CompileOptions& options,
                          bool load_bases) {
  CompileResult out;
  try {
    grammar::Sources refs;
    std::deque<Source> loaded;  // base files read on demand; a deque keeps their addresses
    std::vector<ast::File> files;
    auto add = [&](const Source& src) -> std::optional<ast::File> {
      if (detail::over_limit(src, options, out.diagnostics)) return std::nullopt;
      const auto index = static_cast<std::uint32_t>(refs.size());
      refs.push_back({src.path, src.text});
      return grammar::parse(src.path, src.text, options.max_depth, out.diagnostics, index);
    };
    for (const Source& src : given)
      if (auto f = add(src)) files.push_back(std::move(*f));
    detail::BaseLoader load;
    if (load_bases) {
      std::vector<std::string> paths;
      for (const Source& src : given) paths.push_back(src.path);
      load = detail::file_loader(refs, loaded, options, out.diagnostics, paths);
    }
    detail::inherit(files, refs, load, options.max_extends_depth, out.diagnostics);

    std::vector<Policy> policies;
    std::vector<std::pair<std::string, std::pair<std::string, ast::Pos>>> names;
    for (const ast::File& file : files) {
      for (auto& spec : detail::check(file, refs, options, out.diagnostics)) {
        for (const auto& [name, where] : names)
          if (name == spec.name) {
            Diagnostic d;
            d.code = "E020";
            grammar::locate(d, refs, spec.pos);
            d.message = fmt::format("policy \"{}\" is defined twice", spec.name);
            d.help = fmt::format("first defined at {}:{}", where.first, where.second.line);
            out.diagnostics.push_back(std::move(d));
          }
        names.push_back({spec.name, {spec.file, spec.pos}});
        auto table = detail::compile(spec, options, refs, out.diagnostics);
        if (!table) continue;
        auto compiled =
            detail::Compiled::make(std::move(spec), std::move(*table), options.attempt_ceiling);
        detail::analyze(*compiled, refs, options.max_analysis_work, out.diagnostics);
        policies.push_back(BundleBuilder::wrap(std::move(compiled)));
      }
    }
    drop_repeats(out.diagnostics);
    if (!has_errors(out.diagnostics)) out.bundle = BundleBuilder::make(std::move(policies));
  } catch (const std::exception& e) {
    out.bundle.reset();
    Diagnostic d;
    d.code = "E099";
    d.message = std::string("internal error while compiling: ") + e.what();
    out.diagnostics.push_back(std::move(d));
  }
  return out;
}

}  // namespace

CompileResult compile(const std::vector<Source>& sources, const CompileOptions& options) {
  return compile_all(sources, options, false);
}

CompileResult compile_paths(const std::vector<std::string>& paths, const CompileOptions& options) {
  std::vector<Source> sources;
  std::vector<Diagnostic> unreadable;
  auto unreadable_path = [&](const std::string& path, std::string why) {
    unreadable.push_back(detail::unreadable(path, std::move(why)));
  };
  std::vector<fs::path> seen;
  auto read = [&](const fs::path& p) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(p, ec);
    if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) return;  // named twice
    seen.push_back(canonical);
    std::string error;
    auto text = read_regular_file(p.string(), options.max_source_bytes, error);
    if (!text) return unreadable_path(p.string(), "file " + error);
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
  CompileResult out = compile_all(sources, options, true);
  if (!unreadable.empty()) {
    out.bundle.reset();
    out.diagnostics.insert(out.diagnostics.begin(), unreadable.begin(), unreadable.end());
  }
  return out;
}

std::string to_json(const Decision& d, const Envelope& e) {
  nlohmann::ordered_json j;
  j["route"] = to_string(d.route);
  j["delayMs"] = d.delay_ms;
  if (d.route == Route::Retry) j["jitterMs"] = d.jitter_draw;
  j["rule"] = std::string(d.rule);
  if (!d.reason.empty()) j["reason"] = std::string(d.reason);
  if (!d.target.empty()) j["target"] = std::string(d.target);
  j["policy"] = std::string(d.policy);
  j["policyHash"] = std::string(d.policy_hash);
  if (!d.exhausted.empty()) j["exhausted"] = std::string(d.exhausted);
  j["attempt"] = d.attempt;
  j["attemptsLeft"] = d.attempts_left;
  j["repairsLeft"] = d.repairs_left;
  if (d.retry_after_ms) j["retryAfterMs"] = *d.retry_after_ms;
  if (d.retry_at_ms) j["retryAt"] = *d.retry_at_ms;
  if (d.timeout_ms) j["timeoutMs"] = *d.timeout_ms;
  auto budget = [](const BudgetLeft& b) {
    auto value = [](std::int64_t v) {
      return v == kUnlimited ? nlohmann::ordered_json() : nlohmann::ordered_json(v);
    };
    return nlohmann::ordered_json{{"before", value(b.before)}, {"after", value(b.after)}};
  };
  j["budgets"] = {{"attempts", budget(d.attempts)},
                  {"repairs", budget(d.repairs)},
                  {"cost", budget(d.cost)},
                  {"timeMs", budget(d.time_ms)}};
  j["idempotencyKey"] = to_string(d.idempotency_key);
  auto warnings = nlohmann::ordered_json::array();
  for (const auto& w : e.warnings)
    warnings.push_back({{"kind", w.kind}, {"field", w.field}, {"message", w.message}});
  auto add = [&](const char* kind, const char* field, std::string message) {
    warnings.push_back({{"kind", kind}, {"field", field}, {"message", std::move(message)}});
  };
  if (d.warnings & kUnknownCode)
    add("unknown_code", "code",
        fmt::format("code \"{}\" is not known; read as UNKNOWN{}", e.code.value_or(""),
                    d.nearest_code.empty() ? "" : fmt::format(" (nearest: {})", d.nearest_code)));
  if (d.warnings & kSideEffectAssumed)
    add("side_effect_assumed", "sideEffect", "context gave no sideEffect; read as unknown");
  if (d.warnings & kNoPolicy)
    add("no_policy", "tool", "no policy for this tool and no \"*\" policy");
  if (d.warnings & kUnreadableEnvelope)
    add("unreadable_envelope", "", "the envelope could not be read");
  if (d.warnings & kTraceIdMinted)
    add("trace_id_minted", "traceId", "envelope had no traceId; a local one was minted");
  if (d.warnings & kStoreUnavailable)
    add("store_unavailable", "",
        "the state store could not answer; local, conservative state used");
  j["warnings"] = std::move(warnings);
  if (!d.nearest_code.empty()) j["nearestCode"] = std::string(d.nearest_code);
  j["traceId"] = e.trace_id ? *e.trace_id : fmt::format("local-{:016x}", d.minted_trace_id);
  // What the next model turn may read (adapters.hpp): computed here, never in decide().
  const ModelText model = model_text(e);
  j["modelMessage"] = model.text;
  auto flags = nlohmann::ordered_json::array();
  for (const auto& [set, name] :
       {std::pair{model.stripped, "stripped"}, std::pair{model.redacted, "redacted"},
        std::pair{model.instruction_like, "instruction_like"},
        std::pair{model.truncated, "truncated"}})
    if (set) flags.push_back(name);
  if (!flags.empty()) j["modelMessageFlags"] = std::move(flags);
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace recourse
