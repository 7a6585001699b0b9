// The context's JSON, both ways. The context comes from the host and is read strictly
// (docs/language.md section 13): a known key with a wrong type or an out-of-range value is C001,
// and so is a key given twice in any of its objects; unknown keys are ignored. One writer,
// context_json(), prints it for the decision log (every field) and for the inputs the analysis
// reports (only what differs from a default context), with the reader's keys in one order.
#include "wire/context.hpp"

#include <array>
#include <nlohmann/json.hpp>
#include <set>

#include "model/fields.hpp"
#include "model/names.hpp"
#include "recourse/engine.hpp"
#include "source/utf8.hpp"

namespace recourse {

namespace {

using detail::ContextValue;

// A context member's value of the JSON DOM, as ContextMembers reads it.
ContextValue value_of(const nlohmann::json& j) {
  ContextValue v;
  using Kind = ContextValue::Kind;
  if (j.is_null()) {
    v.kind = Kind::Null;
  } else if (j.is_boolean()) {
    v.kind = Kind::Boolean;
    v.boolean = j.get<bool>();
  } else if (j.is_number_unsigned() &&
             j.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    v.kind = Kind::Unsigned;
  } else if (j.is_number_integer()) {
    v.kind = Kind::Integer;
    v.integer = j.get<std::int64_t>();
  } else if (j.is_string()) {
    v.kind = Kind::Text;
    v.text = j.get_ref<const std::string&>();
  } else if (j.is_array()) {
    v.kind = Kind::Texts;
    for (const auto& item : j) {
      if (!item.is_string()) return ContextValue{};
      v.texts.push_back(item.get<std::string>());
    }
  }
  return v;
}

// The value of `key` in `j`, or null when the key is missing.
const nlohmann::json& member(const nlohmann::json& j, std::string_view key) {
  static const nlohmann::json null;
  const auto it = j.find(key);
  return it == j.end() ? null : *it;
}

// ContextMembers::kCount is the fields and nextAttemptIdempotencyKey.
static_assert([] {
  std::size_t n = 1;
  detail::for_each_context_field([&](const detail::Field&, auto) { ++n; });
  return n;
}() == detail::ContextMembers::kCount);

// Calls `f(key, min, max, member)` for member `i` of ContextMembers: a pointer to the Context's
// member, or nullptr for nextAttemptIdempotencyKey.
template <typename F>
void with_context_member(std::size_t i, F&& f) {
  std::size_t k = 0;
  detail::for_each_context_field([&](const detail::Field& field, auto member) {
    if (k++ == i) f(field.key, field.min, field.max, member);
  });
  if (i == k) f(std::string_view("nextAttemptIdempotencyKey"), 0, 0, nullptr);
}

}  // namespace

namespace detail {

namespace {

// The members' keys, in ContextMembers' order.
const std::array<std::string_view, ContextMembers::kCount> kMemberKeys = [] {
  std::array<std::string_view, ContextMembers::kCount> keys{};
  for (std::size_t i = 0; i < keys.size(); ++i)
    with_context_member(i, [&](std::string_view k, auto, auto, auto) { keys.at(i) = k; });
  return keys;
}();

}  // namespace

std::size_t ContextMembers::index(std::string_view key) noexcept {
  for (std::size_t i = 0; i < kCount; ++i)
    if (kMemberKeys[i] == key) return i;
  return kCount;
}

std::string_view ContextMembers::key(std::size_t i) noexcept {
  return kMemberKeys[i];
}

void ContextMembers::fail(std::string_view key, const std::string& what) {
  Diagnostic d;
  d.code = "C001";
  d.message = "context." + std::string(key) + " " + what;
  errors_.push_back(std::move(d));
}

// One field, by the type of its member; an optional member is set only by a valid value.
template <typename T>
void ContextMembers::read_value(const ContextValue& value, std::string_view key, std::int64_t min,
                                std::int64_t max, T& out) {
  using Kind = ContextValue::Kind;
  if constexpr (!std::is_same_v<T, unwrapped_t<T>>) {
    unwrapped_t<T> parsed{};
    const std::size_t before = errors_.size();
    read_value(value, key, min, max, parsed);
    if (errors_.size() == before) out = std::move(parsed);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (value.kind != Kind::Text) return fail(key, "must be a string");
    if (auto why = context_text_problem(value.text, limits_); !why.empty()) return fail(key, why);
    out = value.text;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (value.kind != Kind::Boolean) return fail(key, "must be true or false");
    out = value.boolean;
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    if (value.kind != Kind::Integer || value.integer < min || value.integer > max)
      return fail(
          key, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    out = value.integer;
  } else if constexpr (std::is_enum_v<T>) {
    const auto parsed = enum_of<T>(value.kind == Kind::Text ? value.text : "");
    if (!parsed) return fail(key, "must be " + names_list<T>());
    out = *parsed;
  } else {
    static_assert(std::is_same_v<T, std::vector<std::string>>);
    if (value.kind != Kind::Texts) return fail(key, "must be a list of strings");
    if (value.texts.size() > limits_.max_arguments)
      return fail(key, "has more than " + std::to_string(limits_.max_arguments) + " names");
    for (const std::string& name : value.texts)
      if (auto why = context_text_problem(name, limits_); !why.empty())
        return fail(key, "holds a name that " + why);
    out = value.texts;
  }
}

void ContextMembers::read(std::size_t i, const ContextValue& value) {
  if (value.kind == ContextValue::Kind::Null) return;
  with_context_member(i,
                      [&](std::string_view key, std::int64_t min, std::int64_t max, auto member) {
                        if constexpr (std::is_same_v<decltype(member), std::nullptr_t>)
                          read_value(value, key, min, max, next_key_);
                        else
                          read_value(value, key, min, max, context_.*member);
                        if (key == "idempotencyKeyPinned") pinned_given_ = true;
                      });
}

Result<Context> ContextMembers::finish() {
  if (!errors_.empty()) return Result<Context>::failure(std::move(errors_));
  // A key given alone is pinned unless the next attempt rotates it; the flag says so outright.
  if (!pinned_given_)
    context_.idempotency_key_pinned = !context_.idempotency_key.empty() &&
                                      (next_key_.empty() || next_key_ == context_.idempotency_key);
  return std::move(context_);
}

}  // namespace detail

std::string detail::context_text_problem(std::string_view value, const ContextLimits& limits) {
  if (value.size() > limits.max_text_bytes)
    return "is longer than " + std::to_string(limits.max_text_bytes) + " bytes";
  if (!is_valid_utf8(value)) return "is not valid UTF-8";
  return "";
}

Result<Context> read_context(std::string_view json, const ContextLimits& limits) noexcept {
  try {
    auto whole = [&](std::string message) {
      return Result<Context>::failure(error_diagnostic("C001", std::move(message)));
    };
    if (json.size() > limits.max_bytes)
      return whole("context is " + std::to_string(json.size()) + " bytes; the limit is " +
                   std::to_string(limits.max_bytes));
    if (json.find('\0') != std::string_view::npos)
      return whole("context is not valid JSON: a NUL byte");
    // A DOM keeps one value of a key given twice; for a trusted fact (was the payment
    // committed?) that would be a guess, so a repeated key in any object of the context is C001.
    // Keys are compared as the parser unescaped them ("side\u0045ffect" is "sideEffect").
    std::vector<std::set<std::string>> keys;  // per open object
    std::vector<std::string> path;            // the key being read, per open object
    std::string repeated;
    std::size_t depth = 0;
    bool too_deep = false;
    const auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      using Event = nlohmann::json::parse_event_t;
      // Refused already: the parser still reports what is inside the object it was told to
      // drop (its keys, with no object of `keys` open), and none of it is kept or counted.
      if (too_deep) return false;
      if (event == Event::object_start || event == Event::array_start) {
        too_deep = too_deep || ++depth > limits.max_depth;
        if (too_deep) return false;  // not kept: the context is refused, memory stays bounded
      } else if (event == Event::object_end || event == Event::array_end) {
        --depth;
      }
      if (event == Event::object_start) {
        keys.emplace_back();
        path.resize(keys.size());
      } else if (event == Event::object_end) {
        keys.pop_back();
      } else if (event == Event::key && repeated.empty()) {
        const auto& k = parsed.get_ref<const std::string&>();
        path.resize(keys.size());
        path.back() = k;
        if (!keys.back().insert(k).second)
          for (std::size_t i = 0; i < path.size(); ++i) repeated += (i ? "." : "") + path[i];
      }
      return true;
    };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(json.begin(), json.end(), callback);
    } catch (const nlohmann::json::exception& e) {
      return whole(std::string("context is not valid JSON: ") + e.what());
    }
    if (too_deep)
      return whole("context nested deeper than " + std::to_string(limits.max_depth) + " levels");
    if (!j.is_object()) return whole("context is not a JSON object");
    if (!repeated.empty()) return whole("context." + repeated + " appears more than once");
    detail::ContextMembers members(limits);
    for (std::size_t i = 0; i < detail::ContextMembers::kCount; ++i)
      members.read(i, value_of(member(j, detail::ContextMembers::key(i))));
    return members.finish();
  } catch (const std::exception& e) {
    return Result<Context>::failure(
        error_diagnostic("C001", std::string("context could not be read: ") + e.what()));
  } catch (...) {
    return Result<Context>::failure(error_diagnostic("C001", "context could not be read"));
  }
}

namespace detail {

namespace {

// A field's value as JSON: enums by name.
template <typename T>
nlohmann::ordered_json wire_value(const T& value) {
  if constexpr (std::is_enum_v<T>)
    return name_of(value);
  else
    return value;
}

}  // namespace

std::string context_json(const Context& c, bool compact) {
  using json = nlohmann::ordered_json;
  // What read_context() gives for the fields a compact form leaves out: a default context, and a
  // key given alone reads as pinned.
  Context base;
  base.idempotency_key_pinned = !c.idempotency_key.empty();
  json j = json::object();
  for_each_context_field([&](const Field& f, auto field) {
    const auto& value = c.*field;
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, std::string>) {
      if (f.always || !value.empty()) j[std::string(f.key)] = value;
    } else if constexpr (!std::is_same_v<T, unwrapped_t<T>>) {
      if (value) j[std::string(f.key)] = wire_value(*value);
    } else if (!compact || f.always || value != base.*field) {
      j[std::string(f.key)] = wire_value(value);
    }
  });
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace detail

std::string to_json(const Context& context) {
  return detail::context_json(context, false);
}

}  // namespace recourse
