// Steering detection (see steering.hpp): normalize, then scan for the categories' phrases,
// imperative verbs next to URLs and mail addresses, and encoded runs.
//
// The phrase table is the one place each phrase is listed. A phrase matches case-insensitively
// on word boundaries (a phrase that starts or ends with a letter or digit must not continue a
// word there); a leading '^' anchors it at the start of a segment (the text, a line, or a
// sentence: after '.', ';', '!', '?', '"', '\'', '>', ']', ')' and spaces), for role names that
// are ordinary words elsewhere ("file system: read-only" is no role marker).
#include "envelope/steering.hpp"

#include <algorithm>

#include "source/utf8.hpp"

namespace recourse::detail {
namespace {

struct Phrase {
  std::uint32_t category;
  std::string_view text;
};

// Phrases, by category. Lower case; '^' as above.
constexpr Phrase kPhrases[] = {
    // command
    {kSteerCommand, "rm -rf"},
    {kSteerCommand, "rm -fr"},
    {kSteerCommand, "sudo "},
    {kSteerCommand, "| sh"},
    {kSteerCommand, "|sh"},
    {kSteerCommand, "| bash"},
    {kSteerCommand, "|bash"},
    {kSteerCommand, "| zsh"},
    {kSteerCommand, "bash -c"},
    {kSteerCommand, "sh -c"},
    {kSteerCommand, "zsh -c"},
    {kSteerCommand, "/bin/sh"},
    {kSteerCommand, "/bin/bash"},
    {kSteerCommand, "powershell"},
    {kSteerCommand, "pwsh "},
    {kSteerCommand, "cmd.exe"},
    {kSteerCommand, "cmd /c"},
    {kSteerCommand, "chmod +x"},
    {kSteerCommand, "chmod 777"},
    {kSteerCommand, "nc -e"},
    {kSteerCommand, "python -c"},
    {kSteerCommand, "python3 -c"},
    {kSteerCommand, "node -e"},
    {kSteerCommand, "perl -e"},
    {kSteerCommand, "invoke-expression"},
    {kSteerCommand, "iex("},
    {kSteerCommand, "os.system("},
    {kSteerCommand, "subprocess."},
    {kSteerCommand, "eval("},
    {kSteerCommand, "exec("},
    {kSteerCommand, "$("},
    {kSteerCommand, "curl -"},
    {kSteerCommand, "curl http"},
    {kSteerCommand, "wget -"},
    {kSteerCommand, "wget http"},
    {kSteerCommand, "mkfifo"},
    {kSteerCommand, "/dev/tcp/"},
    {kSteerCommand, "crontab -"},
    {kSteerCommand, "git clone"},
    {kSteerCommand, "docker run"},
    {kSteerCommand, "kubectl exec"},
    {kSteerCommand, "in your terminal"},
    {kSteerCommand, "in a terminal"},
    {kSteerCommand, "in the terminal"},
    {kSteerCommand, "in your shell"},
    {kSteerCommand, "open a terminal"},
    {kSteerCommand, "run the following"},
    {kSteerCommand, "run this command"},
    {kSteerCommand, "run the command"},
    {kSteerCommand, "execute the following"},
    {kSteerCommand, "execute this command"},
    {kSteerCommand, "execute the command"},
    {kSteerCommand, "run this script"},
    {kSteerCommand, "run the script"},
    // package_install
    {kSteerPackageInstall, "npm install"},
    {kSteerPackageInstall, "npm i "},
    {kSteerPackageInstall, "npm add"},
    {kSteerPackageInstall, "npm exec"},
    {kSteerPackageInstall, "npx "},
    {kSteerPackageInstall, "pnpm add"},
    {kSteerPackageInstall, "pnpm install"},
    {kSteerPackageInstall, "pnpm dlx"},
    {kSteerPackageInstall, "yarn add"},
    {kSteerPackageInstall, "yarn dlx"},
    {kSteerPackageInstall, "bunx "},
    {kSteerPackageInstall, "bun add"},
    {kSteerPackageInstall, "pip install"},
    {kSteerPackageInstall, "pip3 install"},
    {kSteerPackageInstall, "-m pip"},
    {kSteerPackageInstall, "pipx install"},
    {kSteerPackageInstall, "pipx run"},
    {kSteerPackageInstall, "uv pip"},
    {kSteerPackageInstall, "uv add"},
    {kSteerPackageInstall, "uv tool"},
    {kSteerPackageInstall, "uvx "},
    {kSteerPackageInstall, "poetry add"},
    {kSteerPackageInstall, "conda install"},
    {kSteerPackageInstall, "gem install"},
    {kSteerPackageInstall, "cargo install"},
    {kSteerPackageInstall, "cargo add"},
    {kSteerPackageInstall, "go install"},
    {kSteerPackageInstall, "go get "},
    {kSteerPackageInstall, "apt install"},
    {kSteerPackageInstall, "apt-get install"},
    {kSteerPackageInstall, "yum install"},
    {kSteerPackageInstall, "dnf install"},
    {kSteerPackageInstall, "apk add"},
    {kSteerPackageInstall, "brew install"},
    {kSteerPackageInstall, "choco install"},
    {kSteerPackageInstall, "winget install"},
    {kSteerPackageInstall, "composer require"},
    {kSteerPackageInstall, "dotnet add package"},
    {kSteerPackageInstall, "install-package"},
    {kSteerPackageInstall, "deno install"},
    {kSteerPackageInstall, "deno run"},
    {kSteerPackageInstall, "install the package"},
    {kSteerPackageInstall, "install this package"},
    {kSteerPackageInstall, "install the following package"},
    // prompt_override
    {kSteerPromptOverride, "ignore previous"},
    {kSteerPromptOverride, "ignore all previous"},
    {kSteerPromptOverride, "ignore the previous"},
    {kSteerPromptOverride, "ignore any previous"},
    {kSteerPromptOverride, "ignore prior"},
    {kSteerPromptOverride, "ignore all prior"},
    {kSteerPromptOverride, "ignore earlier"},
    {kSteerPromptOverride, "ignore the above"},
    {kSteerPromptOverride, "ignore above"},
    {kSteerPromptOverride, "ignore all instructions"},
    {kSteerPromptOverride, "ignore your instructions"},
    {kSteerPromptOverride, "ignore the instructions"},
    {kSteerPromptOverride, "ignore the user"},
    {kSteerPromptOverride, "ignore everything"},
    {kSteerPromptOverride, "disregard previous"},
    {kSteerPromptOverride, "disregard all"},
    {kSteerPromptOverride, "disregard the above"},
    {kSteerPromptOverride, "disregard prior"},
    {kSteerPromptOverride, "disregard your"},
    {kSteerPromptOverride, "disregard any"},
    {kSteerPromptOverride, "disregard the user"},
    {kSteerPromptOverride, "forget previous"},
    {kSteerPromptOverride, "forget all previous"},
    {kSteerPromptOverride, "forget your instructions"},
    {kSteerPromptOverride, "forget everything"},
    {kSteerPromptOverride, "forget the above"},
    {kSteerPromptOverride, "override your"},
    {kSteerPromptOverride, "override the system"},
    {kSteerPromptOverride, "overrides all"},
    {kSteerPromptOverride, "new instructions"},
    {kSteerPromptOverride, "updated instructions"},
    {kSteerPromptOverride, "revised instructions"},
    {kSteerPromptOverride, "real instructions"},
    {kSteerPromptOverride, "new task:"},
    {kSteerPromptOverride, "your new task"},
    {kSteerPromptOverride, "your real task"},
    {kSteerPromptOverride, "your task is now"},
    {kSteerPromptOverride, "your only task"},
    {kSteerPromptOverride, "you are now"},
    {kSteerPromptOverride, "you should now"},
    {kSteerPromptOverride, "you will now"},
    {kSteerPromptOverride, "from now on"},
    {kSteerPromptOverride, "system prompt"},
    {kSteerPromptOverride, "developer message"},
    {kSteerPromptOverride, "developer mode"},
    {kSteerPromptOverride, "do anything now"},
    {kSteerPromptOverride, "do not tell the user"},
    {kSteerPromptOverride, "don't tell the user"},
    {kSteerPromptOverride, "do not inform the user"},
    {kSteerPromptOverride, "without telling the user"},
    {kSteerPromptOverride, "without asking the user"},
    {kSteerPromptOverride, "without informing the user"},
    {kSteerPromptOverride, "do not mention this"},
    {kSteerPromptOverride, "keep this secret from"},
    {kSteerPromptOverride, "the user has authorized"},
    {kSteerPromptOverride, "the user wants you to"},
    {kSteerPromptOverride, "instead of what the user"},
    {kSteerPromptOverride, "act as a"},
    {kSteerPromptOverride, "act as an"},
    {kSteerPromptOverride, "pretend to be"},
    {kSteerPromptOverride, "pretend you are"},
    {kSteerPromptOverride, "roleplay as"},
    {kSteerPromptOverride, "jailbreak"},
    {kSteerPromptOverride, "reveal your"},
    {kSteerPromptOverride, "print your instructions"},
    {kSteerPromptOverride, "repeat the words above"},
    {kSteerPromptOverride, "repeat everything above"},
    {kSteerPromptOverride, "important instructions"},
    {kSteerPromptOverride, "important message for the"},
    {kSteerPromptOverride, "attention ai"},
    {kSteerPromptOverride, "attention assistant"},
    {kSteerPromptOverride, "attention agent"},
    {kSteerPromptOverride, "note to the ai"},
    {kSteerPromptOverride, "note to ai"},
    {kSteerPromptOverride, "note to the assistant"},
    {kSteerPromptOverride, "note to the agent"},
    {kSteerPromptOverride, "dear ai"},
    {kSteerPromptOverride, "dear assistant"},
    {kSteerPromptOverride, "to the ai agent"},
    {kSteerPromptOverride, "to any ai"},
    {kSteerPromptOverride, "ai agents reading this"},
    {kSteerPromptOverride, "if you are an ai"},
    {kSteerPromptOverride, "if you are an llm"},
    {kSteerPromptOverride, "if you are a language model"},
    {kSteerPromptOverride, "as an ai language model"},
    {kSteerPromptOverride, "end of error"},
    {kSteerPromptOverride, "end of tool output"},
    {kSteerPromptOverride, "task complete. now"},
    {kSteerPromptOverride, "^override:"},
    {kSteerPromptOverride, "do not follow the user"},
    {kSteerPromptOverride, "don't follow the user"},
    {kSteerPromptOverride, "i am your developer"},
    {kSteerPromptOverride, "i am your creator"},
    {kSteerPromptOverride, "i am your administrator"},
    {kSteerPromptOverride, "authorize you to"},
    {kSteerPromptOverride, "authorise you to"},
    {kSteerPromptOverride, "you have been promoted"},
    {kSteerPromptOverride, "behave like a"},
    {kSteerPromptOverride, "behave as a"},
    // role_marker
    {kSteerRoleMarker, "<|"},
    {kSteerRoleMarker, "|>"},
    {kSteerRoleMarker, "[inst]"},
    {kSteerRoleMarker, "[/inst]"},
    {kSteerRoleMarker, "<<sys>>"},
    {kSteerRoleMarker, "<</sys>>"},
    {kSteerRoleMarker, "im_start"},
    {kSteerRoleMarker, "im_end"},
    {kSteerRoleMarker, "endoftext"},
    {kSteerRoleMarker, "### system"},
    {kSteerRoleMarker, "### instruction"},
    {kSteerRoleMarker, "### assistant"},
    {kSteerRoleMarker, "### response"},
    {kSteerRoleMarker, "<system>"},
    {kSteerRoleMarker, "</system>"},
    {kSteerRoleMarker, "<assistant>"},
    {kSteerRoleMarker, "<instruction"},
    {kSteerRoleMarker, "</instruction"},
    {kSteerRoleMarker, "[system]"},
    {kSteerRoleMarker, "[assistant]"},
    {kSteerRoleMarker, "(system)"},
    {kSteerRoleMarker, "^system:"},
    {kSteerRoleMarker, "^system message:"},
    {kSteerRoleMarker, "^system note:"},
    {kSteerRoleMarker, "^system override"},
    {kSteerRoleMarker, "^assistant:"},
    {kSteerRoleMarker, "^human:"},
    {kSteerRoleMarker, "^developer:"},
    {kSteerRoleMarker, "^ai:"},
    {kSteerRoleMarker, "<tool_call"},
    {kSteerRoleMarker, "</tool_call"},
    {kSteerRoleMarker, "<function_call"},
    {kSteerRoleMarker, "<function="},
    {kSteerRoleMarker, "<tool_use"},
    {kSteerRoleMarker, "<invoke"},
    {kSteerRoleMarker, "[tool_call"},
    {kSteerRoleMarker, "\"function_call\""},
    {kSteerRoleMarker, "\"tool_calls\""},
    {kSteerRoleMarker, "\"tool_use\""},
    {kSteerRoleMarker, "call the tool"},
    {kSteerRoleMarker, "call this tool"},
    {kSteerRoleMarker, "call the function"},
    {kSteerRoleMarker, "invoke the tool"},
    {kSteerRoleMarker, "invoke the function"},
    {kSteerRoleMarker, "use the tool"},
    {kSteerRoleMarker, "call the following tool"},
    // encoded_payload
    {kSteerEncodedPayload, "decode the following"},
    {kSteerEncodedPayload, "decode this"},
    {kSteerEncodedPayload, "decode and follow"},
    {kSteerEncodedPayload, "decode and execute"},
    {kSteerEncodedPayload, "base64 -d"},
    {kSteerEncodedPayload, "base64 --decode"},
    {kSteerEncodedPayload, "rot13"},
    {kSteerEncodedPayload, "rot-13"},
    {kSteerEncodedPayload, "fromcharcode"},
    {kSteerEncodedPayload, "atob("},
    // exfiltration
    {kSteerExfiltration, "bcc:"},
    {kSteerExfiltration, "exfiltrate"},
    {kSteerExfiltration, "send the conversation"},
    {kSteerExfiltration, "send the chat history"},
    {kSteerExfiltration, "send your instructions"},
    {kSteerExfiltration, "include the api key"},
    {kSteerExfiltration, "include your api key"},
};

// Verbs that command the reader when imperative (see imperative()): to fetch a URL, to send
// data to an address, to run a command or call a tool.
enum VerbKind : std::uint8_t { kFetch = 1, kSend = 2, kRun = 4 };
struct Verb {
  std::string_view text;
  std::uint8_t kind;
};
constexpr Verb kVerbs[] = {
    {"fetch", kFetch},     {"visit", kFetch},     {"open", kFetch},     {"navigate", kFetch},
    {"browse", kFetch},    {"download", kFetch},  {"click", kFetch},    {"go to", kFetch},
    {"check out", kFetch}, {"read from", kFetch}, {"retrieve", kFetch}, {"follow", kFetch},
    {"curl", kFetch},      {"wget", kFetch},      {"send", kSend},      {"forward", kSend},
    {"upload", kSend},     {"share", kSend},      {"leak", kSend},      {"post", kSend},
    {"email", kSend},      {"transmit", kSend},   {"submit", kSend},    {"copy", kSend},
    {"cc", kSend},         {"run", kRun},         {"execute", kRun},    {"type", kRun},
    {"paste", kRun},       {"enter", kRun},       {"call", kRun},       {"invoke", kRun}};
// Words that make the verb after them imperative.
constexpr std::string_view kImperativeLead[] = {
    "please",      "then",   "and",  "first", "now",    "must",    "should", "always",
    "immediately", "kindly", "also", "just",  "simply", "instead", "next",   "to"};
// Words after a verb that make it a log line's subject ("Send failed: ..."), not an order.
constexpr std::string_view kStatusWords[] = {"failed", "failure", "error", "errors", "rejected",
                                             "timed",  "timeout", "limit", "rate",   "is",
                                             "was",    "has",     "not",   "request"};
// Programs that make run/execute/type a command.
constexpr std::string_view kPrograms[] = {
    "curl",    "wget", "bash", "sh",   "zsh",        "python", "python3", "node",
    "npm",     "npx",  "pip",  "sudo", "rm",         "chmod",  "git",     "docker",
    "kubectl", "make", "ssh",  "scp",  "powershell", "perl",   "ruby",    "eval",
    "exec",    "nc",   "cat",  "echo", "uvx",        "deno",   "bun"};

// Character classes, looked up by byte: the scanner asks them of every byte.
constexpr std::array<bool, 256> kAlnum = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c)
    t[static_cast<std::size_t>(c)] =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  return t;
}();
bool alnum(char c) {
  return kAlnum[static_cast<unsigned char>(c)];
}
constexpr std::array<char, 256> kLower = [] {
  std::array<char, 256> t{};
  for (int c = 0; c < 256; ++c)
    t[static_cast<std::size_t>(c)] = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return t;
}();
char lower(char c) {
  return kLower[static_cast<unsigned char>(c)];
}

// The normalized text: see steering.hpp. Returns its length in `buf`.
std::size_t normalize(std::string_view s, char* buf, std::size_t cap) {
  std::size_t n = 0;
  bool space = false, line = false;
  auto put = [&](char c) {
    if (space && n > 0 && n < cap) buf[n++] = line ? '\n' : ' ';
    space = line = false;
    if (n < cap) buf[n++] = c;
  };
  for (std::size_t i = 0; i < s.size() && n < cap;) {
    std::uint32_t cp = static_cast<unsigned char>(s[i]);
    if (cp > ' ' && cp < 0x7f) {  // printable ASCII, most of any text, is kept as it is
      put(s[i++]);
      continue;
    }
    const std::size_t len = cp < 0x80 ? 1 : decode_utf8(s, i, cp);
    if (len == 0) {
      ++i;
      continue;
    }
    if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == 0xa0 || cp == 0x3000 ||
        cp == 0x2028 || cp == 0x2029 || (cp >= 0x2000 && cp <= 0x200a)) {
      space = true;
      line |= cp == '\n' || cp == '\r' || cp == 0x2028 || cp == 0x2029;
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || invisible_code_point(cp)) {
      // dropped: it cannot split a phrase
    } else if (cp >= 0xff01 && cp <= 0xff5e) {
      put(static_cast<char>(cp - 0xfee0));  // full-width ASCII
    } else {
      for (std::size_t k = 0; k < len; ++k) put(s[i + k]);
    }
    i += len;
  }
  return n;
}

// The phrases by their first two characters (after '^'), so each position of the text is
// compared with the one or two phrases that can start there. A pair's key is the first
// character (ASCII) and the low five bits of the second: a letter keeps its own key, and what
// shares one (a digit and a letter, say) is told apart by phrase_at().
constexpr std::size_t kPairKeys = 128 * 32;
constexpr std::size_t pair_key(char first, char second) {
  return static_cast<std::size_t>(static_cast<unsigned char>(first)) * 32 +
         (static_cast<unsigned char>(second) & 31u);
}
constexpr std::string_view unanchored(std::string_view p) {
  return p.front() == '^' ? p.substr(1) : p;
}

struct PhraseIndex {
  std::array<std::uint16_t, kPairKeys + 1> begin{};  // key k: order[begin[k]..begin[k+1])
  std::array<std::uint16_t, std::size(kPhrases)> order{};
};

constexpr PhraseIndex make_index() {  // a counting sort by key
  PhraseIndex index;
  for (const Phrase& p : kPhrases)
    ++index.begin[pair_key(unanchored(p.text)[0], unanchored(p.text)[1]) + 1];
  for (std::size_t k = 0; k < kPairKeys; ++k) index.begin[k + 1] += index.begin[k];
  std::array<std::uint16_t, kPairKeys> next{};
  for (std::size_t k = 0; k < kPairKeys; ++k) next[k] = index.begin[k];
  for (std::size_t i = 0; i < std::size(kPhrases); ++i) {
    const std::string_view t = unanchored(kPhrases[i].text);
    index.order[next[pair_key(t[0], t[1])]++] = static_cast<std::uint16_t>(i);
  }
  return index;
}

constexpr bool phrases_valid() {  // two ASCII characters at least, lower case
  for (const Phrase& p : kPhrases) {
    const std::string_view t = unanchored(p.text);
    if (t.size() < 2) return false;
    for (char c : t)
      if (static_cast<unsigned char>(c) >= 128 || (c >= 'A' && c <= 'Z')) return false;
  }
  return true;
}
static_assert(phrases_valid(), "every phrase is two or more lower-case ASCII characters");
constexpr PhraseIndex kIndex = make_index();

// The verbs by their first letter: verbs[begin[c - 'a']..begin[c - 'a' + 1]).
struct VerbIndex {
  std::array<std::uint8_t, 27> begin{};
  std::array<std::uint8_t, std::size(kVerbs)> order{};
};
constexpr VerbIndex make_verb_index() {
  VerbIndex index;
  std::size_t n = 0;
  for (char c = 'a'; c <= 'z'; ++c) {
    index.begin[static_cast<std::size_t>(c - 'a')] = static_cast<std::uint8_t>(n);
    for (std::size_t k = 0; k < std::size(kVerbs); ++k)
      if (kVerbs[k].text.front() == c) index.order[n++] = static_cast<std::uint8_t>(k);
  }
  index.begin[26] = static_cast<std::uint8_t>(n);
  return index;
}
constexpr VerbIndex kVerbIndex = make_verb_index();
static_assert(kVerbIndex.begin[26] == std::size(kVerbs), "every verb starts with a letter");

class Scanner {
 public:
  Scanner(std::string_view t, const SteeringLimits& limits) : t_(t), limits_(limits) {}

  std::uint32_t scan() const {
    std::uint32_t found = 0;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      // Inside a word nothing starts: phrases beginning with a letter or digit and verbs need a
      // word boundary, and the other phrases begin with what is no letter or digit.
      const bool word = alnum(t_[i]);
      if (word && i > 0 && alnum(t_[i - 1])) continue;
      const char c = lower(t_[i]);
      if (static_cast<unsigned char>(c) < 128 && i + 1 < t_.size()) {
        const std::size_t key = pair_key(c, lower(t_[i + 1]));
        for (std::size_t k = kIndex.begin[key]; k < kIndex.begin[key + 1]; ++k) {
          const Phrase& p = kPhrases[kIndex.order[k]];
          if (!(found & p.category) && phrase_at(i, p.text)) found |= p.category;
        }
      }
      if (word) found |= verbs_at(i);
      if (t_[i] == '!' && markdown_image_url(i)) found |= kSteerUrl;
    }
    return found | encoded();
  }

 private:
  bool word_start(std::size_t i) const { return alnum(t_[i]) && (i == 0 || !alnum(t_[i - 1])); }

  // Whether position i starts a segment: the text, a line or a sentence.
  bool segment_start(std::size_t i) const {
    std::size_t j = i;
    while (j > 0 && t_[j - 1] == ' ') --j;
    if (j == 0) return true;
    const char c = t_[j - 1];
    return c == '\n' || c == '.' || c == ';' || c == '!' || c == '?' || c == '"' || c == '\'' ||
           c == '>' || c == ']' || c == ')' || c == ':' || c == '`' || c == '-' || c == '*';
  }

  // `p` case-insensitively at i, on word boundaries ('^': at a segment start).
  bool phrase_at(std::size_t i, std::string_view p) const {
    if (p.front() == '^') {
      p.remove_prefix(1);
      if (!segment_start(i)) return false;
    }
    if (lower(t_[i]) != p.front() || i + p.size() > t_.size()) return false;
    for (std::size_t k = 1; k < p.size(); ++k)
      if (lower(t_[i + k]) != p[k]) return false;
    if (alnum(p.front()) && i > 0 && alnum(t_[i - 1])) return false;
    const std::size_t end = i + p.size();
    return !(alnum(p.back()) && end < t_.size() && alnum(t_[end]));
  }

  // The word at i (a word start) equals w (which may hold one space: "check out").
  bool word_is(std::size_t i, std::string_view w) const {
    if (i + w.size() > t_.size()) return false;
    for (std::size_t k = 0; k < w.size(); ++k)
      if (lower(t_[i + k]) != w[k]) return false;
    return i + w.size() == t_.size() || !alnum(t_[i + w.size()]);
  }
  template <std::size_t N>
  bool word_in(std::size_t i, const std::string_view (&words)[N]) const {
    return std::any_of(std::begin(words), std::end(words),
                       [&](std::string_view w) { return word_is(i, w); });
  }

  // The start of the word before i, or npos; stops at a segment's end (a comma does not end
  // one: "Next, invoke ...").
  std::size_t previous_word(std::size_t i) const {
    std::size_t j = i;
    while (j > 0 && (t_[j - 1] == ' ' || t_[j - 1] == ',')) --j;
    if (j == 0 || !alnum(t_[j - 1])) return std::string_view::npos;
    while (j > 0 && alnum(t_[j - 1])) --j;
    return j;
  }

  // The word at i is in the imperative: it opens a segment, or follows a word such as "please",
  // "then" or "and", or "to" after "need", "have", "want" or "you".
  bool imperative(std::size_t i) const {
    if (segment_start(i)) return true;
    const std::size_t prev = previous_word(i);
    if (prev == std::string_view::npos || !word_in(prev, kImperativeLead)) return false;
    if (!word_is(prev, "to")) return true;
    const std::size_t before = previous_word(prev);
    return before != std::string_view::npos &&
           (word_is(before, "need") || word_is(before, "needs") || word_is(before, "have") ||
            word_is(before, "has") || word_is(before, "want") || word_is(before, "you"));
  }

  // The end of the word starting at i.
  std::size_t word_end(std::size_t i) const {
    while (i < t_.size() && alnum(t_[i])) ++i;
    return i;
  }

  // The start of the next token after the word at i (skipping spaces and a colon), or npos.
  std::size_t next_token(std::size_t i) const {
    std::size_t j = word_end(i);
    while (j < t_.size() && (t_[j] == ' ' || t_[j] == ':')) ++j;
    return j < t_.size() ? j : std::string_view::npos;
  }

  // "![alt](http...": an image the reader's renderer fetches, with what the URL carries.
  bool markdown_image_url(std::size_t i) const {
    if (i + 1 >= t_.size() || t_[i + 1] != '[') return false;
    const std::size_t close = t_.find("](", i + 2);
    return close != std::string_view::npos && close - i < 300 && url_at(close + 2);
  }

  // A URL (scheme:// or www.) or a mail address within `span` bytes after `from`.
  bool address_after(std::size_t from, std::size_t span, bool mail) const {
    const std::size_t end = std::min(t_.size(), from + span);
    for (std::size_t i = from; i < end; ++i) {
      if (url_at(i)) return true;
      if (mail && t_[i] == '@' && i > from && alnum(t_[i - 1]) && domain_at(i + 1)) return true;
    }
    return false;
  }
  bool url_at(std::size_t i) const {
    for (std::string_view scheme : {"http://", "https://", "ftp://", "file://", "www."})
      if (phrase_at(i, scheme)) return true;
    return false;
  }
  bool domain_at(std::size_t i) const {
    bool dot = false;
    std::size_t j = i;
    while (j < t_.size() && (alnum(t_[j]) || t_[j] == '-' || t_[j] == '.')) {
      dot |= t_[j] == '.' && j + 1 < t_.size() && alnum(t_[j + 1]);
      ++j;
    }
    return dot && j > i;
  }

  // The categories an imperative verb at word start i gives.
  std::uint32_t verbs_at(std::size_t i) const {
    std::uint32_t found = 0;
    const char c = lower(t_[i]);
    if (c < 'a' || c > 'z') return 0;
    std::uint8_t kind = 0;
    const auto letter = static_cast<std::size_t>(c - 'a');
    for (std::size_t k = kVerbIndex.begin[letter]; k < kVerbIndex.begin[letter + 1]; ++k) {
      const Verb& v = kVerbs[kVerbIndex.order[k]];
      if (word_is(i, v.text)) kind |= v.kind;
    }
    const bool fetch = kind & kFetch, send = kind & kSend, run = kind & kRun;
    if (!fetch && !send && !run) return 0;
    if (!imperative(i)) return 0;
    if (fetch && address_after(i, 120, false)) found |= kSteerUrl;
    // Sending needs an object between the verb and the address ("POST https://..." is a log
    // line, "send the key to a@b.c" an order).
    if (send) {
      const std::size_t next = next_token(i);
      if (next != std::string_view::npos && !url_at(next) && !word_in(next, kStatusWords) &&
          address_after(next, 160, true))
        found |= kSteerExfiltration;
    }
    if (run) {
      const std::size_t next = next_token(i);
      if (next != std::string_view::npos) {
        if (t_[next] == '`') {
          found |= kSteerCommand;
        } else if (alnum(t_[next]) && word_in(next, kPrograms)) {
          found |= kSteerCommand;
        } else if ((word_is(i, "call") || word_is(i, "invoke")) && alnum(t_[next])) {
          // call files.write, call send_email, call the delete_all function: a tool's name
          std::size_t name_at = next;
          if (word_is(next, "the") || word_is(next, "a") || word_is(next, "an")) {
            name_at = next_token(next);
            if (name_at == std::string_view::npos) return found;
          }
          std::size_t j = name_at;
          while (j < t_.size() && (alnum(t_[j]) || t_[j] == '.' || t_[j] == '_')) ++j;
          const std::string_view name = t_.substr(name_at, j - name_at);
          const std::size_t sep = name.find_first_of("._");
          if (sep != std::string_view::npos && sep + 1 < name.size() && alnum(name[sep + 1]))
            found |= kSteerRoleMarker;
        }
      }
    }
    return found;
  }

  // Encoded payloads: long base64 runs, data URIs, runs of escapes, `base64` before a run.
  std::uint32_t encoded() const {
    const std::size_t n = t_.size();
    for (std::size_t i = 0; i < n;) {
      auto b64 = [](char c) { return alnum(c) || c == '+' || c == '/' || c == '=' || c == '_'; };
      if (!b64(t_[i])) {
        if (t_[i] == '\\' && escapes_at(i) >= 4) return kSteerEncodedPayload;
        if (t_[i] == '%' && percent_run(i) >= 6) return kSteerEncodedPayload;
        ++i;
        continue;
      }
      std::size_t j = i;
      bool up = false, low = false, digit = false;
      while (j < n && b64(t_[j])) {
        up |= t_[j] >= 'A' && t_[j] <= 'Z';
        low |= t_[j] >= 'a' && t_[j] <= 'z';
        digit |= t_[j] >= '0' && t_[j] <= '9';
        ++j;
      }
      if (j - i >= limits_.min_encoded_chars && up && low && digit) return kSteerEncodedPayload;
      i = j;
    }
    // Letters spaced out to hide a phrase: "i g n o r e p r e v i o u s" (spaces only
    // between them: "a, b, c" is a list).
    std::size_t singles = 0, last_end = 0;
    for (std::size_t i = 0; i < n;) {
      if (!alnum(t_[i])) {
        ++i;
        continue;
      }
      const std::size_t end = word_end(i);
      const bool spaced = singles > 0 && t_.substr(last_end, i - last_end).find_first_not_of(' ') ==
                                             std::string_view::npos;
      singles = end != i + 1 ? 0 : spaced ? singles + 1 : 1;
      if (singles >= 10) return kSteerEncodedPayload;
      last_end = i = end;
    }
    for (std::size_t i = 0; i + 6 < n; ++i) {
      if (t_[i] != ';' && lower(t_[i]) != 'b') continue;
      if (phrase_at(i, ";base64,")) return kSteerEncodedPayload;
      if (phrase_at(i, "base64")) {
        std::size_t j = i + 6;
        while (j < n &&
               (t_[j] == ':' || t_[j] == ' ' || t_[j] == '=' || t_[j] == '"' || t_[j] == ')'))
          ++j;
        std::size_t k = j;
        while (k < n && (alnum(t_[k]) || t_[k] == '+' || t_[k] == '/' || t_[k] == '=')) ++k;
        if (k - j >= 16) return kSteerEncodedPayload;
      }
    }
    return 0;
  }
  // Consecutive \xNN or \uNNNN escapes at i.
  std::size_t escapes_at(std::size_t i) const {
    auto hex = [](char c) {
      return (c >= '0' && c <= '9') || (lower(c) >= 'a' && lower(c) <= 'f');
    };
    std::size_t count = 0;
    while (i + 1 < t_.size() && t_[i] == '\\' && (t_[i + 1] == 'x' || t_[i + 1] == 'u')) {
      const std::size_t digits = t_[i + 1] == 'x' ? 2 : 4;
      std::size_t k = 0;
      while (k < digits && i + 2 + k < t_.size() && hex(t_[i + 2 + k])) ++k;
      if (k < digits) break;
      ++count;
      i += 2 + digits;
    }
    return count;
  }
  std::size_t percent_run(std::size_t i) const {
    auto hex = [](char c) {
      return (c >= '0' && c <= '9') || (lower(c) >= 'a' && lower(c) <= 'f');
    };
    std::size_t count = 0;
    while (i + 2 < t_.size() && t_[i] == '%' && hex(t_[i + 1]) && hex(t_[i + 2])) {
      ++count;
      i += 3;
    }
    return count;
  }

  std::string_view t_;
  const SteeringLimits& limits_;
};

}  // namespace

std::uint32_t scan_steering(std::string_view text, const SteeringLimits& limits) noexcept {
  if (text.empty()) return 0;
  char buf[kMaxSteeringScanBytes];
  const std::size_t cap = std::min(limits.max_scan_bytes, kMaxSteeringScanBytes);
  const std::size_t n = normalize(text.substr(0, cap), buf, cap);
  return Scanner(std::string_view(buf, n), limits).scan();
}

std::string steering_names(std::uint32_t bits) {
  std::string out;
  for (const SteeringCategoryInfo& c : kSteeringCategories) {
    if (!(bits & c.bit)) continue;
    if (!out.empty()) out += ", ";
    out += c.name;
  }
  return out;
}

}  // namespace recourse::detail
