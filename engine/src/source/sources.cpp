// Policy files on disk (sources.hpp).
#include "source/sources.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <memory>

namespace recourse::detail {

namespace fs = std::filesystem;

std::optional<std::string> read_bounded(const fs::path& p, const CompileOptions& options) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  // In chunks: memory follows the file's size, never the limit's.
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= options.max_source_bytes && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (text.size() > options.max_source_bytes + 1) text.resize(options.max_source_bytes + 1);
  return text;
}

bool over_limit(const Source& src, const CompileOptions& options, std::vector<Diagnostic>& out) {
  if (src.text.size() <= options.max_source_bytes) return false;
  Diagnostic d;
  d.code = "E090";
  d.file = src.path;
  d.message =
      fmt::format("file is {} bytes; the limit is {}", src.text.size(), options.max_source_bytes);
  d.help = "raise CompileOptions::max_source_bytes";
  out.push_back(std::move(d));
  return true;
}

BaseLoader file_loader(grammar::Sources& refs, std::deque<Source>& loaded,
                       const CompileOptions& options, std::vector<Diagnostic>& diagnostics,
                       const std::vector<std::string>& given) {
  auto tried = std::make_shared<std::vector<fs::path>>();
  for (const auto& path : given) tried->push_back(fs::path(path).lexically_normal());
  return [&refs, &loaded, &options, &diagnostics, tried](
             std::string_view name, std::string_view from) -> std::optional<ast::File> {
    constexpr std::string_view allowed =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
    if (name.empty() || name.front() == '.' || name.find_first_not_of(allowed) != name.npos)
      return std::nullopt;
    const fs::path path =
        (fs::path(from).parent_path() / (std::string(name) + ".recourse")).lexically_normal();
    if (std::find(tried->begin(), tried->end(), path) != tried->end()) return std::nullopt;
    tried->push_back(path);
    auto text = read_bounded(path, options);
    if (!text) return std::nullopt;
    loaded.push_back({path.string(), std::move(*text)});
    const Source& src = loaded.back();
    if (over_limit(src, options, diagnostics)) return std::nullopt;
    const auto index = static_cast<std::uint32_t>(refs.size());
    refs.push_back({src.path, src.text});
    return grammar::parse(src.path, src.text, options.max_depth, diagnostics, index);
  };
}

std::vector<ast::File> read_policies(const std::vector<Source>& given,
                                     const CompileOptions& options, bool load_bases,
                                     grammar::Sources& refs, std::deque<Source>& loaded,
                                     std::vector<Diagnostic>& diagnostics) {
  std::vector<ast::File> files;
  for (const Source& src : given) {
    if (over_limit(src, options, diagnostics)) continue;
    const auto index = static_cast<std::uint32_t>(refs.size());
    refs.push_back({src.path, src.text});
    if (auto f = grammar::parse(src.path, src.text, options.max_depth, diagnostics, index))
      files.push_back(std::move(*f));
  }
  BaseLoader load;
  if (load_bases) {
    std::vector<std::string> paths;
    for (const Source& src : given) paths.push_back(src.path);
    load = file_loader(refs, loaded, options, diagnostics, paths);
  }
  inherit(files, refs, load, options.max_extends_depth, diagnostics);
  return files;
}

}  // namespace recourse::detail
