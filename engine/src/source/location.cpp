// Located diagnostics (location.hpp).
#include "source/location.hpp"

#include "lines.hpp"

namespace recourse::detail {

Diagnostic& report(std::vector<Diagnostic>& out, const Sources& sources, ast::Pos pos,
                   Severity severity, std::string code, std::string message, std::string help) {
  Diagnostic& d = out.emplace_back();
  d.severity = severity;
  d.code = std::move(code);
  d.line = pos.line;
  d.column = pos.column;
  d.offset = pos.offset;
  d.message = std::move(message);
  d.help = std::move(help);
  if (pos.source >= sources.size()) return d;
  d.file = std::string(sources[pos.source].path);
  if (pos.line) d.source_line = std::string(grammar::line_at(sources[pos.source].text, pos.offset));
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
