// The `recourse` command: shared options, input helpers and the subcommands.
//
// Exit codes for every command: 0 success (warnings allowed), 1 errors or failed checks
// (--strict turns warnings into errors), 2 usage errors (CLI11 reports those).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "recourse/recourse.hpp"

namespace recourse::cli {

enum class Format { Text, Json };

struct Options {
  Format format = Format::Text;
  bool strict = false;
  std::vector<std::string> policies;  // --policy (files or directories)
  std::string envelope;               // --envelope FILE, or "-" / empty for stdin
  std::string context;                // --context FILE
  std::vector<std::string> paths;     // positional arguments
  bool dump = false;
};

// io.cpp
std::optional<std::string> read_text(const std::string& path, std::string& error);
/// Compiles paths, prints diagnostics to stderr (text or JSON), returns the bundle or nullopt.
std::optional<Bundle> load(const std::vector<std::string>& paths, const Options& options);
/// The exact text of member `key` of the JSON object in `line` (top level only), so a trace's
/// envelope reaches the envelope reader byte for byte (duplicate keys, huge numbers and all).
/// Returns [begin, end) offsets, or nullopt when the line is not an object with that member.
std::optional<std::pair<std::size_t, std::size_t>> raw_member(std::string_view line,
                                                              std::string_view key);
void print_diagnostics(const std::vector<Diagnostic>& diagnostics, Format format,
                       std::ostream& out);

// commands.cpp
int run_check(const Options& options);
int run_decide(const Options& options, bool explain);
int run_replay(const Options& options);
int run_compile(const Options& options);

}  // namespace recourse::cli
