// `recourse lsp`: what the server answers about a document (lsp.hpp): diagnostics from
// compile_file(), hover and completion from vocabulary(), definitions of `extends` bases, rules
// and named backoffs, and formatting by format().
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "lsp.hpp"

namespace recourse::cli::lsp {
namespace {

namespace fs = std::filesystem;

// LSP's CompletionItemKind values (LSP 3.17).
enum CompletionKind { kVariable = 6, kProperty = 10, kKeyword = 14, kEnumMember = 20 };

const std::vector<Term>& terms(const CompileOptions& options) {
  static const std::vector<Term> all = vocabulary(options.attempt_ceiling);
  return all;
}

const Term* find_term(const CompileOptions& options, TermKind kind, std::string_view name,
                      std::string_view block = {}) {
  for (const Term& t : terms(options))
    if (t.kind == kind && t.name == name && (block.empty() || t.block == block)) return &t;
  return nullptr;
}

json range(std::string_view text, std::size_t begin, std::size_t end) {
  return {{"start", to_json(position_of(text, begin))}, {"end", to_json(position_of(text, end))}};
}

// The words between backquotes of a settings table's value list ("`stop`, `escalate` or ...").
std::vector<std::string> quoted_words(std::string_view text) {
  std::vector<std::string> out;
  for (std::size_t at = text.find('`'); at != std::string_view::npos;) {
    const std::size_t end = text.find('`', at + 1);
    if (end == std::string_view::npos) break;
    out.emplace_back(text.substr(at + 1, end - at - 1));
    at = text.find('`', end + 1);
  }
  return out;
}

// The values of an enum attribute's list ("none, unknown, committed").
std::vector<std::string> listed(const std::string& values) {
  std::vector<std::string> out;
  for (std::size_t from = 0; !values.empty() && from != std::string::npos;) {
    const std::size_t comma = values.find(", ", from);
    out.push_back(values.substr(from, comma == std::string::npos ? comma : comma - from));
    from = comma == std::string::npos ? comma : comma + 2;
  }
  return out;
}

// The definitions a document makes: `rule NAME`, `backoff NAME {` and the codes of `codes {}`,
// and the bases its policies extend, each with the token that names it.
struct Definitions {
  std::vector<std::pair<std::string, Token>> rules, schedules, codes, bases;
};

Definitions definitions_of(const std::vector<Token>& tokens, const std::vector<Place>& at) {
  Definitions d;
  for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
    const Token& t = tokens[i];
    const Token& next = tokens[i + 1];
    if (t.text == "rule" && next.kind == Token::Word && at[i].item != "expect")
      d.rules.emplace_back(std::string(next.text), next);
    if (t.text == "backoff" && next.kind == Token::Word && i + 2 < tokens.size() &&
        tokens[i + 2].text == "{")
      d.schedules.emplace_back(std::string(next.text), next);
    if (t.text == "extends" && next.kind == Token::String)
      d.bases.emplace_back(std::string(next.text.substr(1, next.text.size() - 2)), next);
    if (t.kind == Token::Word && at[i].block == "codes")
      d.codes.emplace_back(std::string(t.text), t);
  }
  return d;
}

const Token* named(const std::vector<std::pair<std::string, Token>>& list, std::string_view name) {
  for (const auto& [n, token] : list)
    if (n == name) return &token;
  return nullptr;
}

// A document read once per request: its tokens, their places and its definitions.
struct Reading {
  std::vector<Token> tokens;
  std::vector<Place> at;  // at[i]: the place of token i; at.back(): the end's
  Definitions defs;
  explicit Reading(std::string_view text)
      : tokens(tokenize(text)), at(places(tokens)), defs(definitions_of(tokens, at)) {}
};

std::string attribute_text(const Term& t) {
  std::string s = fmt::format("**{}**: attribute, {}", t.name, t.type);
  if (!t.values.empty()) s += fmt::format(" (`{}`)", t.values);
  s += "\n\n";
  if (t.origin == "envelope")
    s += fmt::format(
        "From the envelope (the tool's server: untrusted), JSON key `{}`; may be "
        "absent, and a test on an absent attribute is false.",
        t.json_key);
  else if (t.origin == "context")
    s += fmt::format("From the context (the host: trusted), JSON key `{}`.", t.json_key);
  else
    s += std::string("Derived before the lookup") +
         (t.may_be_absent ? "; absent when what it is derived from is." : ".");
  return s;
}

std::string setting_text(const Term& t) {
  std::string s = fmt::format("**{}.{}**: {}", t.block, t.name, t.type);
  if (!t.values.empty()) s += fmt::format(", {}", t.values);
  if (!t.default_text.empty()) s += fmt::format("; default {}", t.default_text);
  return s + "\n\n" + t.meaning;
}

// The hover text for the word at token index `i`, or empty.
std::string hover_text(const Reading& doc, std::size_t i, const CompileOptions& options) {
  const std::vector<Token>& tokens = doc.tokens;
  const std::string_view word = tokens[i].text;
  const Place& place = doc.at[i];
  const std::string_view next = i + 1 < tokens.size() ? tokens[i + 1].text : std::string_view();
  if (place.block == "json" || next == "{") return {};  // JSON, or a block's keyword
  if (next == "=" || place.item == "backoff" || place.block == "schedule") {
    const std::string_view block =
        place.block == "schedule" || place.item == "backoff" ? "backoff" : place.block;
    if (const Term* t = find_term(options, TermKind::Setting, word, block)) return setting_text(*t);
  }
  if (const Term* t = find_term(options, TermKind::Attribute, word)) return attribute_text(*t);
  if (find_term(options, TermKind::Route, word))
    return fmt::format("**{}**: route", word) +
           (word == "retry" || word == "repair"
                ? "\n\nChecked by the guards before it is taken: side-effect gates, the "
                  "Retry-After cap, spent budgets, the open circuit (docs/language.md section 8)."
                : "");
  if (find_term(options, TermKind::Code, word)) return fmt::format("**{}**: built-in code", word);
  if (named(doc.defs.codes, word))
    return fmt::format("**{}**: code declared in `codes {{ }}`", word);
  if (find_term(options, TermKind::Invariant, word))
    return fmt::format("**{}**: built-in invariant (waive it with `waive {} \"reason\"`)", word,
                       word);
  return {};
}

// The CompletionItems for `words`, of one kind.
void add_items(json& items, const std::vector<std::string>& words, int kind,
               const std::string& detail = {}) {
  for (const auto& w : words) {
    json item = {{"label", w}, {"kind", kind}};
    if (!detail.empty()) item["detail"] = detail;
    items.push_back(std::move(item));
  }
}

std::vector<std::string> names(const CompileOptions& options, TermKind kind,
                               std::string_view block = {}) {
  std::vector<std::string> out;
  for (const Term& t : terms(options))
    if (t.kind == kind && (block.empty() || t.block == block)) out.push_back(t.name);
  return out;
}

}  // namespace

json diagnostics(const Document& doc, const CompileOptions& options) {
  const Result<Bundle> r = compile_file({doc.path, doc.text}, options);
  const Reading reading(doc.text);
  // Each diagnostic's range and the rules its message names ('NAME'), as byte offsets, turned
  // into positions in one pass over the text (positions_of()).
  struct Spans {
    std::size_t begin = 0, end = 0;
    std::vector<const Token*> rules;
  };
  std::vector<Spans> spans;
  std::vector<std::size_t> offsets;
  for (const Diagnostic& d : r.diagnostics()) {
    Spans s;
    if (d.file == doc.path) {
      s.begin = std::min<std::size_t>(d.offset, doc.text.size());
      s.end = token_end(doc.text, s.begin);
    }
    for (std::size_t at = d.message.find('\''); at != std::string::npos;) {
      const std::size_t end = d.message.find('\'', at + 1);
      if (end == std::string::npos) break;
      if (const Token* rule = named(reading.defs.rules, d.message.substr(at + 1, end - at - 1)))
        s.rules.push_back(rule);
      at = d.message.find('\'', end + 1);
    }
    offsets.insert(offsets.end(), {s.begin, s.end});
    for (const Token* rule : s.rules) offsets.insert(offsets.end(), {rule->begin, rule->end});
    spans.push_back(std::move(s));
  }
  std::sort(offsets.begin(), offsets.end());
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  const std::vector<Position> positions = positions_of(doc.text, offsets);
  const auto span = [&](std::size_t begin, std::size_t end) {
    const auto at = [&](std::size_t o) {
      return to_json(positions[static_cast<std::size_t>(
          std::lower_bound(offsets.begin(), offsets.end(), o) - offsets.begin())]);
    };
    return json{{"start", at(begin)}, {"end", at(end)}};
  };
  json out = json::array();
  for (std::size_t k = 0; k < spans.size(); ++k) {
    const Diagnostic& d = r.diagnostics()[k];
    std::string message = d.message;
    if (d.file != doc.path && !d.file.empty())  // a base's: at the start, naming its place
      message = fmt::format("{}:{}:{}: {}", d.file, d.line, d.column, message);
    if (!d.help.empty()) message += "\nhelp: " + d.help;
    json item = {{"range", span(spans[k].begin, spans[k].end)},
                 {"severity", d.severity == Severity::Error     ? 1
                              : d.severity == Severity::Warning ? 2
                                                                : 3},
                 {"code", d.code},
                 {"source", "recourse"},
                 {"message", message},
                 {"data", {{"help", d.help}}}};
    if (d.witness)
      item["data"]["witness"] = {{"envelope", json::parse(d.witness->envelope)},
                                 {"context", json::parse(d.witness->context)},
                                 {"route", d.witness->route}};
    for (const Token* rule : spans[k].rules)
      item["relatedInformation"].push_back(
          {{"location", {{"uri", doc.uri}, {"range", span(rule->begin, rule->end)}}},
           {"message", "rule " + std::string(rule->text)}});
    out.push_back(std::move(item));
  }
  return out;
}

json hover(const Document& doc, Position position, const CompileOptions& options) {
  const Reading reading(doc.text);
  const std::size_t at = token_at(reading.tokens, offset_of(doc.text, position));
  if (at == reading.tokens.size() || reading.tokens[at].kind != Token::Word) return nullptr;
  const std::string text = hover_text(reading, at, options);
  if (text.empty()) return nullptr;
  return {{"contents", {{"kind", "markdown"}, {"value", text}}},
          {"range", range(doc.text, reading.tokens[at].begin, reading.tokens[at].end)}};
}

json completion(const Document& doc, Position position, const CompileOptions& options) {
  const std::size_t offset = offset_of(doc.text, position);
  const Reading reading(doc.text);
  const std::vector<Token>& tokens = reading.tokens;
  // The word the cursor is in or ends is the one being typed: the place is of the tokens before.
  std::size_t at = token_at(tokens, offset);
  if (at == tokens.size() || tokens[at].kind != Token::Word || tokens[at].begin == offset)
    at = static_cast<std::size_t>(
        std::lower_bound(tokens.begin(), tokens.end(), offset,
                         [](const Token& t, std::size_t o) { return t.begin < o; }) -
        tokens.begin());
  const Place& place = reading.at[at];
  const std::string_view prev = at > 0 ? tokens[at - 1].text : std::string_view();
  const std::string_view before = at > 1 ? tokens[at - 2].text : std::string_view();
  std::vector<std::string> codes = names(options, TermKind::Code);
  for (const auto& [code, token] : reading.defs.codes) codes.push_back(code);
  json items = json::array();
  const auto settings_block = [](std::string_view b) {
    return b == "tool" || b == "limits" || b == "breaker" || b == "throttle";
  };
  if (place.block == "json" || place.block == "codes") return items;
  if (settings_block(place.block)) {
    if (prev == "=") {
      if (const Term* t = find_term(options, TermKind::Setting, before, place.block)) {
        if (t->type == "flag") add_items(items, {"true", "false"}, kEnumMember);
        if (t->type == "word") add_items(items, quoted_words(t->values), kEnumMember);
        if (t->type == "codes") add_items(items, codes, kEnumMember, "code");
      }
    } else {
      for (const Term& t : terms(options))
        if (t.kind == TermKind::Setting && t.block == place.block)
          items.push_back({{"label", t.name},
                           {"kind", kProperty},
                           {"detail", t.type + (t.values.empty() ? "" : ", " + t.values)},
                           {"documentation", {{"kind", "markdown"}, {"value", setting_text(t)}}}});
    }
    return items;
  }
  const bool condition = place.item == "rule" || place.item == "assert" || place.item == "default";
  if (prev == "->" && (condition || place.item == "map")) {
    if (place.item == "map")
      add_items(items, codes, kEnumMember, "code");
    else
      add_items(items, names(options, TermKind::Route), kKeyword, "route");
  } else if (place.item == "expect" && prev == "expect") {
    add_items(items, names(options, TermKind::Route), kKeyword, "route");
  } else if (place.item == "waive" && prev == "waive") {
    add_items(items, names(options, TermKind::Invariant), kKeyword, "invariant");
  } else if (place.item == "backoff" || place.block == "schedule") {
    add_items(items, names(options, TermKind::Setting, "backoff"), kProperty, "backoff");
  } else if (condition &&
             (prev == "when" || prev == "and" || prev == "or" || prev == "not" || prev == "(")) {
    for (const Term& t : terms(options))
      if (t.kind == TermKind::Attribute)
        items.push_back({{"label", t.name},
                         {"kind", kVariable},
                         {"detail", t.type},
                         {"documentation", {{"kind", "markdown"}, {"value", attribute_text(t)}}}});
    if (prev != "not") add_items(items, {"not"}, kKeyword);
  } else if (condition &&
             (prev == "==" || prev == "!=" || prev == "[" || prev == "," || prev == "in")) {
    // The attribute the value is compared with: the word before the operator or the list.
    std::size_t k = at;
    while (k > 0 && tokens[k - 1].kind != Token::Word) --k;
    while (k > 1 && (tokens[k - 1].kind != Token::Word || tokens[k - 1].text == "in")) --k;
    const std::string_view attr = k > 0 ? tokens[k - 1].text : std::string_view();
    if (attr == "code")
      add_items(items, codes, kEnumMember, "code");
    else if (const Term* t = find_term(options, TermKind::Attribute, attr))
      add_items(items, listed(t->values), kEnumMember, t->name);
  } else if (place.block == "policy" || place.block.empty()) {
    // At the start of an item (nothing but the word being typed on the line before the
    // cursor): the items, or at the top of the file, `version` and `policy`.
    const std::size_t line_start = doc.text.find_last_of("\r\n", offset ? offset - 1 : 0);
    const std::size_t from = offset && line_start != std::string::npos ? line_start + 1 : 0;
    std::string_view lead(doc.text.data() + from, offset - std::min(from, offset));
    lead.remove_prefix(std::min(lead.find_first_not_of(" \t"), lead.size()));
    if (std::all_of(lead.begin(), lead.end(), [](char c) {
          return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
        })) {
      if (place.block.empty())
        add_items(items, {"version", "policy"}, kKeyword);
      else
        add_items(items,
                  {"tool", "limits", "breaker", "throttle", "backoff", "codes", "rule", "default",
                   "assert", "waive", "map", "hit", "test"},
                  kKeyword, "item");
    }
  }
  return items;
}

json definition(const Document& doc, Position position, const CompileOptions& options) {
  const Reading reading(doc.text);
  const std::vector<Token>& tokens = reading.tokens;
  const Definitions& defs = reading.defs;
  const std::size_t at = token_at(tokens, offset_of(doc.text, position));
  if (at == tokens.size()) return nullptr;
  const Token& token = tokens[at];
  auto here = [&](const Token& t) {
    return json{{"uri", doc.uri}, {"range", range(doc.text, t.begin, t.end)}};
  };
  if (token.kind == Token::String && at > 0 && tokens[at - 1].text == "extends") {
    // The base: NAME.recourse beside the file, at its `policy "NAME"`, as the compiler finds it.
    const std::string name(token.text.substr(1, token.text.size() - 2));
    const fs::path file = fs::path(doc.path).parent_path() / (name + ".recourse");
    std::string error;
    const auto text = read_text(file.string(), options.max_source_bytes, error);
    if (!text) return nullptr;
    const std::vector<Token> theirs = tokenize(*text);
    std::size_t begin = 0, end = 0;
    for (std::size_t i = 0; i + 1 < theirs.size(); ++i)
      if (theirs[i].text == "policy" && theirs[i + 1].text == token.text) {
        begin = theirs[i + 1].begin;
        end = theirs[i + 1].end;
        break;
      }
    const std::string absolute = fs::absolute(file).lexically_normal().string();
    return {{"uri", uri_of(absolute)}, {"range", range(*text, begin, end)}};
  }
  const std::string_view word = token.kind == Token::String && token.text.size() >= 2
                                    ? token.text.substr(1, token.text.size() - 2)
                                    : token.text;
  if (const Token* rule = named(defs.rules, word)) return here(*rule);
  if (const Token* schedule = named(defs.schedules, word)) return here(*schedule);
  if (const Token* code = named(defs.codes, word)) return here(*code);
  return nullptr;
}

json formatting(const Document& doc, const CompileOptions& options) {
  const Result<std::string> formatted = format(doc.text, doc.path, options);
  if (!formatted.ok()) return nullptr;
  json edits = json::array();
  if (*formatted != doc.text)
    edits.push_back({{"range", range(doc.text, 0, doc.text.size())}, {"newText", *formatted}});
  return edits;
}

}  // namespace recourse::cli::lsp
