// Steering detection: whether untrusted error text tries to instruct the agent that reads it.
//
// Input: one text of an envelope (its message or its suggestion), as the tool's server wrote it.
// Output: the categories of instruction-like content found in it, as bits (kSteeringCategories
// lists them, with the name the decision's warnings and docs/language.md section 4 use). The
// categories follow those public prompt-injection benchmarks sort attacks by (context ignoring
// and instruction override, role play and fake chat turns, tool invocation, command execution,
// data exfiltration, obfuscation by encoding): their facts, not their sentences.
//
// How: the text (at most SteeringLimits::max_scan_bytes of it) is first normalized into a
// buffer on the stack: invalid UTF-8, controls and invisible characters (zero-width, bidi
// overrides, tag characters) are dropped so they cannot split a phrase, full-width ASCII is
// folded to ASCII, and each run of white space is one space (one line break when the run holds
// one). Then hand-written scanners look for the table of phrases in steering.cpp, for URLs and
// mail addresses next to an imperative verb, and for runs of encoded characters. No regular
// expressions, no recursion, no allocation: time is linear in the bytes scanned times the
// phrases, and the result depends on the text alone.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "recourse/envelope.hpp"

namespace recourse::detail {

/// One category of steering, as a bit of scan_steering()'s result.
enum SteeringCategory : std::uint32_t {
  kSteerCommand = 1u << 0,         ///< a shell command to run
  kSteerPackageInstall = 1u << 1,  ///< a package to install or run from a registry
  kSteerUrl = 1u << 2,             ///< a URL the reader is told to fetch, open or visit
  kSteerPromptOverride = 1u << 3,  ///< a phrase that overrides the reader's instructions
  kSteerRoleMarker = 1u << 4,      ///< a chat role marker or a tool-call marker
  kSteerEncodedPayload = 1u << 5,  ///< an encoded payload (base64, escapes) to decode
  kSteerExfiltration = 1u << 6,    ///< an order to send data to an address or URL
};

/// A category's bit, its name in decisions and docs, and what it catches (docs/language.md
/// section 4 holds its table to this one).
struct SteeringCategoryInfo {
  std::uint32_t bit;
  std::string_view name;
  std::string_view meaning;
};

inline constexpr std::array<SteeringCategoryInfo, 7> kSteeringCategories = {{
    {kSteerCommand, "command",
     "a shell command to run: `rm -rf`, `curl -s URL` piped to `sh`, `bash -c`, `sudo`, `chmod "
     "+x`, "
     "`powershell`, `$(...)`, or run/execute followed by a command or a backquoted one"},
    {kSteerPackageInstall, "package_install",
     "a package to install or run: `npm install`, `npx`, `pip install`, `yarn add`, `uvx`, "
     "`cargo install`, `go install`, `apt-get install`, `brew install` and the like"},
    {kSteerUrl, "url",
     "a URL or `www.` address after a verb in the imperative that tells the reader to fetch, "
     "visit, open, download, click or go to it, or a Markdown image of a URL"},
    {kSteerPromptOverride, "prompt_override",
     "a phrase that overrides the reader's instructions: `ignore previous instructions`, "
     "`disregard the above`, `you are now`, `from now on`, `new instructions`, `system prompt`, "
     "`do not tell the user`, `pretend to be`"},
    {kSteerRoleMarker, "role_marker",
     "a chat role or tool-call marker: chat-template tokens (`im_start`, `[INST]`, `<<SYS>>`), "
     "`SYSTEM:` or "
     "`assistant:` opening a line or sentence, `<tool_call>`, `\"function_call\"`, or an order "
     "to call a tool (`call the tool`, `call files.write`)"},
    {kSteerEncodedPayload, "encoded_payload",
     "an encoded payload: a run of `SteeringLimits::min_encoded_chars` (40) base64 characters "
     "mixing cases and digits, a `data:...;base64,` URI, four `\\x` or `\\u` escapes or six `%XX` "
     "in a "
     "row, `base64` before an encoded run, ten letters spaced out one by one, or `decode the "
     "following`, `rot13`"},
    {kSteerExfiltration, "exfiltration",
     "an order to send data away: send, forward, upload, share, leak (or `bcc:`) in the "
     "imperative with a mail address or URL after it"},
}};

/// The categories of steering in `text` (bits of SteeringCategory; 0 when none). Scans the first
/// limits.max_scan_bytes bytes (at most kMaxSteeringScanBytes). Deterministic; never throws
/// and allocates nothing.
std::uint32_t scan_steering(std::string_view text, const SteeringLimits& limits) noexcept;

/// The names of the categories in `bits`, in table order, joined by ", " ("command, url").
std::string steering_names(std::uint32_t bits);

/// Whether code point `cp` is invisible text used to hide characters (soft hyphen, zero-width
/// characters, bidi controls, word joiners, the byte-order mark, tag characters). The model
/// text cleaner strips them too.
inline bool invisible_code_point(std::uint32_t cp) noexcept {
  return cp == 0xad || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff ||
         (cp >= 0xe0000 && cp <= 0xe007f);
}

}  // namespace recourse::detail
