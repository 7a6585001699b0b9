// Located diagnostics (location.hpp).
#include "source/location.hpp"

namespace recourse::detail {
namespace {

// The text of 1-based `line` in `text`, without its newline (empty when out of range).
std::string line_of(std::string_view text, std::uint32_t line) {
  std::size_t start = 0;
  for (std::uint32_t l = 1; l < line; ++l) {
    start = text.find('\n', start);
    if (start == std::string_view::npos) return {};
    ++start;
  }
  auto end = text.find('\n', start);
  auto s = text.substr(start, end == std::string_view::npos ? text.size() - start : end - start);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

Diagnostic& report(std::vector<Diagnostic>& out, const Sources& sources, ast::Pos pos,
                   Severity severity, std::string code, std::string message, std::string help) {
  Diagnostic& d = out.emplace_back();
  d.severity = severity;
  d.code = std::move(code);
  d.line = pos.line;
  d.column = pos.column;
  d.message = std::move(message);
  d.help = std::move(help);
  if (pos.source >= sources.size()) return d;
  d.file = std::string(sources[pos.source].path);
  if (pos.line) d.source_line = line_of(sources[pos.source].text, pos.line);
  return d;
}

std::optional<ast::File> parse_source(const Sources& sources, std::uint32_t index,
                                      std::size_t max_depth, std::vector<Diagnostic>& out) {
  const SourceRef& src = sources.at(index);
  std::optional<grammar::SyntaxError> error;
  auto file = grammar::parse(src.path, src.text, max_depth, error, index);
  if (error)
    report(out, sources, error->pos, Severity::Error, error->code, error->message, error->help);
  return file;
}

}  // namespace recourse::detail
