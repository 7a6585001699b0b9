// Rendering of diagnostics as text (file:line:col, source line, caret) and as JSON.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "recourse/diagnostic.hpp"
#include "recourse/result.hpp"

#include "lines.hpp"
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
    // One space per character before the column; tabs stay tabs so the caret lines up however
    // the terminal expands them.
    std::string pad;
    std::uint32_t index = 0;  // of the character that starts at c
    for (const char c : d.source_line) {
      if (!grammar::starts_char(c)) continue;
      if (++index >= d.column) break;
      pad += c == '\t' ? '\t' : ' ';
    }
    out += fmt::format("  {}\n  {}^\n", d.source_line, pad);
  }
  if (!d.help.empty()) out += fmt::format("  help: {}\n", d.help);
  return out;
}

std::string to_json(const std::vector<Diagnostic>& diagnostics) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : diagnostics) {
    nlohmann::json r = {{"severity", to_string(d.severity)},
                        {"code", d.code},
                        {"file", d.file},
                        {"line", d.line},
                        {"column", d.column},
                        {"offset", d.offset},
                        {"message", d.message},
                        {"help", d.help}};
    if (d.witness) {  // the same input as the help's text, as data
      r["envelope"] = nlohmann::json::parse(d.witness->envelope);
      r["context"] = nlohmann::json::parse(d.witness->context);
      r["route"] = d.witness->route;
    }
    out.push_back(std::move(r));
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string quoted(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Diagnostic error_diagnostic(std::string code, std::string message, std::string help) {
  Diagnostic d;
  d.code = std::move(code);
  d.message = std::move(message);
  d.help = std::move(help);
  return d;
}

std::string first_message(const std::vector<Diagnostic>& diagnostics) {
  for (const Diagnostic& d : diagnostics)
    if (d.severity == Severity::Error) return d.message;
  return diagnostics.empty() ? std::string() : diagnostics.front().message;
}

bool has_errors(const std::vector<Diagnostic>& diagnostics, bool strict) noexcept {
  for (const auto& d : diagnostics)
    if (d.severity == Severity::Error || (strict && d.severity == Severity::Warning)) return true;
  return false;
}

}  // namespace recourse
