// recourse fmt: rewrites policy files in the canonical layout of recourse::format().
//
// `recourse fmt FILES...` rewrites each file that would change (and prints its path);
// directories stand for every *.recourse file below them. `--check` writes nothing, prints the
// path of each file that would change and exits 1 if there is any. `-` reads stdin and writes
// the formatted text to stdout. A file that does not parse is left untouched: its diagnostics go
// to stderr and the exit status is 1.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli.hpp"

namespace recourse::cli {
namespace {

namespace fs = std::filesystem;

// Replaces `path` with `text`: written beside it, then renamed over it, so a failed write never
// leaves half a policy. Keeps the file's permissions; a symlink's target is rewritten.
bool write_file(const std::string& path, const std::string& text, std::string& error) {
  std::error_code ec;
  fs::path target = fs::is_symlink(path, ec) ? fs::canonical(path, ec) : fs::path(path);
  if (ec) {
    error = "cannot resolve " + path;
    return false;
  }
  fs::path temp = target;
  temp += ".fmt-tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      fs::remove(temp, ec);
      error = "cannot write " + temp.string();
      return false;
    }
  }
  fs::permissions(temp, fs::status(target, ec).permissions(), ec);
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp, ec);
    error = "cannot replace " + path;
    return false;
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
    std::vector<Diagnostic> diagnostics;
    const auto formatted = format(*text, diagnostics, stdio ? "<stdin>" : path, limits);
    if (!formatted) {
      print_diagnostics(diagnostics, Format::Text, std::cerr);
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
