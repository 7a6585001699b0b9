// Input helpers of the command: reading files or stdin, loading a bundle, printing diagnostics.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.hpp"

namespace recourse::cli {

std::optional<std::string> read_text(const std::string& path, std::string& error) {
  std::ostringstream text;
  if (path.empty() || path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("cannot read {}", path);
    return std::nullopt;
  }
  text << in.rdbuf();
  return text.str();
}

void print_diagnostics(const std::vector<Diagnostic>& diagnostics, Format format,
                       std::ostream& out) {
  if (format == Format::Json) {
    out << to_json(diagnostics) << "\n";
    return;
  }
  for (const auto& d : diagnostics) out << to_text(d);
}

std::optional<Bundle> load(const std::vector<std::string>& paths, const Options& options) {
  CompileResult r = compile_paths(paths);
  if (!r.diagnostics.empty()) print_diagnostics(r.diagnostics, options.format, std::cerr);
  if (!r.ok() || has_errors(r.diagnostics, options.strict)) return std::nullopt;
  return std::move(r.bundle);
}

}  // namespace recourse::cli
