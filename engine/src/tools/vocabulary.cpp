// What editors need from the engine: one file's text compiled as `recourse check FILE` would,
// and the vocabulary of the language, read from the tables that drive the checker (the attribute
// catalogue, the fields, the routes, the built-in codes, the settings table, the invariants).
#include "compile/compile.hpp"
#include "model/fields.hpp"
#include "model/settings.hpp"
#include "recourse/tooling.hpp"

namespace recourse {
namespace {

using detail::Type;
using detail::ValueKind;

const char* type_name(Type type) {
  switch (type) {
    case Type::Code:
      return "code";
    case Type::Bool:
      return "bool";
    case Type::Enum:
      return "enum";
    case Type::String:
      return "string";
    case Type::Duration:
      return "duration";
    case Type::Count:
      return "count";
  }
  return "";
}

const char* kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::Flag:
      return "flag";
    case ValueKind::Count:
      return "count";
    case ValueKind::Duration:
      return "duration";
    case ValueKind::Number:
      return "number";
    case ValueKind::Tool:
      return "tool";
    case ValueKind::Tools:
      return "tools";
    case ValueKind::Names:
      return "names";
    case ValueKind::Codes:
      return "codes";
    case ValueKind::Word:
      return "word";
  }
  return "";
}

Term term(TermKind kind, std::string_view name) {
  Term t;
  t.kind = kind;
  t.name = name;
  return t;
}

// The attributes a rule may test, each with the JSON key and the side (envelope or context)
// the fields give it; an attribute no field gives is derived.
void add_attributes(std::vector<Term>& out) {
  for (std::size_t i = 0; i < detail::kAttrCount; ++i) {
    const detail::AttrInfo& a = detail::kAttributes[i];
    if (a.internal) continue;
    Term t = term(TermKind::Attribute, a.name);
    t.type = type_name(a.type);
    for (std::size_t v = 0; v < a.value_count; ++v)
      t.values += (v ? ", " : "") + std::string(a.values[v]);
    t.may_be_absent = a.untrusted;
    t.origin = "derived";
    auto bound = [&](const char* side) {
      return [&, side](const detail::Field& f, auto) {
        if (f.attr && static_cast<std::size_t>(*f.attr) == i) {
          t.origin = side;
          t.json_key = f.key;
        }
      };
    };
    detail::for_each_envelope_field(bound("envelope"));
    detail::for_each_context_field(bound("context"));
    out.push_back(std::move(t));
  }
}

}  // namespace

Result<Bundle> compile_file(const Source& source, const CompileOptions& options) {
  return detail::compile_sources({source}, options, true, options.analyze);
}

std::vector<Term> vocabulary(std::int64_t attempt_ceiling) {
  std::vector<Term> out;
  add_attributes(out);
  for (std::string_view route : detail::Names<Route>::kValues)
    out.push_back(term(TermKind::Route, route));
  for (std::string_view code : detail::kBuiltinCodes) out.push_back(term(TermKind::Code, code));
  for (const detail::SettingDef& def : detail::setting_table()) {
    Term t = term(TermKind::Setting, def.key);
    t.block = def.block;
    t.type = kind_name(def.kind);
    t.values = def.kind == ValueKind::Word ? std::string(def.words)
                                           : detail::range_text(def, attempt_ceiling);
    t.default_text = def.default_text;
    t.meaning = def.meaning;
    out.push_back(std::move(t));
  }
  for (std::string_view invariant : detail::kInvariants)
    out.push_back(term(TermKind::Invariant, invariant));
  return out;
}

}  // namespace recourse
