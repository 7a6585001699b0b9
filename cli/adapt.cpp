// `recourse envelope --from http|grpc|mcp|jsonrpc`: a raw protocol error -> the canonical
// envelope, and the raw-form input that `decide --from`, `explain --from` and replay lines with
// "raw" share. The mapping tables are in engine/include/recourse/adapters.hpp.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace recourse::cli {

Result<Adapted> adapt(const std::string& from, std::string_view raw, const Context* context,
                      const Bundle* bundle, std::optional<std::int64_t> now) {
  AdapterOptions options;
  if (context && bundle)
    if (const Policy* policy = bundle->find(context->tool)) options.mappings = policy->mappings();
  if (!now && context) now = context->now_ms;
  std::optional<Protocol> protocol;
  if (!from.empty()) {
    protocol = protocol_of(from);
    if (!protocol)
      return Result<Adapted>::failure(error_diagnostic(
          "N001", fmt::format("unknown protocol \"{}\" (http, grpc, mcp or jsonrpc)", from)));
  }
  return from_raw(protocol, raw, now, options);
}

namespace {

// `r`, its failure's message prefixed with `what`.
Result<Adapted> named(Result<Adapted> r, const char* what) {
  if (r.ok()) return r;
  return Result<Adapted>::failure(error_diagnostic("N001", what + r.message()));
}

}  // namespace

Result<Adapted> read_failure(const std::string& from, std::string_view text, const Context& context,
                             const Bundle& bundle) {
  auto adapted = [&](const std::string& protocol) {
    return named(adapt(protocol, text, &context, &bundle, std::nullopt), "raw form: ");
  };
  if (!from.empty() && from != "auto") return adapted(from);
  // The shape is asked only of what may be a raw form: with --from auto first, otherwise of an
  // envelope without a code (most envelopes have one, and the shape costs a second parse).
  if (from == "auto")
    if (const std::optional<Protocol> shape = raw_form_protocol(text))
      return adapted(to_string(*shape));
  Result<Envelope> read = read_envelope(text);
  if (!read.ok())
    return Result<Adapted>::failure(error_diagnostic("N001", "envelope: " + read.message()));
  Adapted r{std::move(*read), {}, std::nullopt};
  if (!r.envelope.code && from.empty())
    if (const std::optional<Protocol> shape = raw_form_protocol(text))
      r.envelope.warnings.push_back(
          {"raw_form", "code",
           fmt::format("the envelope has no code and looks like a raw {0} form; read as an "
                       "envelope (UNKNOWN): pass --from {0} or --from auto for its adapter",
                       to_string(*shape))});
  return r;
}

int run_envelope(const Options& o) {
  std::string error;
  auto text =
      read_text(o.paths.empty() ? std::string() : o.paths.front(), kMaxEnvelopeFileBytes, error);
  if (!text) return std::cerr << "error: " << error << "\n", 1;
  // Overrides come from a policy only when one is named (with the tool in --context).
  std::optional<Bundle> bundle;
  Context context;
  if (!o.policies.empty()) {
    bundle = load(o.policies, o);
    if (!bundle) return 1;
  }
  if (!o.context.empty()) {
    auto ctx_text = read_text(o.context, kMaxContextBytes, error);
    if (!ctx_text) return std::cerr << "error: " << error << "\n", 1;
    Result<Context> c = read_context(*ctx_text);
    if (!c.ok()) {
      print_diagnostics(c.diagnostics(), o.format, std::cerr);
      return 1;
    }
    context = std::move(*c);
  }
  const Result<Adapted> adapted =
      adapt(o.from, *text, &context, bundle ? &*bundle : nullptr, o.now);
  if (!adapted.ok()) return std::cerr << "error: raw form: " << adapted.message() << "\n", 1;
  const Adapted& r = *adapted;
  if (o.format == Format::Json) {
    auto warnings = nlohmann::ordered_json::array();
    for (const auto& w : r.envelope.warnings)
      warnings.push_back({{"kind", w.kind}, {"field", w.field}, {"message", w.message}});
    nlohmann::ordered_json out = {{"envelope", nlohmann::ordered_json::parse(to_json(r.envelope))},
                                  {"mapping", r.mapping},
                                  {"warnings", warnings}};
    if (r.idempotent) out["idempotent"] = *r.idempotent;
    std::cout << out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return 0;
  }
  for (const auto& w : r.envelope.warnings)
    std::cerr << fmt::format("warning[{}]: {}: {}\n", w.kind, w.field, w.message);
  std::cout << to_json(r.envelope) << "\n";
  return 0;
}

}  // namespace recourse::cli
