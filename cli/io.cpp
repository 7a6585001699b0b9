// Input helpers of the command: reading files or stdin, loading a bundle, printing diagnostics.
#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"

namespace recourse::cli {

std::optional<std::string> read_text(const std::string& path, std::size_t max_bytes,
                                     std::string& error) {
  const bool stdin_input = path.empty() || path == "-";
  std::optional<std::string> text;
  if (stdin_input) {
    // In chunks, at most one byte past the limit: memory follows the input, and an endless
    // input cannot exhaust it.
    text.emplace();
    char chunk[1 << 16];
    while (text->size() <= max_bytes && std::cin.read(chunk, sizeof chunk).gcount() > 0)
      text->append(chunk, static_cast<std::size_t>(std::cin.gcount()));
  } else if (Result<FileText> file = read_regular_file(path, max_bytes); file.ok()) {
    text = std::move(file->text);
  } else {
    error = fmt::format("{} {}", path, file.message());
    return std::nullopt;
  }
  if (text->size() > max_bytes) {
    error = fmt::format("{} is larger than {} bytes", stdin_input ? "stdin" : path, max_bytes);
    return std::nullopt;
  }
  return text;
}

LineReader::~LineReader() {
  if (owned_) ::close(fd_);
}

bool LineReader::open(const std::string& path) {
  const bool stdin_input = path.empty() || path == "-";
  name_ = stdin_input ? "stdin" : path;
  if (stdin_input) {
    fd_ = STDIN_FILENO;
    return true;
  }
  const recourse::Result<OpenFile> file = open_regular_file(path);
  if (!file.ok()) {
    error_ = fmt::format("{} {}", path, file.message());
    return false;
  }
  fd_ = file->fd;
  owned_ = true;
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && static_cast<std::uint64_t>(st.st_size) > max_total_) {
    error_ = fmt::format("{} is larger than {} bytes", path, max_total_);
    return false;
  }
  return true;
}

bool LineReader::fill() {
  if (failed_) return false;
  chunk_.resize(1 << 16);
  for (;;) {
    const ssize_t n = ::read(fd_, chunk_.data(), chunk_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error_ = fmt::format("{} cannot be read: {}", name_, std::strerror(errno));
      failed_ = true;
      return false;
    }
    pos_ = 0;
    len_ = static_cast<std::size_t>(n);
    total_ += len_;
    if (total_ > max_total_) {
      error_ = fmt::format("{} is larger than {} bytes", name_, max_total_);
      failed_ = true;
      return false;
    }
    return n > 0;
  }
}

LineReader::Result LineReader::next(std::string& line) {
  line.clear();
  bool any = false, too_long = false;
  for (;;) {
    if (pos_ == len_ && !fill()) {
      if (failed_) return total_ > max_total_ ? Result::TooLarge : Result::Failed;
      if (!any) return Result::End;
      break;  // the last line, without a newline
    }
    any = true;
    const char* begin = chunk_.data() + pos_;
    const void* newline = std::memchr(begin, '\n', len_ - pos_);
    const std::size_t n =
        newline ? static_cast<std::size_t>(static_cast<const char*>(newline) - begin) : len_ - pos_;
    if (!too_long && line.size() + n > max_line_) {
      too_long = true;
      line.clear();
      line.shrink_to_fit();
    }
    if (!too_long) line.append(begin, n);
    pos_ += n;
    if (newline) {
      ++pos_;
      break;
    }
  }
  return too_long ? Result::TooLong : Result::Line;
}

namespace {

// Offset just past the JSON string starting at `i` (a '"'), or npos.
std::size_t skip_string(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\')
      ++i;
    else if (s[i] == '"')
      return i + 1;
  }
  return std::string_view::npos;
}

// Offset just past the JSON value starting at `i`, or npos (brackets and strings only: the
// envelope reader validates the value itself).
std::size_t skip_value(std::string_view s, std::size_t i) {
  int depth = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      i = skip_string(s, i);
      if (i == std::string_view::npos) return i;
      --i;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return i;
      if (--depth == 0) return i + 1;
    } else if (c == ',' && depth == 0) {
      return i;
    }
    if (depth == 0 && c == '"') return i + 1;
  }
  return depth == 0 ? s.size() : std::string_view::npos;
}

}  // namespace

std::vector<RawMember> raw_members(std::string_view s) {
  auto ws = [&](std::size_t i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
    return i;
  };
  std::vector<RawMember> out;
  // A UTF-8 byte-order mark before the object is skipped, as the JSON parser skips it.
  std::size_t i = ws(s.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0);
  if (i >= s.size() || s[i] != '{') return out;
  i = ws(i + 1);
  while (i < s.size() && s[i] == '"') {
    const std::size_t key_end = skip_string(s, i);
    if (key_end == std::string_view::npos) break;
    // The key as a parser reads it: "envel\u006fpe" is "envelope".
    const std::string_view quoted = s.substr(i, key_end - i);
    std::string key(quoted.substr(1, quoted.size() - 2));
    if (key.find('\\') != std::string::npos) {
      const auto unescaped = nlohmann::json::parse(quoted, nullptr, false);
      if (!unescaped.is_string()) break;
      key = unescaped.get<std::string>();
    }
    i = ws(key_end);
    if (i >= s.size() || s[i] != ':') break;
    const std::size_t begin = ws(i + 1);
    const std::size_t end = skip_value(s, begin);
    if (end == std::string_view::npos || end <= begin) break;
    out.push_back({std::move(key), begin, end});
    i = ws(end);
    if (i < s.size() && s[i] == ',') i = ws(i + 1);
  }
  return out;
}

const RawMember* find_member(const std::vector<RawMember>& members, std::string_view key) {
  for (const auto& m : members)
    if (m.key == key) return &m;
  return nullptr;
}

std::size_t nesting(std::string_view s) {
  std::size_t depth = 0, deepest = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') {
      i = skip_string(s, i);
      if (i == std::string_view::npos) break;
      --i;
    } else if (s[i] == '{' || s[i] == '[') {
      deepest = std::max(deepest, ++depth);
    } else if ((s[i] == '}' || s[i] == ']') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::vector<std::string> policy_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (p == "-" || !fs::is_directory(p, ec)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    for (fs::recursive_directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec) && it->path().extension() == ".recourse")
        found.push_back(it->path().string());
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::string delay_text(const Decision& d) {
  return d.route == Route::Retry ? fmt::format("{}ms", d.delay_ms) : "-";
}

void print_diagnostics(const std::vector<Diagnostic>& diagnostics, Format format,
                       std::ostream& out) {
  if (format == Format::Json) {
    out << to_json(diagnostics) << "\n";
    return;
  }
  for (const auto& d : diagnostics) out << to_text(d);
}

LogOptions log_options(const Options& o) {
  LogOptions options;
  if (o.log_text == "keep") options.text = LogText::Keep;
  return options;
}

bool DecisionLogFile::open(const std::string& path, const LogOptions& options) {
  path_ = path;
  options_ = options;
  if (path.empty()) return true;
  out_.open(path, std::ios::binary | std::ios::app);
  if (!out_) std::cerr << fmt::format("error: cannot write the decision log {}\n", path);
  return static_cast<bool>(out_);
}

void DecisionLogFile::write(const Envelope& envelope, const Context& context,
                            const Decision& decision, const Decision* candidate,
                            std::uint32_t differences) {
  if (out_.is_open())
    out_ << to_json(DecisionRecord{envelope, context, decision, candidate, differences}, options_)
         << '\n';
}

void DecisionLogFile::write(const std::string& json_line) {
  if (out_.is_open()) out_ << json_line << '\n';
}

bool DecisionLogFile::close() {
  if (!out_.is_open()) return true;
  out_.close();
  if (!out_) std::cerr << fmt::format("error: writing the decision log {} failed\n", path_);
  return static_cast<bool>(out_);
}

std::optional<Bundle> load(const std::vector<std::string>& paths, const Options& options,
                           bool analyze) {
  CompileOptions compile = options.compile;
  compile.analyze = analyze;
  Result<Bundle> r = compile_paths(paths, compile);
  if (!r.diagnostics().empty()) print_diagnostics(r.diagnostics(), options.format, std::cerr);
  if (!r.ok() || has_errors(r.diagnostics(), options.strict)) return std::nullopt;
  return std::move(*r);
}

}  // namespace recourse::cli
