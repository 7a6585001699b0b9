// Trace lines and the state a trace carries (docs/language.md, section 11), shared by
// `recourse replay` and `recourse fuzz`.
#include "trace.hpp"

#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

namespace recourse::cli {
namespace {

using json = nlohmann::ordered_json;

}  // namespace

std::optional<TraceLine> parse_trace_line(const std::string& text, const std::string& where,
                                          const Bundle& bundle) {
  auto bad = [&](const std::string& why) {
    std::cerr << fmt::format("{}: error: {}\n", where, why);
    return std::nullopt;
  };
  if (nesting(text) > kMaxTraceLineDepth || text.find('\0') != std::string::npos)
    return bad(fmt::format("trace line nested deeper than {} levels or holding a NUL byte",
                           kMaxTraceLineDepth));
  // The envelope (or a raw form, for its adapter) goes to its reader as written; the rest of the
  // line is parsed here.
  const auto span = raw_member(text, "envelope");
  const auto raw_span = raw_member(text, "raw");
  const std::string_view raw =
      span || !raw_span
          ? std::string_view()
          : std::string_view(text).substr(raw_span->first, raw_span->second - raw_span->first);
  std::string rest = text;
  if (span) rest.replace(span->first, span->second - span->first, "{}");
  if (!raw.empty()) rest.replace(raw_span->first, raw.size(), "{}");
  const json entry = json::parse(rest, nullptr, false);
  TraceLine line;
  line.success = entry.is_object() && entry.value("outcome", "") == "success";
  if (entry.is_discarded() || !entry.is_object() || (!span && raw.empty() && !line.success))
    return bad(
        "not a trace line {\"tool\", \"envelope\" or \"raw\", \"context\"} or {\"tool\", "
        "\"outcome\": \"success\"}");
  if (span) {
    EnvelopeResult e =
        read_envelope(std::string_view(text).substr(span->first, span->second - span->first));
    line.envelope = std::move(e.envelope);
    line.envelope_ok = e.ok;
  }
  json ctx = entry.value("context", json::object());
  if (!ctx.is_object()) return bad("context is not an object");
  if (entry.contains("tool") && !ctx.contains("tool")) ctx["tool"] = entry["tool"];
  if (entry.contains("now") && !ctx.contains("nowMs")) ctx["nowMs"] = entry["now"];
  ContextResult c = read_context(ctx.dump());
  if (!c.ok) {
    for (const auto& d : c.errors)
      std::cerr << fmt::format("{}: error[{}]: {}\n", where, d.code, d.message);
    return std::nullopt;
  }
  line.context = std::move(c.context);
  line.now_ms = line.context.now_ms.value_or(0);
  if (!raw.empty()) {  // {"protocol": "http", ...}: its adapter, with the tool's `map` overrides
    AdapterResult r = adapt("", raw, &line.context, &bundle, std::nullopt);
    line.envelope = std::move(r.envelope);
    line.envelope_ok = r.ok;
  }
  return line;
}

TraceState::TraceState(const Bundle& bundle, std::shared_ptr<Store> store)
    : bundle_(bundle), store_(store), health_(std::move(store)) {}

std::optional<Decision> TraceState::step(TraceLine& line) {
  Context& c = line.context;
  const Policy* policy = bundle_.find(c.tool);
  Workflow* wf = c.workflow_id.empty()
                     ? nullptr
                     : &workflows_.try_emplace(c.workflow_id, store_, c.workflow_id).first->second;
  if (line.success) {
    if (wf) wf->record_success(c);
    if (wf && policy) health_.record_success(*policy, c, line.now_ms);
    return std::nullopt;
  }
  if (wf && policy) before_decision(wf, health_, *policy, c, line.envelope, line.now_ms);
  Decision d = line.envelope_ok ? bundle_.decide(line.envelope, c) : bundle_.unreadable(c);
  if (wf && policy) after_decision(wf, health_, *policy, c, d);
  return d;
}

}  // namespace recourse::cli
