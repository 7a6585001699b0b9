// Rendering of diagnostics as text (file:line:col, source line, caret) and as JSON.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "recourse/diagnostic.hpp"

#include "model/names.hpp"

namespace recourse {

const char* to_string(Severity severity) noexcept {
  return detail::name_of(severity).data();
}

std::string to_text(const Diagnostic& d) {
  std::string out;
  if (!d.file.empty()) out += d.file + ":";
  if (d.line > 0) out += fmt::format("{}:{}:", d.line, d.column);
  out += fmt::format("{}{}[{}]: {}\n", out.empty() ? "" : " ", to_string(d.severity), d.code,
                     d.message);
  if (d.line > 0 && !d.source_line.empty()) {
    // Tabs stay tabs under the caret so it lines up however the terminal expands them.
    std::string pad;
    for (std::size_t i = 0; i + 1 < d.column && i < d.source_line.size(); ++i)
      pad += d.source_line[i] == '\t' ? '\t' : ' ';
    out += fmt::format("  {}\n  {}^\n", d.source_line, pad);
  }
  if (!d.help.empty()) out += fmt::format("  help: {}\n", d.help);
  return out;
}

std::string to_json(const std::vector<Diagnostic>& diagnostics) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : diagnostics)
    out.push_back({{"severity", to_string(d.severity)},
                   {"code", d.code},
                   {"file", d.file},
                   {"line", d.line},
                   {"column", d.column},
                   {"message", d.message},
                   {"help", d.help}});
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string quoted(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool has_errors(const std::vector<Diagnostic>& diagnostics, bool strict) noexcept {
  for (const auto& d : diagnostics)
    if (d.severity == Severity::Error || (strict && d.severity == Severity::Warning)) return true;
  return false;
}

}  // namespace recourse
