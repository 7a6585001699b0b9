// recourse fmt: rewrites policy files in the canonical layout of recourse::format().
//
// `recourse fmt FILES...` rewrites each file that would change (and prints its path);
// directories stand for every *.recourse file below them. `--check` writes nothing, prints the
// path of each file that would change and exits 1 if there is any. `-` reads stdin and writes
// the formatted text to stdout. A file that does not parse, or whose formatted text
// recourse::format() refuses (it would exceed the size limit or compile differently), is left
// untouched in every mode: its diagnostics go to stderr and the exit status is 1.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli.hpp"

namespace recourse::cli {
namespace {

namespace fs = std::filesystem;

// Replaces `path` with `text` atomically: the text goes to a new file in the same directory
// (mkstemp), takes the file's permission bits, reaches the disk (fsync) and is renamed over the
// file, so a crash leaves the old file or the new one, never half of one. A symlink's target is
// rewritten. On failure the file is as it was and `error` says why.
bool write_file(const std::string& path, const std::string& text, std::string& error) {
  std::error_code ec;
  const fs::path target = fs::is_symlink(path, ec) ? fs::canonical(path, ec) : fs::path(path);
  struct stat st {};
  if (ec || stat(target.c_str(), &st) != 0) {
    error = "cannot resolve " + path;
    return false;
  }
  std::string temp =
      (target.parent_path() / ("." + target.filename().string() + ".fmt-XXXXXX")).string();
  const int fd = mkstemp(temp.data());
  if (fd < 0) {
    error = fmt::format("cannot create a file beside {}: {}", path, std::strerror(errno));
    return false;
  }
  bool ok = fchmod(fd, st.st_mode & 07777) == 0;
  for (std::size_t done = 0; ok && done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = ok && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(temp.c_str(), target.c_str()) != 0) {
    error = fmt::format("cannot replace {}: {}", path, std::strerror(errno));
    unlink(temp.c_str());
    return false;
  }
  // The rename reaches the disk with the directory (best effort: the file is complete anyway).
  const std::string dir = target.parent_path().empty() ? "." : target.parent_path().string();
  if (const int d = open(dir.c_str(), O_RDONLY | O_DIRECTORY); d >= 0) {
    fsync(d);
    close(d);
  }
  return true;
}

}  // namespace

int run_fmt(const Options& o) {
  const CompileOptions limits;
  int status = 0;
  for (const auto& path : policy_files(o.paths)) {
    const bool stdio = path == "-";
    std::string error;
    const auto text = read_text(path, limits.max_source_bytes, error);
    if (!text) {
      std::cerr << "error: " << error << "\n";
      status = 1;
      continue;
    }
    const Result<std::string> formatted = format(*text, stdio ? "<stdin>" : path, limits);
    if (!formatted.ok()) {
      print_diagnostics(formatted.diagnostics(), Format::Text, std::cerr);
      status = 1;
      continue;
    }
    if (o.check) {
      if (*formatted != *text) {
        std::cout << path << "\n";
        status = 1;
      }
    } else if (stdio) {
      std::cout << *formatted;
    } else if (*formatted != *text) {
      if (!write_file(path, *formatted, error)) {
        std::cerr << "error: " << error << "\n";
        status = 1;
        continue;
      }
      std::cout << path << "\n";
    }
  }
  return status;
}

}  // namespace recourse::cli
