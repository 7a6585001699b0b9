// The context's JSON, both ways. The context comes from the host and is read strictly
// (docs/language.md section 13): a known key with a wrong type or an out-of-range value is C001,
// and so is a key given twice in any of its objects; unknown keys are ignored. One writer,
// context_json(), prints it for the decision log (every field) and for the inputs the analysis
// reports (only what differs from a default context), with the reader's keys in one order.
#include "wire/context.hpp"

#include <nlohmann/json.hpp>
#include <set>

#include "model/fields.hpp"
#include "model/names.hpp"
#include "recourse/engine.hpp"
#include "source/utf8.hpp"

namespace recourse {

namespace {

using detail::Field;

struct ContextReader {
  std::vector<Diagnostic>& errors;
  const ContextLimits& limits;

  void fail(std::string_view key, const std::string& what) {
    Diagnostic d;
    d.code = "C001";
    d.message = "context." + std::string(key) + " " + what;
    errors.push_back(std::move(d));
  }

  // One field, by the type of its member; an optional member is set only by a valid value.
  template <typename T>
  void read(const nlohmann::json& value, const Field& f, T& out) {
    if constexpr (std::is_same_v<T, std::string>) {
      if (!value.is_string()) return fail(f.key, "must be a string");
      const auto& text = value.get_ref<const std::string&>();
      if (auto why = detail::context_text_problem(text, limits); !why.empty())
        return fail(f.key, why);
      out = text;
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!value.is_boolean()) return fail(f.key, "must be true or false");
      out = value.get<bool>();
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
      if (!value.is_number_integer() ||
          (value.is_number_unsigned() &&
           value.get<std::uint64_t>() > static_cast<std::uint64_t>(f.max)) ||
          value.get<std::int64_t>() < f.min || value.get<std::int64_t>() > f.max)
        return fail(f.key, "must be an integer in [" + std::to_string(f.min) + ", " +
                               std::to_string(f.max) + "]");
      out = value.get<std::int64_t>();
    } else if constexpr (std::is_enum_v<T>) {
      const auto parsed = detail::enum_of<T>(value.is_string() ? value.get<std::string>() : "");
      if (!parsed) return fail(f.key, "must be " + detail::names_list<T>());
      out = *parsed;
    } else {
      static_assert(std::is_same_v<T, std::vector<std::string>>);
      std::vector<std::string> list;
      bool ok = value.is_array();
      for (std::size_t i = 0; ok && i < value.size(); ++i) {
        ok = value[i].is_string();
        if (ok) list.push_back(value[i].get<std::string>());
      }
      if (!ok) return fail(f.key, "must be a list of strings");
      if (list.size() > limits.max_arguments)
        return fail(f.key, "has more than " + std::to_string(limits.max_arguments) + " names");
      for (const std::string& name : list)
        if (auto why = detail::context_text_problem(name, limits); !why.empty())
          return fail(f.key, "holds a name that " + why);
      out = std::move(list);
    }
  }
  template <typename T>
  void read(const nlohmann::json& value, const Field& f, std::optional<T>& out) {
    T parsed{};
    const std::size_t before = errors.size();
    read(value, f, parsed);
    if (errors.size() == before) out = std::move(parsed);
  }
};

// The value of `key` in `j`, or null when the key is missing.
const nlohmann::json& member(const nlohmann::json& j, std::string_view key) {
  static const nlohmann::json null;
  const auto it = j.find(key);
  return it == j.end() ? null : *it;
}

}  // namespace

std::string detail::context_text_problem(std::string_view value, const ContextLimits& limits) {
  if (value.size() > limits.max_text_bytes)
    return "is longer than " + std::to_string(limits.max_text_bytes) + " bytes";
  if (!is_valid_utf8(value)) return "is not valid UTF-8";
  return "";
}

Result<Context> read_context(std::string_view json, const ContextLimits& limits) noexcept {
  std::vector<Diagnostic> errors;
  try {
    ContextReader r{errors, limits};
    auto whole = [&](std::string message) {
      r.fail("", "");
      errors.back().message = std::move(message);
      return Result<Context>::failure(std::move(errors));
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
    Context c;
    detail::for_each_context_field([&](const Field& f, auto field) {
      if (const auto& value = member(j, f.key); !value.is_null()) r.read(value, f, c.*field);
    });
    // A key given alone is pinned unless the next attempt rotates it; the flag says so outright.
    std::string next;
    if (const auto& value = member(j, "nextAttemptIdempotencyKey"); !value.is_null())
      r.read(value, Field{"nextAttemptIdempotencyKey", std::nullopt}, next);
    if (member(j, "idempotencyKeyPinned").is_null())
      c.idempotency_key_pinned =
          !c.idempotency_key.empty() && (next.empty() || next == c.idempotency_key);
    if (errors.empty()) return c;
    return Result<Context>::failure(std::move(errors));
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
