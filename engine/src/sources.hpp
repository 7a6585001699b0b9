// Policy files on disk: the loader that finds a base policy's file
// (`extends "NAME"` -> NAME.recourse beside the extending file). Used by compile_paths() and
// diff(), so both resolve bases the same way.
#pragma once

#include <deque>
#include <filesystem>
#include <optional>
#include <string>

#include "inherit.hpp"
#include "recourse/policy.hpp"

namespace recourse::detail {

/// A loader for inherit(): reads NAME.recourse beside the extending file (a regular file, by
/// read_regular_file()), keeps its text in `loaded` (a deque: the texts keep their addresses),
/// adds it to `refs` and parses it with that source index. Names that could leave the directory
/// (`/`, a leading `.`), the `given` paths (compiled already: they do not define the name) and
/// paths tried before are never read. A file that exists but cannot be read (a FIFO, no
/// permission) is E000. Diagnostics of the base file go to `diagnostics`.
BaseLoader file_loader(grammar::Sources& refs, std::deque<Source>& loaded,
                       const CompileOptions& options, std::vector<Diagnostic>& diagnostics,
                       const std::vector<std::string>& given);

/// Error E000 on `path`: it cannot be read, `message` says why.
Diagnostic unreadable(const std::string& path, std::string message);

/// E090 when `src` is larger than options.max_source_bytes; false otherwise.
bool over_limit(const Source& src, const CompileOptions& options,
                std::vector<Diagnostic>& diagnostics);

}  // namespace recourse::detail
