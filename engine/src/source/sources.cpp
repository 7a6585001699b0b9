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

Result<OpenFile> open_regular_file(const std::string& path) noexcept {
  try {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
      return Result<OpenFile>::failure(
          detail::unreadable(path, std::string("cannot be read: ") + std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int error = errno;
      ::close(fd);
      return Result<OpenFile>::failure(
          detail::unreadable(path, std::string("cannot be read: ") + std::strerror(error)));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return Result<OpenFile>::failure(detail::unreadable(path, detail::not_regular(st.st_mode)));
    }
    return OpenFile{fd, static_cast<std::uint64_t>(st.st_size)};
  } catch (...) {
    return Result<OpenFile>::failure(detail::unreadable(path, "cannot be read: out of memory"));
  }
}

Result<FileText> read_regular_file(const std::string& path, std::size_t max_bytes) noexcept {
  try {
    Result<OpenFile> opened = open_regular_file(path);
    if (!opened.ok()) return Result<FileText>::failure(std::move(opened).diagnostics());
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } const closer{opened->fd};
    // In chunks: memory follows the file's size, never the limit's.
    FileText file;
    char chunk[1 << 16];
    while (file.text.size() <= max_bytes) {
      const ssize_t n = ::read(closer.fd, chunk, sizeof chunk);
      if (n == 0) break;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        return Result<FileText>::failure(
            detail::unreadable(path, std::string("cannot be read: ") + std::strerror(errno)));
      file.text.append(chunk, static_cast<std::size_t>(n));
    }
    file.size = std::max<std::uint64_t>(opened->size, file.text.size());
    if (file.text.size() > max_bytes + 1) file.text.resize(max_bytes + 1);
    return file;
  } catch (const std::exception& e) {
    return Result<FileText>::failure(
        detail::unreadable(path, std::string("cannot be read: ") + e.what()));
  } catch (...) {
    return Result<FileText>::failure(detail::unreadable(path, "cannot be read"));
  }
}

}  // namespace recourse

namespace recourse::detail {

namespace fs = std::filesystem;

const char* not_regular(unsigned mode) noexcept {
  return S_ISDIR(mode)    ? "is a directory"
         : S_ISFIFO(mode) ? "is a FIFO, not a regular file"
         : S_ISSOCK(mode) ? "is a socket, not a regular file"
         : S_ISCHR(mode)  ? "is a character device, not a regular file"
         : S_ISBLK(mode)  ? "is a block device, not a regular file"
                          : "is not a regular file";
}

Diagnostic unreadable(const std::string& path, std::string message) {
  Diagnostic d;
  d.code = "E000";
  d.file = path;
  d.message = std::move(message);
  return d;
}

Diagnostic too_large(std::string_view path, std::uint64_t bytes, const CompileOptions& options) {
  Diagnostic d;
  d.code = "E090";
  d.file = std::string(path);
  d.line = 1;
  d.column = 1;
  d.message = fmt::format("file is {} bytes; the limit is {}", bytes, options.max_source_bytes);
  d.help = "raise CompileOptions::max_source_bytes";
  return d;
}

bool over_limit(std::string_view path, std::uint64_t bytes, const CompileOptions& options,
                std::vector<Diagnostic>& out) {
  if (bytes <= options.max_source_bytes) return false;
  out.push_back(too_large(path, bytes, options));
  return true;
}

std::optional<std::string> read_policy_file(const std::string& path, const CompileOptions& options,
                                            std::vector<Diagnostic>& out) {
  Result<FileText> file = read_regular_file(path, options.max_source_bytes);
  if (!file.ok()) {
    out.push_back(unreadable(path, "file " + file.message()));
    return std::nullopt;
  }
  if (over_limit(path, file->size, options, out)) return std::nullopt;
  return std::move(file->text);
}

BaseLoader file_loader(Sources& refs, std::deque<Source>& loaded, const CompileOptions& options,
                       std::vector<Diagnostic>& diagnostics,
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
    auto text = read_policy_file(path.string(), options, diagnostics);
    if (!text) return std::nullopt;
    loaded.push_back({path.string(), std::move(*text)});
    const Source& src = loaded.back();
    refs.push_back({src.path, src.text});
    return parse_source(refs, static_cast<std::uint32_t>(refs.size() - 1), options.max_depth,
                        diagnostics);
  };
}

std::vector<ast::File> read_policies(const std::vector<Source>& given,
                                     const CompileOptions& options, bool load_bases, Sources& refs,
                                     std::deque<Source>& loaded,
                                     std::vector<Diagnostic>& diagnostics) {
  std::vector<ast::File> files;
  for (const Source& src : given) {
    if (over_limit(src.path, src.text.size(), options, diagnostics)) continue;
    refs.push_back({src.path, src.text});
    if (auto f = parse_source(refs, static_cast<std::uint32_t>(refs.size() - 1), options.max_depth,
                              diagnostics))
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
