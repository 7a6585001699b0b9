// One names table per enum: how the language, the JSON wire formats, the dumps and the stores
// spell each value. The public enums' tables are here; an internal enum's table stands beside
// its definition (model/model.hpp). Nothing else lists the names: readers use enum_of(),
// writers name_of(), messages names_list(), so a new value is spelled once.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "recourse/adapters.hpp"
#include "recourse/diagnostic.hpp"
#include "recourse/envelope.hpp"
#include "recourse/policy.hpp"
#include "recourse/store.hpp"

namespace recourse::detail {

/// Names<E>::kValues: the spelling of each value of E, in enum order.
template <typename E>
struct Names;

template <>
struct Names<Route> {
  static constexpr std::array<std::string_view, 7> kValues = {
      "retry", "repair", "authorize", "replace", "degrade", "escalate", "stop"};
};
template <>
struct Names<KeyDirective> {
  static constexpr std::array<std::string_view, 3> kValues = {"none", "reuse", "new"};
};
template <>
struct Names<SideEffect> {
  static constexpr std::array<std::string_view, 3> kValues = {"none", "unknown", "committed"};
};
template <>
struct Names<CircuitState> {
  static constexpr std::array<std::string_view, 3> kValues = {"closed", "open", "half_open"};
};
template <>
struct Names<LedgerState> {
  static constexpr std::array<std::string_view, 5> kValues = {"absent", "pending", "committed",
                                                              "released", "unknown"};
};
template <>
struct Names<Protocol> {
  static constexpr std::array<std::string_view, 4> kValues = {"http", "grpc", "mcp", "jsonrpc"};
};
template <>
struct Names<Severity> {
  static constexpr std::array<std::string_view, 3> kValues = {"error", "warning", "note"};
};

/// The spelling of `value` (a NUL-terminated literal, so `.data()` is a C string).
template <typename E>
constexpr std::string_view name_of(E value) noexcept {
  return Names<E>::kValues[static_cast<std::size_t>(value)];
}

/// The value spelled `name`, or nullopt. Exact and case-sensitive, as every format here is.
template <typename E>
constexpr std::optional<E> enum_of(std::string_view name) noexcept {
  for (std::size_t i = 0; i < Names<E>::kValues.size(); ++i)
    if (Names<E>::kValues[i] == name) return static_cast<E>(i);
  return std::nullopt;
}

/// The spellings for a message: `"none", "unknown" or "committed"`.
template <typename E>
std::string names_list() {
  const auto& values = Names<E>::kValues;
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += i + 1 == values.size() ? " or " : ", ";
    out += "\"" + std::string(values[i]) + "\"";
  }
  return out;
}

}  // namespace recourse::detail
