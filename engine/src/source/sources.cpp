// Policy files on disk (sources.hpp).
#include "source/sources.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace recourse {

int open_regular_file(const std::string& path, std::string& error) noexcept {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    error = std::string("cannot be read: ") + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error = std::string("cannot be read: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    error = S_ISDIR(st.st_mode)    ? "is a directory"
            : S_ISFIFO(st.st_mode) ? "is a FIFO, not a regular file"
            : S_ISSOCK(st.st_mode) ? "is a socket, not a regular file"
            : S_ISCHR(st.st_mode)  ? "is a character device, not a regular file"
            : S_ISBLK(st.st_mode)  ? "is a block device, not a regular file"
                                   : "is not a regular file";
    ::close(fd);
    return -1;
  }
  return fd;
}

std::optional<std::string> read_regular_file(const std::string& path, std::size_t max_bytes,
                                             std::string& error) noexcept {
  try {
    const int fd = open_regular_file(path, error);
    if (fd < 0) return std::nullopt;
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } const closer{fd};
    // In chunks: memory follows the file's size, never the limit's.
    std::string text;
    char chunk[1 << 16];
    while (text.size() <= max_bytes) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n == 0) break;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error = std::string("cannot be read: ") + std::strerror(errno);
        return std::nullopt;
      }
      text.append(chunk, static_cast<std::size_t>(n));
    }
    if (text.size() > max_bytes + 1) text.resize(max_bytes + 1);
    return text;
  } catch (const std::exception& e) {
    error = std::string("cannot be read: ") + e.what();
    return std::nullopt;
  }
}

}  // namespace recourse

namespace recourse::detail {

namespace fs = std::filesystem;

Diagnostic unreadable(const std::string& path, std::string message) {
  Diagnostic d;
  d.code = "E000";
  d.file = path;
  d.message = std::move(message);
  return d;
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
    std::error_code ec;
    if (!fs::exists(fs::status(path, ec))) return std::nullopt;  // E026 says what to do
    std::string error;
    auto text = read_regular_file(path.string(), options.max_source_bytes, error);
    if (!text) {
      diagnostics.push_back(unreadable(path.string(), "file " + error));
      return std::nullopt;
    }
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
