// Helpers shared by the tests: compiling inline policy text, reading inline JSON, running the CLI.
#pragma once

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "recourse/recourse.hpp"

// Whether this is an AddressSanitizer build: GCC defines __SANITIZE_ADDRESS__, Clang answers
// __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define RECOURSE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RECOURSE_TEST_ASAN 1
#endif
#endif

namespace test {

/// Compiles one inline policy file and requires success.
inline recourse::Policy policy(const std::string& text, const std::string& path = "test.recourse") {
  auto r = recourse::compile({{path, text}});
  INFO((r.diagnostics().empty() ? std::string() : recourse::to_text(r.diagnostics().front())));
  REQUIRE(r.ok());
  REQUIRE(r->policies().size() == 1);
  return r->policies().front();
}

/// The diagnostics of compiling one inline file (expected to fail or warn).
inline std::vector<recourse::Diagnostic> diagnostics(const std::string& text) {
  return recourse::compile({{"test.recourse", text}}).diagnostics();
}

/// format() with its diagnostics appended to `out`: the formatted text, or nullopt.
inline std::optional<std::string> format_into(std::string_view text,
                                              std::vector<recourse::Diagnostic>& out,
                                              std::string_view path = "",
                                              const recourse::CompileOptions& options = {}) {
  auto r = recourse::format(text, path, options);
  out.insert(out.end(), r.diagnostics().begin(), r.diagnostics().end());
  if (!r.ok()) return std::nullopt;
  return std::move(*r);
}

/// verify_format() with its diagnostics appended to `out`.
inline bool verify_into(std::string_view original, std::string_view formatted,
                        std::vector<recourse::Diagnostic>& out, std::string_view path = "",
                        const recourse::CompileOptions& options = {}) {
  const recourse::Status r = recourse::verify_format(original, formatted, path, options);
  out.insert(out.end(), r.diagnostics().begin(), r.diagnostics().end());
  return r.ok();
}

inline recourse::Envelope envelope(const std::string& json) {
  auto r = recourse::read_envelope(json);
  INFO(r.message());
  REQUIRE(r.ok());
  return *r;
}

inline recourse::Context context(const std::string& json) {
  auto r = recourse::read_context(json);
  REQUIRE(r.ok());
  return *r;
}

/// Runs a shell command; returns its exit status and stdout (stderr is folded in with `2>&1`
/// by the caller when wanted).
struct Run {
  int status = -1;
  std::string out;
};
inline Run run(const std::string& command) {
  Run r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// A shell prefix that caps the memory of the command after it at `mb` MiB. A plain build
/// limits the address space (`ulimit -v`); AddressSanitizer reserves terabytes of shadow address
/// space at start and cannot run under that limit, so a sanitized build caps each allocation
/// instead (`max_allocation_size_mb`: a larger request is a fatal sanitizer report).
inline std::string memory_cap(int mb) {
#if defined(RECOURSE_TEST_ASAN)
  return "export ASAN_OPTIONS=\"${ASAN_OPTIONS:-}:max_allocation_size_mb=" + std::to_string(mb) +
         "\"; ";
#else
  return "ulimit -v " + std::to_string(mb * 1024) + "; ";
#endif
}

/// The bytes of the file at `path`; requires that it can be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO("reading " << path);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// `s` without leading and trailing spaces, tabs and carriage returns.
inline std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

inline std::string source_dir() {
  return RECOURSE_SOURCE_DIR;
}
inline std::string cli() {
  return RECOURSE_CLI;
}

}  // namespace test
