// Policy files on disk: the loader that finds a base policy's file
// (`extends "NAME"` -> NAME.recourse beside the extending file), and read_policies(), the
// pipeline's front (size limit, parse, inherit) that compile() and diff() share, so both read
// and resolve policies the same way.
#pragma once

#include <deque>
#include <filesystem>
#include <optional>
#include <string>

#include "check/inherit.hpp"
#include "recourse/policy.hpp"
#include "recourse/tooling.hpp"

namespace recourse::detail {

/// A loader for inherit(): reads NAME.recourse beside the extending file (read_policy_file()),
/// keeps its text in `loaded` (a deque: the texts keep their addresses),
/// adds it to `refs` and parses it with that source index. Names that could leave the directory
/// (`/`, a leading `.`), the `given` paths (compiled already: they do not define the name) and
/// paths tried before are never read. A file that exists but cannot be read (a FIFO, no
/// permission) is E000, one beyond the size limit E090. Diagnostics of the base file go to
/// `diagnostics`.
BaseLoader file_loader(Sources& refs, std::deque<Source>& loaded, const CompileOptions& options,
                       std::vector<Diagnostic>& diagnostics, const std::vector<std::string>& given);

/// The front of the pipeline, shared by compile() and diff(): each of `given` checked against
/// the size limit (E090) and parsed, then its `extends` resolved (inherit()), reading each base
/// as NAME.recourse beside its file when `load_bases`. Appends every source read to `refs`
/// (bases' texts are kept in `loaded`); `refs` views the texts of `given` and `loaded`, so both
/// must outlive it. Returns the given files that parsed, then the bases read.
std::vector<ast::File> read_policies(const std::vector<Source>& given,
                                     const CompileOptions& options, bool load_bases, Sources& refs,
                                     std::deque<Source>& loaded,
                                     std::vector<Diagnostic>& diagnostics);

/// What a file of stat() mode `mode` is, when not a regular file, as a phrase that follows its
/// path: "is a directory", "is a FIFO, not a regular file", "is a character device, not a
/// regular file", ... How every refusal of a path that must be a regular file says why.
const char* not_regular(unsigned mode) noexcept;

/// Error E000 on `path`: it cannot be read, `message` says why.
Diagnostic unreadable(const std::string& path, std::string message);

/// Error E090 on the file at `path`, `bytes` long: beyond options.max_source_bytes. About the
/// whole file, so at its start (1:1, offset 0), with no source line.
Diagnostic too_large(std::string_view path, std::uint64_t bytes, const CompileOptions& options);

/// Appends E090 and returns true when `bytes`, the size of the file at `path`, is beyond
/// options.max_source_bytes; false otherwise.
bool over_limit(std::string_view path, std::uint64_t bytes, const CompileOptions& options,
                std::vector<Diagnostic>& diagnostics);

/// The text of the policy file at `path`, as compile_paths() reads one: a regular file
/// (read_regular_file(); otherwise E000) of at most options.max_source_bytes (otherwise E090
/// with the file's real size). nullopt with the diagnostic appended to `diagnostics`.
std::optional<std::string> read_policy_file(const std::string& path, const CompileOptions& options,
                                            std::vector<Diagnostic>& diagnostics);

}  // namespace recourse::detail
