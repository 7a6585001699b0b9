// The settings table: every setting of the `tool`, `limits`, `backoff`, `breaker` and `throttle`
// blocks with its kind of value, range, default and meaning, in the dump's order.
//
// The checker takes each block's keys and each value's range from it (check/blocks.cpp), the
// dump prints the settings by it (settings() in table/table.cpp, so the policy hash and `diff`
// follow), and tests/docs_test.cpp holds docs/language.md's settings tables to it row by row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.hpp"

namespace recourse::detail {

/// The kind of a setting's value.
enum class ValueKind : std::uint8_t {
  Flag,      ///< true or false
  Count,     ///< a whole number
  Duration,  ///< a duration literal, in ms
  Number,    ///< a plain number (ratio, factor, tokens)
  Tool,      ///< a tool's name as a "string"
  Tools,     ///< a tool's name as a "string", or a list of them
  Names,     ///< a list of names or strings
  Codes,     ///< a list of codes (built-in or declared)
  Word,      ///< one of `words`
};

/// One setting.
struct SettingDef {
  std::string_view block;  ///< "tool", "limits", "backoff", "breaker", "throttle"
  std::string_view key;
  ValueKind kind;
  /// Count, Duration (ms), Number: the range's ends; nullopt for none. `ceiling`: the high end
  /// is CompileOptions::attempt_ceiling.
  std::optional<double> low, high;
  bool low_open = false, high_open = false, ceiling = false;
  std::string_view words;         ///< Word: the values, as the docs list them
  std::string_view default_text;  ///< the default as the docs show it
  std::string_view meaning;       ///< one line for the docs' table
  /// The value as the dump prints it; nullptr when the setting changes no decision.
  std::string (*show)(const PolicySpec&) = nullptr;
};

/// Every setting, block by block, each block's in the dump's order.
const std::vector<SettingDef>& setting_table();

/// The settings of `block`, in order.
std::vector<const SettingDef*> settings_of(std::string_view block);

/// The setting `key` of `block`; nullptr when there is none.
const SettingDef* setting(std::string_view block, std::string_view key);

/// The range as the docs and messages write it: "1 .. 10", "(0, 1]", "> 0", ">= 0" (empty
/// without one). `ceiling` is the engine's attempt ceiling.
std::string range_text(const SettingDef& def, std::int64_t ceiling);

/// `route "target" "reason"`, as the dump shows a row's or a setting's action.
std::string action_text(const Action& action);

/// Whether `value` (ms for a duration) is in the setting's range.
bool in_range(const SettingDef& def, double value, std::int64_t ceiling);

}  // namespace recourse::detail
