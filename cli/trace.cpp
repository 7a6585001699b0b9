// Trace lines and the state a trace carries (docs/language.md, section 11), shared by
// `recourse replay` and `recourse fuzz`.
#include "trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

namespace recourse::cli {
namespace {

using json = nlohmann::ordered_json;

}  // namespace

std::optional<TraceLine> parse_trace_line(const std::string& text, const std::string& where,
                                          const Bundle& bundle, const std::string& from) {
  auto bad = [&](const std::string& why) {
    std::cerr << fmt::format("{}: error: {}\n", where, why);
    return std::nullopt;
  };
  if (nesting(text) > kMaxTraceLineDepth || text.find('\0') != std::string::npos)
    return bad(fmt::format("trace line nested deeper than {} levels or holding a NUL byte",
                           kMaxTraceLineDepth));
  // A parser keeps one value of a key given twice (one took the first envelope, another the last
  // tool): such a line is bad, keys compared as unescaped.
  const std::vector<RawMember> members = raw_members(text);
  std::set<std::string_view> keys;
  for (const auto& m : members)
    if (!keys.insert(m.key).second)
      return bad(fmt::format("trace line key \"{}\" appears more than once", m.key));
  auto raw_text = [&](const RawMember* m) {
    return m ? std::string_view(text).substr(m->begin, m->end - m->begin) : std::string_view();
  };
  // A breaker command or a decision-log record is a line that is one JSON object as a whole.
  const auto first = text.find_first_not_of(" \t\r\n");
  const bool object = first != std::string::npos && text[first] == '{' && json::accept(text);
  if (object && find_member(members, "breaker") && !find_member(members, "envelope")) {
    TraceLine line;
    line.command = true;
    return line;
  }
  // A decision-log record: its input is a trace line of its own, decided as it is.
  if (const RawMember* input = find_member(members, "input");
      object && input && find_member(members, "result") && !find_member(members, "envelope")) {
    if (text[input->begin] != '{') return bad("a decision-log record's input is not an object");
    const std::string inner(raw_text(input));
    auto line = parse_trace_line(inner, where, bundle, from);
    if (!line) return line;
    line->record = true;
    const std::vector<RawMember> inner_members = raw_members(inner);  // outlives `note`
    if (const RawMember* note = find_member(inner_members, "redacted")) {
      const json n = json::parse(
          std::string_view(inner).substr(note->begin, note->end - note->begin), nullptr, false);
      const json* steering = n.is_object() && n.contains("steering") ? &n["steering"] : nullptr;
      if (!steering || !steering->is_number_unsigned() ||
          steering->get<std::uint64_t>() > UINT32_MAX)
        return bad("a decision-log record's input.redacted has no \"steering\" of 0 to 2^32-1");
      line->envelope.steering = steering->get<std::uint32_t>();
      line->redacted = true;
    }
    return line;
  }
  // The envelope (or a raw form, for its adapter) goes to its reader as written, and the context
  // to the context reader; the rest of the line is parsed here, each of the two cut out as {}.
  const RawMember* envelope = find_member(members, "envelope");
  const RawMember* raw_member = envelope ? nullptr : find_member(members, "raw");
  const RawMember* context = find_member(members, "context");
  std::string rest = text;
  std::vector<const RawMember*> cuts;
  for (const RawMember* m : {envelope ? envelope : raw_member, context})
    if (m) cuts.push_back(m);
  std::sort(cuts.begin(), cuts.end(),
            [](const RawMember* a, const RawMember* b) { return a->begin > b->begin; });
  for (const RawMember* cut : cuts) rest.replace(cut->begin, cut->end - cut->begin, "{}");
  const json entry = json::parse(rest, nullptr, false);
  TraceLine line;
  line.success = entry.is_object() && entry.contains("outcome") && entry["outcome"] == "success";
  if (!entry.is_object() || (!envelope && !raw_member && !line.success))
    return bad(
        "not a trace line {\"tool\", \"envelope\" or \"raw\", \"context\"} or {\"tool\", "
        "\"outcome\": \"success\"}");
  if (context && text[context->begin] != '{') return bad("context is not an object");
  if (context && context->end - context->begin > kMaxContextBytes)
    return bad(fmt::format("context is {} bytes; the limit is {}", context->end - context->begin,
                           kMaxContextBytes));
  std::string ctx = context ? std::string(raw_text(context)) : "{}";
  // The line's tool and now fill the context's tool and nowMs when it has none.
  const std::vector<RawMember> given = raw_members(ctx);
  std::string filled;
  if (entry.contains("tool") && !find_member(given, "tool"))
    filled += "\"tool\":" + entry["tool"].dump() + ",";
  if (entry.contains("now") && !find_member(given, "nowMs"))
    filled += "\"nowMs\":" + entry["now"].dump() + ",";
  if (!filled.empty()) {
    // No member follows only in an empty context: a context whose members could not be walked
    // keeps the comma, so the members filled in never mend it ("{, ...}" stays malformed).
    if (ctx[ctx.find_first_not_of(" \t\r\n", 1)] == '}') filled.pop_back();
    ctx.insert(1, filled);  // after the '{'
  }
  Result<Context> c = read_context(ctx);
  if (!c.ok()) {
    for (const auto& d : c.diagnostics())
      std::cerr << fmt::format("{}: error[{}]: {}\n", where, d.code, d.message);
    return std::nullopt;
  }
  line.context = std::move(*c);
  line.now_ms = line.context.now_ms.value_or(0);
  // "raw": {"protocol": "http", ...}: its adapter, with the tool's `map` overrides; "envelope":
  // as --from says.
  if (raw_member || envelope) {
    Result<Adapted> r = raw_member
                            ? adapt("", raw_text(raw_member), &line.context, &bundle, std::nullopt)
                            : read_failure(from, raw_text(envelope), line.context, bundle);
    line.envelope_ok = r.ok();
    if (r.ok()) line.envelope = std::move(r->envelope);
  }
  return line;
}

TraceState::TraceState(const Bundle& bundle, std::shared_ptr<Store> store)
    : bundle_(bundle), store_(store), health_(std::move(store)) {}

std::optional<Decision> TraceState::step(TraceLine& line) {
  Context& c = line.context;
  const Policy* policy = line.record ? nullptr : bundle_.find(c.tool);
  Workflow* wf = c.workflow_id.empty() || line.record
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
